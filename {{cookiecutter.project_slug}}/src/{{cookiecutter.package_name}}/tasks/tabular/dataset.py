"""A run's table as batches: one split of run_dir/data/ as (the model's matrix, labels).

`make_dataset` goes through the shared reader (data/reader.py). The split's Parquet file is read
once into columns, each input pipeline takes every n-th row under a distribution strategy, and
the fitted FeatureSpace (features.py) encodes the raw columns in tf.data, a few thousand rows per
call; the encoded rows are cached, so later epochs cost a shuffle and a batch. `raw_examples`
gives the first rows of a split as the export's serving signature takes them (a NumPy structured
array: one field per raw column, slicing and saving like any array), `model_examples` the same
rows as the model takes them.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import tensorflow as tf

from ...artifacts import DATA_DIR, resolve_run_dir
from ...data.base import DataError
from ...data.meta import read_task_meta
from ...data.pipeline import check_positive
from ...data.reader import AUTOTUNE, Plan, Reading, Source, read
from .features import LABEL, encode, load_feature_space, raw_columns

TASK = "tabular_classification"
ENCODE_BATCH = 4096  # rows encoded per call: one FeatureSpace call per block, not per row
MAX_SHUFFLE = 65_536
NO_AUGMENT = "augment=True is an image option; tables have none: use augment=False."
KEYS = ("task", "classes", "num_classes", "splits", "schema", "feature_space", "layout")


def make_dataset(
    run_dir: str | os.PathLike[str], split: str = "train", batch_size: int = 256, **options: Any
) -> tf.data.Dataset:
    """(features float32 [B, len(layout)], labels int32 [B]) of one split.

    The shared reader's options (data/reader.py); the encoded rows are cached unless cache=False;
    with `input_context` each input pipeline reads every n-th row.
    """
    meta = read_tabular_meta(run_dir)
    schema = meta["schema"]

    def source(name: str) -> Source:
        columns, labels = _columns(run_dir, meta, name)
        space = feature_space(run_dir, meta)

        def decode(rows: tf.data.Dataset) -> tf.data.Dataset:
            return (
                rows.batch(ENCODE_BATCH)
                .map(lambda x, y: (encode(space, x, schema), y), num_parallel_calls=AUTOTUNE)
                .unbatch()
            )

        def choose(plan: Plan) -> Reading:
            buffer = min(max(plan.count, 1), MAX_SHUFFLE)
            return Reading(decode=decode, cache=plan.cache is not False, shuffle_buffer=buffer)

        rows = tf.data.Dataset.from_tensor_slices((columns, labels))
        return Source(rows, len(labels), choose)

    return read(source, meta["splits"], split, batch_size, no_augment=NO_AUGMENT, **options)


def raw_examples(
    run_dir: str | os.PathLike[str], split: str, count: int
) -> tuple[np.ndarray, np.ndarray]:
    """The first `count` rows of a split as a structured array (one field per raw column: float32
    numbers with NaN where missing, strings with "" where missing) and their labels (int32)."""
    check_positive("count", count)
    meta = read_tabular_meta(run_dir)
    _check_split(meta, split)
    columns, labels = _columns(run_dir, meta, split, count)
    return structured(columns), labels


def model_examples(
    run_dir: str | os.PathLike[str], split: str, count: int
) -> tuple[np.ndarray, np.ndarray]:
    """raw_examples as the model takes them: the FeatureSpace's float32 matrix [N, len(layout)]."""
    raw, labels = raw_examples(run_dir, split, count)
    meta = read_tabular_meta(run_dir)
    columns = {name: tf.constant(raw[name]) for name in raw.dtype.names}
    return encode(feature_space(run_dir, meta), columns, meta["schema"]).numpy(), labels


def structured(columns: dict[str, np.ndarray]) -> np.ndarray:
    """Columns of equal length as one structured array: a row slices, saves and repeats whole."""
    dtypes = [
        (name, np.float32 if values.dtype.kind == "f" else str) for name, values in columns.items()
    ]
    widths = [
        (
            name,
            kind if kind is np.float32 else f"U{max(1, max(map(len, columns[name]), default=1))}",
        )
        for name, kind in dtypes
    ]
    count = len(next(iter(columns.values()))) if columns else 0
    rows = np.empty(count, dtype=widths)
    for name, values in columns.items():
        rows[name] = values
    return rows


def read_tabular_meta(run_dir: str | os.PathLike[str]) -> dict[str, Any]:
    """The table data step's meta.json (data/meta.py: read_task_meta)."""
    return read_task_meta(run_dir, TASK, KEYS, "table")


def feature_space(run_dir: str | os.PathLike[str], meta: dict[str, Any]) -> Any:
    """The fitted FeatureSpace of data/, refused if it is not the one meta.json names."""
    path = resolve_run_dir(run_dir, create=False) / DATA_DIR / meta["feature_space"]
    return load_feature_space(path, meta.get("feature_space_sha256"))


def _columns(
    run_dir: str | os.PathLike[str], meta: dict[str, Any], split: str, count: int | None = None
) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """A split's raw feature columns (features.raw_columns) and its int32 labels, first `count`."""
    import pandas as pd

    path = resolve_run_dir(run_dir, create=False) / DATA_DIR / meta["splits"][split]["file"]
    if not path.is_file():
        raise DataError(f"{path} is missing: run 01_data again.")
    frame = pd.read_parquet(path)
    if count is not None:
        frame = frame.iloc[:count]
    return raw_columns(frame, meta["schema"]), frame[LABEL].to_numpy(dtype=np.int32)


def _check_split(meta: dict[str, Any], split: str) -> None:
    if split not in meta["splits"]:
        raise DataError(
            f"split={split!r} is not in the data: use one of {', '.join(meta['splits'])}."
        )
