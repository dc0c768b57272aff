"""The finders' measurements: real training steps of the run's model, precision and strategy.

A batch-size probe builds the model and its optimizer inside the strategy's scope (under the dtype
policy in force), feeds it the run's own training pipeline at that global batch (on GPUs every
batch padded to the longest input, where its length varies), runs one step to trace and warm up,
then times a few more. Out of device memory is an answer, not a failure: the
probe says so and the finder bisects. TensorFlow does not always call it ResourceExhaustedError:
running out during the host-to-device copy is InternalError "Dst tensor is not initialized", and
cuDNN or XLA autotuning that cannot allocate is UnknownError or InternalError (OOM_SIGNS); any
other error is a bug and propagates. On GPUs the peak of device memory during the probe is read
from TensorFlow's allocator.

Under MirroredStrategy on GPUs a probe trains one replica (OneDeviceStrategy on the first GPU)
at the per-replica batch, and its rate is multiplied by the replicas. Each GPU holds the same
per-replica model, activations and optimizer state, so what fits one fits all; but a replica
that runs out of memory while the others wait in NCCL's all-reduce hangs them, and no timeout
reaches inside a collective (the time budget is checked between probes). One replica has no
collective, so out of memory is raised at once. A probe in a subprocess with a timeout was the
other way: it would start TensorFlow for every probe and share the GPUs with this process, which
already holds them. NCCL's own buffers are not in the probe: the finder's 10 % margin covers
them. A learning-rate step is one real training step of a fresh copy of the model at the learning
rate it is given.

Each probe builds and drops its own model, so nothing it made reaches the training that follows.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import keras
import numpy as np
import tensorflow as tf

from ..replica import make_train_steps
from ..tasks import current as task
from .search import Probe

PROBE_STEPS = 5  # timed steps per batch size, after one that traces
HOST_SHARE = 0.5  # of the memory available now, what the CPU finder lets a batch's work take
# Words in an InternalError's or UnknownError's message that mean the device ran out of memory:
# the host-to-device copy that could not allocate its destination, cuDNN that could not
# allocate its workspace or handle, cuBLAS that could not allocate its handle or workspace
# ("failed to create cublas handle: CUBLAS_STATUS_ALLOC_FAILED"), XLA's allocator and autotuner,
# the CUDA driver.
OOM_SIGNS = (
    "dst tensor is not initialized",
    "out of memory",
    "resource_exhausted",
    "resource exhausted",
    "cudnn_status_alloc_failed",
    "cudnn_status_not_initialized",
    "cudnn failed to initialize",
    "cublas_status_alloc_failed",
    "failed to create cublas handle",
    "failed to allocate",
)


class Trainer:
    """A model, its optimizer and its step function at one global batch, fed by the pipeline."""

    def __init__(
        self,
        folder: Path,
        meta: dict[str, Any],
        params: Any,
        strategy: Any,
        batch: int,
        *,
        loss_scaling: bool,
        jit: bool,
        learning_rate: float = 1e-3,
        longest: bool = False,
    ) -> None:
        keras.utils.set_random_seed(params.seed)
        with strategy.scope():
            self.model = task().build_model(
                params.model,
                meta,
                width=params.width,
                dropout=params.dropout,
                **task().models.values(params),
            )
            optimizer = keras.optimizers.Adam(learning_rate)
            if loss_scaling:
                optimizer = keras.optimizers.LossScaleOptimizer(optimizer)
            optimizer.build(self.model.trainable_variables)
        self.optimizer = optimizer
        self.steps = make_train_steps(
            strategy,
            self.model,
            optimizer,
            task=task(),
            global_batch=batch,
            loss_scaling=loss_scaling,
            jit=jit,
            timed=False,
        )

        pad = task().models.longest_batches if longest else None

        def dataset(context: tf.distribute.InputContext) -> tf.data.Dataset:
            data = task().build_inputs(
                folder,
                "train",
                batch,
                seed=params.seed,
                repeat=True,
                drop_remainder=True,
                input_context=context,
            )
            return pad(data, meta) if pad is not None else data

        self.iterator = iter(strategy.distribute_datasets_from_function(dataset))

    def run(self, steps: int) -> np.ndarray:
        """[loss sum, correct, examples] of `steps` steps, waited for."""
        totals, _ = self.steps(self.iterator, tf.constant(steps))
        return totals.numpy()


@contextlib.contextmanager
def quiet_retracing() -> Iterator[None]:
    """Every probe builds its own model and step function, by design: TensorFlow's warning that
    "5 out of the last 9 calls … triggered tf.function retracing" would only be noise here."""
    logger = tf.get_logger()
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


def device_kind() -> str:
    """ "gpu" when TensorFlow sees a GPU (the finder bisects memory), else "cpu" (throughput)."""
    return "gpu" if tf.config.list_logical_devices("GPU") else "cpu"


def batch_probe(
    folder: Path, meta: dict[str, Any], params: Any, strategy: Any, *, loss_scaling: bool, jit: bool
) -> Callable[[int], Probe]:
    """probe(batch) → Probe: examples/s of PROBE_STEPS steps, peak GPU memory, or out of memory.

    On GPUs with several replicas, one replica is probed at batch / replicas (module docstring).
    """
    gpus = [f"GPU:{index}" for index, _ in enumerate(tf.config.list_logical_devices("GPU"))]
    replicas = strategy.num_replicas_in_sync
    single = one_replica(strategy) if replicas > 1 and device_kind() == "gpu" else None
    probed, share = (single, replicas) if single is not None else (strategy, 1)
    note = f"one replica of {replicas} probed, its rate x {replicas}" if share > 1 else ""
    memory = device_kind() == "gpu"  # probed at the longest shape; the CPU's throughput on the mix

    def probe(batch: int) -> Probe:
        started = time.perf_counter()
        trainer = None
        try:
            for device in gpus:
                tf.config.experimental.reset_memory_stats(device)
            trainer = Trainer(
                folder,
                meta,
                params,
                probed,
                batch // share,
                loss_scaling=loss_scaling,
                jit=jit,
                longest=memory,
            )
            trainer.run(1)  # traces the step function, fills the pipeline
            timed = time.perf_counter()
            trainer.run(PROBE_STEPS)
            rate = batch * PROBE_STEPS / (time.perf_counter() - timed)
            peak = max(
                (tf.config.experimental.get_memory_info(d)["peak"] for d in gpus), default=None
            )
            return Probe(batch, True, rate, peak, time.perf_counter() - started, note)
        except (
            tf.errors.ResourceExhaustedError,
            tf.errors.InternalError,
            tf.errors.UnknownError,
        ) as error:
            why = out_of_memory(error)
            if why is None:
                raise
            return Probe(batch, False, None, None, time.perf_counter() - started, why)
        finally:
            del trainer
            gc.collect()

    return probe


def out_of_memory(error: Exception) -> str | None:
    """The probe's note when `error` means the device ran out of memory, else None (a bug)."""
    if isinstance(error, tf.errors.ResourceExhaustedError):
        return "out of memory"
    message = str(getattr(error, "message", "") or error)
    if any(sign in message.lower() for sign in OOM_SIGNS):
        first = message.strip().splitlines()[0][:120] if message.strip() else ""
        return f"out of memory ({type(error).__name__}: {first})"
    return None


def one_replica(strategy: Any) -> Any:
    """A one-device strategy on the strategy's first replica's device."""
    return tf.distribute.OneDeviceStrategy(strategy.extended.worker_devices[0])


def lr_step(
    folder: Path,
    meta: dict[str, Any],
    params: Any,
    strategy: Any,
    batch: int,
    *,
    loss_scaling: bool,
    jit: bool,
) -> Callable[[float], float]:
    """step(learning_rate) → the loss of one training step of a fresh model at that rate."""
    trainer = Trainer(folder, meta, params, strategy, batch, loss_scaling=loss_scaling, jit=jit)

    def step(learning_rate: float) -> float:
        trainer.optimizer.learning_rate = learning_rate
        loss, _, count = trainer.run(1)
        return float(loss / count)

    return step


def bytes_per_example(model_name: str, meta: dict[str, Any], params: Any) -> int:
    """A rough host-memory cost of one example in a training step: every layer's output, kept
    for the backward pass and matched by its gradient, at 4 bytes a value."""
    model = task().build_model(
        model_name,
        meta,
        width=params.width,
        dropout=params.dropout,
        **task().models.values(params),
    )
    longest = task().models.longest(meta)  # a length the model leaves open (text: max_tokens)
    values = sum(  # a layer with several outputs (a table's columns: numbers and ids) counts each
        int(np.prod([side or longest for side in output.shape[1:]]))
        for layer in model.layers
        if hasattr(layer, "output") and layer.output is not None
        for output in keras.tree.flatten(layer.output)
    )
    del model
    gc.collect()
    return max(1, values) * 4 * 2


def device_bytes() -> int | None:
    """The memory of the smallest GPU this process's CUDA sees (a probe runs on the first, every
    replica holds the same): the batch finder aims its search with it. None without a GPU."""
    from ..observe.gpu import cuda_memory_bytes

    sizes = cuda_memory_bytes()
    return min(sizes) if sizes else None


def host_budget_bytes() -> int | None:
    """HOST_SHARE of the memory available now (Linux and macOS), or None where unknown."""
    try:
        pages = os.sysconf("SC_AVPHYS_PAGES")
        size = os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None
    return int(pages * size * HOST_SHARE) if pages > 0 and size > 0 else None
