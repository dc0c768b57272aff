"""The stages of the tf.data pipeline over the shards: what keeps the accelerator fed, and why.

Measured on a 2-core CPU (notebook 01 repeats the measurement on your machine): parsing and decoding
one record per call spends most of its time in per-call overhead, and running those calls in
parallel barely helps. What pays is batching serialized records BEFORE one vectorized
`tf.io.parse_example`, decoding the PNGs of that batch in the same call, and caching the decoded
images (the decode then runs once, not once per epoch); prefetch lets all of it overlap the
model's step. The order of the stages matters:

    shard files → interleave(parallel) → batch → parse + decode → cache → unbatch
    → shuffle (training) → repeat → batch → augment (training) → prefetch

The shuffle comes after the cache, so the cache never freezes one epoch's order. Images stay uint8
all the way (a quarter of float32's bytes); the model rescales them inside. `build` chains the
stages over any shard files; pipeline.py points it at a run's split (`make_dataset`).
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from dataclasses import dataclass

import tensorflow as tf

AUTOTUNE = tf.data.AUTOTUNE
PARSE_BATCH = 256  # serialized records per vectorized parse_example call
BLOCK_LENGTH = 16  # consecutive records taken from one shard: fewer hand-offs between threads
MAX_CYCLE = 8  # shards read at the same time
READ_BUFFER = 2**20  # bytes read ahead from each shard
SHUFFLE_BYTES = 256 * 2**20  # decoded images the shuffle buffer may hold (at least MIN_SHUFFLE)
MIN_SHUFFLE = 1024
TRANSLATE = 0.125  # augmentation shifts images by up to this fraction of their side (>= 1 pixel)
FEATURES = {
    "image": tf.io.FixedLenFeature([], tf.string),
    "label": tf.io.FixedLenFeature([], tf.int64),
}


@dataclass(frozen=True)
class Stages:
    """The optimizations a pipeline uses: make_dataset uses all, the benchmark adds them in turn."""

    parallel: bool = True  # parallel interleave over shards and parallel map calls
    batch_parse: bool = True  # batch serialized records before a vectorized parse_example
    cache: bool = True  # keep the decoded images in memory after the first epoch
    shuffle: bool = True  # seeded shuffle, a new order every epoch (training only)
    prefetch: bool = True  # prepare the next batches while the model works on this one


def build(
    files: Sequence[str],
    image_shape: Sequence[int],
    *,
    batch_size: int,
    training: bool,
    stages: Stages | None = None,
    augment: bool = False,
    seed: int = 42,
    repeat: bool = False,
    drop_remainder: bool = False,
    shuffle_buffer: int = MIN_SHUFFLE,
    record_shard: tuple[int, int] | None = None,
) -> tf.data.Dataset:
    """The pipeline over these shard files, with the chosen stages (the benchmark varies them)."""
    stages = stages or Stages()
    shape = [int(side) for side in image_shape]
    parallel = AUTOTUNE if stages.parallel else None
    shuffle = training and stages.shuffle
    names = tf.data.Dataset.from_tensor_slices([os.fspath(path) for path in files])
    if shuffle:  # cheap, and it varies the order in which uncached shards arrive
        names = names.shuffle(len(files), seed=seed, reshuffle_each_iteration=True)
    records = names.interleave(
        lambda name: tf.data.TFRecordDataset(name, buffer_size=READ_BUFFER),
        cycle_length=max(1, min(len(files), MAX_CYCLE)),
        block_length=BLOCK_LENGTH,
        num_parallel_calls=parallel,
        # Sharding by record needs the same order in every pipeline, whatever the options say.
        deterministic=True if record_shard else None,
    )
    if record_shard:
        records = records.shard(*record_shard)
    if stages.batch_parse:
        dataset = records.batch(PARSE_BATCH).map(_batch_decoder(shape), num_parallel_calls=parallel)
        if stages.cache:
            dataset = dataset.cache()
        dataset = dataset.unbatch()
    else:
        dataset = records.map(_record_decoder(shape), num_parallel_calls=parallel)
        if stages.cache:
            dataset = dataset.cache()
    if shuffle:
        dataset = dataset.shuffle(shuffle_buffer, seed=seed, reshuffle_each_iteration=True)
    if repeat:
        dataset = dataset.repeat()
    dataset = dataset.batch(batch_size, drop_remainder=drop_remainder)
    if augment and training:
        dataset = _augmented(dataset, shape, seed, parallel)
    if stages.prefetch:
        dataset = dataset.prefetch(AUTOTUNE)
    return dataset


def describe(stages: Stages | None = None, *, training: bool = True, augment: bool = False) -> str:
    """The stages `build` chains, in order, as one line of text (for reports and the notebook)."""
    stages = stages or Stages()
    shuffle = training and stages.shuffle
    steps = ["shuffle(shards)"] if shuffle else []
    steps.append("interleave(parallel)" if stages.parallel else "interleave")
    if stages.batch_parse:
        steps += [f"batch({PARSE_BATCH})", "map(parse_example + decode_png)"]
        steps += ["cache", "unbatch"] if stages.cache else ["unbatch"]
    else:
        steps += ["map(parse_single_example + decode_png)"] + (["cache"] if stages.cache else [])
    steps += ["shuffle"] if shuffle else []
    steps.append("batch")
    steps += ["augment(translate)"] if augment and training else []
    steps += ["prefetch(AUTOTUNE)"] if stages.prefetch else []
    return " → ".join(steps)


def shuffle_buffer(count: int, image_shape: Sequence[int]) -> int:
    """The whole split when its decoded images fit SHUFFLE_BYTES, else as many as fit (>= 1024)."""
    image_bytes = max(1, math.prod(int(side) for side in image_shape))
    return max(1, min(int(count), max(MIN_SHUFFLE, SHUFFLE_BYTES // image_bytes)))


def decode_record(serialized: tf.Tensor, image_shape: Sequence[int]) -> tuple[tf.Tensor, tf.Tensor]:
    """One serialized Example → (uint8 image of image_shape, int32 label): the per-record work."""
    example = tf.io.parse_single_example(serialized, FEATURES)
    return _decode_png(example["image"], image_shape), tf.cast(example["label"], tf.int32)


# --- stages ---------------------------------------------------------------------------------------


def _record_decoder(shape: list[int]):
    def decode(serialized: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        return decode_record(serialized, shape)

    return decode


def _batch_decoder(shape: list[int]):
    """A batch of serialized Examples → (uint8 images, int32 labels) in one call.

    parse_example handles the whole batch in one op; PNG decoding has no batched op, so map_fn
    decodes image by image inside the same call, which still saves the per-record overhead.
    """

    def decode(serialized: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        examples = tf.io.parse_example(serialized, FEATURES)
        images = tf.map_fn(
            lambda png: _decode_png(png, shape),
            examples["image"],
            fn_output_signature=tf.TensorSpec(shape, tf.uint8),
        )
        return images, tf.cast(examples["label"], tf.int32)

    return decode


def _decode_png(png: tf.Tensor, shape: Sequence[int]) -> tf.Tensor:
    """The static shape comes from meta.json, so the model sees [B, H, W, C], not unknowns."""
    return tf.ensure_shape(tf.io.decode_png(png, channels=shape[-1]), shape)


def _augmented(
    dataset: tf.data.Dataset, shape: list[int], seed: int, parallel: int | None
) -> tf.data.Dataset:
    """Random translation of each image by up to TRANSLATE of its side, edges filled with black.

    No flips: a flipped digit is another digit or none. The random numbers come from a seeded
    stream that changes every epoch, so augmentation is reproducible and still new each epoch.
    """
    height, width = shape[0], shape[1]
    shift = max(1, round(TRANSLATE * min(height, width)))
    seeds = tf.data.Dataset.random(seed=seed, rerandomize_each_iteration=True).batch(2)

    def translate(batch: tuple[tf.Tensor, tf.Tensor], pair: tf.Tensor):
        images, labels = batch
        padded = tf.pad(images, [[0, 0], [shift, shift], [shift, shift], [0, 0]])
        offsets = tf.random.stateless_uniform(
            [tf.shape(images)[0], 2], seed=pair, maxval=2 * shift + 1, dtype=tf.int32
        )
        rows = offsets[:, :1] + tf.range(height)[tf.newaxis]
        cols = offsets[:, 1:] + tf.range(width)[tf.newaxis]
        images = tf.gather(padded, rows, axis=1, batch_dims=1)
        images = tf.gather(images, cols, axis=2, batch_dims=1)
        return tf.ensure_shape(images, [None, *shape]), labels

    return tf.data.Dataset.zip(dataset, seeds).map(translate, num_parallel_calls=parallel)
