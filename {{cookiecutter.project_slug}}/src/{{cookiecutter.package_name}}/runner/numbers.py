"""The report's key numbers: each step's few (what, value) rows, read from its metrics file.

Read from metrics/<step>.json only (no step is imported, so no TensorFlow loads); a file that
lacks a key the rows read gives one row that says so instead of a stack trace.
"""

from __future__ import annotations

from typing import Any

from .. import parts, seam
from . import margin

Rows = list[tuple[str, str]]


def key_numbers(step: str, metrics: dict[str, Any]) -> Rows:
    """A step's few numbers that matter, as (what, value) rows for a table."""
    maker = _NUMBERS.get(step)
    try:
        return maker(metrics) if maker else []
    except (KeyError, TypeError, ValueError, ZeroDivisionError, IndexError):
        return [("numbers", "this metrics file lacks keys the report reads; see the JSON file")]


def _environment_rows(m: dict[str, Any]) -> Rows:
    rows = [("GPU", "yes" if m.get("gpu_available") else "none found"), ("verdict", m["verdict"])]
    rows += [(f"matmul {r['device']}", f"{r['gflops']:,.1f} GFLOP/s") for r in m.get("matmul", [])]
    return rows + [("TensorFlow", m.get("tensorflow_version", "-"))]


def _data_rows(m: dict[str, Any]) -> Rows:
    counts = (
        f"examples ({' / '.join(name for name, _ in splits(m))})",
        " / ".join(f"{count:,}" for _, count in splits(m)),
    )
    if m.get("speed_summary"):  # a task whose benchmark is not a pipeline names what it timed
        return [counts, ("read timing", m["speed_summary"])]
    state = "too briefly timed" if m.get("too_short") else "steady state"  # 65/s is no rate then
    return [
        counts,
        (f"pipeline examples/s ({state})", f"{m['examples_per_sec']:,.0f}"),
        ("naive pipeline examples/s", f"{m['naive_examples_per_sec']:,.0f}"),
        ("speed-up", _speedup(m)),
    ]


def splits(m: dict[str, Any]) -> list[tuple[str, int]]:
    """(split, examples) of every split, the held-out test split among them when there is one."""
    names = ["train", "validation"] + (["test"] if m.get("test_count") else [])
    return [(name, m[f"{name}_count"]) for name in names]


def _speedup(m: dict[str, Any]) -> str:
    if m.get("too_short") or m.get("speedup_vs_naive") is None:
        noise = "within noise: " if m.get("within_noise") and not m.get("too_short") else ""
        return f"not measured: {noise}the benchmark's {m.get('benchmark_seconds')} s were too short"
    return f"{m['speedup_vs_naive']:.1f}× ({m.get('speedup_basis', '')})"


def _train_rows(m: dict[str, Any]) -> Rows:
    sources = m.get("parameter_sources", {})
    rate = m.get("examples_per_sec")
    test = m.get("test_accuracy")
    held_out = f"on {m.get('test_examples')} {seam.noun()}"
    tested = (
        []
        if not isinstance(test, float)
        else [("test_accuracy (held out, scored once)", f"{test:.4f} {held_out}")]
    )
    if isinstance(m.get("test_roc_auc"), float):  # tables: ranking, threshold-free
        tested.append(("test_roc_auc (held out)", f"{m['test_roc_auc']:.4f} {held_out}"))
    tested += compared_rows(m) if m.get("compared") else []  # tables: compare_models
    return tested + [
        ("val_accuracy / val_loss", f"{m['val_accuracy']:.4f} / {m['val_loss']:.4f}"),
        ("epochs", f"{m['epochs_completed']} of {m['epochs']} (best {m.get('best_epoch')})"),
        ("batch size", f"{m['global_batch_size']} ({sources.get('batch_size', '-')})"),
        ("learning rate", f"{m['learning_rate']:.3g} ({sources.get('learning_rate', '-')})"),
        ("strategy / precision", f"{m['strategy']}, {m['replicas']} replica(s) / {m['precision']}"),
        ("training examples/s", "-" if rate is None else f"{rate:,.0f}"),
        ("input", m.get("input_verdict") or "-"),
    ]


def compared_rows(m: dict[str, Any]) -> Rows:
    """The model, each model trained beside it and each baseline, best ROC AUC (else accuracy)
    first: test ROC AUC, accuracy and training seconds, one row each (tables: compare_models)."""
    spent = sum(r.get("seconds") or 0.0 for r in m.get("history") or [])
    compared = m.get("compared") or []
    rows = [
        {"name": m["model"], "roc_auc": m.get("test_roc_auc"), "kind": "exported"}
        | {"test_accuracy": m["test_accuracy"], "seconds": spent or None}
    ]
    rows += [{**c, "kind": "trained beside, not exported"} for c in compared]
    rows += [{**b, "kind": "scikit-learn"} for b in margin.contenders(m)[len(compared) :]]
    rows.sort(key=lambda r: (r.get("roc_auc") or 0.0, r.get("test_accuracy") or 0.0), reverse=True)
    return [(f"{r['name']} ({r['kind']})", _scored(r)) for r in rows]


def _scored(row: dict[str, Any]) -> str:
    said = [
        f"{name} {row[key]:.4f}"
        for name, key in (("ROC AUC", "roc_auc"), ("accuracy", "test_accuracy"))
        if isinstance(row.get(key), float)
    ]
    seconds = row.get("seconds")
    return ", ".join(said + ([f"{seconds:.1f} s"] if isinstance(seconds, int | float) else []))


def _export_rows(m: dict[str, Any]) -> Rows:
    return [
        ("export", f"export/{m['version']}/ (SavedModel, signature serving_default)"),
        ("parity", m.get("verdict", "-")),
        ("precision", m.get("precision", "-")),
    ]


def _optimize_rows(m: dict[str, Any]) -> Rows:
    """Batch-1 latency with the calls it comes from; top-1 agreement for each backend (int8's
    is the number to read: its probabilities may move while its answers stay)."""
    rows = []
    for line in [*m.get("baselines", []), *m.get("backends", [])]:
        label = line["name"] + (f" ({line['precision']})" if "precision" in line else "")
        agreement = line.get("top1_agreement")
        agrees = "" if agreement is None else f"; top-1 agreement {agreement:.1%}"
        if line["name"] == "model.predict":
            label += " (Keras per-call overhead)"
        if line.get("status", "ran") == "ran":
            rows.append((label, f"{_latency(line)} at batch 1{agrees}"))
        else:
            rows.append((label, f"{line['status']}: {line.get('reason', '')}{agrees}"))
    return rows


def _latency(line: dict[str, Any]) -> str:
    """optimize.timing's figures as text (not imported: that would load TensorFlow)."""
    calls = (line.get("calls") or {}).get("1")
    counted = f" from {calls} calls" if calls else ""
    if line.get("p50_ms") is None:
        return "-"
    if line.get("p99_ms") is None:
        return f"p50 {line['p50_ms']:.3f} ms{counted} (too few for a p99)"
    return f"p50 {line['p50_ms']:.3f} ms, p99 {line['p99_ms']:.3f} ms{counted}"


_NUMBERS = {
    "environment": _environment_rows,
    "data": _data_rows,
    "train": _train_rows,
    "export": _export_rows,
    "optimize": _optimize_rows,
    **parts.merged("KEY_NUMBERS"),
}
