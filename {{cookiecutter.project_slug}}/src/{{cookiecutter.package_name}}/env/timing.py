"""What each device computes, measured in this run: an XLA compile and a float32 matmul timing.

Rather than trust that XLA is there, a tiny function is compiled on each device; rather than quote
a datasheet, a matrix product is timed, and each device's speed is given as a ratio to the CPU
measured in the same run, the only comparison that holds across machines and loads.
"""

from __future__ import annotations

import time
from typing import Any

import tensorflow as tf

from ..artifacts import StepError
from .devices import device_names
from .versions import first_line

MAX_MATMUL_SIZE = 16384


class EnvError(StepError):
    """A bad setting for the environment check: one sentence naming the value and what is allowed.

    Nothing was measured or written.
    """


def check_matmul_parameters(size: Any, repeats: Any) -> None:
    """Refuse a bad timing size or count with one sentence, before any work starts."""
    if isinstance(size, bool) or not isinstance(size, int) or not 1 <= size <= MAX_MATMUL_SIZE:
        raise EnvError(
            f"matmul_size={size!r} is not allowed: use a whole number from 1 to {MAX_MATMUL_SIZE}."
        )
    if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 1:
        raise EnvError(f"matmul_repeats={repeats!r} is not allowed: use a whole number >= 1.")


def check_xla(devices: list[str] | None = None) -> list[dict[str, Any]]:
    """Compile and run a tiny function with XLA on each device: ok, or failed with the reason."""
    return [_xla_on(device) for device in devices or device_names()]


def time_matmul(
    size: int = 1024, repeats: int = 10, devices: list[str] | None = None
) -> list[dict[str, Any]]:
    """GFLOP/s of an n x n float32 matmul per device: one warm-up, then `repeats` timed runs.

    Each device also gets its speed as a ratio to the CPU, measured in the same run.
    """
    check_matmul_parameters(size, repeats)
    rows = [_time_matmul_on(device, size, repeats) for device in devices or device_names()]
    cpu = next((row["gflops"] for row in rows if row["device"].startswith("CPU")), None)
    for row in rows:
        row["speedup_vs_cpu"] = row["gflops"] / cpu if cpu else None
    return rows


def describe_matmul(row: dict[str, Any]) -> str:
    """One timing as text: size, device, GFLOP/s and, for a GPU, the ratio to the CPU."""
    ratio = row.get("speedup_vs_cpu")
    versus = f", {ratio:.1f}x the CPU" if ratio and not row["device"].startswith("CPU") else ""
    size = row["size"]
    return f"{size}x{size} float32 on {row['device']}: {row['gflops']:.1f} GFLOP/s{versus}"


def _time_matmul_on(device: str, size: int, repeats: int) -> dict[str, Any]:
    with tf.device(f"/{device}"):
        a = tf.random.uniform((size, size), dtype=tf.float32, seed=1)
        b = tf.random.uniform((size, size), dtype=tf.float32, seed=2)
        float(tf.reduce_sum(tf.matmul(a, b)))  # warm-up: kernel choice and memory allocation
        start = time.perf_counter()
        for _ in range(repeats):
            product = tf.matmul(a, b)
        float(tf.reduce_sum(product))  # copies a number back, so queued GPU work has finished
        seconds = time.perf_counter() - start
    return {
        "device": device,
        "placed_on": product.device.rsplit("device:", 1)[-1],
        "size": size,
        "repeats": repeats,
        "seconds_per_matmul": seconds / repeats,
        "gflops": 2 * size**3 * repeats / max(seconds, 1e-9) / 1e9,
    }


def _xla_on(device: str) -> dict[str, Any]:
    @tf.function(jit_compile=True, autograph=False)
    def squares_plus_one(x: tf.Tensor) -> tf.Tensor:
        return tf.reduce_sum(x * x + 1.0)

    try:
        with tf.device(f"/{device}"):
            value = float(squares_plus_one(tf.ones((8, 8))))
    except Exception as error:  # XLA reports many error types; the reason is what matters
        return {
            "device": device,
            "ok": False,
            "reason": f"{type(error).__name__}: {first_line(error)}",
        }
    if value != 128.0:
        return {"device": device, "ok": False, "reason": f"wrong result {value}, expected 128.0"}
    return {"device": device, "ok": True, "reason": "a jit_compile=True function compiled and ran"}
