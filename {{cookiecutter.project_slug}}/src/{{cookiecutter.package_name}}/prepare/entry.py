"""Step 1, the data, for every task: `run(run_dir, Params)` checks the values, has the task write
data/ (or reuse it) and time its input, then draws, records the lineage and writes
metrics/data.json. The task's half is tasks/<folder>/data_step.py's DATA (a tasks.base.Data, read
without TensorFlow, so `check` costs the runner's pre-flight nothing); `Params` is the task's.
The step has no input in the run folder, so `inputs` changes nothing here.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any

from .. import figures, limits, lineage, progress, seam
from ..artifacts import run_folder
from ..data.base import DataError
from ..data.split import check_test_fraction
from ..writes import check_writable, write_metrics

DATA = seam.data_hooks()  # tasks/<folder>/data_step.py's
Params = DATA.params
MAX_SECONDS = 3600.0


def check(run_dir: str | os.PathLike[str], params: Any, *, inputs: bool = True) -> None:
    """Refuse a bad value in one sentence (DataError) before anything is read or written: the
    task's own values first, then those every task's step 1 has."""
    DATA.check(params)
    val = params.val_fraction
    if isinstance(val, bool) or not isinstance(val, int | float) or not 0 < val < 1:
        raise DataError(f"val_fraction={val!r} is not allowed: use a share between 0 and 1.")
    check_test_fraction(params.test_fraction, val)
    given = {field.name for field in dataclasses.fields(params)}
    for name in sorted({"batch_size", "seed"} & given):
        limits.whole(name, getattr(params, name), DataError)
    seconds = params.benchmark_seconds if "benchmark_seconds" in given else 1
    if type(seconds) not in (int, float) or not 1 <= seconds <= MAX_SECONDS:
        raise DataError(
            f"benchmark_seconds={seconds!r} is not allowed: use a number of seconds from 1 to "
            f"{MAX_SECONDS:g} (the whole benchmark, shared by every timed pipeline)."
        )


def run(run_dir: str | os.PathLike[str], params: Any, *, verbose: bool = True) -> dict[str, Any]:
    """Prepare data/ (or reuse it), time the input over it → metrics/data.json."""
    check(run_dir, params)
    folder = run_folder(run_dir)  # resolved once, here: every call below gets this value
    check_writable(folder)
    if verbose:
        progress.starting(f"Preparing {params.dataset}: {DATA.preparing[0]}", DATA.preparing[1])
    meta = DATA.prepare(folder, params)
    if verbose:
        print(DATA.describe(meta))
        if DATA.measuring:
            print(DATA.measuring.format(seconds=params.benchmark_seconds), flush=True)
    metrics = DATA.metrics(meta, DATA.measure(folder, params, meta))
    metrics["lineage"] = lineage.summary(folder, reads=[], writes=["data"])
    metrics["figures"] = figures.save(folder, "data", metrics, drawers=DATA.drawers)
    write_metrics(folder, "data", metrics)
    if verbose:
        print("\n".join(str(metrics[key]) for key in DATA.closing))
    return metrics
