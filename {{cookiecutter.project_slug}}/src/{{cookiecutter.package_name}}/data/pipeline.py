"""Reading the shards: a tf.data pipeline that keeps the accelerator fed, built from what pays.

Measured on a 2-core CPU (notebook 01 repeats the measurement on your machine): parsing and decoding
one record per call spends most of its time in per-call overhead, and running those calls in
parallel barely helps. What pays is batching serialized records BEFORE one vectorized
`tf.io.parse_example`, decoding the PNGs of that batch in the same call, and caching the decoded
images (the decode then runs once, not once per epoch); prefetch lets all of it overlap the
model's step. The order of the stages matters:

    shard files → interleave(parallel) → batch → parse + decode → cache → unbatch
    → shuffle (training) → repeat → batch → augment (training) → prefetch

The shuffle comes after the cache, so the cache never freezes one epoch's order. Images stay uint8
all the way (a quarter of float32's bytes); the model rescales them inside.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import tensorflow as tf

from ..artifacts import DATA_DIR, META_FILE, resolve_run_dir
from .records import read_meta
from .sources import DataError

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


def make_dataset(
    run_dir: str | os.PathLike[str],
    split: str = "train",
    batch_size: int = 64,
    *,
    training: bool | None = None,
    cache: bool = True,
    augment: bool = False,
    seed: int = 42,
    deterministic: bool | None = None,
    repeat: bool = False,
    drop_remainder: bool = False,
    input_context: tf.distribute.InputContext | None = None,
    num_workers: int = 1,
) -> tf.data.Dataset:
    """(images uint8 [B, H, W, C], labels int32 [B]) batches of one split of run_dir/data/.

    `training` (default: split == "train") shuffles every epoch and allows `augment`. With
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
    _check_positive("batch_size", batch_size)
    _check_positive("num_workers", num_workers)
    files = shard_paths(run_dir, meta, split)
    training = split == "train" if training is None else bool(training)
    count = int(splits[split]["count"])
    record_shard = None
    if input_context is not None:
        files, record_shard, batch_size = _shard(files, batch_size, input_context)
        count = math.ceil(count / input_context.num_input_pipelines)
    dataset = build(
        files,
        meta["image_shape"],
        batch_size=batch_size,
        training=training,
        stages=Stages(cache=bool(cache)),
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


def auto_shard_policy(num_shards: int, num_workers: int) -> tf.data.experimental.AutoShardPolicy:
    """FILE when every worker gets at least one shard (each reads only its files), else DATA.

    DATA makes every worker read all records and keep every n-th: correct, but n times the reading.
    """
    _check_positive("num_shards", num_shards)
    _check_positive("num_workers", num_workers)
    policy = tf.data.experimental.AutoShardPolicy
    return policy.FILE if num_shards >= num_workers else policy.DATA


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


def first_images(run_dir: str | os.PathLike[str], split: str, count: int) -> np.ndarray:
    """The first `count` raw uint8 images of a split [N, H, W, C], in shard order, unshuffled."""
    _check_positive("count", count)
    batches, seen = [], 0
    for images, _ in make_dataset(run_dir, split, min(256, count), training=False, cache=False):
        batches.append(images.numpy())
        seen += len(batches[-1])
        if seen >= count:
            break
    return np.concatenate(batches)[:count]


def examples_per_class(
    run_dir: str | os.PathLike[str], split: str = "train", per_class: int = 8
) -> tuple[np.ndarray, np.ndarray]:
    """Up to `per_class` decoded images of each class, class by class, as the model will see them.

    Read through the pipeline from the shards (not from the source), so a sample grid shows what
    was written; reading stops as soon as every class has its share.
    """
    _check_positive("per_class", per_class)
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


def shard_paths(run_dir: str | os.PathLike[str], meta: dict[str, Any], split: str) -> list[str]:
    """The split's shard files (meta lists them relative to run_dir/data/); names a missing one."""
    root = resolve_run_dir(run_dir, create=False)
    folder, meta_path = root / DATA_DIR, root / META_FILE
    paths = [folder / name for name in meta["splits"][split]["shards"]]
    for path in paths:
        if not path.is_file():
            raise DataError(
                f"{path} is listed in {meta_path} but missing: run the data step "
                "(01_data) again with the same run_dir."
            )
    if not paths:
        raise DataError(f"{meta_path} lists no shards for split {split!r}.")
    return [os.fspath(path) for path in paths]


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


def _shard(
    files: list[str], batch_size: int, context: tf.distribute.InputContext
) -> tuple[list[str], tuple[int, int] | None, int]:
    """This input pipeline's files (or every n-th record when shards are fewer) and batch size."""
    pipelines, index = context.num_input_pipelines, context.input_pipeline_id
    replicas = context.num_replicas_in_sync
    if batch_size % replicas:
        raise DataError(
            f"batch_size={batch_size} is not divisible by the {replicas} replicas in sync: use a "
            f"multiple of {replicas} (the global batch, split evenly across replicas)."
        )
    per_replica = context.get_per_replica_batch_size(batch_size)
    if len(files) >= pipelines:
        return files[index::pipelines], None, per_replica
    return files, (pipelines, index), per_replica


def _check_positive(name: str, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise DataError(f"{name}={value!r} is not allowed: use a whole number >= 1.")
