"""What a training run says: its start and epoch lines, and the metrics/train.json it returns.

The keys are the ones the issues, the notebooks and the run report read; train.run adds the
lineage and why a run started over, on the chief, before writing the file.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING, Any

import keras
import tensorflow as tf

from .. import seam
from ..artifacts import CHECKPOINT_DIR, LOGS_DIR
from .devices import strategy_name
from .params import LR_RULE
from .state import weights_digest
from .value_sources import suggestions_summary

if TYPE_CHECKING:
    from .running import Running

# Fewer steps an epoch than this leave a small training set under-trained at the default epochs
# (penguins: 276 rows at batch 256, one step an epoch, 0.79 against the baselines' 0.97-1.00);
# the batch-size finder keeps as many (train.auto.MIN_STEPS_PER_EPOCH).
FEW_STEPS = 20


def metrics(
    loop: Running,
    initial_epoch: int,
    history: list[dict[str, Any]],
    timings: list[tuple[int, float]],
    stopped: bool,
    best: dict[str, Any] | None,
    model_path: Path | None,
    devices: dict[str, Any],
) -> dict[str, Any]:
    """The run's numbers (see train.run for the keys)."""
    params = loop.params
    policy = keras.mixed_precision.dtype_policy()
    measured = timings[1:] if len(timings) > 1 else timings  # the first epoch also traces
    examples, seconds = sum(n for n, _ in measured), sum(s for _, s in measured)
    last = history[-1] if history else {}
    return {
        "model": params.model,
        "parameters": dataclasses.asdict(params),
        "parameter_sources": dict(loop.resolved.sources),
        **suggestions_summary(loop.resolved),
        "strategy": strategy_name(loop.strategy),
        "replicas": loop.replicas,
        "workers": loop.role.workers,
        "task": {"type": loop.role.task_type, "index": loop.role.task_index},
        "devices": devices,
        "precision": policy.name,
        "compute_dtype": policy.compute_dtype,
        "variable_dtype": policy.variable_dtype,
        "loss_scaling": loop.loss_scaling,
        "optimizer": type(loop.optimizer).__name__,
        "jit_compile": loop.jit,
        "global_batch_size": loop.global_batch,
        "per_replica_batch_size": loop.global_batch // loop.replicas,
        "steps_per_epoch": loop.steps_per_epoch,
        "lr_rule": LR_RULE,
        "learning_rate": params.learning_rate,
        "effective_learning_rate": loop.learning_rate,
        "epochs": params.epochs,
        "initial_epoch": initial_epoch,
        "epochs_completed": len(history),
        "epochs_run": len(timings),
        "stopped_early": stopped,
        "patience": params.patience,
        "loss": last.get("loss"),
        "accuracy": last.get("accuracy"),
        "val_loss": last.get("val_loss"),
        "val_accuracy": last.get("val_accuracy"),
        "best_epoch": best["epoch"] if best else None,
        "best_val_loss": best["val_loss"] if best else None,
        "examples_per_sec": examples / seconds if seconds else None,
        "examples_per_sec_epochs": len(measured),
        "history": history,
        "checkpoint": tf.train.latest_checkpoint(str(loop.folder / CHECKPOINT_DIR)),
        "model_path": str(model_path) if model_path else None,
        "logs": str(loop.folder / LOGS_DIR),
        "weights_sha256": weights_digest(loop.model.weights),
        "tensorflow_version": tf.__version__,
        "keras_version": keras.__version__,
    }


def describe_start(loop: Running, initial_epoch: int) -> str:
    """One line on how the run trains: strategy, precision, XLA, batch, learning rate, start."""
    policy = keras.mixed_precision.dtype_policy()
    start = f"resuming after epoch {initial_epoch}" if initial_epoch else "starting"
    return (
        f"Training {loop.params.model} with {strategy_name(loop.strategy)} "
        f"({loop.replicas} replica(s), {loop.role.workers} worker(s)), {policy.name}"
        f"{' with loss scaling' if loop.loss_scaling else ''}, "
        f"XLA {'on' if loop.jit else 'off'}, global batch {loop.global_batch}, "
        f"learning rate {loop.learning_rate:g} ({LR_RULE}): {start}, "
        f"{loop.params.epochs} epochs in all."
    )


def few_steps(count: int, global_batch: int, epochs: int, replicas: int) -> str | None:
    """What to change when an epoch is a handful of steps (None when it is not): the batch that
    gives FEW_STEPS at least, a power of two the replicas divide."""
    steps = count // global_batch
    if steps >= FEW_STEPS:
        return None
    batch = replicas
    while (batch * 2) * FEW_STEPS <= count:
        batch *= 2
    better = (
        f"batch_size={batch} gives {count // batch} steps an epoch" if batch < global_batch else ""
    )
    return (
        f"Few updates: {count:,} training {seam.noun()} at a global batch of {global_batch} make "
        f"{steps} step(s) an epoch, {steps * epochs} in all over {epochs} epoch(s), and a model "
        "learns from the number of its updates: "
        + (f"{better} (batch_size=auto keeps {FEW_STEPS} at least), " if better else "")
        + "or give more epochs."
    )


def describe_epoch(record: dict[str, Any], epochs: int) -> str:
    """One line per epoch, as fit prints it."""
    return (
        f"Epoch {record['epoch']}/{epochs}: loss {record['loss']:.4f}, accuracy "
        f"{record['accuracy']:.4f}, val_loss {record['val_loss']:.4f}, val_accuracy "
        f"{record['val_accuracy']:.4f}, {record['examples_per_sec']:.0f} examples/s "
        f"({record['seconds']:.1f} s)"
    )


SPLITS = ("train", "validation")


def writers(loop: Running) -> dict[str, Any]:
    """TensorBoard writers per split under logs/ (no-op writers on workers but the chief)."""
    if not loop.role.is_chief:
        return {split: tf.summary.create_noop_writer() for split in SPLITS}
    logs = loop.folder / LOGS_DIR
    return {split: tf.summary.create_file_writer(str(logs / split)) for split in SPLITS}


def summaries(writers: dict[str, Any], record: dict[str, Any]) -> None:
    """TensorBoard scalars with Keras' names, so train and validation share a chart."""
    step = record["epoch"] - 1
    with writers["train"].as_default(step=step):
        tf.summary.scalar("epoch_loss", record["loss"])
        tf.summary.scalar("epoch_accuracy", record["accuracy"])
        tf.summary.scalar("examples_per_sec", record["examples_per_sec"])
        tf.summary.scalar("learning_rate", record["learning_rate"])
        if record.get("input_wait_fraction") is not None:
            tf.summary.scalar("input_wait_fraction", record["input_wait_fraction"])
        if "loss_scale" in record:
            tf.summary.scalar("loss_scale", record["loss_scale"])
    with writers["validation"].as_default(step=step):
        tf.summary.scalar("epoch_loss", record["val_loss"])
        tf.summary.scalar("epoch_accuracy", record["val_accuracy"])
    for writer in writers.values():
        writer.flush()
