"""What 05_optimize takes and what it refuses, before any model is loaded.

`check(run_dir, params, inputs=False)` looks at the values only and costs nothing (the runner's
pre-flight check). With inputs=True it also looks at the run folder: data/, a readable
model.keras trained on that data, and an export/<version>/ that can be read and was made from
the model.keras there now. An export made from an earlier model would be benchmarked against a
model it is not: every backend would fail parity, or worse, pass it against the wrong reference.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .. import lineage
from ..artifacts import DATA_DIR, MODEL_FILE, StaleInputError, resolve_run_dir
from ..export.files import check_savedmodel, check_trained_model
from ..steps import param
from .base import CALIBRATION_EXAMPLES, PRECISIONS, OptimizeError, latest_export
from .registry import BACKENDS


@dataclass(frozen=True)
class Params:
    """05_optimize's parameters: its notebook's `parameters` cell, same names and defaults."""

    backends: str = param(",".join(BACKENDS), f"comma-separated, from {' '.join(BACKENDS)}")
    precisions: str = param(
        "fp32", "comma-separated, from fp32 fp16 int8 (int8 is opt-in: calibrated)"
    )
    batch_sizes: str = param(
        "1,32,256", "comma-separated whole numbers, 1 included (batch-1 latency)"
    )
    iterations: int = param(500, "most timed calls per backend and batch size (p99 from 100)")
    benchmark_seconds: float = param(
        2.0, "most seconds of timed calls per backend and batch size (whichever ends first)"
    )
    calibration_examples: int = param(CALIBRATION_EXAMPLES, "training examples that calibrate int8")


def check(run_dir: str | os.PathLike[str], params: Params, *, inputs: bool = True) -> None:
    """Refuse bad values, and with inputs=True missing, unreadable or stale inputs: one sentence."""
    parse(params)
    if not inputs:
        return
    folder = resolve_run_dir(run_dir, create=False)
    check_trained_model(folder, OptimizeError, needed_by="05_optimize")
    export_dir = latest_export(folder)
    check_savedmodel(export_dir, OptimizeError)
    check_export_current(folder, export_dir)


def plan(run_dir: str | os.PathLike[str], params: Params) -> dict[str, Any]:
    """The request as the step works on it: run_dir, export_dir (the latest version), backends,
    precisions and batch_sizes as lists, iterations, seconds, calibration_examples."""
    folder = resolve_run_dir(run_dir, create=False)
    return {"run_dir": folder, "export_dir": latest_export(folder), **parse(params)}


def parse(params: Params) -> dict[str, Any]:
    """The values, checked and split: lists of names and sizes, whole-number counts."""
    _whole(params.iterations, "iterations")
    _whole(params.calibration_examples, "calibration_examples")
    _positive(params.benchmark_seconds, "benchmark_seconds")
    return {
        "backends": _names(params.backends, BACKENDS, "backends"),
        "precisions": _names(params.precisions, PRECISIONS, "precisions"),
        "batch_sizes": _sizes(params.batch_sizes),
        "iterations": int(params.iterations),
        "seconds": float(params.benchmark_seconds),
        "calibration_examples": int(params.calibration_examples),
    }


def check_export_current(run_dir: str | os.PathLike[str], export_dir: Path) -> None:
    """Refuse an export whose recorded model.keras or data is not the one in the run folder now.

    An export without a lineage record (written by hand, or by an older project) cannot be
    checked and is taken as it is.
    """
    artifact = f"export/{export_dir.name}"
    changed = lineage.stale_inputs(run_dir, artifact)
    if not changed:
        return
    name = "model" if "model" in changed else changed[0]  # the nearer cause first
    older = {
        "model": f"an older {MODEL_FILE} than the one there now",
        "data": f"other data than {DATA_DIR}/ holds now",
    }
    raise StaleInputError(
        f"{artifact} in {resolve_run_dir(run_dir, create=False)} was made from "
        f"{older.get(name, f'an older {name}')}: re-run 04_export (a new version, "
        "or overwrite=true) before 05_optimize."
    )


def _names(value: str | Sequence[str], allowed: Sequence[str], label: str) -> list[str]:
    names = [part.strip() for part in value.split(",")] if isinstance(value, str) else value
    names = [name for name in names if name] if isinstance(names, list | tuple) else []
    bad = [name for name in names if name not in allowed]
    if bad or not names:
        raise OptimizeError(
            f"{label}={value!r} is not allowed: use a comma-separated list of {', '.join(allowed)}."
        )
    return list(dict.fromkeys(names))


def _sizes(value: str | Sequence[int]) -> list[int]:
    parts = value.split(",") if isinstance(value, str) else value
    try:
        sizes = [int(str(part).strip()) for part in parts]
    except (TypeError, ValueError):
        sizes = []
    if not sizes or any(size < 1 for size in sizes) or 1 not in sizes:
        raise OptimizeError(
            f"batch_sizes={value!r} is not allowed: use whole numbers >= 1, including 1 "
            "(batch-1 latency is what the comparison is about)."
        )
    return sorted(set(sizes))


def _whole(value: Any, label: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
        raise OptimizeError(f"{label}={value!r} is not allowed: use a whole number >= 1.")


def _positive(value: Any, label: str) -> None:
    number = isinstance(value, int | float | np.number) and not isinstance(value, bool)
    if not number or not value > 0:
        raise OptimizeError(f"{label}={value!r} is not allowed: use a number of seconds > 0.")
