"""Step 0 as one entry: `run(run_dir, Params)` checks, measures once and writes its own metrics.

Memory growth is switched on first, before this step runs any TensorFlow op; then everything else
is measured once into the report that notebook 00 explains piece by piece, `<package> environment`
prints, and metrics/environment.json keeps for the run report.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from .. import figures, lineage
from ..artifacts import run_folder
from ..steps import param
from ..writes import check_writable, write_metrics
from .devices import configure_memory_growth
from .report import collect_report, format_report
from .timing import check_matmul_parameters


@dataclass(frozen=True)
class Params:
    """The parameters of notebook 00 (all but run_dir), with its defaults."""

    matmul_size: int = param(1024, "n of the n x n float32 matrices multiplied on each device")
    matmul_repeats: int = param(10, "timed multiplications per device, after one warm-up")


def check(run_dir: str | os.PathLike[str], params: Params, *, inputs: bool = True) -> None:
    """Refuse a bad value in one sentence (EnvError); step 0 reads nothing, so `inputs` is moot."""
    check_matmul_parameters(params.matmul_size, params.matmul_repeats)


def run(run_dir: str | os.PathLike[str], params: Params, *, verbose: bool = True) -> dict[str, Any]:
    """Memory growth, then the full report → metrics/environment.json; return the report."""
    check(run_dir, params)
    folder = run_folder(run_dir)  # resolved once, here: every call below gets this value
    check_writable(folder)
    growth = configure_memory_growth()  # before any op of this step initializes the GPUs
    report = collect_report(params.matmul_size, params.matmul_repeats, memory_growth=growth)
    report["lineage"] = lineage.summary(folder, reads=[], writes=[])
    report["figures"] = figures.save(folder, "environment", report)
    write_metrics(folder, "environment", report)
    if verbose:
        print(format_report(report))
    return report
