"""Step 1, the data: what every task's data step shares (the data folder's meta.json, splits, shard
files, the benchmark's timing and report) and, by name, this project's own step 1.

The step itself is the task's (`seam.data_step()`: tasks/<folder>/data_step.py, with its `Params`,
`check`, `run`), which reads its sources and writes its shards the task's way. Its names (`run`,
`prepare`, `make_dataset`, …) are reachable here too, looked up in that module when first asked
for, so `data.make_dataset` is the one name a benchmark swaps for every step.

The names load lazily (PEP 562): worker processes that import one light module of the package
must not pay for, or be endangered by, loading TensorFlow.
"""

from __future__ import annotations

import importlib
from typing import Any

from .. import seam

_WHERE = {
    "DataError": "base",
    "auto_shard_policy": "pipeline",
    "read_meta": "meta",
}
# What this project's step 1 (the task's data step module) gives, where it gives it.
STEP_NAMES = (
    "SOURCES",
    "Params",
    "benchmark_pipeline",
    "check",
    "first_images",
    "make_dataset",
    "prepare",
    "run",
)
__all__ = sorted({*_WHERE, *STEP_NAMES})


def __getattr__(name: str) -> Any:
    if name in _WHERE or name in STEP_NAMES:
        where = f".{_WHERE[name]}" if name in _WHERE else f"..{seam.data_step()}"
        value = getattr(importlib.import_module(where, __name__), name)
        globals()[name] = value
        return value
    try:
        return importlib.import_module(f".{name}", __name__)  # a submodule: data.pipeline, ...
    except ModuleNotFoundError as error:
        if error.name != f"{__name__}.{name}":
            raise
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
