"""Step 1, the data: what every task's data step shares (the data folder's meta.json, splits, shard
files, the input reader, the benchmark's timing and report).

The step is prepare/entry.py (Params, check, run), above the tasks, with the task's half (a
tasks.base.Data, tasks/<folder>/data_step.py's DATA); `tasks.current().build_inputs` is the one
entry for a split's batches, so a benchmark swaps that for every step. This package names no
task: it is shared code, below the tasks, and grimp sees every import of it
(tests/test_architecture.py).

Only light modules load here (no TensorFlow): worker processes that import one light module of the
package must not pay for it. pipeline, reader, split and timing are imported where they are used.
"""

from __future__ import annotations

from . import meta, report
from .base import DataError
from .meta import read_meta

__all__ = ["DataError", "meta", "read_meta", "report"]
