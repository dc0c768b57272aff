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

import tensorflow as tf

from ..progress import track
from .stages import READ_BUFFER, Stages, decode_record, describe

NAIVE = "TFRecordDataset → map(per record) → batch"
WARMUP_BATCHES = 20
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


def pipeline_variants(cache: bool) -> list[Variant]:
    """naive, then one optimization added at a time; the last is what make_dataset builds."""
    variants = [
        Variant("naive", "one record at a time: no parallel calls, cache or prefetch", None)
    ]
    stages = Stages(parallel=False, batch_parse=False, cache=False, shuffle=False, prefetch=False)
    for field, name, adds in STEPS:
        if field == "cache" and not cache:
            continue
        stages = replace(stages, **{field: True})
        variants.append(Variant(name, adds, stages))
    return variants


def naive_pipeline(files: list[str], shape: list[int], batch_size: int) -> tf.data.Dataset:
    """No parallel calls, no cache, no prefetch: one record at a time, batched at the end.

    tf.data would by default parallelize this stateless map and add a final prefetch by itself;
    both rewrites are switched off, so the naive pipeline is what it says.
    """
    dataset = (
        tf.data.TFRecordDataset(files, buffer_size=READ_BUFFER)
        .map(lambda serialized: decode_record(serialized, shape))
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
) -> list[dict[str, Any]]:
    """Time `epochs` passes over a fresh copy of each pipeline, `rounds` times, round-robin.

    Round-robin spreads a slow moment of the machine over all pipelines instead of one, and the
    median over rounds keeps one such moment from deciding a row. Each pipeline is warmed up once
    on a throwaway copy without cache (a cache read only in part is discarded with a warning).
    """
    for variant in variants:
        warm = None if variant.stages is None else replace(variant.stages, cache=False)
        for _ in make(warm).take(WARMUP_BATCHES):  # starts the threads, traces the functions
            pass
    timed: list[list[tuple[list[int], list[float]]]] = [[] for _ in variants]
    pairs = [(index, variant) for _ in range(rounds) for index, variant in enumerate(variants)]
    for index, variant in track(pairs, len(pairs), "Pipeline benchmark", "timed pipeline"):
        timed[index].append(_time_epochs(make(variant.stages), epochs))
    rows = []
    later = slice(1, None) if epochs > 1 else slice(0, None)
    for variant, passes in zip(variants, timed, strict=True):
        rows.append(
            {
                "name": variant.name,
                "adds": variant.adds,
                "pipeline": NAIVE if variant.stages is None else describe(variant.stages),
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
