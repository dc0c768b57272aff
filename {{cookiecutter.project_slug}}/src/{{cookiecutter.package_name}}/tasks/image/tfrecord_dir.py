"""Shards written earlier by prepare() as a source: opened from their meta.json, then read whole.

Two steps, cheap first: `open_tfrecord_dir` reads meta.json and finds the shards it lists (its
fingerprint says whether an earlier copy can be reused); `check_tfrecords` reads every record, so
a truncated shard or a meta.json that contradicts its shards is refused before anything is copied.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import tensorflow as tf

from .image_source import META_NAME, SPLITS, DataError, _fingerprint, _first_line, _per_class

ENCODED = ("png", "jpeg")  # what prepare() writes (meta.json's "encoding")
_TFRECORD_HINT = (
    "a folder with the shards and meta.json that prepare() wrote (a run's data/ folder)"
)


@dataclass
class TFRecordDir:
    """Shards written earlier by prepare(), with what their meta.json says about them."""

    data_dir: Path
    meta: dict[str, Any]
    classes: list[str]
    image_shape: tuple[int, int, int]
    files: dict[str, list[Path]]
    per_class: dict[str, dict[str, int]]
    fingerprint: str


def open_tfrecord_dir(data_dir: Path) -> TFRecordDir:
    """Read meta.json and find the shards it lists; no record is read yet (see check_tfrecords)."""
    meta_path = data_dir / META_NAME
    if not meta_path.is_file():
        raise DataError(
            f"{data_dir} has no meta.json: dataset='tfrecord' needs {_TFRECORD_HINT}, "
            "e.g. artifacts/<run>/data."
        )
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
        classes = [str(name) for name in meta["classes"]]
        shape = tuple(int(side) for side in meta["image_shape"])
        splits = {split: meta["splits"][split] for split in SPLITS}
        names = {split: [str(name) for name in splits[split]["shards"]] for split in SPLITS}
        per_class = {
            split: {str(name): int(n) for name, n in splits[split]["per_class"].items()}
            for split in SPLITS
        }
    except (ValueError, KeyError, TypeError, AttributeError) as error:
        raise DataError(
            f"{meta_path} does not describe TFRecord shards ({type(error).__name__}: "
            f"{_first_line(error)}): use the meta.json that prepare() wrote next to them."
        ) from None
    if len(shape) != 3 or shape[2] not in (1, 3) or meta.get("encoding", "png") not in ENCODED:
        raise DataError(
            f"{meta_path} says image_shape={list(shape)} and encoding={meta.get('encoding')!r}: "
            "allowed are [H, W, 1] or [H, W, 3] images encoded as 'png' or 'jpeg'."
        )
    if len(classes) < 2:
        raise DataError(f"{meta_path} lists {len(classes)} class(es): a classifier needs two.")
    files: dict[str, list[Path]] = {split: [] for split in SPLITS}
    for split in SPLITS:
        for name in names[split]:
            path = data_dir / name
            if Path(name).name != name or not path.is_file():
                raise DataError(
                    f"{meta_path} lists the shard {name!r}, which is not a file in {data_dir}: "
                    "copy the whole data folder, shards and meta.json together."
                )
            files[split].append(path)
    listed = [meta_path, *files["train"], *files["validation"]]
    return TFRecordDir(
        data_dir=data_dir,
        meta=meta,
        classes=classes,
        image_shape=shape,  # type: ignore[arg-type]
        files=files,
        per_class=per_class,
        fingerprint=_fingerprint(data_dir, listed),
    )


def check_tfrecords(source: TFRecordDir) -> None:
    """Read every record: refuse a truncated or corrupt shard, or counts meta.json contradicts."""
    meta_path = source.data_dir / META_NAME
    for split in SPLITS:
        counts: Counter[int] = Counter()
        for path in source.files[split]:
            labels, shape = _read_shard(path, source.image_shape)
            if shape is not None:
                raise DataError(
                    f"{path} holds an image of shape {shape}, but {meta_path} says "
                    f"{list(source.image_shape)}: write the shards again with prepare()."
                )
            outside = labels[(labels < 0) | (labels >= len(source.classes))]
            if outside.size:
                raise DataError(
                    f"{path} holds the label {int(outside[0])}, outside the "
                    f"{len(source.classes)} classes in {meta_path}: write the shards again "
                    "with prepare()."
                )
            counts.update(labels.tolist())
        found = {name: counts.get(index, 0) for index, name in enumerate(source.classes)}
        if found != source.per_class[split]:
            raise DataError(
                f"{meta_path} does not match its shards: the {split} shards hold "
                f"{_per_class(found)}, meta.json says {_per_class(source.per_class[split])}."
            )


def _read_shard(path: Path, image_shape: Sequence[int]) -> tuple[np.ndarray, list[int] | None]:
    """All labels of one shard, and the first image shape that is not `image_shape` (if any)."""
    features = {
        "image": tf.io.FixedLenFeature([], tf.string),
        "label": tf.io.FixedLenFeature([], tf.int64),
    }

    def parse(record: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        example = tf.io.parse_single_example(record, features)
        image = tf.io.decode_image(example["image"], expand_animations=False)
        return example["label"], tf.shape(image)

    dataset = tf.data.TFRecordDataset(str(path)).map(parse, num_parallel_calls=tf.data.AUTOTUNE)
    labels, shapes = [np.zeros(0, dtype=np.int64)], [np.asarray([image_shape], dtype=np.int32)]
    try:
        for label, shape in dataset.batch(1024).as_numpy_iterator():
            labels.append(label)
            shapes.append(shape)
    except tf.errors.OpError as error:
        raise DataError(
            f"{path} is truncated or corrupt ({_first_line(error)}): copy it again, or write the "
            "shards again with prepare()."
        ) from None
    all_shapes = np.concatenate(shapes)
    odd = np.flatnonzero((all_shapes != all_shapes[0]).any(axis=1))
    return np.concatenate(labels), (all_shapes[odd[0]].tolist() if odd.size else None)
