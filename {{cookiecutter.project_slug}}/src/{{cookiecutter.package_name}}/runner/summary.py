"""The run in words: a headline with one line per step, and each step's few key numbers.

Read from the metrics each step wrote (metrics/<step>.json) and the runner's record (run.json), so
the headline also speaks for a step that failed or never ran: it says which, and why. Nothing
here measures; every number is one a step wrote, under the key names the issues give.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .. import parts, steps
from ..artifacts import METRICS_DIR
from .profile import one_line

Rows = list[tuple[str, str]]


def step_of(notebook: str) -> str:
    """The step a notebook runs: 03_train -> train (by the chain; the name otherwise)."""
    step = steps.for_notebook(notebook)
    return notebook if step is None else step.name


def read(run_dir: Path, step: str) -> dict[str, Any] | None:
    """metrics/<step>.json, or None if missing or unreadable."""
    try:
        value = json.loads((run_dir / METRICS_DIR / f"{step}.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def headline(run_dir: Path, record: dict[str, Any]) -> list[str]:
    """Markdown lines: one bullet per notebook of the run, then what was skipped, then the time."""
    lines, skipped, seconds = [], {}, 0.0
    for entry in record.get("notebooks", []):
        step = step_of(entry["name"])
        seconds += entry.get("seconds") or 0.0
        metrics = read(run_dir, step) if entry["status"] == "ok" else None
        text = _said(step, metrics) if metrics else _not_done(entry, damaged(run_dir, step))
        lines.append(f"- **{entry['name']}**: {text}")
        if step == "optimize" and metrics:
            for b in metrics.get("backends", []):
                if b.get("status") != "ran":
                    why = (b.get("reason") or b["status"]).rstrip(".")
                    skipped.setdefault((b["name"], why), []).append(b["precision"])
    if skipped:
        said = [f"{name} ({', '.join(kinds)}): {why}" for (name, why), kinds in skipped.items()]
        lines.append("- **Skipped**: " + "; ".join(said) + ".")
    count = len(record.get("notebooks", []))
    timed = any(entry.get("seconds") is not None for entry in record.get("notebooks", []))
    spent = f"{seconds:.1f} s over " if timed else "no times recorded (run by hand) for "
    lines.append(f"- **Total**: {spent}{count} notebook(s), status **{record['status']}**.")
    return lines


def key_numbers(step: str, metrics: dict[str, Any]) -> Rows:
    """A step's few numbers that matter, as (what, value) rows for a table."""
    maker = _NUMBERS.get(step)
    try:
        return maker(metrics) if maker else []
    except (KeyError, TypeError, ValueError, ZeroDivisionError, IndexError):
        return [("numbers", "this metrics file lacks keys the report reads; see the JSON file")]


def _said(step: str, metrics: dict[str, Any]) -> str:
    try:
        return _SENTENCES[step](metrics) if step in _SENTENCES else "done."
    except (KeyError, TypeError, ValueError, ZeroDivisionError, IndexError):
        return f"done; see {METRICS_DIR}/{step}.json."


def damaged(run_dir: Path, step: str) -> str | None:
    """Why metrics/<step>.json, which exists, cannot be read; None when it is absent or fine."""
    path = run_dir / METRICS_DIR / f"{step}.json"
    if not path.is_file():
        return None
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        return one_line(f"{type(error).__name__}: {error}")[:120]
    return None if isinstance(value, dict) else f"a JSON {type(value).__name__}, not an object"


def _not_done(entry: dict[str, Any], damaged: str | None = None) -> str:
    error = entry.get("error") or {}
    if entry["status"] in {"failed", "interrupted"}:
        cell = f" in cell [{error['cell']}]" if error.get("cell") is not None else ""
        what = ": ".join(str(part) for part in (error.get("ename"), error.get("evalue")) if part)
        what = one_line(what)
        what = what if len(what) <= 160 else what[:159] + "…"
        return f"**{entry['status']}**{cell}" + (f": {what}" if what else ".")
    if damaged and entry["status"] == "ok":
        return (
            f"ok, but its metrics file cannot be read ({damaged.rstrip('.')}): re-run "
            f"{entry['name']} to write it again."
        )
    return f"{entry['status']}: no metrics written by this run."


def _environment(m: dict[str, Any]) -> str:
    best = max(m.get("matmul") or [{}], key=lambda row: row.get("gflops") or 0)
    device = "no GPU, ran on the CPU" if not m.get("gpu_available") else f"{len(m['gpus'])} GPU(s)"
    rate = (
        f"; matmul {best['gflops']:,.0f} GFLOP/s on {best['device']}" if best.get("gflops") else ""
    )
    return f"{device}{rate}; precision policy {m.get('recommended_policy')}."


def _data(m: dict[str, Any]) -> str:
    speed = (
        "the pipeline benchmark was too short to compare the pipelines"
        if m.get("too_short")
        else f"the tf.data pipeline runs {m['speedup_vs_naive']:.1f}× the naive one "
        f"({m['examples_per_sec']:,.0f} examples/s)"
    )
    counts = " / ".join(f"{count:,} {name}" for name, count in _splits(m))
    return f"{m['dataset']}, {counts} examples; {speed}."


def _train(m: dict[str, Any]) -> str:
    rate = m.get("examples_per_sec")
    speed = f", {rate:,.0f} examples/s" if rate else ""
    test = m.get("test_accuracy")
    held_out = (
        f"test_accuracy **{test:.4f}** on the held-out test split, "
        if isinstance(test, float)
        else ""
    )
    return (
        f"{held_out}val_accuracy **{m['val_accuracy']:.4f}** after {m['epochs_completed']} "
        f"epoch(s) ({m['strategy']}, {m['replicas']} replica(s), {m['precision']}, batch "
        f"{m['global_batch_size']}){speed}."
    )


def _export(m: dict[str, Any]) -> str:
    parity = "parity **ok**" if m.get("parity_ok") else "parity **FAILED**"
    return (
        f"SavedModel version {m['version']}, {parity}: top-1 agreement {m['top1_agreement']:.1%}, "
        f"largest difference {m['max_abs_diff']:.2g} over {m['examples']} images."
    )


def _optimize(m: dict[str, Any]) -> str:
    ratio = m.get("best_vs_savedmodel_batch1")
    if not m.get("best_backend") or ratio is None:
        return "no backend ran on this machine (see Skipped)."
    return f"best backend **{m['best_backend']}**, {ratio:.1f}× the SavedModel at batch 1."


def _environment_rows(m: dict[str, Any]) -> Rows:
    rows = [("GPU", "yes" if m.get("gpu_available") else "none found"), ("verdict", m["verdict"])]
    rows += [(f"matmul {r['device']}", f"{r['gflops']:,.1f} GFLOP/s") for r in m.get("matmul", [])]
    return rows + [("TensorFlow", m.get("tensorflow_version", "-"))]


def _data_rows(m: dict[str, Any]) -> Rows:
    return [
        (
            f"examples ({' / '.join(name for name, _ in _splits(m))})",
            " / ".join(f"{count:,}" for _, count in _splits(m)),
        ),
        ("pipeline examples/s (steady state)", f"{m['examples_per_sec']:,.0f}"),
        ("naive pipeline examples/s", f"{m['naive_examples_per_sec']:,.0f}"),
        ("speed-up", _speedup(m)),
    ]


def _splits(m: dict[str, Any]) -> list[tuple[str, int]]:
    """(split, examples) of every split, the held-out test split among them when there is one."""
    names = ["train", "validation"] + (["test"] if m.get("test_count") else [])
    return [(name, m[f"{name}_count"]) for name in names]


def _speedup(m: dict[str, Any]) -> str:
    if m.get("too_short"):
        return f"not measured: the benchmark's {m.get('benchmark_seconds')} s were too short"
    return f"{m['speedup_vs_naive']:.1f}× ({m.get('speedup_basis', '')})"


def _train_rows(m: dict[str, Any]) -> Rows:
    sources = m.get("parameter_sources", {})
    rate = m.get("examples_per_sec")
    test = m.get("test_accuracy")
    tested = (
        []
        if not isinstance(test, float)
        else [
            ("test_accuracy (held out, scored once)", f"{test:.4f} on {m['test_examples']} images")
        ]
    )
    return tested + [
        ("val_accuracy / val_loss", f"{m['val_accuracy']:.4f} / {m['val_loss']:.4f}"),
        ("epochs", f"{m['epochs_completed']} of {m['epochs']} (best {m.get('best_epoch')})"),
        ("batch size", f"{m['global_batch_size']} ({sources.get('batch_size', '-')})"),
        ("learning rate", f"{m['learning_rate']:.3g} ({sources.get('learning_rate', '-')})"),
        ("strategy / precision", f"{m['strategy']}, {m['replicas']} replica(s) / {m['precision']}"),
        ("training examples/s", "-" if rate is None else f"{rate:,.0f}"),
        ("input", m.get("input_verdict") or "-"),
    ]


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


_SENTENCES = {
    "environment": _environment,
    "data": _data,
    "train": _train,
    "export": _export,
    "optimize": _optimize,
    **parts.merged("HEADLINES"),  # an optional part's own
}
_NUMBERS = {
    "environment": _environment_rows,
    "data": _data_rows,
    "train": _train_rows,
    "export": _export_rows,
    "optimize": _optimize_rows,
    **parts.merged("KEY_NUMBERS"),
}
