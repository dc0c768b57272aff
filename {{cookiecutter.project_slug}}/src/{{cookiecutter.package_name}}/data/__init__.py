"""Step 1, the data: a real source → sharded TFRecords → a tf.data pipeline that feeds the device.

`prepare` writes run_dir/data/ (shards + meta.json), `make_dataset` reads it for training, and
`benchmark_pipeline` measures the pipeline against a naive one over the same records. `run` is the
step's one entry (notebook 01, `<package> data`, the runner): `Params`, `check`, `run`.

The names load lazily (PEP 562): worker processes that import one light module of the package
must not pay for, or be endangered by, loading TensorFlow.
"""

from __future__ import annotations

import importlib
from typing import Any

_WHERE = {
    "SOURCES": "sources",
    "DataError": "base",
    "Params": "step",
    "auto_shard_policy": "pipeline",
    "benchmark_pipeline": "benchmark",
    "check": "step",
    "first_images": "pipeline",
    "make_dataset": "pipeline",
    "prepare": "records",
    "read_meta": "meta",
    "run": "step",
}
__all__ = sorted(_WHERE)


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        value = getattr(importlib.import_module(f".{_WHERE[name]}", __name__), name)
        globals()[name] = value
        return value
    try:
        return importlib.import_module(f".{name}", __name__)  # a submodule: data.pipeline, ...
    except ModuleNotFoundError as error:
        if error.name != f"{__name__}.{name}":
            raise
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None


def __dir__() -> list[str]:
    return sorted({*globals(), *_WHERE})
