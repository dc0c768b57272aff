"""One input reader for every task: a split's records as (features, label) batches.

Every task's `build_inputs` comes here with what is its own (a `Source`: the split's shard files,
or its rows in memory, and a `Reading`: how a record is decoded and, where the task needs its own,
how examples are batched). The rest is the same for all and lives only here: the checks of the
options, which records this input pipeline (or worker) reads, interleaving the shards, the cache,
the seeded shuffle, repeat, batch, prefetch and the tf.data options. The stages, in order:

    shard files → [shuffle(shards)] → interleave → [shard(records)] → [shuffle(records)]
    → decode → cache → [unbatch] → shuffle (training) → repeat → [per example] → batch
    → [per batch] → prefetch

The shuffle comes after the cache, so the cache never freezes one epoch's order; a task whose
records are much smaller than its decoded examples may shuffle the records instead, before
decoding, when nothing is cached (`Reading.shuffle_records`).
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import tensorflow as tf

from .base import DataError
from .pipeline import READ_BUFFER, auto_shard_policy, check_positive, shard_files

AUTOTUNE = tf.data.AUTOTUNE
Transform = Callable[[tf.data.Dataset], tf.data.Dataset]


@dataclass(frozen=True)
class Plan:
    """The options of one input pipeline, checked: what a task's `Reading` is chosen by."""

    batch_size: int  # this pipeline's: batch_size / replicas under an input context
    count: int  # examples this pipeline reads (about: the split's share of one pipeline)
    training: bool = False  # shuffle every epoch; a task may augment
    cache: bool | str = "auto"  # "auto": the task decides by size
    augment: bool = False
    seed: int = 42
    repeat: bool = False
    drop_remainder: bool = False
    record_shard: tuple[int, int] | None = None  # (pipelines, index): every n-th record


@dataclass(frozen=True)
class Reading:
    """How a task turns its records into batches: what the reader asks of a task."""

    decode: Transform  # records → (features, label) examples (or batches of them: `batched`)
    batched: bool = False  # decode hands over batches: cached as they are, then unbatched
    cache: bool = True  # keep the decoded examples in memory after the first epoch
    shuffle: bool = True  # seeded, a new order every epoch (training only)
    shuffle_buffer: int = 1024
    shuffle_files: bool = False  # also shuffle the order of the shards
    shuffle_records: bool = False  # without a cache, shuffle the records before decoding them
    cycle: int = 1  # shards read at the same time (1: one after another)
    block: int = 1  # consecutive records taken from one shard
    parallel: bool = True  # parallel interleave and map calls
    # (example, seed pair) → example, after repeat: random crops drawn while decoding
    per_example: Callable[[Any, tf.Tensor], Any] | None = None
    # (examples, batch_size, drop_remainder) → batches; None: Dataset.batch
    batch: Callable[[tf.data.Dataset, int, bool], tf.data.Dataset] | None = None
    per_batch: Transform | None = None  # batches → batches (augmentation)
    prefetch: bool = True


@dataclass(frozen=True)
class Source:
    """One split as a task holds it: TFRecord shard files, or rows in memory, and how many."""

    records: Sequence[str] | tf.data.Dataset
    count: int
    reading: Callable[[Plan], Reading]  # chosen once the pipeline's share is known


def read(
    source: Callable[[str], Source],
    splits: Iterable[str],
    split: str,
    batch_size: int,
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
    no_augment: str | None = None,
) -> tf.data.Dataset:
    """(features, int32 labels) batches of `split` (one of `splits`), from `source(split)`.

    `training` (default: split == "train") shuffles every epoch. `cache`: "auto" lets the task
    decide by size, True or False always. With `input_context` (from
    `strategy.distribute_datasets_from_function`) each input pipeline reads its own shards (or
    every n-th record when there are fewer shards than pipelines) and batches
    `batch_size / num_replicas_in_sync`; without it the auto-shard policy suits `num_workers`
    workers. `deterministic` sets `tf.data.Options.deterministic` (None keeps TensorFlow's
    default). `no_augment`: the sentence refusing augment=True, for a task without augmentation.
    """
    splits = list(splits)
    if split not in splits:
        raise DataError(f"split={split!r} is not in the data: use one of {', '.join(splits)}.")
    check_positive("batch_size", batch_size)
    check_positive("num_workers", num_workers)
    if augment and no_augment:
        raise DataError(no_augment)
    if not (cache == "auto" and isinstance(cache, str)) and not isinstance(cache, bool):
        raise DataError(f"cache={cache!r} is not allowed: use 'auto', True or False.")
    given = source(split)
    records, count, record_shard = given.records, int(given.count), None
    files = None if isinstance(records, tf.data.Dataset) else [os.fspath(f) for f in records]
    if input_context is not None:
        pipelines = input_context.num_input_pipelines
        if files is None:
            _, _, batch_size = shard_files([], batch_size, input_context)
            record_shard = (pipelines, input_context.input_pipeline_id)
        else:
            files, record_shard, batch_size = shard_files(files, batch_size, input_context)
        count = math.ceil(count / pipelines)
    plan = Plan(
        batch_size=batch_size,
        count=count,
        training=split == "train" if training is None else bool(training),
        cache=cache,
        augment=bool(augment),
        seed=seed,
        repeat=repeat,
        drop_remainder=drop_remainder,
        record_shard=record_shard,
    )
    dataset = pipeline(records if files is None else files, given.reading(plan), plan)
    options = tf.data.Options()
    if deterministic is not None:
        options.deterministic = bool(deterministic)
    # Sharded above already (or rows in memory): tf.distribute must not shard a second time.
    options.experimental_distribute.auto_shard_policy = (
        tf.data.experimental.AutoShardPolicy.OFF
        if input_context is not None or files is None
        else auto_shard_policy(len(files), num_workers)
    )
    return dataset.with_options(options)


def pipeline(
    records: Sequence[str] | tf.data.Dataset, reading: Reading, plan: Plan
) -> tf.data.Dataset:
    """The stages over these shard files (or rows), as `reading` and `plan` say, without options
    (a benchmark builds its variants with this)."""
    parallel = AUTOTUNE if reading.parallel else None
    shuffle = plan.training and reading.shuffle
    early = shuffle and reading.shuffle_records and not reading.cache
    if isinstance(records, tf.data.Dataset):
        data = records
    else:
        files = [os.fspath(path) for path in records]
        names = tf.data.Dataset.from_tensor_slices(files)
        if shuffle and reading.shuffle_files:  # cheap: it varies the order uncached shards arrive
            names = names.shuffle(len(files), seed=plan.seed, reshuffle_each_iteration=True)
        data = names.interleave(
            lambda name: tf.data.TFRecordDataset(name, buffer_size=READ_BUFFER),
            cycle_length=max(1, min(len(files), reading.cycle)),
            block_length=reading.block,
            num_parallel_calls=parallel,
            # Sharding by record needs the same order in every pipeline, whatever the options say.
            deterministic=True if plan.record_shard else None,
        )
    if plan.record_shard:
        data = data.shard(*plan.record_shard)
    if early:
        data = data.shuffle(reading.shuffle_buffer, seed=plan.seed, reshuffle_each_iteration=True)
    data = reading.decode(data)
    if reading.cache:
        data = data.cache()
    if reading.batched:
        data = data.unbatch()
    if shuffle and not early:
        data = data.shuffle(reading.shuffle_buffer, seed=plan.seed, reshuffle_each_iteration=True)
    if plan.repeat:
        data = data.repeat()
    if reading.per_example is not None:
        seeds = tf.data.Dataset.random(seed=plan.seed, rerandomize_each_iteration=True).batch(2)
        pairs = tf.data.Dataset.zip(data, seeds)
        data = pairs.map(reading.per_example, num_parallel_calls=parallel)
    if reading.batch is None:
        data = data.batch(plan.batch_size, drop_remainder=plan.drop_remainder)
    else:
        data = reading.batch(data, plan.batch_size, plan.drop_remainder)
    if reading.per_batch is not None:
        data = reading.per_batch(data)
    if reading.prefetch:
        data = data.prefetch(AUTOTUNE)
    return data
