"""Step 0, the environment check: what this machine offers TensorFlow, measured rather than assumed.

A GPU project fails in dull ways: a driver too old for the CUDA that TensorFlow was built with, a
Python the wheel does not support, one process reserving all GPU memory. This module finds those
before training does. On a machine without a GPU it says so and measures the CPU instead.

Order matters: call `configure_memory_growth()` before anything else runs a TensorFlow op.
"""

from __future__ import annotations

import os
import platform
import re
import shutil
import subprocess
import time
from typing import Any

import tensorflow as tf

# CUDA 12.x runs on any driver from this version on (Linux, CUDA minor-version compatibility).
MIN_DRIVER_CUDA12 = "525.60.13"

# What the pip wheels of each TensorFlow minor the template offers were built for (Linux).
# None of them is built with TensorRT (`is_tensorrt_build` is False since 2.18).
COMPATIBILITY: dict[str, dict[str, str]] = {
    minor: {
        "python_min": low,
        "python_max": high,
        "cuda": "12.5",
        "cudnn": cudnn,
        "min_driver": MIN_DRIVER_CUDA12,
    }
    for minor, low, high, cudnn in (
        ("2.18", "3.9", "3.12", "9.3"),
        ("2.19", "3.9", "3.12", "9.3"),
        ("2.20", "3.9", "3.13", "9.3"),
        ("2.21", "3.10", "3.13", "9"),
    )
}

CPU_POLICY = "float32"
CPU_POLICY_NOTE = (
    "float32 (mixed precision is slower on CPU; mixed_bfloat16 runs but only to test code paths)"
)
GPU_ADVICE = (
    "To use a GPU: on a Linux machine with an NVIDIA driver >= {driver}, install the gpu extra "
    '(pip install -e ".[gpu]"), or run the project\'s GPU docker image.'
)
_FORCED_GROWTH = {
    "true": "TensorFlow grows GPU memory as needed, whatever this switch says",
    "false": "TensorFlow reserves GPU memory up front, whatever this switch says",
}
_POLICY_ORDER = ("float32", "mixed_float16", "mixed_bfloat16")
_MAX_MATMUL_SIZE = 16384


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


def collect_report(
    matmul_size: int = 1024,
    matmul_repeats: int = 10,
    *,
    memory_growth: dict[str, Any] | None = None,
    xla: list[dict[str, Any]] | None = None,
    matmul: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """Everything step 0 knows, as one JSON-serializable dict (metrics/environment.json).

    Parts already measured (the notebook measures section by section) are passed in and reused.
    """
    check_matmul_parameters(matmul_size, matmul_repeats)
    memory_growth = memory_growth or configure_memory_growth()
    gpus = list_gpus()
    build, driver = build_info(), driver_info()
    python_version = platform.python_version()
    report: dict[str, Any] = {
        "gpu_available": bool(gpus),
        "device_used": "GPU" if gpus else "CPU",
        "gpus": gpus,
        "cpu": _cpu_info(),
        "tensorflow_version": tf.__version__,
        "python_version": python_version,
        "build": build,
        "driver": driver,
        "compatibility": check_compatibility(
            tf.__version__,
            python_version,
            driver["version"],
            build=build,
            compute_capabilities=[gpu["compute_capability"] for gpu in gpus],
        ),
        "memory_growth": memory_growth,
        "xla": xla if xla is not None else check_xla(),
        "mixed_precision": mixed_precision_support(gpus),
        "matmul": matmul if matmul is not None else time_matmul(matmul_size, matmul_repeats),
    }
    report["recommended_policy"] = recommended_policy(report["mixed_precision"], bool(gpus))
    report["verdict"] = verdict(report)
    return report


def format_report(report: dict[str, Any]) -> str:
    """The report as text for `doctor`: one line per finding, the verdict last."""
    compat = report["compatibility"]
    lines = [
        f"TensorFlow {report['tensorflow_version']} on Python {report['python_version']}",
        f"Build: {_describe_build(report['build'])}",
        f"Driver: {report['driver']['message']}",
        f"Compatibility: {compat['summary']}",
        f"Memory growth: {report['memory_growth']['message']}",
        "Devices: " + ", ".join(_describe_device(device) for device in _devices(report)),
    ]
    lines += [
        f"XLA on {row['device']}: {'ok' if row['ok'] else 'failed'}, {row['reason']}"
        for row in report["xla"]
    ]
    lines += [f"Precision on {row['device']}: {row['note']}" for row in report["mixed_precision"]]
    lines += [f"Matmul {describe_matmul(row)}" for row in report["matmul"]]
    lines += [f"Problem: {problem}" for problem in compat["problems"]]
    lines += [f"Note: {note}" for note in compat["notes"]]
    return "\n".join(lines + ["", f"Verdict: {report['verdict']}"])


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


def build_info() -> dict[str, Any]:
    """What this TensorFlow was compiled for: the CUDA/cuDNN it expects and the GPU generations."""
    info = tf.sysconfig.get_build_info()
    keys = (
        "cuda_version",
        "cudnn_version",
        "is_cuda_build",
        "is_tensorrt_build",
        "cuda_compute_capabilities",
    )
    return {key: info.get(key) for key in keys}


def driver_info() -> dict[str, Any]:
    """The installed NVIDIA driver, read from nvidia-smi; found False when there is none."""
    executable = shutil.which("nvidia-smi")
    if executable is None:
        return _no_driver("no NVIDIA driver found (nvidia-smi is not on PATH)")
    query = ["--query-gpu=driver_version,name,memory.total", "--format=csv,noheader"]
    try:
        done = subprocess.run([executable, *query], capture_output=True, text=True, timeout=30)
        if done.returncode != 0:
            raise ValueError(_first_line(done.stdout + done.stderr))
        gpus = parse_nvidia_smi(done.stdout)
    except (OSError, ValueError, subprocess.TimeoutExpired) as error:
        return _no_driver(f"no NVIDIA driver found (nvidia-smi failed: {error})")
    if not gpus:
        return _no_driver("no NVIDIA driver found (nvidia-smi lists no GPU)")
    version = gpus[0]["driver_version"]
    message = f"NVIDIA driver {version}, " + ", ".join(gpu["name"] for gpu in gpus)
    return {"found": True, "version": version, "gpus": gpus, "message": message}


def parse_nvidia_smi(text: str) -> list[dict[str, Any]]:
    """Parse `nvidia-smi --query-gpu=driver_version,name,memory.total --format=csv,noheader`."""
    gpus = []
    for line in filter(str.strip, text.splitlines()):
        parts = [part.strip() for part in line.split(",")]
        if len(parts) < 3 or not re.match(r"\d+\.\d+", parts[0]):
            raise ValueError(f"unexpected nvidia-smi line {line.strip()!r}")
        memory = re.match(r"(\d+)\s*MiB", parts[-1])
        gpus.append(
            {
                "driver_version": parts[0],
                "name": ", ".join(parts[1:-1]),
                "memory_total_mib": int(memory.group(1)) if memory else None,
            }
        )
    return gpus


def check_compatibility(
    tf_version: str,
    python_version: str,
    driver_version: str | None,
    build: dict[str, Any] | None = None,
    compute_capabilities: list[str | None] | None = None,
    table: dict[str, dict[str, str]] = COMPATIBILITY,
) -> dict[str, Any]:
    """Check Python, driver, build and GPUs against the table row of this TensorFlow minor."""
    minor = ".".join(tf_version.split(".")[:2])
    row = table.get(minor)
    result: dict[str, Any] = {
        "tensorflow": minor,
        "expected": row,
        "python_ok": None,
        "driver_ok": None,
        "problems": [],
        "notes": [],
    }
    problems, notes = result["problems"], result["notes"]
    if row is None:
        problems.append(
            f"TensorFlow {tf_version} is not in the compatibility table (it covers "
            f"{', '.join(table)}): Python, CUDA and driver were not checked."
        )
        result["summary"] = problems[0]
        return result
    python = _version(python_version)[:2]
    result["python_ok"] = _version(row["python_min"]) <= python <= _version(row["python_max"])
    if not result["python_ok"]:
        problems.append(
            f"Python {python_version} is outside what TensorFlow {minor} supports "
            f"({row['python_min']} to {row['python_max']})."
        )
    if driver_version is None:
        notes.append("No NVIDIA driver found, so TensorFlow can only use the CPU.")
    else:
        result["driver_ok"] = _version(driver_version) >= _version(row["min_driver"])
        if not result["driver_ok"]:
            problems.append(
                f"NVIDIA driver {driver_version} is older than {row['min_driver']}, "
                f"the minimum for CUDA {row['cuda']}: update the driver."
            )
    notes += _build_notes(row, build or {})
    problems += _capability_problems(compute_capabilities or [], build or {})
    result["summary"] = (
        f"TensorFlow {minor} expects Python {row['python_min']} to {row['python_max']}, "
        f"CUDA {row['cuda']}, cuDNN {row['cudnn']}, driver >= {row['min_driver']}: "
        + ("no problems found" if not problems else f"{len(problems)} problem(s)")
    )
    return result


def compatibility_table_markdown(table: dict[str, dict[str, str]] = COMPATIBILITY) -> str:
    """The compatibility table as Markdown, for the notebook and the docs."""
    lines = [
        "| TensorFlow | Python | CUDA | cuDNN | NVIDIA driver (Linux) | TensorRT in wheel |",
        "|---|---|---|---|---|---|",
    ]
    for minor, row in table.items():
        lines.append(
            f"| {minor} | {row['python_min']} to {row['python_max']} | {row['cuda']} | "
            f"{row['cudnn']} | >= {row['min_driver']} | no |"
        )
    return "\n".join(lines)


def check_xla(devices: list[str] | None = None) -> list[dict[str, Any]]:
    """Compile and run a tiny function with XLA on each device: ok, or failed with the reason."""
    return [_xla_on(device) for device in devices or device_names()]


def precision_support(compute_capability: str | tuple[int, int] | None) -> dict[str, Any]:
    """Which reduced precisions a GPU runs fast, and the Keras policy to use on it.

    Tensor Cores do float16 from compute capability 7.0 (Volta) and bfloat16 from 8.0 (Ampere).
    The recommended policy is the one training's precision="auto" picks: mixed_float16 from 7.0.
    bfloat16 keeps float32's range and needs no loss scaling: from 8.0 it is named as the option.
    """
    capability = _capability(compute_capability)
    if capability is None:
        return {
            "float16": False,
            "bfloat16": False,
            "policy": "float32",
            "note": "float32 (compute capability unknown)",
        }
    float16, bfloat16 = capability >= (7, 0), capability >= (8, 0)
    if bfloat16:
        policy = "mixed_float16"
        why = "float16 Tensor Cores, loss scaled automatically; mixed_bfloat16 also fast, unscaled"
    elif float16:
        policy, why = "mixed_float16", "float16 Tensor Cores; Keras scales the loss automatically"
    else:
        policy, why = "float32", "no Tensor Cores, so mixed precision would not be faster"
    return {"float16": float16, "bfloat16": bfloat16, "policy": policy, "note": f"{policy} ({why})"}


def mixed_precision_support(gpus: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The precision rule applied to the CPU and to each GPU."""
    cpu = {
        "device": "CPU:0",
        "compute_capability": None,
        "float16": False,
        "bfloat16": False,
        "policy": CPU_POLICY,
        "note": CPU_POLICY_NOTE,
    }
    return [cpu] + [
        {
            "device": gpu["device"],
            "compute_capability": gpu["compute_capability"],
            **precision_support(gpu["compute_capability"]),
        }
        for gpu in gpus
    ]


def recommended_policy(mixed_precision: list[dict[str, Any]], gpu_available: bool) -> str:
    """One policy for the whole run: the weakest GPU decides, since all replicas share it."""
    if not gpu_available:
        return CPU_POLICY
    policies = [row["policy"] for row in mixed_precision if row["device"].startswith("GPU")]
    return min(policies, key=_POLICY_ORDER.index)


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


def check_matmul_parameters(size: Any, repeats: Any) -> None:
    """Refuse a bad timing size or count with one sentence, before any work starts."""
    if isinstance(size, bool) or not isinstance(size, int) or not 1 <= size <= _MAX_MATMUL_SIZE:
        raise ValueError(
            f"matmul_size={size!r} is not allowed: use a whole number from 1 to {_MAX_MATMUL_SIZE}."
        )
    if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 1:
        raise ValueError(f"matmul_repeats={repeats!r} is not allowed: use a whole number >= 1.")


def describe_matmul(row: dict[str, Any]) -> str:
    """One timing as text: size, device, GFLOP/s and, for a GPU, the ratio to the CPU."""
    ratio = row.get("speedup_vs_cpu")
    versus = f", {ratio:.1f}x the CPU" if ratio and not row["device"].startswith("CPU") else ""
    size = row["size"]
    return f"{size}x{size} float32 on {row['device']}: {row['gflops']:.1f} GFLOP/s{versus}"


def device_names() -> list[str]:
    """Short names ("CPU:0", "GPU:0", ...) of the physical devices, for tf.device."""
    devices = tf.config.list_physical_devices("CPU") + tf.config.list_physical_devices("GPU")
    return [device.name.removeprefix("/physical_device:") for device in devices]


def verdict(report: dict[str, Any]) -> str:
    """The answer in a few sentences: which device runs the notebooks, and what to fix."""
    compat = report["compatibility"]
    problems = " ".join(compat["problems"])
    if not report["gpu_available"]:
        parts = [
            "No GPU — running on CPU: every notebook still runs, only slower.",
            _why_no_gpu(report),
            GPU_ADVICE.format(driver=MIN_DRIVER_CUDA12),
        ]
        return " ".join(parts + ([f"Also: {problems}"] if problems else []))
    gpus = report["gpus"]
    models = sorted(
        {f"{gpu['model']} (compute capability {gpu['compute_capability']})" for gpu in gpus}
    )
    policy = report.get("recommended_policy") or recommended_policy(report["mixed_precision"], True)
    parts = [
        f"{len(gpus)} GPU(s): {', '.join(models)}.",
        f"Recommended precision policy: {policy}.",
        f"Problems: {problems}" if problems else "No problems found.",
    ]
    growth = report["memory_growth"]
    if growth["status"] == "already initialized" and growth["TF_FORCE_GPU_ALLOW_GROWTH"] != "true":
        parts.append("Memory growth could not be switched on (see above).")
    return " ".join(parts)


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
            "reason": f"{type(error).__name__}: {_first_line(error)}",
        }
    if value != 128.0:
        return {"device": device, "ok": False, "reason": f"wrong result {value}, expected 128.0"}
    return {"device": device, "ok": True, "reason": "a jit_compile=True function compiled and ran"}


def _build_notes(row: dict[str, str], build: dict[str, Any]) -> list[str]:
    if not build:
        return []
    if not build.get("is_cuda_build"):
        return ["This TensorFlow is not a CUDA build, so it cannot use NVIDIA GPUs."]
    notes = []
    for key, label in (("cuda", "CUDA"), ("cudnn", "cuDNN")):
        built = str(build.get(f"{key}_version") or "")
        if not _same_release(built, row[key]):
            notes.append(
                f"This TensorFlow was built for {label} {built}, the table says "
                f"{row[key]}: not a standard pip wheel?"
            )
    return notes


def _capability_problems(capabilities: list[str | None], build: dict[str, Any]) -> list[str]:
    codes = build.get("cuda_compute_capabilities") or []
    built = [capability for capability in map(_capability, codes) if capability]
    if not built:
        return []
    oldest = min(built)
    return [
        f"A GPU with compute capability {capability} is older than the oldest this TensorFlow "
        f"was built for ({oldest[0]}.{oldest[1]})."
        for capability in capabilities
        if capability and _capability(capability) < oldest
    ]


def _why_no_gpu(report: dict[str, Any]) -> str:
    if not report["build"].get("is_cuda_build"):
        return "This TensorFlow build has no CUDA support."
    if report["driver"]["found"]:
        version = report["driver"]["version"]
        return (
            f"An NVIDIA driver ({version}) is installed but TensorFlow sees no GPU: usually the "
            "CUDA libraries are missing, or the GPU is older than this TensorFlow supports "
            "(TensorFlow's log says which)."
        )
    return "No NVIDIA driver was found."


def _devices(report: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"device": report["cpu"]["device"], "model": report["cpu"]["machine"]}, *report["gpus"]]


def _describe_device(device: dict[str, Any]) -> str:
    capability = device.get("compute_capability")
    suffix = f", compute capability {capability}" if capability else ""
    return f"{device['device']} ({device['model']}{suffix})"


def _cpu_info() -> dict[str, Any]:
    return {
        "device": "CPU:0",
        "machine": platform.machine() or "unknown",
        "system": platform.system(),
        "cores": os.cpu_count(),
    }


def _no_driver(message: str) -> dict[str, Any]:
    return {"found": False, "version": None, "gpus": [], "message": message}


def _capability(value: str | tuple[int, int] | list[int] | None) -> tuple[int, int] | None:
    """Read "8.6", "sm_86", (8, 6) or [8, 6] as (8, 6); None when unknown."""
    if value is None:
        return None
    if isinstance(value, str):
        numbers = [int(part) for part in re.findall(r"\d+", value)]
        if len(numbers) == 1 and numbers[0] >= 10:  # "sm_86" style
            numbers = [numbers[0] // 10, numbers[0] % 10]
        value = numbers
    return (int(value[0]), int(value[1])) if len(value) >= 2 else None


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", text))


def _same_release(built: str, expected: str) -> bool:
    """12.5.1 matches 12.5, and 9 matches 9.3: compare as far as both are precise."""
    a, b = _version(built), _version(expected)
    return bool(a) and a[: len(b)] == b[: len(a)]


def _describe_build(build: dict[str, Any]) -> str:
    if not build.get("is_cuda_build"):
        return "CPU only (no CUDA support)"
    capabilities = ", ".join(build.get("cuda_compute_capabilities") or []) or "unknown"
    tensorrt = "with TensorRT" if build.get("is_tensorrt_build") else "without TensorRT"
    return (
        f"CUDA {build['cuda_version']}, cuDNN {build['cudnn_version']}, {tensorrt}, "
        f"kernels for {capabilities}"
    )


def _first_line(text: Any) -> str:
    lines = str(text).strip().splitlines()
    return lines[0] if lines else "no message"
