"""The devices TensorFlow sees, and memory growth: the one setting that must come before any op.

Listing devices does not initialize them, so everything here is safe to call first; memory growth
must be, because TensorFlow refuses to change it once a GPU is in use.
"""

from __future__ import annotations

import os
import platform
import re
from typing import Any

import tensorflow as tf

_FORCED_GROWTH = {
    "true": "TensorFlow grows GPU memory as needed, whatever this switch says",
    "false": "TensorFlow reserves GPU memory up front, whatever this switch says",
}


def configure_memory_growth() -> dict[str, Any]:
    """Let TensorFlow take GPU memory as it needs it, not reserve nearly all of it at start.

    This must run before any TensorFlow op initializes the GPUs; afterwards TensorFlow refuses
    (RuntimeError), which is reported here rather than raised. The alternative that needs no code is
    the environment variable TF_FORCE_GPU_ALLOW_GROWTH=true, set before Python starts; when set, it
    overrides this switch. Calling this again is harmless.
    """
    gpus = tf.config.list_physical_devices("GPU")
    env_value = os.environ.get("TF_FORCE_GPU_ALLOW_GROWTH")
    error = None
    for gpu in gpus:
        try:
            tf.config.experimental.set_memory_growth(gpu, True)
        except RuntimeError as exc:
            error = exc
            break
    enabled = {gpu.name: bool(tf.config.experimental.get_memory_growth(gpu)) for gpu in gpus}
    if not gpus:
        status, message = "no GPU", "No GPU visible: memory growth only applies to GPUs."
    elif error is not None:
        status = "already initialized"
        message = (
            f"GPUs were initialized before memory growth could be set ({error}), so TensorFlow "
            "keeps reserving most GPU memory: call configure_memory_growth() before any "
            "TensorFlow op (restart the kernel), or set TF_FORCE_GPU_ALLOW_GROWTH=true."
        )
    else:
        status, message = "enabled", f"Memory growth on for {len(gpus)} GPU(s)."
    if env_value in _FORCED_GROWTH:
        message += f" TF_FORCE_GPU_ALLOW_GROWTH={env_value} is set: {_FORCED_GROWTH[env_value]}."
    return {
        "status": status,
        "enabled": enabled,
        "TF_FORCE_GPU_ALLOW_GROWTH": env_value,
        "message": message,
    }


def list_gpus() -> list[dict[str, Any]]:
    """The GPUs TensorFlow sees, with model and compute capability ("8.6"), without using them."""
    gpus = []
    for gpu in tf.config.list_physical_devices("GPU"):
        details = tf.config.experimental.get_device_details(gpu)
        capability = details.get("compute_capability")
        gpus.append(
            {
                "device": gpu.name.removeprefix("/physical_device:"),
                "name": gpu.name,
                "model": details.get("device_name", "unknown GPU"),
                "compute_capability": f"{capability[0]}.{capability[1]}" if capability else None,
            }
        )
    return gpus


def device_names() -> list[str]:
    """Short names ("CPU:0", "GPU:0", ...) of the physical devices, for tf.device."""
    devices = tf.config.list_physical_devices("CPU") + tf.config.list_physical_devices("GPU")
    return [device.name.removeprefix("/physical_device:") for device in devices]


def cpu_info() -> dict[str, Any]:
    """The CPU as the report names it: device, machine, system and core count."""
    return {
        "device": "CPU:0",
        "machine": platform.machine() or "unknown",
        "system": platform.system(),
        "cores": os.cpu_count(),
    }


def parse_capability(value: str | tuple[int, int] | list[int] | None) -> tuple[int, int] | None:
    """Read "8.6", "sm_86", (8, 6) or [8, 6] as (8, 6); None when unknown."""
    if value is None:
        return None
    if isinstance(value, str):
        numbers = [int(part) for part in re.findall(r"\d+", value)]
        if len(numbers) == 1 and numbers[0] >= 10:  # "sm_86" style
            numbers = [numbers[0] // 10, numbers[0] % 10]
        value = numbers
    return (int(value[0]), int(value[1])) if len(value) >= 2 else None
