"""metrics/data.json's benchmark numbers (every task's step 1): the result with its verdict in
words (`input_bound_verdict`): a ratio where the timing means one, and where a pipeline was timed
too briefly, a sentence that says so and how to give it more time.
"""

from __future__ import annotations

import statistics
from typing import Any

from ..inputbound import INPUT_BOUND_AT, is_input_bound

MIN_BATCHES = 5  # batches a round must time for a rate to mean anything (timing.py counts them)
# The ratios a benchmark too short to compare leaves null (the rates stay: each is what was timed).
RATIO_KEYS = (
    "speedup_vs_naive", "first_epoch_speedup_vs_naive", "cold_speedup_vs_naive",
    "cold_vs_decode_only", "cache_fill_vs_decode_only", "naive_cold_vs_decode_only",
)  # fmt: skip
# The ratios against the naive pipeline, which pipelines within noise of each other leave null.
NAIVE_RATIO_KEYS = ("speedup_vs_naive", "first_epoch_speedup_vs_naive", "cold_speedup_vs_naive")
REASON_KEY = "speedup_vs_naive_reason"  # why speedup_vs_naive and the other ratios are null


def withhold_ratios(result: dict[str, Any]) -> dict[str, Any]:
    """A result too short to compare, or whose pipelines' rates are within noise of each other
    (`within_noise`), keeps no ratio: each of RATIO_KEYS it holds, and each step row's, becomes
    None, and REASON_KEY says why (the verdict's sentence). Rates stay."""
    naive = (result.get("steps") or [{}])[0]
    for row in result.get("steps", []):
        if (
            naive.get("too_short")
            or row.get("too_short")
            or (row is not naive and within_noise(naive, row))
        ):
            row["speedup_vs_naive"] = None
    if not result.get("too_short") and not result.get("within_noise"):
        return result
    for key in RATIO_KEYS if result.get("too_short") else NAIVE_RATIO_KEYS:
        if key in result:
            result[key] = None
    result[REASON_KEY] = (
        too_short_sentence(result) if result.get("too_short") else noise_sentence(result)
    )
    return result


def within_noise(naive: dict[str, Any], configured: dict[str, Any]) -> bool:
    """Whether two timed rows' rates are within noise of each other: their rounds overlap, the
    slowest round of the faster pipeline below the fastest round of the slower one (timing.py's
    `round_rates`). One round each gives no spread to judge by, so it is never called noise."""
    low, high = naive.get("round_rates") or [], configured.get("round_rates") or []
    if len(low) < 2 or len(high) < 2:
        return False
    if statistics.median(high) < statistics.median(low):
        low, high = high, low
    return min(high) < max(low)


def noise_sentence(result: dict[str, Any]) -> str:
    """What a benchmark whose pipelines' rounds overlap says instead of a ratio."""
    naive, configured = result["steps_noise"]
    seconds = result["benchmark_seconds"]
    return (
        f"Within noise, too short to compare: in benchmark_seconds={seconds:g}, the naive "
        f"pipeline's rounds ran {naive[0]:,.0f}-{naive[1]:,.0f} examples/s and the configured "
        f"one's {configured[0]:,.0f}-{configured[1]:,.0f}, so their ratio is not a measurement; "
        f"give benchmark_seconds={max(seconds * 4, 60.0):g} for one."
    )


def noise_numbers(naive: dict[str, Any], configured: dict[str, Any]) -> dict[str, Any]:
    """`within_noise` and the rounds' ranges the sentence names, for a benchmark's result."""
    ranges = [
        [min(row.get("round_rates") or [0.0]), max(row.get("round_rates") or [0.0])]
        for row in (naive, configured)
    ]
    return {"within_noise": within_noise(naive, configured), "steps_noise": ranges}


def times(value: float | None, digits: int = 1) -> str:
    """A ratio as `2.3x`, or what a withheld one (None) says instead."""
    return "not measured (too short)" if value is None else f"{value:.{digits}f}x"


def input_bound_verdict(
    result: dict[str, Any], model_examples_per_sec: float | None
) -> dict[str, Any]:
    """`input_bound` (None without a model rate) and a `verdict` sentence on the measured rates.

    With a model rate, the share of each step that would wait for data is estimated as
    1 - pipeline / model, and called input-bound from inputbound.INPUT_BOUND_AT, the threshold
    03_train applies to the wait it measures: one definition for both steps."""
    if result.get("too_short"):
        return {"input_bound": None, "verdict": too_short_sentence(result)}
    rate, first = result["examples_per_sec"], result["first_epoch_examples_per_sec"]
    limit, cold = result.get("decode_only_examples_per_sec"), result.get("cold_examples_per_sec")
    ratio = result.get("speedup_vs_naive")
    measured = (
        f"The configured pipeline delivers {rate:,.0f} examples/s in steady state "
        f"({first:,.0f} in the first epoch"
        + (
            f"; {cold:,.0f} cold, without a cache: {cold / limit:.0%} of a decode-only "
            f"pipeline's {limit:,.0f}/s"
            if limit and cold and result.get("cold_vs_decode_only", cold) is not None
            else ""
        )
        + (
            f"), {ratio:.1f}× the naive pipeline's {result['naive_examples_per_sec']:,.0f}"
            if ratio is not None
            else f"), the naive pipeline {result['naive_examples_per_sec']:,.0f}. "
            + result.get(REASON_KEY, "").rstrip(".")
        )
    )
    if model_examples_per_sec is None:
        return {
            "input_bound": None,
            "verdict": measured + "; whether training waits for it, 03_train measures (the "
            "share of each step spent waiting for input).",
        }
    model = float(model_examples_per_sec)
    wait = max(0.0, 1 - rate / model)
    bound = is_input_bound(wait)
    verdict = (
        f"{measured}. Against the {model:,.0f} examples/s the model consumes "
        f"(model_examples_per_sec): {'input-bound' if bound else 'not input-bound'}, about "
        f"{wait:.0%} of each step would wait for data (input-bound from {INPUT_BOUND_AT:.0%}, "
        "as 03_train calls the wait it measures)"
        + (
            f"; the pipeline alone runs {rate / model:.1f}× that, timed without the model "
            "beside it on the CPU, so 03_train's measured wait is the one to trust"
            if rate >= model
            else ""
        )
        + (
            " — except in the first epoch, while the cache fills."
            if not bound and is_input_bound(max(0.0, 1 - first / model))
            else "."
        )
    )
    return {"input_bound": bound, "verdict": verdict}


def too_short_sentence(result: dict[str, Any]) -> str:
    """What a benchmark too short to compare the pipelines says instead of a ratio."""
    seconds = result["benchmark_seconds"]
    return (
        f"Too short to compare the pipelines: in benchmark_seconds={seconds:g}, a pipeline was "
        f"timed over fewer than {MIN_BATCHES} batches a round, so no ratio here is a measurement; "
        f"give benchmark_seconds={max(seconds * 4, 60.0):g} for one."
    )
