"""The epoch driver: one custom training loop for every strategy, from one CPU to several machines.

Why not `model.fit`: under MultiWorkerMirroredStrategy Keras 3's fit fails (keras-team/keras#20585),
and one loop for every strategy keeps one code path, so MirroredStrategy over logical CPUs, which
runs anywhere, tests the same code a multi-worker job runs. The loop does what fit would do:

- input: `strategy.distribute_datasets_from_function`, so each worker reads only its part of the
  shards and each replica gets batch_size / replicas examples;
- per epoch (epoch.py), the train steps and the validation set (replica.py: what each replica
  computes and how the replicas' numbers are summed), a checkpoint (state.py), TensorBoard scalars;
- early stopping on val_loss (epoch.py), replayed from the history so a resumed run agrees;
- model.keras at the end, written by the chief only.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import keras
import tensorflow as tf

from ..artifacts import MODEL_FILE
from ..observe import input_wait_summary
from ..observe.profiler import check_window
from ..progress import line
from ..replica import make_eval_step
from ..tasks import current as task
from ..writes import writing
from . import evaluate, phases, preempt, report, resume
from .devices import worker_role
from .epoch import _TIMED, early_stopping, run_epoch
from .finetune import pretrained
from .params import effective_learning_rate
from .recipe import make_optimizer
from .state import RESUME, Checkpoints
from .value_sources import Resolved
from .watch import Watch

AUGMENT_SEED_STRIDE = 1_000_003  # worker k augments with seed + k * this (the chief: the seed)


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
        self.plan = phases.plan(self)  # the schedule: warmup, cosine, the fine-tuning factor
        # Outside the scope: its seed generators stay plain variables (augment.py) that the
        # worker's replicas advance one after another in the step's graph, so each replica draws
        # its own flips, crops and mixes (mirrored ones would give every replica the same). One
        # seed per worker: with the run's seed in every worker, all drew the same in lockstep.
        self.augment = task().recipe.augmenter(
            self.params,
            int(meta["num_classes"]),
            self.params.seed + AUGMENT_SEED_STRIDE * self.role.rank,
        )
        # the task's class weights from the training split's counts (tables: class_weight), or None
        self.weighting = task().recipe.class_weights(self.params, meta)
        with distribution.scope():
            self.model = task().build_model(
                self.params.model,
                meta,
                weights=pretrained(self.params.weights),
                width=self.params.width,
                dropout=self.params.dropout,
                **task().models.values(self.params),  # the model's own knobs (an ensemble's size)
            )
            optimizer = make_optimizer(phases.schedule_of(self.plan), self.params.weight_decay)
            task().recipe.optimizer(optimizer, self.params)  # text: an encoder's clipping
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
        self.stop = preempt.StopRequest()  # outside the scope: each worker's own flag
        self.phase: str | None = None  # set by phases.enter, which builds the train steps
        self.timed, self.weights_loaded = _TIMED[-1], None
        self.eval_step = make_eval_step(distribution, self.model, task())
        self.steps_done = 0  # training steps run by this call, for reports and the profiler
        self.partial: dict[str, Any] | None = None  # an epoch cut short by a stop signal

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
            self.stop.install()  # SIGTERM & co. now end the run after a step, saved
            initial_epoch, history = checkpoints.restore(latest)
            iterations = int(self.optimizer.iterations.numpy())
            self.partial = preempt.resumed(checkpoints.folder, latest, iterations)
            resumed_step = self.partial["step"] if self.partial else 0
            resume.check_same_start(self.strategy, initial_epoch, self.folder)
            left = params.epochs - initial_epoch
            if left > 0:  # a finished run trains nothing, and says so below
                check_window(watch.profiler.window, left * self.steps_per_epoch, left)
            # weights= loaded into a fresh model, refused before anything is written
            phases.begin(self, fresh=latest is None)
            if latest is None:
                checkpoints.start()
            say(report.describe_start(self, initial_epoch))
            train_count = int(self.meta["splits"]["train"]["count"])
            few = report.few_steps(train_count, self.global_batch, params.epochs, self.replicas)
            if few and initial_epoch < params.epochs:
                say(few)
            if resumed_step:
                say(preempt.resume_sentence(self.partial, self.steps_per_epoch))
            say(phases.describe(self))
            stopped, best = early_stopping(history, params.patience)
            if initial_epoch >= params.epochs or stopped:
                say(f"Nothing left to train: {initial_epoch} epoch(s) completed already.")
            watch.start(self.strategy, initial_epoch, say)
            self.watch = watch
            writers = report.writers(self)
            timings: list[tuple[int, float]] = []
            # A resumed run shuffles with another seed, rather than replaying epoch 1's order
            # (mid-epoch, one more per step done: the rest of the epoch is drawn afresh).
            seed = params.seed + initial_epoch + resumed_step
            iterator = iter(self.dataset("train", seed=seed))
            validation = self.dataset("validation")
            epoch, interrupted = initial_epoch, None
            while epoch < params.epochs and not stopped:
                phases.enter(self, epoch)  # freeze or unfreeze; new train steps when it changes
                record = run_epoch(self, epoch, iterator, validation, timings)
                if record is None:  # every worker agreed to stop: keep the steps done
                    interrupted = preempt.interrupt(self, checkpoints, epoch, history)
                    break
                history.append(record)
                epoch += 1
                report.summaries(writers, record)
                stopped, best = early_stopping(history, params.patience)
                checkpoints.save(epoch, history)
                preempt.clear(checkpoints.folder, chief=chief)
                watch.exporter.report_epoch(record)
                if self.verbose and chief:
                    line(report.describe_epoch(record, params.epochs))
            if stopped and timings:
                say(f"Stopped early: no lower val_loss for {params.patience} epoch(s).")
            waiting = input_wait_summary(history[initial_epoch:], skip_first=True)
            if waiting["input_wait_epochs"] or interrupted is None:  # a stop says where it was
                say(waiting["input_verdict"])
            if watch.closing():
                say(watch.closing())
            model_path = self.folder / MODEL_FILE if chief and not interrupted else None
            metrics = report.metrics(
                self, initial_epoch, history, timings, stopped, best, model_path, devices
            )
            tested = evaluate.test_split(self, say) if chief and interrupted is None else {}
            if model_path is not None:  # last: a run that fails in its test split or baseline
                self._save_model()  # leaves no model.keras without its record for 04 to export
            return {
                **metrics,
                **phases.summary(self),
                **tested,
                **waiting,
                **watch.summary(),
                "interrupted": interrupted,  # None, or where a stop signal ended this run
                "resumed_at_step": resumed_step,  # steps of epoch initial_epoch + 1 done before
                "optimizer_steps": int(self.optimizer.iterations.numpy()),  # in all, all runs
            }
        finally:
            self.stop.remove()
            watch.close()
            checkpoints.close()

    def say(self, text: str) -> None:
        """Print on the chief, when verbose: one line per worker would repeat the same."""
        if self.verbose and self.role.is_chief:
            print(text, flush=True)

    def dataset(self, split: str, seed: int | None = None) -> tf.distribute.DistributedDataset:
        """Each input pipeline reads its part; training repeats, so every worker runs the same
        number of steps per epoch (uneven shards would otherwise leave a worker waiting forever
        in an all-reduce the others never join)."""
        training = split == "train"

        def dataset(context: tf.distribute.InputContext) -> tf.data.Dataset:
            return task().build_inputs(
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
        with writing(path, RESUME):  # the checkpoints hold the trained epochs
            try:
                self.model.save(temporary)
                os.replace(temporary, path)
            finally:
                temporary.unlink(missing_ok=True)
        return path
