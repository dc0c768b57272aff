"""The pipelines the benchmark compares, and how each is timed fairly on a shared machine.

The naive pipeline does the same per-record work as the configured one, one record at a time, with
tf.data's own rewrites (parallel map, injected prefetch) switched off so it is what it says. The
configured one is reached by adding one optimization at a time (`STEPS`), each a row of the table.
Every pipeline is warmed up first, then timed round-robin, so a slow moment of the machine is
spread over all of them rather than deciding one.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import tensorflow as tf

from ..progress import track
from .decode import decode_image, decode_record, parse_bytes
from .stages import PARSE_BATCH, READ_BUFFER, Stages, describe

NAIVE = "TFRecordDataset → map(per record) → batch"
WARMUP_BATCHES = 20
UNUSED = "(batch before parse instead)"
LIMIT = "decode limit"
ALTERNATIVE = "the small-image regime, not used here: one call parses and decodes 256 records"
LIMIT_SAMPLE = 4096  # encoded images the decode limit holds in memory
# The optimizations added one at a time in the steps table: Stages field, row name, what it adds.
STEPS = (
    ("parallel", "+ parallel map", "parallel interleave over shards, parallel per-record map"),
    ("batch_parse", "+ batch before parse", "batches of serialized records, one parse_example"),
    ("cache", "+ cache", "decoded images kept in memory after the first epoch"),
    ("shuffle", "+ shuffle", "seeded shuffle after the cache, a new order every epoch"),
    ("prefetch", "+ prefetch", "the next batches prepared while this one is consumed"),
)


@dataclass(frozen=True)
class Variant:
    """One pipeline of the comparison; stages None is the naive pipeline."""

    name: str
    adds: str
    stages: Stages | None
    factory: Callable[[], tf.data.Dataset] | None = None  # a pipeline of its own (decode limit)


def pipeline_variants(cache: bool, batched: bool = True) -> list[Variant]:
    """naive, then one optimization added at a time; the last is what make_dataset builds.

    Photos (batched False, decode.read_regime) do not add "batch before parse": their pipeline
    decodes one record per parallel call. The batched regime is still measured for them, as a row
    of its own that the later rows do not build on, so the table shows both regimes' numbers.
    """
    variants = [
        Variant("naive", "one record at a time: no parallel calls, cache or prefetch", None)
    ]
    stages = Stages(parallel=False, batch_parse=False, cache=False, shuffle=False, prefetch=False)
    for field, name, adds in STEPS:
        if field == "cache" and not cache:
            continue
        if field == "batch_parse" and not batched:
            alternative = replace(stages, batch_parse=True)
            variants.append(Variant(UNUSED, ALTERNATIVE, alternative))
            continue
        stages = replace(stages, **{field: True})
        variants.append(Variant(name, adds, stages))
    return variants


def naive_pipeline(
    files: list[str], shape: list[int], batch_size: int, encoding: str = "png"
) -> tf.data.Dataset:
    """No parallel calls, no cache, no prefetch: one record at a time, batched at the end.

    tf.data would by default parallelize this stateless map and add a final prefetch by itself;
    both rewrites are switched off, so the naive pipeline is what it says.
    """
    dataset = (
        tf.data.TFRecordDataset(files, buffer_size=READ_BUFFER)
        .map(lambda serialized: decode_record(serialized, shape, encoding))
        .batch(batch_size)
    )
    options = tf.data.Options()
    options.experimental_optimization.map_parallelization = False
    options.experimental_optimization.inject_prefetch = False
    return dataset.with_options(options)


def measure(
    variants: list[Variant],
    make: Callable[[Stages | None], tf.data.Dataset],
    epochs: int,
    rounds: int,
    label: Callable[[Stages], str] = describe,
) -> list[dict[str, Any]]:
    """Time `epochs` passes over a fresh copy of each pipeline, `rounds` times, round-robin.

    Round-robin spreads a slow moment of the machine over all pipelines instead of one, and the
    median over rounds keeps one such moment from deciding a row. Each pipeline is warmed up once
    on a throwaway copy without cache (a cache read only in part is discarded with a warning).
    """

    def fresh(variant: Variant, stages: Stages | None) -> tf.data.Dataset:
        return variant.factory() if variant.factory else make(stages)

    for variant in variants:
        warm = None if variant.stages is None else replace(variant.stages, cache=False)
        for _ in fresh(variant, warm).take(WARMUP_BATCHES):  # starts threads, traces functions
            pass
    timed: list[list[tuple[list[int], list[float]]]] = [[] for _ in variants]
    pairs = [(index, variant) for _ in range(rounds) for index, variant in enumerate(variants)]
    for index, variant in track(pairs, len(pairs), "Pipeline benchmark", "timed pipeline"):
        timed[index].append(_time_epochs(fresh(variant, variant.stages), epochs))
    rows = []
    later = slice(1, None) if epochs > 1 else slice(0, None)
    for variant, passes in zip(variants, timed, strict=True):
        rows.append(
            {
                "name": variant.name,
                "adds": variant.adds,
                "pipeline": variant.adds
                if variant.factory
                else (NAIVE if variant.stages is None else label(variant.stages)),
                "first_epoch_examples_per_sec": statistics.median(
                    counts[0] / seconds[0] for counts, seconds in passes
                ),
                "examples_per_sec": statistics.median(
                    sum(counts[later]) / sum(seconds[later]) for counts, seconds in passes
                ),
                "epoch_seconds": [[round(value, 4) for value in seconds] for _, seconds in passes],
            }
        )
    return rows


def limit_variant(
    files: list[str], shape: list[int], encoding: str, batched: bool, batch_size: int, examples: int
) -> Variant:
    """The decode limit as a pipeline of its own: the same decode in the same regime, with all
    cores, fed from encoded images already in memory (no reading, parsing, shuffling or caching).

    At most LIMIT_SAMPLE records are held, repeated until a pass has `examples`. Timed in the same
    round-robin as the pipelines, so a slow moment of the machine does not decide the ratio.
    """
    records = tf.data.TFRecordDataset(files, buffer_size=READ_BUFFER).map(parse_bytes)
    sample = [data for data, _ in records.take(LIMIT_SAMPLE).batch(1024).as_numpy_iterator()]
    images = tf.constant(np.concatenate(sample))
    repeats = max(1, -(-examples // int(images.shape[0])))

    def factory() -> tf.data.Dataset:
        dataset = tf.data.Dataset.from_tensor_slices(images).repeat(repeats)
        if batched:
            dataset = dataset.batch(PARSE_BATCH).map(
                lambda data: tf.map_fn(
                    lambda one: decode_image(one, shape, encoding),
                    data,
                    fn_output_signature=tf.TensorSpec(shape, tf.uint8),
                ),
                num_parallel_calls=tf.data.AUTOTUNE,
            )
            dataset = dataset.unbatch()
        else:
            dataset = dataset.map(
                lambda data: decode_image(data, shape, encoding),
                num_parallel_calls=tf.data.AUTOTUNE,
            )
        dataset = dataset.map(lambda image: (image, tf.zeros([], tf.int32)))
        return dataset.batch(batch_size).prefetch(tf.data.AUTOTUNE)

    regime = "batched" if batched else "per-record"
    adds = f"decoding only, all cores: {encoding} images from memory, {regime} regime"
    return Variant(LIMIT, adds, None, factory)


def _time_epochs(dataset: tf.data.Dataset, epochs: int) -> tuple[list[int], list[float]]:
    """Examples and seconds of each full pass; the clock stops after the last batch arrived."""
    counts, seconds = [], []
    for _ in range(epochs):
        count, start = 0, time.perf_counter()
        for _, labels in dataset:
            count += int(labels.shape[0])
        seconds.append(time.perf_counter() - start)
        counts.append(count)
    return counts, seconds


def warm_page_cache(files: list[str]) -> None:
    """Read the shards once, so no pipeline pays for the first read from disk."""
    for _ in tf.data.TFRecordDataset(files, buffer_size=READ_BUFFER).batch(1024):
        pass
