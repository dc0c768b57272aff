"""The epoch driver: one custom training loop for every strategy, from one CPU to several machines.

Why not `model.fit`: under MultiWorkerMirroredStrategy Keras 3's fit fails (keras-team/keras#20585),
and one loop for every strategy keeps one code path, so MirroredStrategy over logical CPUs, which
runs anywhere, tests the same code a multi-worker job runs. The loop does what fit would do:

- input: `strategy.distribute_datasets_from_function`, so each worker reads only its part of the
  shards and each replica gets batch_size / replicas examples;
- per epoch, the train steps and the validation set (replica.py: what each replica computes and
  how the replicas' numbers are summed), a checkpoint (state.py), TensorBoard scalars;
- early stopping on val_loss, replayed from the history so a resumed run agrees;
- model.keras at the end, written by the chief only.
"""

from __future__ import annotations

import math
import os
import time
from pathlib import Path
from typing import Any

import keras
import tensorflow as tf

from .. import data, models
from ..artifacts import LOGS_DIR, MODEL_FILE
from . import report
from .devices import worker_role
from .params import TrainError, effective_learning_rate
from .replica import make_eval_step, make_train_steps
from .state import Checkpoints
from .tuning import Resolved

SPLITS = ("train", "validation")


class Loop:
    """The model, optimizer and step functions of one training run, built inside the strategy."""

    def __init__(
        self,
        folder: Path,
        meta: dict[str, Any],
        resolved: Resolved,
        distribution: tf.distribute.Strategy,
        *,
        jit: bool,
        loss_scaling: bool,
        verbose: bool,
    ) -> None:
        self.folder, self.meta, self.resolved = folder, meta, resolved
        self.params, self.strategy = resolved.params, distribution
        self.jit, self.loss_scaling, self.verbose = jit, loss_scaling, verbose
        self.role = worker_role(distribution)
        self.replicas = distribution.num_replicas_in_sync
        self.global_batch = self.params.batch_size
        self.steps_per_epoch = int(meta["splits"]["train"]["count"]) // self.global_batch
        self.learning_rate = effective_learning_rate(self.params.learning_rate, self.global_batch)
        with distribution.scope():
            self.model = models.build_model(
                self.params.model,
                meta["image_shape"],
                int(meta["num_classes"]),
                width=self.params.width,
                dropout=self.params.dropout,
            )
            optimizer = keras.optimizers.Adam(self.learning_rate)
            if loss_scaling:
                optimizer = keras.optimizers.LossScaleOptimizer(optimizer)
            # Built now, not in the first step: restoring fills the slots, and every replica
            # creates the same variables.
            optimizer.build(self.model.trainable_variables)
            self.optimizer = optimizer
            self.epoch = tf.Variable(0, dtype=tf.int64, trainable=False, name="epoch")
            self.checkpoint = tf.train.Checkpoint(
                model=self.model, optimizer=optimizer, epoch=self.epoch
            )
        self.train_steps = make_train_steps(
            distribution,
            self.model,
            optimizer,
            global_batch=self.global_batch,
            loss_scaling=loss_scaling,
            jit=jit,
        )
        self.eval_step = make_eval_step(distribution, self.model)

    def run(
        self, state: dict[str, Any], *, latest: str | None, devices: dict[str, Any]
    ) -> dict[str, Any]:
        """Restore `latest` (None: start), train up to the epoch count, save, and report."""
        params, chief, say = self.params, self.role.is_chief, self.say
        checkpoints = Checkpoints(
            self.folder, self.checkpoint, self.epoch, chief=chief, state=state
        )
        try:
            initial_epoch, history = checkpoints.restore(latest)
            self._check_same_start(initial_epoch)
            if latest is None:
                checkpoints.start()
            say(report.describe_start(self, initial_epoch))
            stopped, best = early_stopping(history, params.patience)
            if initial_epoch >= params.epochs or stopped:
                say(f"Nothing left to train: {initial_epoch} epoch(s) completed already.")
            writers = self._writers()
            timings: list[tuple[int, float]] = []
            # A resumed run shuffles with another seed, rather than replaying epoch 1's order.
            iterator = iter(self._dataset("train", seed=params.seed + initial_epoch))
            validation = self._dataset("validation")
            epoch = initial_epoch
            while epoch < params.epochs and not stopped:
                record = self._epoch(epoch, iterator, validation, timings)
                history.append(record)
                epoch += 1
                self._summaries(writers, record)
                stopped, best = early_stopping(history, params.patience)
                checkpoints.save(epoch, history)
                say(report.describe_epoch(record, params.epochs))
            if stopped and timings:
                say(f"Stopped early: no lower val_loss for {params.patience} epoch(s).")
            model_path = self._save_model() if chief else None
            return report.metrics(
                self, initial_epoch, history, timings, stopped, best, model_path, devices
            )
        finally:
            checkpoints.close()

    def say(self, text: str) -> None:
        """Print on the chief, when verbose: one line per worker would repeat the same."""
        if self.verbose and self.role.is_chief:
            print(text, flush=True)

    def _epoch(self, epoch: int, iterator, validation, timings: list) -> dict[str, Any]:
        """One epoch: fixed steps from the repeating train set, then the whole validation set."""
        started = time.perf_counter()
        sums = self.train_steps(iterator, tf.constant(self.steps_per_epoch))
        loss, correct, count = (float(value) for value in sums.numpy())
        seconds = time.perf_counter() - started
        timings.append((int(count), seconds))
        started = time.perf_counter()
        val_sums = [self.eval_step(batch) for batch in validation]
        val_loss, val_correct, val_count = (float(v) for v in tf.add_n(val_sums).numpy())
        record = {
            "epoch": epoch + 1,
            "loss": loss / count,
            "accuracy": correct / count,
            "val_loss": val_loss / val_count,
            "val_accuracy": val_correct / val_count,
            "examples": int(count),
            "val_examples": int(val_count),
            "seconds": round(seconds, 4),
            "examples_per_sec": count / seconds,
            "val_seconds": round(time.perf_counter() - started, 4),
            "learning_rate": self.learning_rate,
        }
        if self.loss_scaling:
            record["loss_scale"] = float(self.optimizer.dynamic_scale.numpy())
        return record

    def _dataset(self, split: str, seed: int | None = None) -> tf.distribute.DistributedDataset:
        """Each input pipeline reads its part; training repeats, so every worker runs the same
        number of steps per epoch (uneven shards would otherwise leave a worker waiting forever
        in an all-reduce the others never join)."""
        training = split == "train"

        def dataset(context: tf.distribute.InputContext) -> tf.data.Dataset:
            return data.make_dataset(
                self.folder,
                split,
                self.global_batch,
                seed=self.params.seed if seed is None else seed,
                repeat=training,
                drop_remainder=training,
                input_context=context,
            )

        return self.strategy.distribute_datasets_from_function(dataset)

    def _check_same_start(self, epoch: int) -> None:
        """Refuse when workers restored different epochs: their run_dir is not shared storage."""
        if not isinstance(self.strategy, tf.distribute.MultiWorkerMirroredStrategy):
            return
        value = tf.constant([float(epoch), float(epoch) ** 2])
        values = self.strategy.experimental_distribute_values_from_function(lambda _: value)
        mean = self.strategy.reduce(tf.distribute.ReduceOp.MEAN, values, axis=None)
        mean, mean_square = (float(part) for part in mean.numpy())
        if not math.isclose(mean_square, mean**2, abs_tol=1e-3):
            raise TrainError(
                f"The workers resumed from different epochs (this one from epoch {epoch}): "
                f"{self.folder} must be storage that every worker reads, so that all of them "
                "restore the chief's checkpoint."
            )

    def _writers(self) -> dict[str, Any]:
        if not self.role.is_chief:
            return {split: tf.summary.create_noop_writer() for split in SPLITS}
        logs = self.folder / LOGS_DIR
        return {split: tf.summary.create_file_writer(str(logs / split)) for split in SPLITS}

    def _summaries(self, writers: dict[str, Any], record: dict[str, Any]) -> None:
        """TensorBoard scalars with Keras' names, so train and validation share a chart."""
        step = record["epoch"] - 1
        with writers["train"].as_default(step=step):
            tf.summary.scalar("epoch_loss", record["loss"])
            tf.summary.scalar("epoch_accuracy", record["accuracy"])
            tf.summary.scalar("examples_per_sec", record["examples_per_sec"])
            tf.summary.scalar("learning_rate", record["learning_rate"])
            if "loss_scale" in record:
                tf.summary.scalar("loss_scale", record["loss_scale"])
        with writers["validation"].as_default(step=step):
            tf.summary.scalar("epoch_loss", record["val_loss"])
            tf.summary.scalar("epoch_accuracy", record["val_accuracy"])
        for writer in writers.values():
            writer.flush()

    def _save_model(self) -> Path:
        """model.keras, written to a temporary name and renamed, so it is whole or absent."""
        path = self.folder / MODEL_FILE
        temporary = self.folder / f".{MODEL_FILE}.tmp-{os.getpid()}.keras"
        try:
            self.model.save(temporary)
            os.replace(temporary, path)
        finally:
            temporary.unlink(missing_ok=True)
        return path


def early_stopping(
    history: list[dict[str, Any]], patience: int
) -> tuple[bool, dict[str, Any] | None]:
    """(stop now?, best epoch so far), replayed from the history so a resumed run agrees."""
    best, waited = None, 0
    for record in history:
        if best is None or record["val_loss"] < best["val_loss"]:
            best, waited = record, 0
        else:
            waited += 1
    return patience > 0 and waited >= patience, best
