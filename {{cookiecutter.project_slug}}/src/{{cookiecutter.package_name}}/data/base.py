"""What every task's data step shares: `DataError` and the words of the data folder (its splits,
its own meta.json).

Kept apart so meta.py, split.py and each task's readers can use them without importing each
other (a task's own sources may share more: the image task's image_source.py).
"""

from __future__ import annotations

from pathlib import Path

from ..artifacts import META_FILE, StepError

SPLITS = ("train", "validation")
TEST_SPLIT = "test"  # a third split, only when test_fraction > 0 (split.py)
META_NAME = Path(META_FILE).name  # a data folder's own meta.json, in a run or copied out


class DataError(StepError):
    """Bad input for the data step: one sentence naming the file or value and what is allowed."""
