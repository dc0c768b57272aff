"""Step 3, training: mixed precision, tf.distribute from one device to many, crash-safe resume.

    from <package> import train
    params = train.Params(epochs=5, strategy="auto")
    train.check(run_dir, params)            # one sentence for a bad value or run folder
    metrics = train.run(run_dir, params)    # also writes metrics/train.json and model.keras

The same entry runs behind `<package> train --run-dir DIR -p key=value …`, which is how
multi-worker jobs start (TF_CONFIG from the environment) and how a crashed run resumes.

- params: the typed parameters (Params) and the checks of their values
- value_sources: where each value comes from (given, a part's offer, default), in a sentence
- devices: logical CPUs and memory growth, the strategy, the dtype policy, XLA
- resume, state: whether checkpoints may be resumed; saving and restoring them
- replica, loop, report: the step functions, the epoch driver, what the run reports
- recipe, finetune, schedule, augment, phases: what trains the model — starting weights and
  two-phase fine-tuning, warmup and cosine, AdamW and label smoothing, augmentation on the device
- evaluate: the held-out test split, scored once after training
- entry: check and run, the step's contract
"""

from ..tasks.outputs import output_dtype
from .devices import (
    configure_devices,
    dtype_policy,
    make_strategy,
    resolve_jit,
    resolve_precision,
    strategy_name,
)
from .entry import check, run, train
from .params import (
    LR_RULE,
    PRECISIONS,
    STRATEGIES,
    Params,
    TrainError,
    check_values,
    effective_learning_rate,
    read_tf_config,
    resolve_strategy,
)
from .schedule import Plan
from .value_sources import describe_sources, resolve_params, sources_table

__all__ = [
    "LR_RULE",
    "output_dtype",
    "PRECISIONS",
    "Plan",
    "STRATEGIES",
    "Params",
    "TrainError",
    "check",
    "check_values",
    "configure_devices",
    "describe_sources",
    "dtype_policy",
    "effective_learning_rate",
    "make_strategy",
    "read_tf_config",
    "resolve_jit",
    "resolve_params",
    "resolve_precision",
    "resolve_strategy",
    "run",
    "sources_table",
    "strategy_name",
    "train",
]
