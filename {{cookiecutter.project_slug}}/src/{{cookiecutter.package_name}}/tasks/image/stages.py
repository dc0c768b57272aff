"""The stages of the tf.data pipeline over the shards: what keeps the accelerator fed, and why.

Measured on a 2-core CPU (notebook 01 repeats the measurement on your machine), the decode
regime depends on the image size (decode.py): small images (digits) spend most of a per-record
call in overhead, so serialized records are batched BEFORE one vectorized `tf.io.parse_example`
and decoded in the same call; photos spend it decoding, so each record is decoded by its own
call, in parallel on every core. Caching decoded images pays when they fit in memory (cache.py
decides for cache="auto"); prefetch lets all of it overlap the model's step. The order matters:

    shard files → interleave(parallel) → [batch →] parse + decode → cache [→ unbatch]
    → shuffle (training) → repeat → batch → augment (training) → prefetch

The shuffle comes after the cache, so the cache never freezes one epoch's order. Images stay uint8
all the way (a quarter of float32's bytes); the model rescales them inside. `build` chains the
stages over any shard files; pipeline.py points it at a run's split (`make_dataset`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import tensorflow as tf

from ...data.pipeline import READ_BUFFER as READ_BUFFER  # variants.py reads it here
from ...data.reader import Plan, Reading, pipeline
from .decode import (
    batch_decoder,
    parse_bytes,
    random_crop_record,
    read_regime,
    record_decoder,
)

AUTOTUNE = tf.data.AUTOTUNE
PARSE_BATCH = 256  # serialized records per vectorized parse_example call
BLOCK_LENGTH = 16  # consecutive records taken from one shard: fewer hand-offs between threads
MAX_CYCLE = 8  # shards read at the same time
SHUFFLE_BYTES = 256 * 2**20  # decoded images the shuffle buffer may hold (at least MIN_SHUFFLE)
MIN_SHUFFLE = 1024
TRANSLATE = 0.125  # augmentation shifts images by up to this fraction of their side (>= 1 pixel)


@dataclass(frozen=True)
class Stages:
    """The optimizations a pipeline uses: make_dataset uses all, the benchmark adds them in turn."""

    parallel: bool = True  # parallel interleave over shards and parallel map calls
    batch_parse: bool | None = None  # batch records before one parse_example; None: by image size
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
    encoding: str = "png",
) -> tf.data.Dataset:
    """The pipeline over these shard files, with the chosen stages (the benchmark varies them):
    the shared reader's (data/reader.py), with this task's decode."""
    plan = Plan(
        batch_size=batch_size,
        count=shuffle_buffer,
        training=training,
        augment=augment,
        seed=seed,
        repeat=repeat,
        drop_remainder=drop_remainder,
        record_shard=record_shard,
    )
    return pipeline(files, reading(image_shape, stages, plan, shuffle_buffer, encoding), plan)


def reading(
    image_shape: Sequence[int],
    stages: Stages | None,
    plan: Plan,
    shuffle_buffer: int = MIN_SHUFFLE,
    encoding: str = "png",
) -> Reading:
    """How the reader decodes this task's records: by image size one record per call, or a batch
    of records per vectorized call; with augment on JPEG photos, training crops at random while
    decoding (decode.random_crop_record) and the cache keeps the small encoded bytes."""
    stages = stages or Stages()
    shape = [int(side) for side in image_shape]
    batched = batch_parse(stages, shape)
    crop = plan.augment and plan.training and encoding == "jpeg" and not batched
    parallel = AUTOTUNE if stages.parallel else None
    if batched:
        decoder = batch_decoder(shape, encoding)

        def decode(records: tf.data.Dataset) -> tf.data.Dataset:
            return records.batch(PARSE_BATCH).map(decoder, num_parallel_calls=parallel)

    else:
        decoder = parse_bytes if crop else record_decoder(shape, encoding)

        def decode(records: tf.data.Dataset) -> tf.data.Dataset:
            return records.map(decoder, num_parallel_calls=parallel)

    cropper = random_crop_record(shape) if crop else None
    augmented = plan.augment and plan.training and not crop
    return Reading(
        decode=decode,
        batched=batched,
        cache=stages.cache,
        shuffle=stages.shuffle,
        shuffle_buffer=shuffle_buffer,
        shuffle_files=True,
        # Photos read afresh every epoch: shuffle the small encoded records (about 1/7 of the
        # bytes of a decoded photo), then decode; with a cache the shuffle must come after it.
        shuffle_records=not batched,
        cycle=MAX_CYCLE,
        block=BLOCK_LENGTH,
        parallel=stages.parallel,
        per_example=(lambda record, pair: cropper(*record, pair)) if cropper else None,
        per_batch=(lambda batches: _augmented(batches, shape, plan.seed, parallel))
        if augmented
        else None,
        prefetch=stages.prefetch,
    )


def describe(
    stages: Stages | None = None,
    *,
    training: bool = True,
    augment: bool = False,
    image_shape: Sequence[int] = (8, 8, 1),
    encoding: str = "png",
) -> str:
    """The stages `build` chains, in order, as one line of text (for reports and the notebook)."""
    stages = stages or Stages()
    shuffle = training and stages.shuffle
    batched = batch_parse(stages, image_shape)
    crop = augment and training and encoding == "jpeg" and not batched
    early = shuffle and not batched and not stages.cache
    steps = ["shuffle(shards)"] if shuffle else []
    steps.append("interleave(parallel)" if stages.parallel else "interleave")
    steps += ["shuffle(encoded records)"] if early else []
    decode = f"decode_{encoding}"
    if batched:
        steps += [f"batch({PARSE_BATCH})", f"map(parse_example + {decode})"]
        steps += ["cache", "unbatch"] if stages.cache else ["unbatch"]
    else:
        parallel = ", parallel" if stages.parallel else ""
        work = "parse_single_example" if crop else f"parse_single_example + {decode}"
        steps += [f"map({work}{parallel})"] + (["cache"] if stages.cache else [])
    steps += ["shuffle"] if shuffle and not early else []
    steps += ["map(decode_and_crop_jpeg, random window)"] if crop else []
    steps.append("batch")
    steps += ["augment(translate)"] if augment and training and not crop else []
    steps += ["prefetch(AUTOTUNE)"] if stages.prefetch else []
    return " → ".join(steps)


def shuffle_buffer(count: int, image_shape: Sequence[int]) -> int:
    """The whole split when its decoded images fit SHUFFLE_BYTES, else as many as fit (>= 1024)."""
    image_bytes = max(1, math.prod(int(side) for side in image_shape))
    return max(1, min(int(count), max(MIN_SHUFFLE, SHUFFLE_BYTES // image_bytes)))


def batch_parse(stages: Stages, image_shape: Sequence[int]) -> bool:
    """Whether records are batched before parsing: as `stages` says, else by decode.read_regime."""
    if stages.batch_parse is not None:
        return stages.batch_parse
    return read_regime(image_shape) == "batched"


# --- stages ---------------------------------------------------------------------------------------


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
