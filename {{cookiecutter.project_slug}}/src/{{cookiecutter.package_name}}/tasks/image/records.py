"""A source split and written once: sharded TFRecords of PNG images, and a meta.json listing them.

Why TFRecords: training then reads a few large files sequentially, in parallel, from any file
system, instead of thousands of small images. Why shards: tf.data interleaves over them, and
multi-worker training can give each worker its own files. Each shard is written to a temporary
name and renamed when complete, and meta.json comes last, so its presence means the step finished:
an interrupted run never leaves a half shard that passes for whole.

This module is `prepare`: check, reuse an earlier identical run, or load, split and write. The
writing is shards.py, the split split.py, and reading meta.json back meta.py; their names are
importable from here too.
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ... import lineage
from ...artifacts import DATA_DIR, resolve_run_dir
from ...data.meta import check_batch, read_meta
from ...data.split import check_test_fraction, split_indices
from .image_folder import inspect_image_folder, load_file_tensor, scan_image_folder
from .image_source import FORMAT, META_NAME, SPLITS, DataError, Source
from .photo_io import mapper, resolve_workers
from .shards import (
    FEATURES,
    JPEG_QUALITY,
    SHARD_NAME,
    TEMP_NAME,
    copy_shards,
    parse_record,
    shard_name,
    write_shards,
)
from .sources import check_parameters, load
from .tfrecord_dir import TFRecordDir, check_tfrecords, open_tfrecord_dir

__all__ = [
    "FEATURES",
    "FORMAT",
    "META_NAME",
    "SHARD_NAME",
    "SPLITS",
    "TEMP_NAME",
    "DataError",
    "Source",
    "TFRecordDir",
    "check_batch",
    "check_parameters",
    "check_tfrecords",
    "inspect_image_folder",
    "load",
    "load_file_tensor",
    "open_tfrecord_dir",
    "parse_record",
    "prepare",
    "read_meta",
    "scan_image_folder",
    "shard_name",
    "split_indices",
]


def _records_lineage(function: Callable[..., dict[str, Any]]) -> Callable[..., dict[str, Any]]:
    """Record the data in lineage.json after every way out of prepare() that leaves data there."""

    @functools.wraps(function)
    def wrapper(run_dir: str | os.PathLike[str], *args: Any, **kwargs: Any) -> dict[str, Any]:
        meta = function(run_dir, *args, **kwargs)
        lineage.record(run_dir, "data", "data", {})
        return meta

    return wrapper


@_records_lineage
def prepare(
    run_dir: str | os.PathLike[str],
    dataset: str = "digits",
    *,
    data_dir: str | os.PathLike[str] | None = None,
    image_size: int | None = None,
    val_fraction: float = 0.2,
    shards: int = 4,
    seed: int = 42,
    mixed_sizes: str = "resize",
    synthetic_shape: Sequence[int] = (32, 32, 3),
    synthetic_classes: int = 10,
    synthetic_count: int = 1000,
    test_fraction: float = 0.0,
    encoding: str = "auto",
    jpeg_quality: int = JPEG_QUALITY,
    workers: int | str = "auto",
) -> dict[str, Any]:
    """Check everything, then write run_dir/data/ (shards, then meta.json) and return the meta.

    `encoding` (auto, jpeg, png) and `jpeg_quality` say how images are stored (shards.py);
    `workers` how many processes read and encode an image folder ("auto": the cores).

    When run_dir/data/meta.json already holds the same request (same parameters and, for a folder,
    the same files), nothing is rewritten and the meta comes back with "reused": True; re-running
    the notebook costs nothing. A different request first removes the old meta.json and shards.
    dataset="tfrecord" copies the shards as they were written: their split, seed and shard count
    come from their meta.json, not from val_fraction, seed and shards. test_fraction > 0 holds out
    a third split, test, per class (split.py).

    Either way the data's lineage is recorded afterwards (lineage.json), so the fingerprint there
    is always the current data's, and later steps can tell what their inputs were made from.
    """
    folder = check_parameters(
        dataset,
        data_dir=data_dir,
        image_size=image_size,
        val_fraction=val_fraction,
        shards=shards,
        seed=seed,
        mixed_sizes=mixed_sizes,
        synthetic_shape=synthetic_shape,
        synthetic_classes=synthetic_classes,
        synthetic_count=synthetic_count,
        encoding=encoding,
        jpeg_quality=jpeg_quality,
        workers=workers,
    )
    check_test_fraction(test_fraction, val_fraction)
    out = resolve_run_dir(run_dir, create=False) / DATA_DIR
    if dataset == "tfrecord":
        assert folder is not None
        return _prepare_from_tfrecords(folder, out)
    request: dict[str, Any] = {
        "format": FORMAT,
        "dataset": dataset,
        "data_dir": None if folder is None else str(folder),
        "image_size": None if image_size is None else int(image_size),
        "val_fraction": float(val_fraction),
        "shards": int(shards),
        "seed": int(seed),
        "encoding": encoding,
        "jpeg_quality": int(jpeg_quality),
    }
    if test_fraction:  # only then: an earlier request without a test split stays reusable
        request["test_fraction"] = float(test_fraction)
    if dataset == "synthetic":
        request.update(
            synthetic_shape=[int(side) for side in synthetic_shape],
            synthetic_classes=int(synthetic_classes),
            synthetic_count=int(synthetic_count),
        )
    if dataset == "image_folder":
        assert folder is not None
        scan = scan_image_folder(folder)
        request.update(mixed_sizes=mixed_sizes, fingerprint=scan.fingerprint)
        split = split_indices(scan.labels, scan.classes, val_fraction, seed, test_fraction)
        reused = _reusable(out, request)
        if reused is not None:
            return reused
        count = resolve_workers(workers)
        with mapper(count) as pmap:
            source = inspect_image_folder(scan, image_size, mixed_sizes, pmap)
            return write_shards(out, source, split, _normalized(request), pmap, count)
    else:
        reused = _reusable(out, request)
        if reused is not None:
            return reused
        source = load(
            dataset,
            image_size=image_size,
            seed=seed,
            synthetic_shape=synthetic_shape,
            synthetic_classes=synthetic_classes,
            synthetic_count=synthetic_count,
        )
        split = split_indices(source.labels, source.classes, val_fraction, seed, test_fraction)
    return write_shards(out, source, split, _normalized(request))


def _prepare_from_tfrecords(folder: Path, out: Path) -> dict[str, Any]:
    """Check shards written before, record by record, and copy them in under this run's names."""
    if folder == out.resolve():
        raise DataError(
            f"data_dir {folder} is this run's own data folder: point dataset='tfrecord' at "
            "another run's data/ folder."
        )
    source = open_tfrecord_dir(folder)
    request = {
        "format": FORMAT,
        "dataset": "tfrecord",
        "data_dir": str(folder),
        "fingerprint": source.fingerprint,
    }
    reused = _reusable(out, request)
    if reused is not None:
        return reused
    check_tfrecords(source)
    return copy_shards(source, out, request)


def _reusable(out: Path, request: dict[str, Any]) -> dict[str, Any] | None:
    """The meta of an earlier, complete run of the same request, or None."""
    try:
        meta = json.loads((out / META_NAME).read_text(encoding="utf-8"))
        if meta.get("source") != _normalized(request):
            return None
        names = [name for split in meta["splits"] for name in meta["splits"][split]["shards"]]
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    if not all((out / name).is_file() for name in names):
        return None
    return {**meta, "reused": True}


def _normalized(request: dict[str, Any]) -> dict[str, Any]:
    """As it reads back from meta.json (tuples become lists), so requests compare equal."""
    return json.loads(json.dumps(request))
