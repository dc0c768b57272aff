"""Convert, check parity, benchmark: the step every backend goes through, and `run`, the step."""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from typing import Any

import keras
import numpy as np

from .. import figures, lineage, parts, progress
from ..artifacts import resolve_run_dir, write_metrics
from ..export.files import load_model, load_savedmodel
from ..export.parity import TOLERANCE, validation_images
from ..export.savedmodel import model_precision
from .base import PARITY_BATCH, Backend, Job, OptimizeError, Predict, run_savedmodel
from .params import Params, check, plan
from .registry import BACKEND_TABLE

# Largest allowed |backend - SavedModel| probability per precision the backend computes in; fp32
# reuses the export's float32 tolerance, fp16 its mixed-precision one, int8 keeps ~2 digits.
PRECISION_TOLERANCE = {"fp32": TOLERANCE["float32"], "fp16": TOLERANCE["mixed"], "int8": 5e-2}
WARMUP = 5
PARITY_EXAMPLES = 256


def run(run_dir: str | os.PathLike[str], params: Params, *, verbose: bool = True) -> dict[str, Any]:
    """Check, convert, check parity, benchmark, write metrics/optimize.json; return the metrics.

    The metrics' lineage names the data, model.keras and export/<version> it measured.
    """
    metrics = optimize(run_dir, params, verbose=verbose)
    folder = resolve_run_dir(run_dir, create=False)
    export = f"export/{os.path.basename(metrics['export_dir'])}"
    metrics["lineage"] = lineage.summary(folder, reads=["data", "model", export], writes=[])
    metrics["figures"] = figures.save(folder, "optimize", metrics)
    path = write_metrics(folder, "optimize", metrics)
    if verbose:
        print(f"Wrote {path}")
    for hook in parts.collect("after_optimize"):  # an optional part's follow-up, if any
        said = hook(folder, metrics)
        if verbose and said:
            print(said)
    return metrics


def optimize(
    run_dir: str | os.PathLike[str],
    params: Params,
    *,
    max_examples: int = PARITY_EXAMPLES,
    verbose: bool = False,
) -> dict[str, Any]:
    """Check, convert, check parity and benchmark; return what metrics/optimize.json holds
    (without writing it: `run` does).

    Keys: export_dir, precisions, batch_sizes, iterations, parity_examples, calibration_examples,
    baselines (model.predict and the SavedModel signature), backends (one entry per backend and
    precision, ran|skipped|failed), best_backend, best_vs_savedmodel_batch1 and
    best_vs_predict_batch1 (None when no backend ran with parity).
    """
    check(run_dir, params)
    request = plan(run_dir, params)
    folder, export_dir = request["run_dir"], request["export_dir"]
    images = validation_images(folder, max_examples)
    model = load_model(folder, OptimizeError)
    reference = run_savedmodel(load_savedmodel(export_dir, OptimizeError))
    expected = predict_all(reference, images)
    model_tolerance = TOLERANCE["float32" if model_precision(model) == "float32" else "mixed"]
    sizes, count = request["batch_sizes"], request["iterations"]
    baselines = [
        {"name": "model.predict", **benchmark(run_predict(model), images, sizes, count)},
        {"name": "savedmodel", **benchmark(reference, images, sizes, count)},
    ]
    entries = []
    for name in request["backends"]:
        for precision in request["precisions"]:
            job = Job(folder, precision, tuple(sizes), request["calibration_examples"])
            tolerance = max(model_tolerance, PRECISION_TOLERANCE[precision])
            entry = run_backend(BACKEND_TABLE[name], job, images, expected, tolerance)
            if entry["status"] == "ran":
                entry.update(benchmark(entry.pop("predict"), images, sizes, count))
            entry.pop("predict", None)
            entries.append(entry)
            if verbose:
                progress.line(f"{name} ({precision}): {entry['status']}")
    return {
        "export_dir": str(export_dir),
        "precisions": request["precisions"],
        "batch_sizes": sizes,
        "iterations": count,
        "parity_examples": int(len(images)),
        "calibration_examples": request["calibration_examples"],
        "baselines": baselines,
        "backends": entries,
        **best_ratios(baselines, entries),
    }


def run_backend(
    backend: Backend,
    job: Job,
    images: np.ndarray,
    expected: np.ndarray,
    tolerance: float,
) -> dict[str, Any]:
    """Convert, load and check one backend: status ran, skipped (with why) or failed (with why)."""
    entry: dict[str, Any] = {
        "name": backend.name,
        "precision": job.precision,
        "tolerance": tolerance,
    }
    entry.update(dict.fromkeys(["parity_ok", "max_abs_diff", "top1_agreement", "artifact"]))
    ok, reason = backend.available(job.precision)
    if not ok:
        return {**entry, "status": "skipped", "reason": reason}
    try:
        artifact = backend.convert(job)
        predict = backend.load(artifact, job)
        reason = getattr(predict, "reason", reason)  # what really runs, where the backend knows
        got = predict_all(predict, images)
    except Exception as error:  # a conversion that breaks is a result, not a crash of the step
        return {**entry, "status": "failed", "reason": f"{backend.name} failed: {error}".strip()}
    entry["artifact"] = str(artifact)
    entry.update(parity(expected, got, tolerance))
    if not entry["parity_ok"]:
        return {**entry, "status": "failed", "reason": entry["verdict"]}
    return {**entry, "status": "ran", "reason": reason, "predict": predict}


def parity(expected: np.ndarray, got: np.ndarray, tolerance: float) -> dict[str, Any]:
    """max_abs_diff, top1_agreement and parity_ok (max_abs_diff within tolerance) with a verdict."""
    if got.shape != expected.shape:
        diff, agreement = float("inf"), 0.0
    else:
        diff = float(np.max(np.abs(expected - got)))
        agreement = float(np.mean(np.argmax(expected, -1) == np.argmax(got, -1)))
    ok = bool(diff <= tolerance)
    verdict = (
        f"Largest probability difference {diff:.2g} against the SavedModel (allowed {tolerance:g})."
        if ok
        else f"Probabilities differ from the SavedModel by up to {diff:.2g}, more than the "
        f"{tolerance:g} allowed: not the same model, so not counted."
    )
    return {"max_abs_diff": diff, "top1_agreement": agreement, "parity_ok": ok, "verdict": verdict}


def benchmark(
    predict: Predict, images: np.ndarray, batch_sizes: Sequence[int], iterations: int
) -> dict[str, Any]:
    """Warm-up, then batch-1 latency p50/p99 (ms) and images/s at every batch size.

    Batch 1 is timed `iterations` times; a larger batch max(3, iterations // 10) times, enough for
    a steady figure without letting batch 256 dominate the step's run time. `timings_ms` keeps
    every timed call per batch size (ms, 3 decimals), for the latency distribution.
    """
    throughput: dict[str, float] = {}
    timings: dict[str, list[float]] = {}
    p50 = p99 = None
    for size in batch_sizes:
        batch = _batch(images, size)
        for _ in range(WARMUP):
            predict(batch)
        repeats = iterations if size == 1 else max(3, iterations // 10)
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            predict(batch)
            times.append(time.perf_counter() - start)
        seconds = np.array(times)
        if size == 1:
            p50, p99 = (float(v) * 1e3 for v in np.percentile(seconds, [50, 99]))
        throughput[str(size)] = float(size * repeats / seconds.sum())
        timings[str(size)] = [round(float(value) * 1e3, 3) for value in times]
    return {"p50_ms": p50, "p99_ms": p99, "throughput": throughput, "timings_ms": timings}


def best_ratios(baselines: list[dict[str, Any]], entries: list[dict[str, Any]]) -> dict[str, Any]:
    """Batch-1 p50 of each baseline over that of the fastest backend that ran with parity."""
    winners = [e for e in entries if e["status"] == "ran" and e["parity_ok"] and e.get("p50_ms")]
    if not winners:
        return dict.fromkeys(
            ["best_backend", "best_vs_savedmodel_batch1", "best_vs_predict_batch1"]
        )
    best = min(winners, key=lambda entry: entry["p50_ms"])
    p50 = {line["name"]: line["p50_ms"] for line in baselines}

    def ratio(name: str) -> float | None:
        return None if p50.get(name) is None else float(p50[name] / best["p50_ms"])

    return {
        "best_backend": f"{best['name']} ({best['precision']})",
        "best_vs_savedmodel_batch1": ratio("savedmodel"),
        "best_vs_predict_batch1": ratio("model.predict"),
    }


def run_predict(model: keras.Model) -> Predict:
    """model.predict as most users call it: a whole Keras predict loop per call."""
    return lambda batch: model.predict(batch, batch_size=len(batch), verbose=0)


def predict_all(predict: Predict, images: np.ndarray, batch: int = PARITY_BATCH) -> np.ndarray:
    """Probabilities for all images, in batches, as float32."""
    parts = [predict(images[start : start + batch]) for start in range(0, len(images), batch)]
    return np.concatenate(parts).astype("float32")


def skip_sentences(metrics: dict[str, Any]) -> list[str]:
    """One line per backend that did not run: its name, precision and why."""
    return [
        f"{entry['name']} ({entry['precision']}) {entry['status']}: {entry['reason']}"
        for entry in metrics["backends"]
        if entry["status"] != "ran"
    ]


def results_table(metrics: dict[str, Any]) -> str:
    """A Markdown table: one row per baseline and per backend and precision, with parity,
    batch-1 latency and images/s at each batch size above 1 ("-" where nothing was measured)."""
    sizes = [str(size) for size in metrics["batch_sizes"] if size > 1]
    head = ["run by", "status", "parity", "max abs diff", "top-1 agreement", "p50 ms", "p99 ms"]
    head += [f"img/s @{size}" for size in sizes]
    rows = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for line in [*metrics["baselines"], *metrics["backends"]]:
        label = line["name"] + (f" ({line['precision']})" if "precision" in line else "")
        cells = [label, line.get("status", "reference"), line.get("parity_ok")]
        cells += [line.get(key) for key in ("max_abs_diff", "top1_agreement", "p50_ms", "p99_ms")]
        cells += [line.get("throughput", {}).get(size) for size in sizes]
        text = [f"{c:.3g}" if isinstance(c, float) else "-" if c is None else str(c) for c in cells]
        rows.append("| " + " | ".join(text) + " |")
    return "\n".join(rows)


def _batch(images: np.ndarray, size: int) -> np.ndarray:
    repeats = -(-size // len(images))
    return np.ascontiguousarray(np.concatenate([images] * repeats)[:size])
