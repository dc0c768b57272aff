"""Devices, distribution strategy, precision and XLA: the switches that decide how training runs.

Order matters: `configure_devices` must run before any TensorFlow op (logical devices and memory
growth cannot change once TensorFlow has initialized its devices), and `make_strategy` must run
before the model is built (variables are created inside `strategy.scope()`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import Any

import keras
import tensorflow as tf

from .. import env
from .params import Cluster, TrainError, parse_jit, read_tf_config, resolve_strategy


def configure_devices(logical_cpus: int = 0) -> dict[str, Any]:
    """Switch on GPU memory growth and split the CPU into `logical_cpus` logical devices.

    With logical_cpus > 1, MirroredStrategy can run (and be tested) with several replicas on a
    machine without GPUs: each logical CPU holds one replica, all sharing the same cores, so this
    shows the code path, not a speed-up. In a process where TensorFlow has already initialized
    its devices (a notebook that ran other cells first) a different split is refused, naming the
    fix; the same split again is fine.
    """
    growth = env.configure_memory_growth()
    cpu = tf.config.list_physical_devices("CPU")[0]
    if logical_cpus > 1:
        try:
            tf.config.set_logical_device_configuration(
                cpu, [tf.config.LogicalDeviceConfiguration() for _ in range(logical_cpus)]
            )
        except RuntimeError:
            existing = len(tf.config.list_logical_devices("CPU"))
            if existing != logical_cpus:
                raise TrainError(
                    f"logical_cpus={logical_cpus} cannot be set: TensorFlow already initialized "
                    f"its devices in this process with {existing} logical CPU(s); restart the "
                    "kernel and train first, or run the `train` command in a new process."
                ) from None
    return {
        "logical_cpus": len(tf.config.get_logical_device_configuration(cpu) or [cpu]),
        "gpus": len(tf.config.list_physical_devices("GPU")),
        "memory_growth": growth["message"],
    }


def make_strategy(name: str = "auto", logical_cpus: int = 0) -> tf.distribute.Strategy:
    """The tf.distribute strategy `name` stands for on this machine (see params.resolve_strategy).

    Mirrored uses every GPU or, without GPUs, every logical CPU that configure_devices made.
    MultiWorkerMirroredStrategy reads TF_CONFIG and waits here until every worker has started.
    """
    gpus = tf.config.list_physical_devices("GPU")
    cluster = read_tf_config()
    resolved = resolve_strategy(name, logical_cpus, gpus=len(gpus), cluster=cluster)
    if resolved == "multi_worker":
        if cluster is None:
            raise TrainError("strategy='multi_worker' needs TF_CONFIG in the environment.")
        return tf.distribute.MultiWorkerMirroredStrategy()
    if resolved == "mirrored":
        if gpus:
            return tf.distribute.MirroredStrategy()
        devices = [device.name for device in tf.config.list_logical_devices("CPU")]
        return tf.distribute.MirroredStrategy(devices=devices)
    if resolved == "one_device":
        return tf.distribute.OneDeviceStrategy("/gpu:0" if gpus else "/cpu:0")
    return tf.distribute.get_strategy()


def resolve_precision(name: str, gpus: Sequence[dict[str, Any] | str | None]) -> str:
    """The Keras dtype policy for `name`: "auto" is mixed_float16 when every GPU has float16
    Tensor Cores (compute capability >= 7.0, env's rule), float32 otherwise and on the CPU.

    `gpus` are env.list_gpus() rows (or their compute capabilities). On Ampere and newer
    mixed_bfloat16 is as fast and needs no loss scaling: ask for it by name.
    """
    if name != "auto":
        return name
    rows = [
        {
            "device": f"GPU:{index}",
            "compute_capability": gpu.get("compute_capability") if isinstance(gpu, dict) else gpu,
        }
        for index, gpu in enumerate(gpus)
    ]
    return env.recommended_policy(env.mixed_precision_support(rows), gpu_available=bool(rows))


def resolve_jit(value: str | bool, gpus: Sequence[Any]) -> bool:
    """Whether the train step is XLA-compiled: "auto" means on GPUs only.

    XLA fuses the many small ops of a step into a few kernels, which pays on a GPU; on a 2-core
    CPU it made this kind of model about 0.55x as fast, so the CPU runs without it.
    """
    jit = parse_jit(value)
    return bool(gpus) if jit == "auto" else jit


@contextlib.contextmanager
def dtype_policy(name: str) -> Iterator[keras.DTypePolicy]:
    """Set Keras' global dtype policy for the models built inside; restore the old one after.

    Restoring keeps a notebook's later cells (and other tests) in the precision they expect.
    """
    previous = keras.mixed_precision.dtype_policy()
    keras.mixed_precision.set_dtype_policy(name)
    try:
        yield keras.mixed_precision.dtype_policy()
    finally:
        keras.mixed_precision.set_dtype_policy(previous)


def worker_role(strategy: tf.distribute.Strategy) -> Cluster:
    """Which worker this process is (a single process is the chief of a one-worker cluster)."""
    cluster = read_tf_config()
    if isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy) and cluster is not None:
        return cluster
    return Cluster(workers=1, task_type="chief", task_index=0)


def strategy_name(strategy: tf.distribute.Strategy) -> str:
    """The strategy's public class name, as train.json reports it ("MirroredStrategy").

    TensorFlow's MultiWorkerMirroredStrategy object is a CollectiveAllReduceStrategy and its
    default strategy a _DefaultDistributionStrategy: the names users know are reported instead.
    """
    if isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy):
        return "MultiWorkerMirroredStrategy"
    return type(strategy).__name__.lstrip("_")
