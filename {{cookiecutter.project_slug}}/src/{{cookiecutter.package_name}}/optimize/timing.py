"""How 05_optimize times a backend, and what its figures may claim.

Each backend and batch size gets WARMUP untimed calls, then timed calls until `iterations` calls
or `seconds` of timing, whichever comes first (MIN_CALLS at least): a fast backend reaches the
count, a slow one (model.predict) the time budget. Every figure records how many calls it comes
from. p50 is the median call; p99 is given only from P99_MIN_CALLS calls up (from 20 calls the
"p99" is just the slowest call). Throughput is the batch size over the median call, so one slow
outlier does not make a backend look slower in the plot than in the table and the headline.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .base import Predict

WARMUP = 5
MIN_CALLS = 3
P99_MIN_CALLS = 100
PREDICT = "model.predict"
RAW = "savedmodel_raw"  # serving_default on raw input (strings): the model plus its preprocessing


def benchmark(
    predict: Predict,
    images: np.ndarray,
    batch_sizes: Sequence[int],
    iterations: int,
    seconds: float = float("inf"),
    *,
    now: Callable[[str], None] = lambda text: None,
) -> dict[str, Any]:
    """Per batch size: timed calls (`calls`), every call in ms (`timings_ms`), images/s from the
    median call (`throughput`), p50/p99 in ms (`latency_ms`); batch 1's also as p50_ms/p99_ms.
    `now(text)` hears which batch size is being timed (the step's progress)."""
    throughput: dict[str, float] = {}
    timings: dict[str, list[float]] = {}
    latency: dict[str, dict[str, float | None]] = {}
    calls: dict[str, int] = {}
    for size in batch_sizes:
        now(f"batch {size}")
        batch = _batch(images, size)
        for _ in range(WARMUP):
            predict(batch)
        times = timed_calls(predict, batch, iterations, seconds)
        median = float(np.median(times))
        key = str(size)
        calls[key] = len(times)
        latency[key] = percentiles(times)
        throughput[key] = float(size / median)
        timings[key] = [round(value * 1e3, 4) for value in times]  # ms, to 0.1 µs
    first = latency.get("1", {})
    return {
        "p50_ms": first.get("p50"),
        "p99_ms": first.get("p99"),
        "calls": calls,
        "latency_ms": latency,
        "throughput": throughput,
        "timings_ms": timings,
    }


def timed_calls(
    predict: Predict, batch: np.ndarray, iterations: int, seconds: float
) -> list[float]:
    """Seconds per call: `iterations` calls, or fewer once `seconds` are spent (MIN_CALLS)."""
    times: list[float] = []
    started = time.perf_counter()
    while len(times) < iterations:
        if len(times) >= MIN_CALLS and time.perf_counter() - started >= seconds:
            break
        start = time.perf_counter()
        predict(batch)
        times.append(time.perf_counter() - start)
    return times


def percentiles(seconds: Sequence[float]) -> dict[str, float | None]:
    """p50 (ms) of any number of calls; p99 (ms) only from P99_MIN_CALLS calls up, else None."""
    p50 = float(np.percentile(seconds, 50)) * 1e3
    p99 = float(np.percentile(seconds, 99)) * 1e3 if len(seconds) >= P99_MIN_CALLS else None
    return {"p50": p50, "p99": p99}


def best_ratios(baselines: list[dict[str, Any]], entries: list[dict[str, Any]]) -> dict[str, Any]:
    """The fastest backend that ran with parity (batch-1 p50), the SavedModel's batch-1 p50 over
    its own, and model.predict's per-call overhead: its p50 less the SavedModel's, in ms (what
    Keras' predict loop adds to every call, not a speed of the model)."""
    p50 = {line["name"]: line.get("p50_ms") for line in baselines}
    saved, keras = p50.get("savedmodel"), p50.get(PREDICT)
    overhead = None if saved is None or keras is None else float(keras - saved)
    winners = [e for e in entries if e["status"] == "ran" and e["parity_ok"] and e.get("p50_ms")]
    if not winners:
        return {
            "best_backend": None,
            "best_vs_savedmodel_batch1": None,
            "predict_overhead_ms": overhead,
        }
    best = min(winners, key=lambda entry: entry["p50_ms"])
    return {
        "best_backend": f"{best['name']} ({best['precision']})",
        "best_vs_savedmodel_batch1": None if saved is None else float(saved / best["p50_ms"]),
        "predict_overhead_ms": overhead,
    }


def latency_text(line: dict[str, Any], size: str = "1") -> str:
    """ "p50 0.120 ms, p99 0.310 ms (400 calls)", or "p50 …, no p99 (20 calls, fewer than 100)"."""
    figures = (line.get("latency_ms") or {}).get(size) or {}
    count = (line.get("calls") or {}).get(size)
    p50 = figures.get("p50", line.get("p50_ms") if size == "1" else None)
    p99 = figures.get("p99", line.get("p99_ms") if size == "1" else None)
    if p50 is None:
        return "-"
    calls = f" from {count} calls" if count else ""
    if p99 is None:
        return f"p50 {p50:.3g} ms{calls} (too few for a p99)"
    return f"p50 {p50:.3g} ms, p99 {p99:.3g} ms{calls}"


def _batch(images: np.ndarray, size: int) -> np.ndarray:
    repeats = -(-size // len(images))
    return np.ascontiguousarray(np.concatenate([images] * repeats)[:size])


def preprocess_sentences(metrics: dict[str, Any]) -> list[str]:
    """Where the export takes raw input (strings) and the converted graphs take the model's
    (token ids): what the preprocessing inside the export costs per batch-1 call. [] otherwise."""
    lines = {line["name"]: line for line in metrics.get("baselines", [])}
    raw, model = lines.get(RAW, {}).get("p50_ms"), lines.get("savedmodel", {}).get("p50_ms")
    if raw is None or model is None:
        return []
    return [
        f"serving_default on raw input takes p50 {raw:.3f} ms at batch 1, the model's own "
        f"signature {model:.3f} ms: the preprocessing inside the export (tokenization) costs "
        f"about {raw - model:.3f} ms a call. The compiled backends (ONNX and others) run the "
        "model's signature, so a server using them tokenizes in front of them and pays that cost "
        "there."
    ]
