"""What this TensorFlow was built for, the driver installed, and the table that says if they fit.

A pip wheel of TensorFlow is compiled for one CUDA and cuDNN release and supports a fixed range of
Pythons; the machine itself supplies only the NVIDIA driver, which must be new enough for that CUDA.
Most "TensorFlow sees no GPU" reports come down to one row of this table.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from typing import Any

import tensorflow as tf

from .devices import parse_capability

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
            raise ValueError(first_line(done.stdout + done.stderr))
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


def describe_build(build: dict[str, Any]) -> str:
    """The build as one line: CUDA, cuDNN, TensorRT and the GPU generations it has kernels for."""
    if not build.get("is_cuda_build"):
        return "CPU only (no CUDA support)"
    capabilities = ", ".join(build.get("cuda_compute_capabilities") or []) or "unknown"
    tensorrt = "with TensorRT" if build.get("is_tensorrt_build") else "without TensorRT"
    return (
        f"CUDA {build['cuda_version']}, cuDNN {build['cudnn_version']}, {tensorrt}, "
        f"kernels for {capabilities}"
    )


def first_line(text: Any) -> str:
    """The first line of a tool's answer or an error, for a one-line report."""
    lines = str(text).strip().splitlines()
    return lines[0] if lines else "no message"


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
    built = [capability for capability in map(parse_capability, codes) if capability]
    if not built:
        return []
    oldest = min(built)
    return [
        f"A GPU with compute capability {capability} is older than the oldest this TensorFlow "
        f"was built for ({oldest[0]}.{oldest[1]})."
        for capability in capabilities
        if capability and parse_capability(capability) < oldest
    ]


def _no_driver(message: str) -> dict[str, Any]:
    return {"found": False, "version": None, "gpus": [], "message": message}


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", text))


def _same_release(built: str, expected: str) -> bool:
    """12.5.1 matches 12.5, and 9 matches 9.3: compare as far as both are precise."""
    a, b = _version(built), _version(expected)
    return bool(a) and a[: len(b)] == b[: len(a)]
