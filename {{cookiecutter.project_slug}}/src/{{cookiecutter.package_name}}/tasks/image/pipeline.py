"""A run's images as batches: one split of run_dir/data/ through the pipeline stages.py builds.

`make_dataset` is what training and the other steps read: it finds the split's shards from
meta.json (naming a missing one), shards them per input pipeline under a distribution strategy,
sizes the shuffle buffer, and sets the auto-shard policy. `first_images` and
`examples_per_class` read a few decoded images the same way, for calibration and the notebook.
The stages themselves, and why they come in that order, are stages.py; their names are importable
from here too.
"""

from __future__ import annotations

import math
import os

import numpy as np
import tensorflow as tf

from ...data.base import DataError
from ...data.meta import read_meta
from ...data.pipeline import auto_shard_policy, check_positive, shard_files, shard_paths
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
    run_dir: str | os.PathLike[str],
    split: str = "train",
    batch_size: int = 64,
    *,
    training: bool | None = None,
    cache: bool | str = "auto",
    augment: bool = False,
    seed: int = 42,
    deterministic: bool | None = None,
    repeat: bool = False,
    drop_remainder: bool = False,
    input_context: tf.distribute.InputContext | None = None,
    num_workers: int = 1,
) -> tf.data.Dataset:
    """(images uint8 [B, H, W, C], labels int32 [B]) batches of one split of run_dir/data/.

    `training` (default: split == "train") shuffles every epoch and allows `augment`. `cache`:
    "auto" keeps decoded images in memory only when they fit (cache.py), True or False always. With
    `input_context` (from `strategy.distribute_datasets_from_function`) each input pipeline reads
    its own part and batches `batch_size / num_replicas_in_sync`; without it the auto-shard policy
    suits `num_workers` workers. `deterministic` sets `tf.data.Options.deterministic` (None keeps
    TensorFlow's default, deterministic); with False, parallel stages may hand over elements out of
    order, and the seeded shuffle and augmentation no longer repeat exactly.
    """
    meta = read_meta(run_dir)
    splits = meta["splits"]
    if split not in splits:
        raise DataError(f"split={split!r} is not in the data: use one of {', '.join(splits)}.")
    check_positive("batch_size", batch_size)
    check_positive("num_workers", num_workers)
    files = shard_paths(run_dir, meta, split)
    training = split == "train" if training is None else bool(training)
    count = int(splits[split]["count"])
    record_shard = None
    if input_context is not None:
        files, record_shard, batch_size = shard_files(files, batch_size, input_context)
        count = math.ceil(count / input_context.num_input_pipelines)
    cached = decide(cache, count, meta["image_shape"])["cache"]
    dataset = build(
        files,
        meta["image_shape"],
        batch_size=batch_size,
        training=training,
        stages=Stages(cache=cached),
        encoding=meta.get("encoding", "png"),
        augment=bool(augment),
        seed=seed,
        repeat=repeat,
        drop_remainder=drop_remainder,
        shuffle_buffer=shuffle_buffer(count, meta["image_shape"]),
        record_shard=record_shard,
    )
    options = tf.data.Options()
    if deterministic is not None:
        options.deterministic = bool(deterministic)
    # Sharded above already: tf.distribute must not shard a second time.
    options.experimental_distribute.auto_shard_policy = (
        tf.data.experimental.AutoShardPolicy.OFF
        if input_context is not None
        else auto_shard_policy(len(files), num_workers)
    )
    return dataset.with_options(options)


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
