"""Step 3, training: mixed precision, tf.distribute from one device to many, crash-safe resume.

    from <package>.train import train
    metrics = train("artifacts/run", model="small_cnn", epochs=5, strategy="auto")

The same function runs behind `<package> train --run-dir DIR -p key=value …`, which is how
multi-worker jobs start (TF_CONFIG from the environment) and how a crashed run resumes.

- params: the parameter names and values (STRATEGIES, PRECISIONS, TrainError, check_params)
- devices: logical CPUs and memory growth, the strategy, the dtype policy, XLA
- state: checkpoints with their history, and the check that a run folder fits the request
- loop: the one custom training loop every strategy runs
"""

from .devices import (
    configure_devices,
    dtype_policy,
    make_strategy,
    resolve_jit,
    resolve_precision,
    strategy_name,
)
from .loop import MODEL_FILE, train
from .params import (
    DEFAULTS,
    LR_RULE,
    PRECISIONS,
    STRATEGIES,
    TrainError,
    check_params,
    effective_learning_rate,
    read_tf_config,
    resolve_params,
    resolve_strategy,
)

__all__ = [
    "DEFAULTS",
    "LR_RULE",
    "MODEL_FILE",
    "PRECISIONS",
    "STRATEGIES",
    "TrainError",
    "check_params",
    "configure_devices",
    "dtype_policy",
    "effective_learning_rate",
    "make_strategy",
    "read_tf_config",
    "resolve_jit",
    "resolve_precision",
    "resolve_params",
    "resolve_strategy",
    "strategy_name",
    "train",
]
