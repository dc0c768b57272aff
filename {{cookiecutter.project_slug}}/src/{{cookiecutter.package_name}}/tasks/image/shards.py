"""The shard files: the record format, and writing or copying shards so none is ever half there.

Each record is a tf.train.Example of the encoded image (JPEG for photos, PNG for small lossless
sources: `choose_encoding`) and the class index, readable with plain tf.io (`parse_record`).
Each shard is written to a temporary name and renamed when complete, and
meta.json is written last: an interrupted run never leaves a half shard that passes for whole,
and `clear_shards` removes meta.json first, so a folder without it is known to be incomplete.
"""

from __future__ import annotations

import itertools
import os
import re
import shutil
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import tensorflow as tf

from ...progress import track
from ...writes import write_json, writing
from . import photo_io
from .image_source import META_NAME, SPLITS, DataError, Source
from .tfrecord_dir import TFRecordDir

FEATURES = {
    "image": tf.io.FixedLenFeature([], tf.string),
    "label": tf.io.FixedLenFeature([], tf.int64),
}
SHARD_NAME = re.compile(r"^(train|validation|test)-\d{5}-of-\d{5}\.tfrecord$")
TEMP_NAME = re.compile(r"^\.(train|validation|test)-\d{5}-of-\d{5}\.tfrecord\.tmp-")
ENCODINGS = ("auto", "jpeg", "png")
JPEG_QUALITY = 95  # for a resized or non-JPEG photo (a JPEG kept as it is keeps its own)
JPEG_MIN_PIXELS = 64 * 64  # encoding=auto: images this large are photos, written as JPEG
AGAIN = "run 01_data again (the shards written so far are removed)"  # after a full disk


def shard_name(split: str, index: int, count: int) -> str:
    """train-00000-of-00004.tfrecord: the name says which part of how many it is."""
    return f"{split}-{index:05d}-of-{count:05d}.tfrecord"


def parse_record(record: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
    """One serialized record → (uint8 image H×W×C, int64 label); plain tf.io, no package needed.

    decode_image reads either encoding (meta.json's "encoding" says which the shards hold).
    """
    example = tf.io.parse_single_example(record, FEATURES)
    image = tf.io.decode_image(example["image"], expand_animations=False)
    return image, example["label"]


def choose_encoding(encoding: str, source: Source) -> str:
    """'jpeg' or 'png'; auto: JPEG for photos (a source holding JPEG files, or images of at least
    JPEG_MIN_PIXELS), PNG for small lossless sources (digits, mnist, cifar10, synthetic)."""
    if encoding != "auto":
        return encoding
    height, width = source.image_shape[:2]
    photos = any(kind in ("JPEG", "MPO") for kind in source.formats or [])
    return "jpeg" if photos or height * width >= JPEG_MIN_PIXELS else "png"


def write_shards(
    out: Path,
    source: Source,
    split: dict[str, np.ndarray],
    request: dict[str, Any],
    pmap: Callable[..., Iterable[Any]] = map,
    workers: int = 1,
) -> dict[str, Any]:
    """Shards first (each renamed into place when complete), meta.json last.

    A file source is read and encoded by `pmap` (photo_io.mapper: `workers` processes); an
    in-memory source is encoded by tf.data's parallel map in this process.
    """
    encoding = choose_encoding(request.get("encoding", "auto"), source)
    quality = int(request.get("jpeg_quality", JPEG_QUALITY))
    out.mkdir(parents=True, exist_ok=True)
    clear_shards(out)
    splits: dict[str, Any] = {}
    started, kept = time.perf_counter(), [0]
    try:
        for name, indices in split.items():
            count = min(request["shards"], len(indices))
            if source.files is not None:
                records = _file_records(source, indices, encoding, quality, pmap, kept)
            else:
                records = _encoded(source, indices, encoding, quality)
            records = track(records, len(indices), f"TFRecords, {name}", "image")
            shard_names = []
            for index, part in enumerate(np.array_split(indices, count)):
                path = out / shard_name(name, index, count)
                with writing(path, AGAIN):
                    _write_shard(path, itertools.islice(records, len(part)), len(part))
                shard_names.append(path.name)
            for _ in records:  # resumed once more, the count reaches the last image and closes
                pass
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
    seconds = time.perf_counter() - started
    total = sum(info["count"] for info in splits.values())
    meta = {
        "dataset": source.dataset,
        "classes": source.classes,
        "num_classes": len(source.classes),
        "image_shape": [int(side) for side in source.image_shape],
        "encoding": encoding,
        "jpeg_quality": quality if encoding == "jpeg" else None,
        "seed": request["seed"],
        "val_fraction": request["val_fraction"],
        "shards": request["shards"],
        "splits": splits,
        "resized": source.resized,
        "notes": source.notes,
        "write": {
            "examples_per_sec": total / max(seconds, 1e-9),
            "seconds": round(seconds, 3),
            "workers": workers if source.files is not None else 1,
            "kept_original_files": kept[0],
            "shard_bytes": sum(
                (out / n).stat().st_size for s in splits.values() for n in s["shards"]
            ),
            "source_bytes": _source_bytes(source),
        },
        "source": request,
    }
    _write_meta(out, meta)
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
                with writing(out / name, AGAIN):
                    _copy_file(path, out / name)
            meta["splits"][split]["shards"] = names
    except BaseException:
        clear_shards(out)
        raise
    origin = {"dataset": source.meta.get("dataset"), "source": source.meta.get("source")}
    meta.update(dataset="tfrecord", source=request, origin=origin)
    _write_meta(out, meta)
    return {**meta, "reused": False}


def _write_meta(out: Path, meta: dict[str, Any]) -> None:
    """meta.json last; when it cannot be written, the shards it would list go too."""
    try:
        write_json(out / META_NAME, meta, then=AGAIN)
    except BaseException:
        clear_shards(out)
        raise


def clear_shards(out: Path) -> None:
    """Remove meta.json first (the step is then no longer complete), then shards and leftovers."""
    (out / META_NAME).unlink(missing_ok=True)
    for path in out.iterdir():
        if SHARD_NAME.match(path.name) or TEMP_NAME.match(path.name):
            path.unlink()


def _file_records(
    source: Source,
    indices: np.ndarray,
    encoding: str,
    quality: int,
    pmap: Callable[..., Iterable[Any]],
    kept: list[int],
) -> Iterator[tuple[bytes, int]]:
    """(record bytes, label) in `indices` order, each file read and encoded by a worker."""
    assert source.files is not None
    height, width, channels = source.image_shape
    paths = [str(source.files[index]) for index in indices]
    tasks = ((path, height, width, channels, encoding, quality) for path in paths)
    for path, index, (data, error, own) in zip(
        paths, indices, pmap(photo_io.encode, tasks), strict=True
    ):
        if data is None:
            raise DataError(
                f"{path} is not a readable image: it {error}; fix or remove it (allowed: JPEG "
                "and PNG files that open in an image viewer)."
            )
        kept[0] += own
        yield data, int(source.labels[index])


def _encoded(
    source: Source, indices: np.ndarray, encoding: str, quality: int
) -> Iterator[tuple[bytes, int]]:
    """(PNG or JPEG bytes, label) of an in-memory source in `indices` order, encoded by tf.data."""
    assert source.images is not None
    labels = source.labels[indices]
    dataset = tf.data.Dataset.from_tensor_slices((source.images[indices], labels))

    def encode(image: tf.Tensor, label: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        if encoding == "jpeg":
            return tf.io.encode_jpeg(image, quality=quality), label
        return tf.io.encode_png(image), label

    dataset = dataset.map(encode, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
    return dataset.prefetch(tf.data.AUTOTUNE).as_numpy_iterator()


def _source_bytes(source: Source) -> int | None:
    """The bytes of the source's files (None for an in-memory source)."""
    return None if source.files is None else sum(path.stat().st_size for path in source.files)


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
