"""Drawing a step's figures into run_dir/figures/, each one on its own: a failure is a sentence."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..artifacts import FIGURES, figure_path, resolve_run_dir
from . import data, environment, optimize, train

# (run_dir, metrics, path) -> path; None when the metrics hold nothing to draw (no file then).
# Drawn from the metrics alone; a figure that reads the data or the export back is the step's
# own drawer (the task's Data.drawers, export.entry.DRAWERS), which hands figures the
# arrays it read.
Drawer = Callable[[Path, dict[str, Any], Path], "Path | None"]

DRAWERS: dict[str, Drawer] = {
    "environment_matmul": lambda _, metrics, path: environment.plot_matmul(metrics, path),
    "data_throughput": lambda _, metrics, path: data.plot_throughput(metrics, path),
    "data_classes": lambda _, metrics, path: data.plot_classes(metrics, path),
    "train_curves": lambda _, metrics, path: train.plot_curves(metrics, path),
    "optimize_latency": lambda _, metrics, path: optimize.plot_latency(metrics, path),
    "optimize_throughput": lambda _, metrics, path: optimize.plot_throughput(metrics, path),
}


def save(
    run_dir: str | os.PathLike[str],
    step: str,
    metrics: dict[str, Any],
    *,
    say: Callable[[str], Any] = print,
    drawers: dict[str, Drawer] | None = None,
) -> list[str]:
    """Draw the step's figures that this package (or `drawers`, an optional part's) draws;
    return their run-relative paths.

    The finders' figures (batch_finder, lr_finder), drawn while training, are listed when this
    run's training used them (their source in the metrics' parameter_sources says so).
    """
    folder = resolve_run_dir(run_dir)
    written = []
    for name in FIGURES.get(step, ()):
        if name in DRAWERS or name in (drawers or {}):
            path = draw(folder, name, metrics, say=say, drawer=(drawers or {}).get(name))
        else:
            path = _drawn_elsewhere(folder, name, metrics)
        if path is not None:
            written.append(path.relative_to(folder).as_posix())
    return written


def draw(
    folder: Path,
    name: str,
    metrics: dict[str, Any],
    *,
    say: Callable[[str], Any] = print,
    drawer: Drawer | None = None,
) -> Path | None:
    """figures/<name>.png from the metrics, or None with one sentence when it cannot be drawn."""
    path = figure_path(folder, name)
    try:
        drawn = (drawer or DRAWERS[name])(folder, metrics, path)
    except Exception as error:  # a figure is never worth a failed step: say why, leave no file
        path.unlink(missing_ok=True)
        reason = str(error).strip().splitlines()[0] if str(error).strip() else "no message"
        say(f"Figure {name} was not drawn ({type(error).__name__}: {reason}).")
        return None
    if drawn is None:
        path.unlink(missing_ok=True)
    return drawn


def _drawn_elsewhere(folder: Path, name: str, metrics: dict[str, Any]) -> Path | None:
    """A finder's figure, when this run's training took its value from that finder."""
    sources = " ".join(str(value) for value in (metrics.get("parameter_sources") or {}).values())
    found = {"batch_finder": "batch-size finder", "lr_finder": "range test"}.get(name)
    existing = figure_path(folder, name)
    if found and found in sources and existing.is_file():
        return existing
    return None
