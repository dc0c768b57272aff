"""Convert, check parity, benchmark: the step every backend goes through, and `run`, the step."""

from __future__ import annotations

import os
from typing import Any

import keras
import numpy as np

from .. import figures, lineage, parts, progress, seam
from ..artifacts import run_folder
from ..export.files import SIGNATURE, load_model, load_savedmodel
from ..export.parity import TOLERANCE, exact_float32, parity_split
from ..export.savedmodel import model_precision
from ..figures.optimize import end_to_end_lines
from ..tasks import current as task
from ..tasks import read_meta
from ..writes import write_metrics
from .base import PARITY_BATCH, Backend, Job, OptimizeError, Predict, run_savedmodel
from .judge import INT8_RULE, PRECISION_TOLERANCE, parity
from .onnx_backend import engine_plan_note
from .params import Params, check, plan
from .registry import BACKEND_TABLE
from .timing import (
    END_TO_END,
    PREDICT,
    RAW,
    benchmark,
    best_ratios,
    best_sentence,
    latency_text,
)

PARITY_EXAMPLES = 256


def run(run_dir: str | os.PathLike[str], params: Params, *, verbose: bool = True) -> dict[str, Any]:
    """Check, convert, check parity, benchmark, write metrics/optimize.json; return the metrics.

    The metrics' lineage names the data, model.keras and export/<version> it measured.
    """
    folder = run_folder(run_dir)  # resolved once, here: every call below gets this value
    metrics = optimize(folder, params, verbose=verbose)
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

    Keys: export_dir, precisions, batch_sizes, iterations, benchmark_seconds, parity_examples,
    calibration_examples, int8_rule (how int8 is judged), baselines (model.predict and the
    SavedModel signature), backends (one entry per backend and precision, ran|skipped|failed,
    int8 ones with their int8_format; timing.benchmark's keys where it ran),
    best_backend and best_vs_savedmodel_batch1 (None when no backend ran with parity),
    predict_overhead_ms (what model.predict adds per call: timing.best_ratios).
    """
    folder = run_folder(run_dir)  # as it is when run() resolved it
    check(folder, params)
    request = plan(folder, params)
    export_dir = request["export_dir"]
    sizes, count, seconds = request["batch_sizes"], request["iterations"], request["seconds"]
    note = engine_plan_note(folder, request)  # engines an ONNX Runtime provider will build
    if verbose and note:
        print(note)
    jobs = [
        (name, precision) for name in request["backends"] for precision in request["precisions"]
    ]
    # One task for the whole step: a moving bar, or a line every few seconds, saying what runs.
    # raw input ≠ model input: time the difference
    timed_raw = task().export.model_signature != SIGNATURE
    total = 2 + timed_raw + len(jobs)
    with progress.task("Optimize", total=total, unit="benchmark", shown=verbose) as work:
        now = work.note
        now("loading the model and the SavedModel")
        # As the trained model (and every converted graph) takes them: for text, token ids.
        meta = read_meta(folder)
        split = parity_split(meta)  # the test split where there is one, as export's parity
        max_examples = task().export.parity_examples(meta, split, max_examples)
        examples, labels = task().examples(folder, split, max_examples, form="model")
        model = load_model(folder, OptimizeError)
        signature = load_savedmodel(export_dir, OptimizeError, task().export.model_signature)
        reference = run_savedmodel(signature)
        expected = reference_probabilities(reference, examples)
        model_tolerance = TOLERANCE["float32" if model_precision(model) == "float32" else "mixed"]
        baselines = []
        for name, predict in [(PREDICT, run_predict(model)), ("savedmodel", reference)]:
            timed = benchmark(predict, examples, sizes, count, seconds, now=_say(now, name))
            baselines.append({"name": name, **timed})
            _done(work, f"{name}: {latency_text(timed)} at batch 1")
        raw = encoder = None
        if timed_raw:  # raw input ≠ model input: each backend is timed end to end as well
            raw, _ = task().examples(folder, split, max_examples)
            encoder = task().export.client_encoder(folder)
            baselines.append(raw_baseline(export_dir, raw, (sizes, count, seconds), now))
            _done(work, f"{RAW}: {latency_text(baselines[-1])} at batch 1")
        entries = []
        for name, precision in jobs:
            label = f"{name} ({precision})"
            job = Job(folder, precision, tuple(sizes), request["calibration_examples"])
            tolerance = max(model_tolerance, PRECISION_TOLERANCE[precision])
            now(f"{label}: converting, checking parity")
            entry = run_backend(BACKEND_TABLE[name], job, examples, (expected, labels), tolerance)
            if entry["status"] == "ran":
                predict = entry.pop("predict")
                timed = benchmark(predict, examples, sizes, count, seconds, now=_say(now, label))
                entry.update(timed)
                if encoder is not None:  # the client's encoding in front, as savedmodel_raw has
                    entry[END_TO_END] = benchmark(
                        encoded(encoder, predict), raw, sizes, count, seconds,
                        now=_say(now, f"{label} end to end"),
                    )  # fmt: skip
            entry.pop("predict", None)
            entries.append(entry)
            ran = f"ran, {latency_text(entry)} at batch 1" if entry["status"] == "ran" else ""
            if END_TO_END in entry:
                ran += f"; end to end {latency_text(entry[END_TO_END])}"
            _done(work, f"{label}: {ran or entry['status']}")
    return {
        "export_dir": str(export_dir),
        "precisions": request["precisions"],
        "batch_sizes": sizes,
        "iterations": count,
        "benchmark_seconds": seconds,
        "parity_examples": int(len(examples)),
        "parity_split": split,
        "calibration_examples": request["calibration_examples"],
        "int8_rule": INT8_RULE,
        "baselines": baselines,
        "backends": entries,
        **(ratios := best_ratios(baselines, entries)),
        "best_sentence": best_sentence(ratios, seam.noun()),
    }


def raw_baseline(
    export_dir: Any, raw: np.ndarray, timing: tuple[Any, int, float], now: Any
) -> dict[str, Any]:
    """serving_default timed on the raw examples (strings), where the converted graphs take the
    model's input (token ids): set beside `savedmodel`, the cost of the preprocessing itself."""
    predict = run_savedmodel(load_savedmodel(export_dir, OptimizeError, SIGNATURE))
    sizes, count, seconds = timing
    return {"name": RAW, **benchmark(predict, raw, sizes, count, seconds, now=_say(now, RAW))}


def encoded(encoder: Any, predict: Predict) -> Predict:
    """A converted backend as a client of raw input runs it: encode (tokenize), then predict."""
    return lambda batch: predict(encoder(batch))


def reference_probabilities(reference: Predict, examples: np.ndarray) -> np.ndarray:
    """The SavedModel's probabilities, the parity reference: with TF32 off, as fp32 engines and
    ORT's CUDA provider (use_tf32=0) compute in float32, and TF32 would differ by more than the
    fp32 tolerance on Ampere and newer GPUs."""
    with exact_float32():
        return predict_all(reference, examples)


def _say(now: Any, label: str) -> Any:
    return lambda text: now(f"{label}: timing {text}")


def _done(work: progress.Task, text: str) -> None:
    """One line per benchmark as it finishes, counted on the step's task (shown: said too)."""
    work.update()
    if work.shown:
        progress.line(text)


def run_backend(
    backend: Backend,
    job: Job,
    examples: np.ndarray,
    reference: tuple[np.ndarray, np.ndarray],
    tolerance: float,
) -> dict[str, Any]:
    """Convert, load and check one backend against reference (the SavedModel's probabilities and
    the true labels): status ran, skipped (with why) or failed (with why)."""
    expected, labels = reference
    entry: dict[str, Any] = {
        "name": backend.name,
        "precision": job.precision,
        "tolerance": tolerance,
    }
    keys = ["parity_ok", "max_abs_diff", "top1_agreement", "accuracy_drop", "artifact"]
    entry.update(dict.fromkeys(keys))
    ok, reason = backend.available(job.precision)
    if not ok:
        return {**entry, "status": "skipped", "reason": reason}
    if job.precision == "int8" and backend.int8_format is not None:
        entry["int8_format"] = backend.int8_format().as_dict()
    try:
        artifact = backend.convert(job)
        predict = backend.load(artifact, job)
        reason = getattr(predict, "reason", reason)  # what really runs, where the backend knows
        got = predict_all(predict, examples)
    except Exception as error:  # a conversion that breaks is a result, not a crash of the step
        return {**entry, "status": "failed", "reason": f"{backend.name} failed: {error}".strip()}
    entry["artifact"] = str(artifact)
    # a backend that computes in less than its precision says so (judge.py's "tf32")
    tolerance = entry["tolerance"] = max(tolerance, getattr(predict, "tolerance", 0.0))
    rule = INT8_RULE if job.precision == "int8" else None
    entry.update(parity(expected, got, tolerance, labels, rule))
    if not entry["parity_ok"]:
        return {**entry, "status": "failed", "reason": entry["verdict"]}
    return {**entry, "status": "ran", "reason": reason, "predict": predict}


def run_predict(model: keras.Model) -> Predict:
    """model.predict as most users call it: a whole Keras predict loop per call."""
    return lambda batch: model.predict(batch, batch_size=len(batch), verbose=0)


def predict_all(predict: Predict, examples: np.ndarray, batch: int = PARITY_BATCH) -> np.ndarray:
    """Probabilities for all examples, in batches, as float32."""
    parts = [predict(examples[start : start + batch]) for start in range(0, len(examples), batch)]
    return np.concatenate(parts).astype("float32")


def skip_sentences(metrics: dict[str, Any]) -> list[str]:
    """One line per backend that did not run: its name, precision and why."""
    return [
        f"{entry['name']} ({entry['precision']}) {entry['status']}: {entry['reason']}"
        for entry in metrics["backends"]
        if entry["status"] != "ran"
    ]


def results_table(metrics: dict[str, Any]) -> str:
    """A Markdown table: one row per baseline and per backend and precision, with parity, top-1
    agreement, validation accuracy lost against the SavedModel, batch-1 latency with the number
    of calls it comes from (p99 only from 100 calls up), and the task's examples per second
    (images/s, texts/s, rows/s) at each batch size above 1 ("-" where nothing was measured)."""
    sizes = [str(size) for size in metrics["batch_sizes"] if size > 1]
    head = ["run by", "status", "parity", "max abs diff", "top-1 agreement", "accuracy drop"]
    head += ["batch-1 p50 ms"]
    head += ["batch-1 p99 ms", "batch-1 calls", *[f"{seam.noun()}/s @{size}" for size in sizes]]
    rows = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for line in [*metrics["baselines"], *metrics["backends"], *end_to_end_lines(metrics)]:
        label = line["name"] + (f" ({line['precision']})" if "precision" in line else "")
        label += " (per-call overhead)" if line["name"] == PREDICT else ""
        cells = [label, line.get("status", "reference"), line.get("parity_ok")]
        cells += [line.get(key) for key in ("max_abs_diff", "top1_agreement", "accuracy_drop")]
        cells += [line.get(key) for key in ("p50_ms", "p99_ms")]
        cells += [(line.get("calls") or {}).get("1")]
        cells += [line.get("throughput", {}).get(size) for size in sizes]
        text = [f"{c:.3g}" if isinstance(c, float) else "-" if c is None else str(c) for c in cells]
        rows.append("| " + " | ".join(text) + " |")
    return "\n".join(rows)


def overhead_sentence(metrics: dict[str, Any]) -> str:
    """What model.predict's row means: Keras' cost per call, not a speed of the model."""
    overhead = metrics.get("predict_overhead_ms")
    if overhead is None:
        return ""
    return (
        f"model.predict takes {overhead:.3g} ms more per batch-1 call than the SavedModel "
        "signature called directly: the cost of Keras' predict loop, paid on every call, not a "
        "property of the model. It is shown because most code calls it; the speed-ups are "
        "against the SavedModel."
    )
