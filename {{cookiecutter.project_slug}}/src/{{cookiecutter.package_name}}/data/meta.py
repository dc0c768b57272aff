"""What later steps read of the data: its meta.json, and the one check of a batch size against it.

Training, export and every other step read the data through meta.json (classes, split counts,
shard names; the task's own keys, checked by the task: tasks.read_meta), so reading it, and
refusing a batch no split could fill, live here once.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import Any

from ..artifacts import META_FILE, require
from .base import SPLITS, DataError

# What later steps read of meta.json (classes and shapes for the model, splits for the pipeline).
REQUIRED = ("dataset", "classes", "num_classes", "splits")

# What a JSON value that is not an object is, in JSON's words.
_KINDS = {list: "array", str: "string", int: "number", float: "number", bool: "boolean"}


def read_meta(
    run_dir: str | os.PathLike[str], own: Callable[[dict[str, Any]], str | None] | None = None
) -> dict[str, Any]:
    """The data step's meta.json, checked for what later steps read of it, and by `own`, the
    task's check of its own keys (tasks.read_meta passes it); a missing, unreadable or misshapen
    one is one sentence naming the file and 01_data, which writes it."""
    path, meta = _load(run_dir)
    wrong = shape_problem(meta) or (own(meta) if own is not None else None)
    if wrong:
        raise DataError(f"{path} is not the meta.json 01_data writes ({wrong}): run 01_data again.")
    return meta


def read_task_meta(
    run_dir: str | os.PathLike[str], task: str, keys: tuple[str, ...], what: str
) -> dict[str, Any]:
    """A task's own meta.json (`what`: "text", "table"), holding `keys` and naming `task`; a
    missing, unreadable or other task's one is one sentence naming 01_data, which writes it."""
    path, meta = _load(run_dir)
    missing = [key for key in keys if key not in meta] if isinstance(meta, dict) else list(keys)
    if missing or meta["task"] != task:
        wrong = f"no {', '.join(missing)}" if missing else f"task {meta['task']!r}"
        raise DataError(
            f"{path} is not the {what} meta.json 01_data writes ({wrong}): run 01_data again."
        )
    return meta


def _load(run_dir: str | os.PathLike[str]) -> tuple[Any, Any]:
    path = require(run_dir, META_FILE, "01_data")
    try:
        return path, json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise DataError(
            f"{path} cannot be read ({type(error).__name__}): run 01_data again."
        ) from None


def shape_problem(meta: Any) -> str | None:
    """What is wrong with a meta.json's shape, in a few words; None when later steps can read it.

    Checked once here, so no step meets a KeyError or TypeError deep in its own code.
    """
    if not isinstance(meta, dict):
        return f"a JSON {_KINDS.get(type(meta), 'value')}, not an object"
    missing = [key for key in REQUIRED if key not in meta]
    if missing:
        return f"no {', '.join(missing)}"
    classes, splits = meta["classes"], meta["splits"]
    if not isinstance(classes, list) or len(classes) < 2 or not all(_text(c) for c in classes):
        return "classes must be a list of at least two names"
    if meta["num_classes"] != len(classes) or isinstance(meta["num_classes"], bool):
        return f"num_classes={meta['num_classes']!r}, but classes lists {len(classes)}"
    if not isinstance(splits, dict) or not all(split in splits for split in SPLITS):
        return f"splits must hold {' and '.join(SPLITS)}"
    for name, split in splits.items():
        if not isinstance(split, dict) or not _count(split.get("count"), 0):
            return f"splits.{name} has no count of examples"
        shards = split.get("shards", [split.get("file")])  # a table's split is one Parquet file
        if not isinstance(shards, list) or not all(_text(shard) for shard in shards):
            return f"splits.{name}.shards must be a list of file names"
    return None


def _text(value: Any) -> bool:
    return isinstance(value, str) and bool(value)


def _count(value: Any, least: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= least


def check_batch(meta: dict[str, Any], batch_size: int, where: str = "the data folder") -> None:
    """Refuse a batch larger than the training split: no full batch could ever be drawn."""
    count = int(meta["splits"]["train"]["count"])
    if batch_size > count:
        raise DataError(
            f"batch_size={batch_size} is larger than the {count} training examples in "
            f"{where}: use at most {count}."
        )
