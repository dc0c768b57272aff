"""The shard files: the record format, and writing or copying shards so none is ever half there.

Each record is a tf.train.Example of the PNG bytes and the class index, readable with plain tf.io
(`parse_record`). Each shard is written to a temporary name and renamed when complete, and
meta.json is written last: an interrupted run never leaves a half shard that passes for whole,
and `clear_shards` removes meta.json first, so a folder without it is known to be incomplete.
"""

from __future__ import annotations

import itertools
import os
import re
import shutil
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import tensorflow as tf

from ..artifacts import write_json
from ..progress import track
from .base import META_NAME, SPLITS, Source
from .image_folder import load_file_tensor
from .tfrecord_dir import TFRecordDir

FEATURES = {
    "image": tf.io.FixedLenFeature([], tf.string),
    "label": tf.io.FixedLenFeature([], tf.int64),
}
SHARD_NAME = re.compile(r"^(train|validation|test)-\d{5}-of-\d{5}\.tfrecord$")
TEMP_NAME = re.compile(r"^\.(train|validation|test)-\d{5}-of-\d{5}\.tfrecord\.tmp-")


def shard_name(split: str, index: int, count: int) -> str:
    """train-00000-of-00004.tfrecord: the name says which part of how many it is."""
    return f"{split}-{index:05d}-of-{count:05d}.tfrecord"


def parse_record(record: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
    """One serialized record → (uint8 image H×W×C, int64 label); plain tf.io, no package needed."""
    example = tf.io.parse_single_example(record, FEATURES)
    return tf.io.decode_png(example["image"]), example["label"]


def write_shards(
    out: Path, source: Source, split: dict[str, np.ndarray], request: dict[str, Any]
) -> dict[str, Any]:
    """Shards first (each renamed into place when complete), meta.json last."""
    out.mkdir(parents=True, exist_ok=True)
    clear_shards(out)
    splits: dict[str, Any] = {}
    try:
        for name, indices in split.items():
            count = min(request["shards"], len(indices))
            records = _encoded(source, indices)
            shard_names = []
            parts = np.array_split(indices, count)
            for index, part in track(enumerate(parts), count, f"TFRecords, {name}", "shard"):
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
        clear_shards(out)  # the shards of a run that did not finish are no use to anyone
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


def copy_shards(source: TFRecordDir, out: Path, request: dict[str, Any]) -> dict[str, Any]:
    """Checked shards copied in under this run's names (each renamed into place), meta.json last."""
    out.mkdir(parents=True, exist_ok=True)
    clear_shards(out)
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
        clear_shards(out)
        raise
    origin = {"dataset": source.meta.get("dataset"), "source": source.meta.get("source")}
    meta.update(dataset="tfrecord", source=request, origin=origin)
    write_json(out / META_NAME, meta)
    return {**meta, "reused": False}


def clear_shards(out: Path) -> None:
    """Remove meta.json first (the step is then no longer complete), then shards and leftovers."""
    (out / META_NAME).unlink(missing_ok=True)
    for path in out.iterdir():
        if SHARD_NAME.match(path.name) or TEMP_NAME.match(path.name):
            path.unlink()


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


def _copy_file(path: Path, target: Path) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.tmp-", dir=target.parent)
    os.close(fd)
    try:
        shutil.copyfile(path, tmp)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
