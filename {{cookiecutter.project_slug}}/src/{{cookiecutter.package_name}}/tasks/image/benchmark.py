"""How fast the input pipeline is, measured against a naive one over the same records, same machine.

An accelerator waits whenever the input pipeline delivers fewer examples per second than the model
consumes. Both pipelines read the same train shards and do the same per-record work; only how
they schedule it differs. The benchmark is bounded by time, not by the data: `seconds` (about a
minute by default) shared by every timed pipeline, each running epoch after epoch over the
training split for its share. The first epoch and the later ones are reported apart: with the
cache on, the first epoch decodes while the later ones read decoded images from memory. The
pipelines compared, and how each is timed, are timing.py.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import tensorflow as tf

from ...data.report import (
    input_bound_verdict,
    noise_numbers,
    times,
    withhold_ratios,
)
from .. import read_meta
from .cache import decide
from .decode import decode_record, read_regime
from .image_source import DataError
from .pipeline import shard_paths
from .stages import PARSE_BATCH, READ_BUFFER, Stages, build, describe, shuffle_buffer
from .variants import (
    NAIVE,
    STEPS,
    WARMUP_BATCHES,
    Variant,
    decode_only_variant,
    measure,
    naive_pipeline,
    pipeline_variants,
    steps_table,
    warm_page_cache,
)

__all__ = [
    "MAP_DESCRIPTION",
    "MAX_SECONDS",
    "NAIVE",
    "PARSE_BATCH",
    "READ_BUFFER",
    "STEPS",
    "WARMUP_BATCHES",
    "DataError",
    "Stages",
    "benchmark_pipeline",
    "build",
    "check_parameters",
    "decode_record",
    "describe",
    "input_bound_verdict",
    "read_meta",
    "shard_paths",
    "shuffle_buffer",
    "steps_table",
    "times",
    "withhold_ratios",
]

SECONDS = 60.0  # the whole benchmark, shared by every timed pipeline, whatever the data
MAX_SECONDS = 3600.0  # an hour of benchmark is a typo, not a plan
MAP_DESCRIPTION = (
    "per record: parse the tf.train.Example ({kind} bytes + int64 label), decode the {kind} to "
    "uint8 H×W×C with its static shape, cast the label to int32; the naive pipeline calls this "
    "once per record, the configured one {how}"
)
HOW = {
    "batched": "runs it on batches of {parse_batch} records (one parse_example, then a decode per "
    "image inside the same call): small images, where the per-call overhead dominates",
    "per_record": "calls it once per record too, many calls in parallel on every core: images "
    "large enough that decoding dominates (batching would make the decoding serial)",
}


def benchmark_pipeline(
    run_dir: str | os.PathLike[str],
    batch_size: int = 64,
    *,
    seconds: float = SECONDS,
    model_examples_per_sec: float | None = None,
    cache: bool | str = "auto",
    steps: bool = False,
    seed: int = 42,
    rounds: int = 3,
    clock: Callable[[], float] = time.perf_counter,
) -> dict[str, Any]:
    """examples/s of the configured training pipeline against the naive one, and a verdict.

    Takes about `seconds` whatever the data: each timed pipeline (one per row, per round) gets
    its share. `speedup_vs_naive` compares steady state (the epochs after the first, once the
    cache is filled) where every round got past its first epoch, else the first epochs, and
    `speedup_basis` says which; `too_short` says a row was timed over too few batches for its
    ratio to mean anything, and the verdict then says so instead. `decode_only_examples_per_sec`
    is this machine decoding the same images from memory with all cores and nothing else (a
    reference, not a bound); `cold_vs_decode_only` sets the configured pipeline without its cache
    (`cold_examples_per_sec`, timed in the same rounds: every epoch of data too big to cache)
    against it. Every rate is the median of `rounds` measurements. With `steps`, the result also
    holds `steps`: one row per optimization added in turn, all measured in this run.
    """
    check_parameters(batch_size, seconds, model_examples_per_sec, rounds)
    meta = read_meta(run_dir)
    files = shard_paths(run_dir, meta, "train")
    records = int(meta["splits"]["train"]["count"])
    shape = meta["image_shape"]
    encoding = meta.get("encoding", "png")
    regime = read_regime(shape)
    buffer = shuffle_buffer(records, shape)
    cached = decide(cache, records, shape)  # the training split, as training caches it

    def make(stages: Stages | None) -> tf.data.Dataset:
        if stages is None:
            return naive_pipeline(files, shape, batch_size, encoding)
        dataset = build(
            files,
            shape,
            batch_size=batch_size,
            training=True,
            stages=stages,
            seed=seed,
            shuffle_buffer=buffer,
            encoding=encoding,
        )
        if stages.prefetch:
            return dataset
        # Otherwise tf.data adds a prefetch by itself, and the row would not be without one.
        options = tf.data.Options()
        options.experimental_optimization.inject_prefetch = False
        return dataset.with_options(options)

    variants = pipeline_variants(cached["cache"], regime == "batched")
    if not steps:
        variants = [variants[0], variants[-1]]
    warm_page_cache(files)

    def label(stages: Stages) -> str:
        return describe(stages, image_shape=shape, encoding=encoding)

    extra = [decode_only_variant(files, shape, encoding, regime == "batched", batch_size)]
    if variants[-1].stages is not None and variants[-1].stages.cache:  # the cold rate at scale
        uncached = replace(variants[-1].stages, cache=False)
        extra.insert(
            0, Variant("configured, no cache", "every epoch of data too big to cache", uncached)
        )
    *rows, measured_limit = measure([*variants, *extra], make, seconds, rounds, label, clock)
    limit = measured_limit["examples_per_sec"]
    cold_row = rows.pop() if len(extra) > 1 else rows[-1]
    cold = cold_row["first_epoch_examples_per_sec"]
    naive, configured = rows[0], rows[-1]
    for row in rows:
        row["speedup_vs_naive"] = _ratio(row["examples_per_sec"], naive["examples_per_sec"])
    result: dict[str, Any] = {
        "examples_per_sec": configured["examples_per_sec"],
        "first_epoch_examples_per_sec": configured["first_epoch_examples_per_sec"],
        "naive_examples_per_sec": naive["examples_per_sec"],
        "naive_first_epoch_examples_per_sec": naive["first_epoch_examples_per_sec"],
        "speedup_vs_naive": _ratio(configured["examples_per_sec"], naive["examples_per_sec"]),
        "first_epoch_speedup_vs_naive": _ratio(
            configured["first_epoch_examples_per_sec"], naive["first_epoch_examples_per_sec"]
        ),
        "decode_only_examples_per_sec": limit,
        "cold_examples_per_sec": cold,
        "cold_speedup_vs_naive": _ratio(cold, naive["first_epoch_examples_per_sec"]),
        "cold_vs_decode_only": _ratio(cold, limit),
        "cache_fill_vs_decode_only": _ratio(configured["first_epoch_examples_per_sec"], limit),
        "naive_cold_vs_decode_only": _ratio(naive["first_epoch_examples_per_sec"], limit),
        "speedup_basis": _basis(naive, configured, cached["cache"], rounds),
        "too_short": any(row["too_short"] for row in (naive, configured, cold_row)),
        **noise_numbers(naive, configured),
        "benchmark_seconds": seconds,
        "timed_seconds": round(sum(row["timed_seconds"] for row in [*rows, measured_limit]), 3),
        "map_description": MAP_DESCRIPTION.format(
            kind=encoding.upper(), how=HOW[regime].format(parse_batch=PARSE_BATCH)
        ),
        "read_regime": regime,
        "encoding": encoding,
        "pipeline": configured["pipeline"],
        "naive_pipeline": naive["pipeline"],
        "train_records": records,
        "examples_per_epoch": records,
        "rounds": rounds,
        "batch_size": batch_size,
        **cached,
        "cpu_count": os.cpu_count(),
        "model_examples_per_sec": model_examples_per_sec,
    }
    if steps:
        result["steps"] = rows
    withhold_ratios(result)  # a ratio the verdict disowns is not written either
    result.update(input_bound_verdict(result, model_examples_per_sec))
    return result


def check_parameters(
    batch_size: int,
    seconds: float = SECONDS,
    model_examples_per_sec: float | None = None,
    rounds: int = 1,
) -> None:
    """Refuse a bad benchmark setting in one sentence, before anything is read (notebook 01's
    benchmark_seconds and batch_size: prepare/entry.py's check, in its words)."""
    for name, value in (("batch_size", batch_size), ("rounds", rounds)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise DataError(f"{name}={value!r} is not allowed: use a whole number >= 1.")
    if (
        isinstance(seconds, bool)
        or not isinstance(seconds, int | float)
        or not 1 <= seconds <= MAX_SECONDS
    ):
        raise DataError(
            f"seconds={seconds!r} is not allowed: use a number of seconds from 1 to "
            f"{MAX_SECONDS:g} (the whole benchmark, shared by every timed pipeline)."
        )
    if model_examples_per_sec is not None and (
        isinstance(model_examples_per_sec, bool)
        or not isinstance(model_examples_per_sec, int | float)
        or not 0 < model_examples_per_sec < math.inf
    ):
        raise DataError(
            f"model_examples_per_sec={model_examples_per_sec!r} is not allowed: use a positive "
            "number (examples the model trains on per second), or None."
        )


def _basis(naive: dict[str, Any], configured: dict[str, Any], cache: bool, rounds: int) -> str:
    """Which epochs speedup_vs_naive compares, in words, and over how many rounds."""
    reached = min(naive["steady_rounds"], configured["steady_rounds"])
    if reached:
        filled = " (after the cache is filled)" if cache else ""
        median = "one round" if reached == 1 else f"median of {reached} rounds"
        of = (
            f" (the {rounds - reached} other(s) ended inside the first epoch)"
            if reached < rounds
            else ""
        )
        return f"steady state: the epochs after the first{filled}, {median}{of}"
    median = f"median of {rounds} rounds" if rounds > 1 else "one round"
    return (
        f"first epochs only: a pipeline's share of the time ended before its first epoch did "
        f"(a larger benchmark_seconds times later epochs too), {median}"
    )


def _ratio(numerator: float, denominator: float) -> float:
    return numerator / denominator if denominator > 0 else math.inf
