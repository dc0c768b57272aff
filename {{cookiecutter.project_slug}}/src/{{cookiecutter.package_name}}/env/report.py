"""Everything step 0 knows as one report, its text for `doctor`, and the verdict that matters:
which device the next notebooks will use, and what, if anything, to fix."""

from __future__ import annotations

import platform
from typing import Any

import tensorflow as tf

from .devices import configure_memory_growth, cpu_info, list_gpus
from .precision import mixed_precision_support, recommended_policy
from .timing import check_matmul_parameters, check_xla, describe_matmul, time_matmul
from .versions import (
    MIN_DRIVER_CUDA12,
    build_info,
    check_compatibility,
    describe_build,
    driver_info,
)

GPU_ADVICE = (
    "To use a GPU: on a Linux machine with an NVIDIA driver >= {driver}, install the gpu extra "
    '(pip install -e ".[gpu]").'
)


def collect_report(
    matmul_size: int = 1024,
    matmul_repeats: int = 10,
    *,
    memory_growth: dict[str, Any] | None = None,
    xla: list[dict[str, Any]] | None = None,
    matmul: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """Everything step 0 knows, as one JSON-serializable dict (metrics/environment.json).

    Parts already measured are passed in and reused, so nothing is measured twice.
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
        "cpu": cpu_info(),
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
        f"Build: {describe_build(report['build'])}",
        f"Driver: {report['driver']['message']}",
        f"Compatibility: {compat['summary']}",
        f"Memory growth: {report['memory_growth']['message']}",
        "Devices: " + ", ".join(describe_device(device) for device in devices(report)),
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


def xla_table(report: dict[str, Any]) -> str:
    """The XLA check as a Markdown table: one row per device, ok or failed, and why."""
    rows = ["| device | XLA | why |", "|---|---|---|"]
    for row in report["xla"]:
        reason = str(row["reason"]).replace("|", "\\|").replace("\n", " ")
        rows.append(f"| {row['device']} | {'ok' if row['ok'] else 'failed'} | {reason} |")
    return "\n".join(rows)


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


def devices(report: dict[str, Any]) -> list[dict[str, Any]]:
    """The CPU and every GPU of a report, as rows with a device name and a model."""
    return [{"device": report["cpu"]["device"], "model": report["cpu"]["machine"]}, *report["gpus"]]


def describe_device(device: dict[str, Any]) -> str:
    """One device as text: "GPU:0 (Tesla T4, compute capability 7.5)"."""
    capability = device.get("compute_capability")
    suffix = f", compute capability {capability}" if capability else ""
    return f"{device['device']} ({device['model']}{suffix})"


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
