"""How fast the input pipeline is, measured against a naive one over the same records, same machine.

An accelerator waits whenever the input pipeline delivers fewer examples per second than the model
consumes. Both pipelines here read the same train shards (repeated until an epoch holds at least
`min_examples`, so a pass takes long enough to time) and do the same per-record work; only how
they schedule it differs. The first epoch and the later ones are reported apart: with the cache
on, the first epoch decodes while the later ones read decoded images from memory. The pipelines
compared, and how each is timed, are timing.py.
"""

from __future__ import annotations

import math
import os
from dataclasses import replace
from typing import Any

import tensorflow as tf

from .base import DataError
from .cache import decide
from .decode import decode_record, read_regime
from .meta import read_meta
from .pipeline import shard_paths
from .report import data_metrics, steps_table
from .stages import PARSE_BATCH, READ_BUFFER, Stages, build, describe, shuffle_buffer
from .timing import (
    NAIVE,
    STEPS,
    WARMUP_BATCHES,
    Variant,
    limit_variant,
    measure,
    naive_pipeline,
    pipeline_variants,
    warm_page_cache,
)

__all__ = [
    "MAP_DESCRIPTION",
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
    "data_metrics",
    "decode_record",
    "describe",
    "input_bound_verdict",
    "read_meta",
    "shard_paths",
    "shuffle_buffer",
    "steps_table",
]

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
    epochs: int = 3,
    min_examples: int = 20000,
    model_examples_per_sec: float | None = None,
    cache: bool | str = "auto",
    steps: bool = False,
    seed: int = 42,
    rounds: int = 3,
) -> dict[str, Any]:
    """examples/s of the configured training pipeline against the naive one, and a verdict.

    `speedup_vs_naive` compares steady state (epochs 2.., after the cache is filled; epoch 1 when
    epochs=1); `first_epoch_speedup_vs_naive` compares the first epochs.
    `decode_limit_examples_per_sec` is this machine decoding the same images with all cores and
    nothing else; `cold_vs_decode_limit` is how close the configured pipeline's cold epoch comes
    to it: that pipeline without its cache (`cold_examples_per_sec`, timed in the same rounds),
    the rate of every epoch of data too big to cache. With the cache on, its first epoch also
    fills the cache (`first_epoch_examples_per_sec`) and is reported apart. Every rate is the
    median of `rounds` measurements. With `steps`, the result also holds `steps`: one row per
    optimization added in turn, all measured in this run.
    """
    check_parameters(batch_size, epochs, min_examples, model_examples_per_sec, rounds)
    meta = read_meta(run_dir)
    files = shard_paths(run_dir, meta, "train")
    records = int(meta["splits"]["train"]["count"])
    repeats = max(1, math.ceil(min_examples / max(1, records)))
    files = files * repeats  # the same records, read `repeats` times per epoch
    shape = meta["image_shape"]
    encoding = meta.get("encoding", "png")
    regime = read_regime(shape)
    buffer = shuffle_buffer(records * repeats, shape)
    cached = decide(cache, records * repeats, shape)

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
    warm_page_cache(files[: len(files) // repeats])

    def label(stages: Stages) -> str:
        return describe(stages, image_shape=shape, encoding=encoding)

    unique = files[: len(files) // repeats]
    limit_row = limit_variant(
        unique, shape, encoding, regime == "batched", batch_size, records * repeats
    )
    extra = [limit_row]
    if variants[-1].stages is not None and variants[-1].stages.cache:  # the cold rate at scale
        uncached = replace(variants[-1].stages, cache=False)
        extra.insert(
            0, Variant("configured, no cache", "every epoch of data too big to cache", uncached)
        )
    *rows, measured_limit = measure([*variants, *extra], make, epochs, rounds, label)
    limit = measured_limit["first_epoch_examples_per_sec"]
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
        "decode_limit_examples_per_sec": limit,
        "cold_examples_per_sec": cold,
        "cold_speedup_vs_naive": _ratio(cold, naive["first_epoch_examples_per_sec"]),
        "cold_vs_decode_limit": _ratio(cold, limit),
        "cache_fill_vs_decode_limit": _ratio(configured["first_epoch_examples_per_sec"], limit),
        "naive_cold_vs_decode_limit": _ratio(naive["first_epoch_examples_per_sec"], limit),
        "speedup_basis": _basis(epochs, cached["cache"], rounds),
        "map_description": MAP_DESCRIPTION.format(
            kind=encoding.upper(), how=HOW[regime].format(parse_batch=PARSE_BATCH)
        ),
        "read_regime": regime,
        "encoding": encoding,
        "pipeline": configured["pipeline"],
        "naive_pipeline": naive["pipeline"],
        "train_records": records,
        "repeats": repeats,
        "examples_per_epoch": records * repeats,
        "epochs": epochs,
        "rounds": rounds,
        "batch_size": batch_size,
        **cached,
        "cpu_count": os.cpu_count(),
        "model_examples_per_sec": model_examples_per_sec,
    }
    result.update(input_bound_verdict(result, model_examples_per_sec))
    if steps:
        result["steps"] = rows
    return result


def input_bound_verdict(
    result: dict[str, Any], model_examples_per_sec: float | None
) -> dict[str, Any]:
    """`input_bound` (None without a model rate) and a `verdict` sentence on the measured rates."""
    rate, first = result["examples_per_sec"], result["first_epoch_examples_per_sec"]
    limit, cold = result.get("decode_limit_examples_per_sec"), result.get("cold_examples_per_sec")
    measured = (
        f"The configured pipeline delivers {rate:,.0f} examples/s in steady state "
        f"({first:,.0f} in the first epoch"
        + (
            f"; {cold:,.0f} cold, without a cache, {cold / limit:.0%} of the {limit:,.0f}/s "
            "decode limit"
            if limit and cold
            else ""
        )
        + f"), {result['speedup_vs_naive']:.1f}× the naive pipeline's "
        f"{result['naive_examples_per_sec']:,.0f}"
    )
    if model_examples_per_sec is None:
        return {
            "input_bound": None,
            "verdict": measured + "; whether training waits for it, 03_train measures (the "
            "share of each step spent waiting for input).",
        }
    model = float(model_examples_per_sec)
    if rate < model:
        verdict = (
            f"{measured}: input-bound, since the model consumes {model:,.0f} examples/s, so the "
            f"accelerator would wait for data about {1 - rate / model:.0%} of the time."
        )
    else:
        verdict = (
            f"{measured}: not input-bound, {rate / model:.1f}× the {model:,.0f} examples/s the "
            "model consumes"
            + (" — except in the first epoch, while the cache fills." if first < model else ".")
        )
    return {"input_bound": rate < model, "verdict": verdict}


def check_parameters(
    batch_size: int,
    epochs: int,
    min_examples: int,
    model_examples_per_sec: float | None = None,
    rounds: int = 1,
    *,
    names: dict[str, str] | None = None,
) -> None:
    """Refuse a bad benchmark setting in one sentence, before anything is read.

    `names` spells a setting as the caller's user knows it (notebook 01: benchmark_epochs).
    """
    for name, value in (
        ("batch_size", batch_size),
        ("epochs", epochs),
        ("min_examples", min_examples),
        ("rounds", rounds),
    ):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            shown = (names or {}).get(name, name)
            raise DataError(f"{shown}={value!r} is not allowed: use a whole number >= 1.")
    if model_examples_per_sec is not None and (
        isinstance(model_examples_per_sec, bool)
        or not isinstance(model_examples_per_sec, int | float)
        or not 0 < model_examples_per_sec < math.inf
    ):
        raise DataError(
            f"model_examples_per_sec={model_examples_per_sec!r} is not allowed: use a positive "
            "number (examples the model trains on per second), or None."
        )


def _basis(epochs: int, cache: bool, rounds: int) -> str:
    """Which epochs speedup_vs_naive compares, in words."""
    median = f"median of {rounds} rounds" if rounds > 1 else "one round"
    if epochs == 1:
        return f"the single timed epoch (epochs=1), {median}"
    later = "epoch 2" if epochs == 2 else f"epochs 2 to {epochs}"
    filled = ", after the cache is filled" if cache else ""
    return f"steady state: {later}{filled}, {median}"


def _ratio(numerator: float, denominator: float) -> float:
    return numerator / denominator if denominator > 0 else math.inf
