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

import contextlib
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import keras
import numpy as np
import tensorflow as tf

from .. import data, models
from ..artifacts import MODEL_FILE
from ..observe import input_wait_summary
from ..observe.profiler import check_window, report_chunks
from ..progress import line
from . import report, resume
from .devices import worker_role
from .params import effective_learning_rate
from .replica import make_eval_step, make_train_steps
from .sources import Resolved
from .state import Checkpoints
from .watch import Watch

# Whether the step function times its wait for input (off only to measure what the timer costs).
_TIMED = [True]


@contextlib.contextmanager
def input_wait_timer(on: bool) -> Iterator[None]:
    """Loops built inside time their input wait, or not: for the benchmark's overhead ratio."""
    _TIMED.append(on)
    try:
        yield
    finally:
        _TIMED.pop()


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
            timed=_TIMED[-1],
        )
        self.eval_step = make_eval_step(distribution, self.model)
        self.steps_done = 0  # training steps run by this call, for reports and the profiler

    def run(
        self, state: dict[str, Any], *, latest: str | None, devices: dict[str, Any]
    ) -> dict[str, Any]:
        """Restore `latest` (None: start), train up to the epoch count, save, and report."""
        params, chief, say = self.params, self.role.is_chief, self.say
        checkpoints = Checkpoints(
            self.folder, self.checkpoint, self.epoch, chief=chief, state=state
        )
        watch = Watch(self.folder, params, self.role)
        try:
            initial_epoch, history = checkpoints.restore(latest)
            resume.check_same_start(self.strategy, initial_epoch, self.folder)
            left = params.epochs - initial_epoch
            if left > 0:  # a finished run trains nothing, and says so below
                check_window(watch.profiler.window, left * self.steps_per_epoch, left)
            if latest is None:
                checkpoints.start()
            say(report.describe_start(self, initial_epoch))
            stopped, best = early_stopping(history, params.patience)
            if initial_epoch >= params.epochs or stopped:
                say(f"Nothing left to train: {initial_epoch} epoch(s) completed already.")
            watch.start(self, initial_epoch, say)
            self.watch = watch
            writers = report.writers(self)
            timings: list[tuple[int, float]] = []
            # A resumed run shuffles with another seed, rather than replaying epoch 1's order.
            iterator = iter(self._dataset("train", seed=params.seed + initial_epoch))
            validation = self._dataset("validation")
            epoch = initial_epoch
            while epoch < params.epochs and not stopped:
                record = self._epoch(epoch, iterator, validation, timings)
                history.append(record)
                epoch += 1
                report.summaries(writers, record)
                stopped, best = early_stopping(history, params.patience)
                checkpoints.save(epoch, history)
                watch.exporter.report_epoch(record)
                if self.verbose and chief:
                    line(report.describe_epoch(record, params.epochs))
            if stopped and timings:
                say(f"Stopped early: no lower val_loss for {params.patience} epoch(s).")
            waiting = input_wait_summary(history[initial_epoch:], skip_first=True)
            say(waiting["input_verdict"])
            if watch.closing():
                say(watch.closing())
            model_path = self._save_model() if chief else None
            metrics = report.metrics(
                self, initial_epoch, history, timings, stopped, best, model_path, devices
            )
            return {**metrics, **waiting, **watch.summary()}
        finally:
            watch.close()
            checkpoints.close()

    def say(self, text: str) -> None:
        """Print on the chief, when verbose: one line per worker would repeat the same."""
        if self.verbose and self.role.is_chief:
            print(text, flush=True)

    def _epoch(self, epoch: int, iterator, validation, timings: list) -> dict[str, Any]:
        """One epoch: fixed steps from the repeating train set, then the whole validation set.

        The steps run in one call of the step function, or, when watched live, in about ten,
        each reported to the exporter (and cut at the profiler's window)."""
        watch, started = self.watch, time.perf_counter()
        sums, waited = np.zeros(3), 0.0
        first = self.steps_done + 1
        for steps in report_chunks(self.steps_per_epoch, first, watch.profiler.cuts(), watch.live):
            watch.profiler.before(self.steps_done + 1)
            begun = time.perf_counter()
            chunk, wait = self.train_steps(iterator, tf.constant(steps))
            chunk, wait = chunk.numpy(), float(wait)
            self.steps_done += steps
            watch.profiler.after(self.steps_done)
            sums, waited = sums + chunk, waited + wait
            running = (sums[0] / sums[2], sums[1] / sums[2])
            watch.exporter.report_steps(
                steps, time.perf_counter() - begun, wait, float(chunk[2]), running
            )
        loss, correct, count = (float(value) for value in sums)
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
            "input_wait_seconds": round(waited, 4) if _TIMED[-1] else None,
            "input_wait_fraction": waited / seconds if _TIMED[-1] else None,
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
