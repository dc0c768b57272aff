"""The pipelines the benchmark compares, and how each is timed fairly on a shared machine.

The naive pipeline does the same per-record work as the configured one, one record at a time, with
tf.data's own rewrites (parallel map, injected prefetch) switched off so it is what it says. The
configured one is reached by adding one optimization at a time (`STEPS`), each a row of the table.
Every pipeline is warmed up first, then timed round-robin for its share of the benchmark's time,
so a slow moment of the machine is spread over all of them rather than deciding one, and large
data makes the benchmark no longer, only its epochs fewer (or cut short, which a row then says).
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
from .decode import batch_decoder, decode_record, record_decoder
from .report import MIN_BATCHES
from .stages import AUTOTUNE, PARSE_BATCH, READ_BUFFER, Stages, describe

NAIVE = "TFRecordDataset → map(per record) → batch"
WARMUP_BATCHES = 20
UNUSED = "(batch before parse instead)"
LIMIT = "parse + decode only"
ALTERNATIVE = "the small-image regime, not used here: one call parses and decodes 256 records"
LIMIT_SAMPLE = 4096  # encoded images the decode-only pipeline holds in memory
# The optimizations added one at a time in the steps table: Stages field, row name, what it adds.
STEPS = (
    ("parallel", "+ parallel map", "parallel interleave over shards, parallel per-record map"),
    ("batch_parse", "+ batch before parse", "batches of serialized records, one parse_example"),
    ("cache", "+ cache", "decoded images kept in memory after the first epoch"),
    ("shuffle", "+ shuffle", "seeded shuffle after the cache, a new order every epoch"),
    ("prefetch", "+ prefetch", "the next batches prepared while this one is consumed"),
)


# One timed pipeline: examples, seconds and batches of each pass, and whether the last was cut.
Passes = tuple[list[int], list[float], list[int], bool]


@dataclass(frozen=True)
class Variant:
    """One pipeline of the comparison; stages None is the naive pipeline."""

    name: str
    adds: str
    stages: Stages | None
    factory: Callable[[], tf.data.Dataset] | None = None  # a pipeline of its own (decode only)


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
    seconds: float,
    rounds: int,
    label: Callable[[Stages], str] = describe,
    clock: Callable[[], float] = time.perf_counter,
) -> list[dict[str, Any]]:
    """Time each pipeline for its share of `seconds`, `rounds` times, round-robin.

    Each pipeline gets a warm-up (at most WARMUP_BATCHES batches or half a share, on a throwaway
    copy without cache: a cache read only in part is discarded with a warning) and one share per
    round, in which it runs epoch after epoch over the training split until the share is used:
    however large the data, the benchmark takes about `seconds`. Round-robin spreads a slow
    moment of the machine over all pipelines, and the median over rounds keeps one such moment
    from deciding a row. A row timed over fewer than MIN_BATCHES batches a round is `too_short`.
    """
    share = seconds / (len(variants) * (rounds + 0.5))

    def fresh(variant: Variant, stages: Stages | None) -> tf.data.Dataset:
        return variant.factory() if variant.factory else make(stages)

    for variant in variants:
        warm = None if variant.stages is None else replace(variant.stages, cache=False)
        _time_epochs(fresh(variant, warm), share / 2, clock, WARMUP_BATCHES)
    timed: list[list[Passes]] = [[] for _ in variants]
    pairs = [(index, variant) for _ in range(rounds) for index, variant in enumerate(variants)]
    for index, variant in track(pairs, len(pairs), "Pipeline benchmark", "timed pipeline"):
        timed[index].append(_time_epochs(fresh(variant, variant.stages), share, clock))
    return [_row(variant, passes, label) for variant, passes in zip(variants, timed, strict=True)]


def _row(
    variant: Variant,
    passes: list[Passes],
    label: Callable[[Stages], str],
) -> dict[str, Any]:
    """One pipeline's rates: the first epoch, and the later ones (steady) where a round got there.

    Where no round finished its first epoch, the steady state was not measured and its rate is
    the first epoch's (`steady_state` False), so the basis of every ratio can say so. A later
    pass cut short after fewer than MIN_BATCHES batches is left out of it: its time is mostly
    the start of a new pass.
    """
    steady = [pair for pair in map(_later, passes) if pair[0]]
    firsts = [counts[0] / max(spent[0], 1e-9) for counts, spent, *_ in passes]
    rounds = [sum(counts) / max(sum(spent), 1e-9) for counts, spent in steady] if steady else firsts
    first = statistics.median(firsts)
    return {
        "name": variant.name,
        "adds": variant.adds,
        "pipeline": variant.adds
        if variant.factory
        else (NAIVE if variant.stages is None else label(variant.stages)),
        "first_epoch_examples_per_sec": first,
        "examples_per_sec": statistics.median(rounds),
        "round_rates": [round(rate, 2) for rate in rounds],  # report.within_noise reads them
        "steady_state": bool(steady),
        "steady_rounds": len(steady),
        "timed_examples": sum(sum(counts) for counts, *_ in passes),
        "timed_seconds": round(sum(sum(spent) for _, spent, *_ in passes), 4),
        "too_short": min(sum(batches) for _, _, batches, _ in passes) < MIN_BATCHES,
        "epoch_seconds": [[round(value, 4) for value in spent] for _, spent, *_ in passes],
    }


def _later(passes: Passes) -> tuple[list[int], list[float]]:
    """Examples and seconds of the passes after the first, less a last one cut short early."""
    counts, spent, batches, cut = passes
    end = len(counts) - 1 if cut and batches[-1] < MIN_BATCHES else len(counts)
    return counts[1:end], spent[1:end]


def decode_only_variant(
    files: list[str], shape: list[int], encoding: str, batched: bool, batch_size: int
) -> Variant:
    """The configured regime's parse and decode with all cores, fed from serialized records
    already in memory (no file reading, shuffling or caching): a reference, not a bound. tf.data
    schedules this pipeline differently from one that reads shards, so a pipeline can beat it; a
    cold epoch near or above it means reading the shards costs little next to decoding.

    At most LIMIT_SAMPLE records are held. Timed in the same round-robin as the pipelines, so a
    slow moment of the machine does not decide the ratio.
    """
    records = tf.data.TFRecordDataset(files, buffer_size=READ_BUFFER)
    held = tf.constant(
        np.concatenate(list(records.take(LIMIT_SAMPLE).batch(1024).as_numpy_iterator()))
    )

    def factory() -> tf.data.Dataset:
        dataset = tf.data.Dataset.from_tensor_slices(held)
        if batched:  # one call parses and decodes PARSE_BATCH records, as the pipeline does
            decoder = batch_decoder(shape, encoding)
            dataset = dataset.batch(PARSE_BATCH).map(decoder, num_parallel_calls=AUTOTUNE)
            dataset = dataset.unbatch()
        else:
            dataset = dataset.map(record_decoder(shape, encoding), num_parallel_calls=AUTOTUNE)
        return dataset.batch(batch_size).prefetch(AUTOTUNE)

    regime = "batched" if batched else "per-record"
    adds = f"parse + decode only, all cores: {encoding} records from memory, {regime} regime"
    return Variant(LIMIT, adds, None, factory)


def _time_epochs(
    dataset: tf.data.Dataset,
    share: float,
    clock: Callable[[], float] = time.perf_counter,
    max_batches: int | None = None,
) -> Passes:
    """Examples, seconds and batches of each pass, passes back to back until `share` seconds are
    used (or `max_batches`), and whether the last pass was cut short. The clock is read after
    each batch."""
    counts: list[int] = []
    spent: list[float] = []
    batches: list[int] = []
    start = clock()
    while True:
        count, number, began, over = 0, 0, clock(), False
        for _, labels in dataset:
            count, number = count + int(labels.shape[0]), number + 1
            now = clock()
            over = now - start >= share or (
                max_batches is not None and sum(batches) + number >= max_batches
            )
            if over:
                break
        else:
            now = clock()
        counts.append(count)
        spent.append(now - began)
        batches.append(number)
        if over or number == 0 or now - start >= share:
            return counts, spent, batches, over


def warm_page_cache(files: list[str]) -> None:
    """Read the shards once, so no pipeline pays for the first read from disk."""
    for _ in tf.data.TFRecordDataset(files, buffer_size=READ_BUFFER).batch(1024):
        pass
