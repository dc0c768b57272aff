"""A run's images as batches: one split of run_dir/data/ through the pipeline stages.py builds.

`make_dataset` is what training and the other steps read: the split's shards from meta.json
(naming a missing one) through the shared reader (data/reader.py: sharding per input pipeline,
shuffle, repeat, batch, options), with this task's decode, cache decision and shuffle buffer.
`first_images` and `examples_per_class` read a few decoded images the same way, for calibration
and the notebook.
The stages themselves, and why they come in that order, are stages.py; their names are importable
from here too.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import tensorflow as tf

from ...data.base import DataError
from ...data.pipeline import auto_shard_policy, check_positive, shard_files, shard_paths
from ...data.reader import Plan, Reading, Source, read
from .. import read_meta
from .cache import decide
from .decode import FEATURES, decode_record
from .stages import (
    AUTOTUNE,
    BLOCK_LENGTH,
    MAX_CYCLE,
    MIN_SHUFFLE,
    PARSE_BATCH,
    READ_BUFFER,
    SHUFFLE_BYTES,
    TRANSLATE,
    Stages,
    build,
    describe,
    reading,
    shuffle_buffer,
)

__all__ = [
    "AUTOTUNE",
    "BLOCK_LENGTH",
    "FEATURES",
    "MAX_CYCLE",
    "MIN_SHUFFLE",
    "PARSE_BATCH",
    "READ_BUFFER",
    "SHUFFLE_BYTES",
    "TRANSLATE",
    "DataError",
    "Stages",
    "auto_shard_policy",
    "build",
    "check_positive",
    "decode_record",
    "describe",
    "examples_per_class",
    "first_images",
    "make_dataset",
    "read_meta",
    "shard_files",
    "shard_paths",
    "shuffle_buffer",
]


def make_dataset(
    run_dir: str | os.PathLike[str], split: str = "train", batch_size: int = 64, **options: Any
) -> tf.data.Dataset:
    """(images uint8 [B, H, W, C], labels int32 [B]) batches of one split of run_dir/data/.

    The shared reader's options (data/reader.py: training, cache, seed, repeat, input_context,
    ...), and `augment` (training only). `cache` "auto" keeps decoded images in memory only when
    they fit (cache.py). With deterministic=False, parallel stages may hand over elements out of
    order, and the seeded shuffle and augmentation no longer repeat exactly.
    """
    meta = read_meta(run_dir)
    shape, encoding = meta["image_shape"], meta.get("encoding", "png")

    def choose(plan: Plan) -> Reading:
        cached = decide(plan.cache, plan.count, shape)["cache"]
        buffer = shuffle_buffer(plan.count, shape)
        return reading(shape, Stages(cache=cached), plan, buffer, encoding)

    def source(name: str) -> Source:
        files = shard_paths(run_dir, meta, name)
        return Source(files, int(meta["splits"][name]["count"]), choose)

    return read(source, meta["splits"], split, batch_size, **options)


def first_images(run_dir: str | os.PathLike[str], split: str, count: int) -> np.ndarray:
    """The first `count` raw uint8 images of a split [N, H, W, C], in shard order, unshuffled."""
    return first_examples(run_dir, split, count)[0]


def first_examples(
    run_dir: str | os.PathLike[str], split: str, count: int
) -> tuple[np.ndarray, np.ndarray]:
    """The first `count` raw uint8 images of a split and their labels, in shard order."""
    check_positive("count", count)
    images, labels, seen = [], [], 0
    dataset = make_dataset(run_dir, split, min(256, count), training=False, cache=False)
    for batch_images, batch_labels in dataset:
        images.append(batch_images.numpy())
        labels.append(batch_labels.numpy())
        seen += len(images[-1])
        if seen >= count:
            break
    return np.concatenate(images)[:count], np.concatenate(labels)[:count]


def examples_per_class(
    run_dir: str | os.PathLike[str], split: str = "train", per_class: int = 8
) -> tuple[np.ndarray, np.ndarray]:
    """Up to `per_class` decoded images of each class, class by class, as the model will see them.

    Read through the pipeline from the shards (not from the source), so a sample grid shows what
    was written; reading stops as soon as every class has its share.
    """
    check_positive("per_class", per_class)
    meta = read_meta(run_dir)
    found: dict[int, list[np.ndarray]] = {label: [] for label in range(int(meta["num_classes"]))}
    dataset = make_dataset(run_dir, split, 256, training=False, cache=False)
    for images, labels in dataset.as_numpy_iterator():
        for image, label in zip(images, labels, strict=True):
            if len(found[int(label)]) < per_class:
                found[int(label)].append(image)
        if all(len(kept) == per_class for kept in found.values()):
            break
    labels = [label for label, kept in found.items() for _ in kept]
    images = [image for kept in found.values() for image in kept]
    shape = [0, *meta["image_shape"]]
    return (np.stack(images) if images else np.zeros(shape, np.uint8)), np.asarray(labels, np.int32)
