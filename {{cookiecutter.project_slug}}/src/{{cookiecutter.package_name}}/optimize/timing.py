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
END_TO_END = "end_to_end"  # a backend's timings on raw input, the client's encoding in front


def benchmark(
    predict: Predict,
    examples: np.ndarray,
    batch_sizes: Sequence[int],
    iterations: int,
    seconds: float = float("inf"),
    *,
    now: Callable[[str], None] = lambda text: None,
) -> dict[str, Any]:
    """Per batch size: timed calls (`calls`), every call in ms (`timings_ms`), examples/s from the
    median call (`throughput`), p50/p99 in ms (`latency_ms`); batch 1's also as p50_ms/p99_ms.
    `now(text)` hears which batch size is being timed (the step's progress)."""
    throughput: dict[str, float] = {}
    timings: dict[str, list[float]] = {}
    latency: dict[str, dict[str, float | None]] = {}
    calls: dict[str, int] = {}
    for size in batch_sizes:
        now(f"batch {size}")
        batch = _batch(examples, size)
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
    ratios = {
        "best_backend": f"{best['name']} ({best['precision']})",
        "best_vs_savedmodel_batch1": None if saved is None else float(saved / best["p50_ms"]),
        "predict_overhead_ms": overhead,
    }
    ends = [e for e in winners if (e.get(END_TO_END) or {}).get("p50_ms")]
    raw = next((line for line in baselines if line["name"] == RAW and line.get("p50_ms")), None)
    if ends and raw is not None:  # raw input ≠ model input: the verdict compares like with like
        ratios.update(end_to_end_ratios(raw, ends, ratios["best_vs_savedmodel_batch1"]))
    return ratios


def end_to_end_ratios(
    raw: dict[str, Any], ends: list[dict[str, Any]], model_only: float | None
) -> dict[str, Any]:
    """The fastest backend with the client's encoding in front against serving_default on the
    same raw input (savedmodel_raw): batch-1 p50 over p50, and both throughputs at the largest
    batch timed. The model-input ratio stays as model_only_vs_savedmodel_batch1."""
    best = min(ends, key=lambda entry: entry[END_TO_END]["p50_ms"])
    timed = best[END_TO_END]
    sizes = [size for size in timed.get("throughput", {}) if size in raw.get("throughput", {})]
    largest = max(sizes, key=int, default=None)
    return {
        "best_backend": f"{best['name']} ({best['precision']})",
        "best_vs_savedmodel_batch1": float(raw["p50_ms"] / timed["p50_ms"]),
        "comparison": END_TO_END,
        "model_only_vs_savedmodel_batch1": model_only,
        "end_to_end_p50_ms": timed["p50_ms"],
        "savedmodel_raw_p50_ms": raw["p50_ms"],
        "largest_batch": None if largest is None else int(largest),
        "end_to_end_throughput": None if largest is None else timed["throughput"][largest],
        "savedmodel_raw_throughput": None if largest is None else raw["throughput"][largest],
    }


def best_sentence(metrics: dict[str, Any], noun: str) -> str:
    """The verdict on the fastest backend, in words; where it was timed end to end (the client's
    tokenizing or encoding in front of it), against serving_default on the same raw input."""
    best, ratio = metrics.get("best_backend"), metrics.get("best_vs_savedmodel_batch1")
    if not best or ratio is None:
        return ""
    # "best" only where it beats the SavedModel; otherwise it is the fastest of the converted ones
    lead = "best backend" if ratio >= 1 else "fastest converted backend"
    if metrics.get("comparison") != END_TO_END:
        slower = " (slower: serve the SavedModel)" if ratio < 1 else ""
        return f"{lead} {best}, {ratio:.1f}× the SavedModel at batch 1{slower}."
    said = (
        f"{lead} end to end (the client's preprocessing included): {best}, p50 "
        f"{metrics['end_to_end_p50_ms']:.3g} ms at batch 1 against "
        f"{metrics['savedmodel_raw_p50_ms']:.3g} ms for serving_default on the raw {noun}, "
        f"{ratio:.2f}×"
        + (" (slower: at batch 1 the SavedModel serves raw input faster)" if ratio < 1 else "")
    )
    if metrics.get("largest_batch"):
        ours, theirs = metrics["end_to_end_throughput"], metrics["savedmodel_raw_throughput"]
        said += (
            f"; at batch {metrics['largest_batch']}: {ours:,.0f} against {theirs:,.0f} {noun}/s"
            f" ({'faster' if ours > theirs else 'slower'} there)"
        )
    model_only = metrics.get("model_only_vs_savedmodel_batch1")
    if model_only is not None:
        said += f" (on the model's input alone {model_only:.1f}× the SavedModel signature)"
    return said + "."


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


def _batch(examples: np.ndarray, size: int) -> np.ndarray:
    repeats = -(-size // len(examples))
    return np.ascontiguousarray(np.concatenate([examples] * repeats)[:size])


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
