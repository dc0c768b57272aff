"""What later steps read of the data: its meta.json, and the one check of a batch size against it.

Training, export and every other step read the data through meta.json (classes, image shape, split
counts, shard names), so reading it, and refusing a batch no split could fill, live here once.
"""

from __future__ import annotations

import json
import os
from typing import Any

from ..artifacts import META_FILE, require
from .base import DataError


def read_meta(run_dir: str | os.PathLike[str]) -> dict[str, Any]:
    """The data step's meta.json; a missing one names the notebook that writes it."""
    path = require(run_dir, META_FILE, "01_data")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise DataError(
            f"{path} cannot be read ({type(error).__name__}): run 01_data again."
        ) from None


def check_batch(meta: dict[str, Any], batch_size: int, where: str = "the data folder") -> None:
    """Refuse a batch larger than the training split: no full batch could ever be drawn."""
    count = int(meta["splits"]["train"]["count"])
    if batch_size > count:
        raise DataError(
            f"batch_size={batch_size} is larger than the {count} training examples in "
            f"{where}: use at most {count}."
        )
