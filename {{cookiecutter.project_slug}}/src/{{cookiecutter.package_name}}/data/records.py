"""A source split and written once: sharded TFRecords of PNG images, and a meta.json listing them.

Why TFRecords: training then reads a few large files sequentially, in parallel, from any file
system, instead of thousands of small images. Why shards: tf.data interleaves over them, and
multi-worker training can give each worker its own files. Each shard is written to a temporary
name and renamed when complete, and meta.json comes last, so its presence means the step finished:
an interrupted run never leaves a half shard that passes for whole.
"""

from __future__ import annotations

import functools
import itertools
import json
import math
import os
import re
import shutil
import tempfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import tensorflow as tf

from .. import lineage
from ..artifacts import DATA_DIR, META_FILE, require, resolve_run_dir, write_json
from .sources import (
    FORMAT,
    META_NAME,
    SPLITS,
    DataError,
    Source,
    TFRecordDir,
    check_parameters,
    check_tfrecords,
    inspect_image_folder,
    load,
    load_file_tensor,
    open_tfrecord_dir,
    scan_image_folder,
)

FEATURES = {
    "image": tf.io.FixedLenFeature([], tf.string),
    "label": tf.io.FixedLenFeature([], tf.int64),
}
SHARD_NAME = re.compile(r"^(train|validation)-\d{5}-of-\d{5}\.tfrecord$")
TEMP_NAME = re.compile(r"^\.(train|validation)-\d{5}-of-\d{5}\.tfrecord\.tmp-")


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
) -> dict[str, Any]:
    """Check everything, then write run_dir/data/ (shards, then meta.json) and return the meta.

    When run_dir/data/meta.json already holds the same request (same parameters and, for a folder,
    the same files), nothing is rewritten and the meta comes back with "reused": True; re-running
    the notebook costs nothing. A different request first removes the old meta.json and shards.
    dataset="tfrecord" copies the shards as they were written: their split, seed and shard count
    come from their meta.json, not from val_fraction, seed and shards.

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
    )
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
    }
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
        split = split_indices(scan.labels, scan.classes, val_fraction, seed)
        reused = _reusable(out, request)
        if reused is not None:
            return reused
        source = inspect_image_folder(scan, image_size, mixed_sizes)
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
        split = split_indices(source.labels, source.classes, val_fraction, seed)
    return _write(out, source, split, _normalized(request))


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


def split_indices(
    labels: np.ndarray, classes: Sequence[str], val_fraction: float, seed: int
) -> dict[str, np.ndarray]:
    """A seeded, stratified split: each class gives round(n × val_fraction) examples to validation.

    Every class must keep at least one example in each split; the order within each split is
    shuffled too, so every shard holds a mix of classes.
    """
    counts = {name: int(np.sum(labels == index)) for index, name in enumerate(classes)}
    for name, n in counts.items():
        if n < 2:
            raise DataError(
                f"Class {name!r} has {n} example(s): each class needs at least 2, one for "
                "training and one for validation."
            )
    smallest = min(counts.values())
    rng = np.random.default_rng(seed)
    parts: dict[str, list[np.ndarray]] = {split: [] for split in SPLITS}
    for index, name in enumerate(classes):
        members = np.flatnonzero(labels == index)
        n = len(members)
        n_val = int(n * val_fraction + 0.5)
        if not 1 <= n_val <= n - 1:
            # round(n * f) is in [1, n - 1] exactly when 0.5 / n <= f < 1 - 0.5 / n.
            low = math.ceil(0.5 / smallest * 1e4) / 1e4
            high = math.floor((1 - 0.5 / smallest) * 1e4) / 1e4
            side = "validation" if n_val < 1 else "training"
            raise DataError(
                f"val_fraction={val_fraction!r} leaves class {name!r} ({n} examples) without a "
                f"{side} example: with {smallest} examples in the smallest class, use a "
                f"val_fraction of at least {low} and below {high}."
            )
        members = rng.permutation(members)
        parts["validation"].append(members[:n_val])
        parts["train"].append(members[n_val:])
    return {split: rng.permutation(np.concatenate(parts[split])) for split in SPLITS}


def shard_name(split: str, index: int, count: int) -> str:
    """train-00000-of-00004.tfrecord: the name says which part of how many it is."""
    return f"{split}-{index:05d}-of-{count:05d}.tfrecord"


def parse_record(record: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
    """One serialized record → (uint8 image H×W×C, int64 label); plain tf.io, no package needed."""
    example = tf.io.parse_single_example(record, FEATURES)
    return tf.io.decode_png(example["image"]), example["label"]


def _write(
    out: Path, source: Source, split: dict[str, np.ndarray], request: dict[str, Any]
) -> dict[str, Any]:
    """Shards first (each renamed into place when complete), meta.json last."""
    out.mkdir(parents=True, exist_ok=True)
    _clear(out)
    splits: dict[str, Any] = {}
    try:
        for name, indices in split.items():
            count = min(request["shards"], len(indices))
            records = _encoded(source, indices)
            shard_names = []
            for index, part in enumerate(np.array_split(indices, count)):
                path = out / shard_name(name, index, count)
                _write_shard(path, itertools.islice(records, len(part)), len(part))
                shard_names.append(path.name)
            labels = source.labels[indices]
            splits[name] = {
                "count": len(indices),
                "per_class": {
                    cls: int(np.sum(labels == label)) for label, cls in enumerate(source.classes)
                },
                "shards": shard_names,
            }
    except BaseException:
        _clear(out)  # the shards of a run that did not finish are no use to anyone
        raise
    meta = {
        "dataset": source.dataset,
        "classes": source.classes,
        "num_classes": len(source.classes),
        "image_shape": [int(side) for side in source.image_shape],
        "encoding": "png",
        "seed": request["seed"],
        "val_fraction": request["val_fraction"],
        "shards": request["shards"],
        "splits": splits,
        "resized": source.resized,
        "notes": source.notes,
        "source": request,
    }
    write_json(out / META_NAME, meta)
    return {**meta, "reused": False}


def _encoded(source: Source, indices: np.ndarray) -> Iterator[tuple[bytes, int]]:
    """(PNG bytes, label) in `indices` order, encoded in parallel by tf.data."""
    labels = source.labels[indices]
    if source.images is not None:
        dataset = tf.data.Dataset.from_tensor_slices((source.images[indices], labels))
        encode = _encode_png
    else:
        assert source.files is not None
        paths = [str(source.files[index]) for index in indices]
        dataset = tf.data.Dataset.from_tensor_slices((paths, labels))
        shape = source.image_shape

        def encode(path: tf.Tensor, label: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
            return _encode_png(load_file_tensor(path, shape), label)

    dataset = dataset.map(encode, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
    return dataset.prefetch(tf.data.AUTOTUNE).as_numpy_iterator()


def _encode_png(image: tf.Tensor, label: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
    return tf.io.encode_png(image), label


def _example(png: bytes, label: int) -> bytes:
    """One record: the PNG bytes and the class index, as a serialized tf.train.Example."""
    feature = {
        "image": tf.train.Feature(bytes_list=tf.train.BytesList(value=[png])),
        "label": tf.train.Feature(int64_list=tf.train.Int64List(value=[int(label)])),
    }
    return tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString()


def _write_shard(path: Path, records: Iterable[tuple[bytes, int]], expected: int) -> None:
    """Write to .<name>.tmp-* beside the shard and rename it into place only when complete."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.tmp-", dir=path.parent)
    os.close(fd)
    try:
        written = 0
        with tf.io.TFRecordWriter(tmp) as writer:
            for png, label in records:
                writer.write(_example(png, label))
                written += 1
        if written != expected:
            raise RuntimeError(f"{path.name}: {written} records written, {expected} expected")
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


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
    return _copy(source, out, request)


def _copy(source: TFRecordDir, out: Path, request: dict[str, Any]) -> dict[str, Any]:
    out.mkdir(parents=True, exist_ok=True)
    _clear(out)
    meta = {key: value for key, value in source.meta.items() if key != "reused"}
    meta["splits"] = {split: dict(meta["splits"][split]) for split in SPLITS}
    try:
        for split in SPLITS:
            files = source.files[split]
            names = [shard_name(split, index, len(files)) for index in range(len(files))]
            for path, name in zip(files, names, strict=True):
                _copy_file(path, out / name)
            meta["splits"][split]["shards"] = names
    except BaseException:
        _clear(out)
        raise
    origin = {"dataset": source.meta.get("dataset"), "source": source.meta.get("source")}
    meta.update(dataset="tfrecord", source=request, origin=origin)
    write_json(out / META_NAME, meta)
    return {**meta, "reused": False}


def _copy_file(path: Path, target: Path) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.tmp-", dir=target.parent)
    os.close(fd)
    try:
        shutil.copyfile(path, tmp)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _reusable(out: Path, request: dict[str, Any]) -> dict[str, Any] | None:
    """The meta of an earlier, complete run of the same request, or None."""
    try:
        meta = json.loads((out / META_NAME).read_text(encoding="utf-8"))
        if meta.get("source") != _normalized(request):
            return None
        names = [name for split in SPLITS for name in meta["splits"][split]["shards"]]
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    if not all((out / name).is_file() for name in names):
        return None
    return {**meta, "reused": True}


def _clear(out: Path) -> None:
    """Remove meta.json first (the step is then no longer complete), then shards and leftovers."""
    (out / META_NAME).unlink(missing_ok=True)
    for path in out.iterdir():
        if SHARD_NAME.match(path.name) or TEMP_NAME.match(path.name):
            path.unlink()


def _normalized(request: dict[str, Any]) -> dict[str, Any]:
    """As it reads back from meta.json (tuples become lists), so requests compare equal."""
    return json.loads(json.dumps(request))
