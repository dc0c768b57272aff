"""One custom training loop for every strategy, from one CPU to several machines.

Why not `model.fit`: under MultiWorkerMirroredStrategy Keras 3's fit fails (keras-team/keras#20585),
and one loop for every strategy keeps one code path, so MirroredStrategy over logical CPUs, which
runs anywhere, tests the same code a multi-worker job runs. The loop does what fit would do:

- input: `strategy.distribute_datasets_from_function`, so each worker reads only its part of the
  shards and each replica gets batch_size / replicas examples;
- a train step run on every replica with `strategy.run`: per-example losses averaged over the
  GLOBAL batch (`tf.nn.compute_average_loss`), so summing the replicas' gradients, which the
  optimizer does, gives the gradient of the mean loss;
- under mixed_float16 the loss is multiplied by a dynamic loss scale before the gradients are
  taken (keras.optimizers.LossScaleOptimizer.scale_loss; its `apply` divides the gradients by the
  scale, and skips the step and halves the scale when they overflowed): float16 gradients smaller
  than 6e-8 would otherwise become 0. mixed_bfloat16 has float32's range and needs no scaling;
- loss and accuracy as sums and counts, reduced across replicas with `strategy.reduce(SUM)`, so
  they are exact whatever the number of replicas;
- validation after each epoch, a checkpoint after each epoch, TensorBoard logs, early stopping on
  val_loss, model.keras and metrics/train.json at the end, written by the chief only.
"""

from __future__ import annotations

import math
import os
import time
from pathlib import Path
from typing import Any

import keras
import tensorflow as tf

from .. import data, env, models
from ..artifacts import resolve_run_dir, write_metrics
from .devices import (
    configure_devices,
    dtype_policy,
    make_strategy,
    resolve_jit,
    resolve_precision,
    strategy_name,
    worker_role,
)
from .params import (
    DEFAULTS,
    LR_RULE,
    TrainError,
    check_params,
    describe_sources,
    effective_learning_rate,
    resolve_params,
)
from .state import Checkpoints, check_resumable, weights_digest

MODEL_FILE = "model.keras"
SUM = tf.distribute.ReduceOp.SUM


def train(
    run_dir: str | os.PathLike[str],
    *,
    model: str | None = None,
    epochs: int | None = None,
    batch_size: int | None = None,
    learning_rate: float | None = None,
    width: int | None = None,
    dropout: float | None = None,
    strategy: str | None = None,
    logical_cpus: int | None = None,
    precision: str | None = None,
    jit_compile: str | bool | None = None,
    seed: int | None = None,
    patience: int | None = None,
    verbose: bool | None = None,
) -> dict[str, Any]:
    """Train `model` on run_dir/data/ and return what is written to metrics/train.json.

    A parameter left at None is not given: model, learning_rate, width and dropout then come from
    run_dir/tuning/best_hparams.json when step 2 wrote one for that model, every other parameter
    from DEFAULTS; a given value always wins (params.resolve_params). Where each value came from
    is said at the start and kept in metrics/train.json as parameter_sources.

    `batch_size` is the global batch (split evenly across replicas); the optimizer's learning
    rate follows LR_RULE. `epochs` counts from the start of the run: a run folder holding a
    checkpoint made with the same model and parameters resumes after its last completed epoch and
    stops at `epochs`. `patience` epochs without a lower val_loss stop training early (0: never).
    Every parameter is checked first (TrainError: one sentence), then the devices are configured,
    so call this before anything else in the process runs a TensorFlow op when logical_cpus > 1.

    The returned dict (metrics/train.json, written by the chief) holds, among others: model,
    parameters, parameter_sources ({name: "given" | "tuned" | "default"}), tuning (the values, score
    and trial of best_hparams.json, or None), strategy (class name), replicas, workers, task,
    precision (the effective policy), compute_dtype, variable_dtype, loss_scaling, optimizer,
    jit_compile, global_batch_size, per_replica_batch_size, steps_per_epoch, lr_rule, learning_rate,
    effective_learning_rate, epochs, initial_epoch (0 for a fresh run), epochs_completed, epochs_run
    (in this process), stopped_early, loss, accuracy, val_loss, val_accuracy (last epoch),
    best_epoch, best_val_loss, examples_per_sec (training examples/s over this process's epochs, the
    first one left out when more ran, since it includes tracing), history (one dict per epoch:
    epoch, loss, accuracy, val_loss, val_accuracy, examples, val_examples, seconds, val_seconds,
    examples_per_sec, learning_rate, and loss_scale under mixed_float16), checkpoint, model_path
    (None on workers other than the chief), logs, weights_sha256.
    """
    given = dict(locals())  # every parameter by name, None where the caller gave none
    del given["run_dir"]
    params, sources = resolve_params(run_dir, given)
    model, batch_size = params["model"], params["batch_size"]
    folder = resolve_run_dir(run_dir, create=False)
    meta = data.read_meta(folder)
    shape, num_classes = [int(side) for side in meta["image_shape"]], int(meta["num_classes"])
    try:
        models.check_model(
            model, shape, num_classes, width=params["width"], dropout=params["dropout"]
        )
    except models.ModelError as error:
        raise TrainError(str(error)) from None
    train_count = int(meta["splits"]["train"]["count"])
    if train_count < batch_size:
        raise TrainError(
            f"batch_size={batch_size} is larger than the {train_count} training examples in "
            f"{folder / 'data'}: use at most {train_count}."
        )
    gpus = env.list_gpus()
    policy_name = resolve_precision(params["precision"], gpus)
    state = {
        "model": model,
        "image_shape": shape,
        "num_classes": num_classes,
        "batch_size": params["batch_size"],
        "learning_rate": params["learning_rate"],
        "width": params["width"],
        "dropout": params["dropout"],
        "precision": policy_name,
        "seed": params["seed"],
    }
    resuming = check_resumable(folder, state)

    devices = configure_devices(params["logical_cpus"])
    distribution = make_strategy(params["strategy"], params["logical_cpus"])
    if distribution.num_replicas_in_sync != params["replicas"]:  # only when devices surprise us
        check_params(**_user_params(params), replicas=distribution.num_replicas_in_sync)
    keras.utils.set_random_seed(params["seed"])
    with dtype_policy(policy_name) as policy:
        loop = _Loop(
            folder,
            meta,
            params,
            distribution,
            jit=resolve_jit(params["jit_compile"], gpus),
            loss_scaling=policy.name == "mixed_float16",
            sources=sources,
        )
        return loop.run(state, resuming=resuming, devices=devices)


class _Loop:
    """The model, optimizer and step functions of one training run, built inside the strategy."""

    def __init__(
        self,
        folder: Path,
        meta: dict[str, Any],
        params: dict[str, Any],
        distribution: tf.distribute.Strategy,
        *,
        jit: bool,
        loss_scaling: bool,
        sources: dict[str, str],
    ) -> None:
        self.folder, self.meta, self.params, self.strategy = folder, meta, params, distribution
        self.jit, self.loss_scaling = jit, loss_scaling
        self.role = worker_role(distribution)
        self.sources = sources
        self.replicas = distribution.num_replicas_in_sync
        self.global_batch = params["batch_size"]
        self.steps_per_epoch = int(meta["splits"]["train"]["count"]) // self.global_batch
        self.learning_rate = effective_learning_rate(params["learning_rate"], self.global_batch)
        with distribution.scope():
            self.model = models.build_model(
                params["model"],
                meta["image_shape"],
                int(meta["num_classes"]),
                width=params["width"],
                dropout=params["dropout"],
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
        self.train_steps = self._make_train_step()
        self.eval_step = self._make_eval_step()

    def run(
        self, state: dict[str, Any], *, resuming: bool, devices: dict[str, Any]
    ) -> dict[str, Any]:
        """Restore, train epochs up to the requested count, save, and report."""
        params, chief, say = self.params, self.role.is_chief, self._say
        checkpoints = Checkpoints(
            self.folder, self.checkpoint, self.epoch, chief=chief, state=state
        )
        try:
            initial_epoch, history = checkpoints.restore() if resuming else (0, [])
            self._check_same_start(initial_epoch)
            if not resuming:
                checkpoints.start()
            say(describe_sources(params, self.sources))
            say(self._describe(initial_epoch))
            stopped, best = _early_stopping(history, params["patience"])
            if initial_epoch >= params["epochs"] or stopped:
                say(f"Nothing left to train: {initial_epoch} epoch(s) completed already.")
            writers = self._writers()
            timings: list[tuple[int, float]] = []
            # A resumed run shuffles with another seed, rather than replaying epoch 1's order.
            iterator = iter(self._dataset("train", seed=params["seed"] + initial_epoch))
            validation = self._dataset("validation")
            epoch = initial_epoch
            while epoch < params["epochs"] and not stopped:
                record = self._epoch(epoch, iterator, validation, timings)
                history.append(record)
                epoch += 1
                self._summaries(writers, record)
                stopped, best = _early_stopping(history, params["patience"])
                checkpoints.save(epoch, history)
                say(_describe_epoch(record, params["epochs"]))
            if stopped and timings:
                say(f"Stopped early: no lower val_loss for {params['patience']} epoch(s).")
            model_path = self._save_model() if chief else None
            metrics = self._metrics(
                initial_epoch, history, timings, stopped, best, model_path, devices
            )
            if chief:
                write_metrics(self.folder, "train", metrics)
            return metrics
        finally:
            checkpoints.close()

    # --- steps ------------------------------------------------------------------------------

    def _make_train_step(self):
        model, optimizer, global_batch = self.model, self.optimizer, self.global_batch
        loss_scaling, agree = self.loss_scaling, self.loss_scaling and self.replicas > 1

        def gradients(images: tf.Tensor, labels: tf.Tensor):
            with tf.GradientTape() as tape:
                probabilities = model(images, training=True)
                per_example = keras.losses.sparse_categorical_crossentropy(labels, probabilities)
                loss = tf.nn.compute_average_loss(per_example, global_batch_size=global_batch)
                if model.losses:  # weight regularizers, counted once over all replicas
                    loss += tf.nn.scale_regularization_loss(tf.add_n(model.losses))
                scaled = optimizer.scale_loss(loss) if loss_scaling else loss
            grads = tape.gradient(scaled, model.trainable_variables)
            return grads, _sums(labels, probabilities, per_example)

        # XLA compiles the forward and backward pass, where the time goes; the update, with its
        # cross-replica all-reduce, stays outside, where every strategy supports it.
        compute = tf.function(gradients, jit_compile=True) if self.jit else gradients

        def replica_step(images: tf.Tensor, labels: tf.Tensor) -> tf.Tensor:
            grads, sums = compute(images, tf.cast(labels, tf.int32))
            if agree:
                grads = _agree_on_overflow(optimizer, grads)
            optimizer.apply(grads, model.trainable_variables)
            return sums

        @tf.function
        def train_steps(iterator, steps: tf.Tensor) -> tf.Tensor:
            """`steps` steps in one call: Python's per-call overhead, large next to a small
            model's step, is paid once per epoch instead of once per step."""
            totals = tf.zeros([3])
            for _ in tf.range(steps):
                sums = self.strategy.run(replica_step, args=next(iterator))
                totals += self.strategy.reduce(SUM, sums, axis=None)
            return totals

        return train_steps

    def _make_eval_step(self):
        model = self.model

        def replica_step(images: tf.Tensor, labels: tf.Tensor) -> tf.Tensor:
            probabilities = model(images, training=False)
            labels = tf.cast(labels, tf.int32)
            per_example = keras.losses.sparse_categorical_crossentropy(labels, probabilities)
            return _sums(labels, probabilities, per_example)

        @tf.function(reduce_retracing=True)
        def eval_step(batch) -> tf.Tensor:
            sums = self.strategy.run(replica_step, args=batch)
            return self.strategy.reduce(SUM, sums, axis=None)

        return eval_step

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
                seed=self.params["seed"] if seed is None else seed,
                repeat=training,
                drop_remainder=training,
                input_context=context,
            )

        return self.strategy.distribute_datasets_from_function(dataset)

    # --- bookkeeping ------------------------------------------------------------------------

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
            return {split: tf.summary.create_noop_writer() for split in ("train", "validation")}
        logs = self.folder / "logs"
        return {
            split: tf.summary.create_file_writer(str(logs / split))
            for split in ("train", "validation")
        }

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

    def _metrics(
        self,
        initial_epoch: int,
        history: list[dict[str, Any]],
        timings: list[tuple[int, float]],
        stopped: bool,
        best: dict[str, Any] | None,
        model_path: Path | None,
        devices: dict[str, Any],
    ) -> dict[str, Any]:
        policy = keras.mixed_precision.dtype_policy()
        measured = timings[1:] if len(timings) > 1 else timings  # the first epoch also traces
        examples, seconds = sum(n for n, _ in measured), sum(s for _, s in measured)
        last = history[-1] if history else {}
        return {
            "model": self.params["model"],
            "parameters": _user_params(self.params),
            "parameter_sources": self.sources,
            "tuning": _tuning_summary(self.params.get("tuning")),
            "strategy": strategy_name(self.strategy),
            "replicas": self.replicas,
            "workers": self.role.workers,
            "task": {"type": self.role.task_type, "index": self.role.task_index},
            "devices": devices,
            "precision": policy.name,
            "compute_dtype": policy.compute_dtype,
            "variable_dtype": policy.variable_dtype,
            "loss_scaling": self.loss_scaling,
            "optimizer": type(self.optimizer).__name__,
            "jit_compile": self.jit,
            "global_batch_size": self.global_batch,
            "per_replica_batch_size": self.global_batch // self.replicas,
            "steps_per_epoch": self.steps_per_epoch,
            "lr_rule": LR_RULE,
            "learning_rate": self.params["learning_rate"],
            "effective_learning_rate": self.learning_rate,
            "epochs": self.params["epochs"],
            "initial_epoch": initial_epoch,
            "epochs_completed": len(history),
            "epochs_run": len(timings),
            "stopped_early": stopped,
            "patience": self.params["patience"],
            "loss": last.get("loss"),
            "accuracy": last.get("accuracy"),
            "val_loss": last.get("val_loss"),
            "val_accuracy": last.get("val_accuracy"),
            "best_epoch": best["epoch"] if best else None,
            "best_val_loss": best["val_loss"] if best else None,
            "examples_per_sec": examples / seconds if seconds else None,
            "examples_per_sec_epochs": len(measured),
            "history": history,
            "checkpoint": tf.train.latest_checkpoint(str(self.folder / "checkpoints")),
            "model_path": str(model_path) if model_path else None,
            "logs": str(self.folder / "logs"),
            "weights_sha256": weights_digest(self.model.weights),
            "tensorflow_version": tf.__version__,
            "keras_version": keras.__version__,
        }

    def _describe(self, initial_epoch: int) -> str:
        policy = keras.mixed_precision.dtype_policy()
        start = f"resuming after epoch {initial_epoch}" if initial_epoch else "starting"
        return (
            f"Training {self.params['model']} with {strategy_name(self.strategy)} "
            f"({self.replicas} replica(s), {self.role.workers} worker(s)), {policy.name}"
            f"{' with loss scaling' if self.loss_scaling else ''}, "
            f"XLA {'on' if self.jit else 'off'}, global batch {self.global_batch}, "
            f"learning rate {self.learning_rate:g} ({LR_RULE}): {start}, "
            f"{self.params['epochs']} epochs in all."
        )

    def _say(self, text: str) -> None:
        if self.params["verbose"] and self.role.is_chief:
            print(text, flush=True)


def _sums(labels: tf.Tensor, probabilities: tf.Tensor, per_example: tf.Tensor) -> tf.Tensor:
    """[loss sum, correct predictions, examples] of one replica's batch, as float32."""
    predicted = tf.argmax(probabilities, axis=-1, output_type=tf.int32)
    correct = tf.reduce_sum(tf.cast(tf.equal(predicted, labels), tf.float32))
    count = tf.cast(tf.size(labels), tf.float32)
    return tf.stack([tf.reduce_sum(tf.cast(per_example, tf.float32)), correct, count])


def _agree_on_overflow(optimizer: Any, grads: list[Any]) -> list[Any]:
    """Make every replica see an overflow when any replica's scaled gradients overflowed.

    LossScaleOptimizer checks for inf/NaN in each replica's own gradients, before they are summed
    across replicas. If one replica overflowed and another did not, the first would skip the
    update and the second would wait forever in its all-reduce. One scalar all-reduce makes the
    decision common: a NaN added to one gradient of every replica sends all of them down the
    skip-and-halve-the-scale path together.
    """
    finite = tf.cast(optimizer.check_finite(grads), tf.float32)
    overflows = tf.distribute.get_replica_context().all_reduce(SUM, 1.0 - finite)
    poison = tf.where(overflows > 0, float("nan"), 0.0)
    index = next(i for i, grad in enumerate(grads) if isinstance(grad, tf.Tensor))
    grads = list(grads)
    grads[index] = grads[index] + tf.cast(poison, grads[index].dtype)
    return grads


def _early_stopping(
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


def _describe_epoch(record: dict[str, Any], epochs: int) -> str:
    return (
        f"Epoch {record['epoch']}/{epochs}: loss {record['loss']:.4f}, accuracy "
        f"{record['accuracy']:.4f}, val_loss {record['val_loss']:.4f}, val_accuracy "
        f"{record['val_accuracy']:.4f}, {record['examples_per_sec']:.0f} examples/s "
        f"({record['seconds']:.1f} s)"
    )


def _tuning_summary(tuning: dict[str, Any] | None) -> dict[str, Any] | None:
    """What metrics/train.json keeps of tuning/best_hparams.json: the values and their score."""
    if tuning is None:
        return None
    keys = ("hparams", "objective", "score", "trial", "algorithm")
    return {key: tuning.get(key) for key in keys}


def _user_params(params: dict[str, Any]) -> dict[str, Any]:
    """The parameters as train() takes them, without what check_params adds."""
    return {key: params[key] for key in DEFAULTS}
