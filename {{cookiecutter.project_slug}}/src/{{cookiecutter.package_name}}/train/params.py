"""The training parameters, typed, and the checks of their values: one sentence per bad value.

A multi-worker job that fails on a typo only after every worker has started, connected and built
its model wastes a cluster allocation, so everything that can be checked from the values, the
environment (TF_CONFIG) and the device list is checked here, without running a TensorFlow op or
reading the run folder (`check_values`). What the run folder adds (data, an optional part's
values, checkpoints) is checked by train.check with inputs=True.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import tensorflow as tf

from .. import limits
from ..artifacts import StepError
from ..observe import check_port, parse_profile_steps
from ..steps import param
from ..tasks import current as task
from .cluster import Cluster, read_tf_config
from .errors import TrainError
from .finetune import allowed
from .recipe import check_recipe

STRATEGIES = ("auto", "one_device", "mirrored", "multi_worker")
PRECISIONS = ("auto", "mixed_float16", "mixed_bfloat16", "float32")
JIT_COMPILE = ("auto", "true", "false")
# What model and learning_rate left at None mean when step 2 wrote no value for them (the checks
# ask task().models.default when they run, so a test's fake task is asked, not the bake's own).
DEFAULT_MODEL = task().models.default  # the task's own (tasks/<folder>/task.py)
DEFAULT_LEARNING_RATE = 1e-3
# The linear scaling rule (Goyal et al. 2017): the learning rate grows with the global batch, so
# adding replicas (and with them a larger global batch) keeps the same progress per example.
REFERENCE_BATCH = 64
LR_RULE = f"linear: learning_rate * global_batch_size / {REFERENCE_BATCH}"
# The word that asks a finder for batch_size or learning_rate (find/, train/auto.py).
AUTO = "auto"


@dataclass(frozen=True)
class SharedParams:
    """Notebook 03's parameters every task has (all but run_dir), with its names and defaults.

    None for model, learning_rate, width and dropout means "not given": the value an optional part
    offers (train.value_sources), else the default (DEFAULT_MODEL, 0.001, the model's own width and
    dropout). "auto" for batch_size and learning_rate asks the finders (train/auto.py) to fit them
    to this device.
    """

    model: str | None = param(None, task().models.help)
    epochs: int = param(5, "epochs in all, counted from the start of the run")
    batch_size: int | str = param(64, "the global batch, split across the replicas; auto: found")
    learning_rate: float | str | None = param(
        None, "at a global batch of 64, scaled with the batch; auto: range test"
    )
    width: int | None = param(None, "filters of the first layer, a multiple of 8")
    dropout: float | None = param(None, "dropout rate before the output layer, 0 to below 1")
    strategy: str = param("auto", "auto, one_device, mirrored or multi_worker")
    logical_cpus: int = param(0, "split the CPU into this many devices (> 1: Mirrored)")
    precision: str = param("auto", "auto, mixed_float16, mixed_bfloat16 or float32")
    jit_compile: str | bool = param("auto", "XLA: auto (on GPUs only), true or false")
    seed: int = param(42, "weights, shuffle and dropout seed")
    patience: int = param(3, "stop after this many epochs without a lower val_loss; 0 never")
    finder_seconds: float = param(60.0, "seconds each finder may take (an auto batch_size or rate)")
    metrics_port: int = param(0, "serve Prometheus metrics on this port while training; 0 off")
    metrics_host: str = param("127.0.0.1", "address the metrics endpoint listens on")
    profile_steps: str | int = param("", "'first,last' steps to profile into logs/; '' off")
    # The recipe (recipe.py checks these; finetune.py, schedule.py and augment.py use them).
    weights: str = param(
        "none", f"{allowed()} .weights.h5 file to start from (copied by layer name)"
    )
    freeze_epochs: int = param(0, "first epochs with the backbone frozen, only the head trains")
    unfreeze: str | int = param(
        "all", "after freeze_epochs: all, or how many top backbone layers fine-tune"
    )
    fine_tune_lr_factor: float = param(0.1, "the learning rate times this after freeze_epochs")
    warmup_epochs: int | str = param(
        "auto", "linear warmup to the peak rate; auto: 0, or up to 5 when the global batch > 256"
    )
    schedule: str = param("constant", "after warmup: constant, or cosine down to 1% of the peak")
    weight_decay: float = param(0.0, "AdamW's decoupled decay, not on biases/BatchNorm; 0: Adam")
    label_smoothing: float = param(0.0, "share of each label spread over all classes, 0 to <1")


@dataclass(frozen=True)
class Params(task().recipe.options, SharedParams):  # type: ignore[misc]
    """Notebook 03's parameters: the shared ones, then the task's own (its Recipe.options, e.g.
    the image task's augment), so a bake's --help, notebook and checks list only its own."""


@dataclass(frozen=True)
class Placement:
    """Where the values say training runs: the resolved strategy, its replicas, the cluster."""

    strategy: str
    replicas: int
    cluster: Cluster | None


def check_values(params: Params, *, replicas: int | None = None) -> Placement:
    """Refuse the first bad value in one sentence (TrainError); return where training runs.

    `replicas` defaults to what the strategy will have on this machine (expected_replicas). A
    width or dropout is checked against the given model, or the task's default model when none is
    given (a model an optional part offers is checked by train.check with inputs=True).
    """
    check_tunable(
        task().models.default if params.model is None else params.model,
        DEFAULT_LEARNING_RATE if params.learning_rate is None else params.learning_rate,
        params.width,
        params.dropout,
    )
    limits.whole("epochs", params.epochs, TrainError)
    if params.batch_size != AUTO:
        limits.whole(
            "batch_size", params.batch_size, TrainError, " or auto (the batch-size finder)"
        )
    _choice("strategy", params.strategy, STRATEGIES)
    _whole("logical_cpus", params.logical_cpus, 0)
    _choice("precision", params.precision, PRECISIONS)
    parse_jit(params.jit_compile)
    limits.whole("seed", params.seed, TrainError)
    limits.whole("patience", params.patience, TrainError, " (0 turns early stopping off)")
    parse_profile_steps(params.profile_steps)
    check_recipe(params)
    try:  # the task's own parameters (Recipe.options), checked by the task
        task().recipe.check(params)
    except StepError as error:
        raise TrainError(str(error)) from None
    cluster = read_tf_config()
    if isinstance(params.metrics_port, int) and params.metrics_port and cluster is not None:
        check_port(params.metrics_port + cluster.rank, params.metrics_host)
    else:
        check_port(params.metrics_port, params.metrics_host)
    if params.strategy == "multi_worker" and cluster is None:
        raise TrainError(
            "strategy='multi_worker' needs TF_CONFIG in the environment (the cluster's workers and "
            "this process's task, as deploy/ sets it): set it, or use strategy='auto'."
        )
    gpus = len(tf.config.list_physical_devices("GPU"))
    resolved = resolve_strategy(params.strategy, params.logical_cpus, gpus=gpus, cluster=cluster)
    if replicas is None:
        replicas = expected_replicas(resolved, params.logical_cpus, gpus=gpus, cluster=cluster)
    batch = params.batch_size
    if isinstance(params.finder_seconds, bool) or not (
        isinstance(params.finder_seconds, int | float) and 1 <= params.finder_seconds <= 3600
    ):
        raise TrainError(
            f"finder_seconds={params.finder_seconds!r} is not allowed: use a number of seconds "
            "from 1 to 3600."
        )
    if AUTO in (batch, params.learning_rate) and resolved == "multi_worker":
        raise TrainError(
            f"{'batch_size' if batch == AUTO else 'learning_rate'}=auto is not allowed under "
            "multi_worker: each worker would probe alone and might choose differently; find "
            "it on one machine with the same GPUs (strategy=mirrored) and pass the values found."
        )
    if batch == AUTO:
        return Placement(strategy=resolved, replicas=int(replicas), cluster=cluster)
    if batch % replicas:
        raise TrainError(
            f"batch_size={batch} is not divisible by the {replicas} replicas of "
            f"strategy={params.strategy!r} ({resolved}): use a multiple of {replicas}, e.g. "
            f"{max(1, round(batch / replicas)) * replicas} (it is the global batch, split "
            "evenly across the replicas)."
        )
    return Placement(strategy=resolved, replicas=int(replicas), cluster=cluster)


def check_tunable(model: Any, learning_rate: Any, width: Any, dropout: Any) -> None:
    """The values step 2 may set: the model's name, its learning rate and its knobs."""
    if not isinstance(model, str) or (
        model not in task().models.names and not task().models.takes(model)
    ):
        raise TrainError(f"model={model!r} is not allowed: use {task().models.help}.")
    if learning_rate == AUTO:
        pass
    elif (
        isinstance(learning_rate, bool)
        or not isinstance(learning_rate, int | float)
        or not math.isfinite(learning_rate)
        or learning_rate <= 0
    ):
        raise TrainError(
            f"learning_rate={learning_rate!r} is not allowed: use a number > 0, e.g. 0.001, or "
            "auto (the learning-rate range test)."
        )
    try:
        task().models.check_knobs(model, width=width, dropout=dropout)
    except StepError as error:
        raise TrainError(str(error)) from None


def resolve_strategy(
    name: str, logical_cpus: int = 0, *, gpus: int = 0, cluster: Cluster | None = None
) -> str:
    """What `auto` means here: "multi_worker", "mirrored", "one_device" or "default".

    MultiWorker when TF_CONFIG names more than one worker; Mirrored over several GPUs, or over
    logical CPUs when logical_cpus > 1 was asked on a machine without GPUs; OneDevice on one GPU;
    otherwise TensorFlow's default strategy (no distribution, on the CPU).
    """
    if name != "auto":
        return name
    if cluster is not None and cluster.workers > 1:
        return "multi_worker"
    if gpus > 1 or (gpus == 0 and logical_cpus > 1):
        return "mirrored"
    return "one_device" if gpus == 1 else "default"


def expected_replicas(
    resolved: str, logical_cpus: int = 0, *, gpus: int = 0, cluster: Cluster | None = None
) -> int:
    """Replicas in sync the resolved strategy will have, counted without initializing TensorFlow."""
    if resolved == "multi_worker":
        return (cluster.workers if cluster else 1) * (gpus or 1)
    if resolved == "mirrored":
        return gpus or max(1, logical_cpus)
    return 1


def parse_jit(value: str | bool) -> str | bool:
    """jit_compile as "auto", True or False; "true"/"false" in any case are accepted too."""
    if isinstance(value, bool):
        return value
    text = value.strip().lower() if isinstance(value, str) else None
    if text not in JIT_COMPILE:
        raise TrainError(f"jit_compile={value!r} is not allowed: use auto, true or false.")
    return "auto" if text == "auto" else text == "true"


def effective_learning_rate(learning_rate: float, global_batch_size: int) -> float:
    """The learning rate the optimizer gets, by LR_RULE."""
    return float(learning_rate) * global_batch_size / REFERENCE_BATCH


def _whole(name: str, value: Any, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise TrainError(f"{name}={value!r} is not allowed: use a whole number >= {minimum}.")


def _choice(name: str, value: Any, allowed: tuple[str, ...]) -> None:
    if not isinstance(value, str) or value not in allowed:
        raise TrainError(f"{name}={value!r} is not allowed: use {', '.join(allowed)}.")
