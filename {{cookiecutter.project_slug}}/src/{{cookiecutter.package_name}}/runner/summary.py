"""The run in words: a headline with one line per step, and each step's few key numbers.

Read from the metrics each step wrote (metrics/<step>.json) and the runner's record (run.json), so
the headline also speaks for a step that failed or never ran: it says which, and why. Nothing
here measures; every number is one a step wrote, under the key names the issues give.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from .. import parts, steps
from ..artifacts import METRICS_DIR
from . import margin
from .numbers import splits
from .profile import one_line

MARKUP = re.compile(r"([\\`*_\[\]<>])")  # what Markdown would read in an error's text


def escaped(text: str) -> str:
    """Text as Markdown shows it literally: `__format__` stays `__format__`, not bold."""
    return MARKUP.sub(r"\\\1", text)


def run_status(record: dict[str, Any], run_dir: Path | None = None) -> str:
    """The run's status as the report says it: the last command's, unless a notebook's latest
    attempt failed or was interrupted (04-05 re-run ok after 03 failed is still failed); with
    `run_dir`, an ok run whose model stayed at chance says so (train.chance)."""
    bad = [e["name"] for e in record.get("notebooks", []) if e["status"] in BAD]
    status = str(record.get("status"))
    if bad and status == "ok":
        return f"failed ({', '.join(bad)})"
    if status == "ok" and run_dir is not None and stayed_at_chance(run_dir, record):
        return "ok, but the model stayed at chance"
    return status


def stayed_at_chance(run_dir: Path, record: dict[str, Any]) -> bool:
    """Whether this run's 03_train ran ok and its model did not beat the majority class."""
    ran = any(e["name"] == "03_train" and e["status"] == "ok" for e in record.get("notebooks", []))
    trained = read(run_dir, "train") if ran else None
    return bool(trained) and (trained.get("chance") or {}).get("learned") is False


BAD = ("failed", "interrupted")


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
                    why = first_line(b.get("reason") or b["status"])
                    skipped.setdefault((b["name"], why), []).append(b["precision"])
    if skipped:
        said = [f"{name} ({', '.join(kinds)}): {why}" for (name, why), kinds in skipped.items()]
        lines.append("- **Skipped**: " + "; ".join(said) + ("" if said[-1].endswith("…") else "."))
    count = len(record.get("notebooks", []))
    timed = any(entry.get("seconds") is not None for entry in record.get("notebooks", []))
    spent = f"{seconds:.1f} s over " if timed else "no times recorded (run by hand) for "
    status = f"status **{run_status(record)}**"
    if run_status(record) == "ok" and stayed_at_chance(run_dir, record):
        status += ", but **the model stayed at chance** (see 03_train)"
    lines.append(f"- **Total**: {spent}{count} notebook(s), {status}.")
    return lines


def first_line(reason: str, most: int = 160) -> str:
    """A backend's reason as the headline shows it: its first line, cut at `most` characters (an
    ONNX Runtime error holds its C++ source location and signature; optimize.json keeps it all)."""
    return one_line((reason.strip().splitlines() or [""])[0].rstrip("."), most)


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


def error_said(error: dict[str, Any]) -> str:
    """An attempt's error as Markdown shows it: `ename: evalue` on one line of 160 characters."""
    what = ": ".join(str(part) for part in (error.get("ename"), error.get("evalue")) if part)
    return escaped(one_line(what, 160))


def _not_done(entry: dict[str, Any], damaged: str | None = None) -> str:
    error = entry.get("error") or {}
    if entry["status"] in {"failed", "interrupted"}:
        cell = f" in cell [{error['cell']}]" if error.get("cell") is not None else ""
        what = error_said(error)
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
    if m.get("speed_summary"):  # a task whose benchmark is not a pipeline names what it compared
        speed = m["speed_summary"]
    elif m.get("too_short") or m.get("speedup_vs_naive") is None:
        noise = "within noise, " if m.get("within_noise") and not m.get("too_short") else ""
        speed = f"the pipeline benchmark was {noise}too short to compare the pipelines"
    else:
        speed = (
            f"the tf.data pipeline runs {m['speedup_vs_naive']:.1f}× the naive one "
            f"({m['examples_per_sec']:,.0f} examples/s)"
        )
    counts = " / ".join(f"{count:,} {name}" for name, count in splits(m))
    return f"{m['dataset']}, {counts} examples; {speed}."


def _train(m: dict[str, Any]) -> str:
    rate = m.get("examples_per_sec")
    speed = f", {rate:,.0f} examples/s" if rate else ""
    test = m.get("test_accuracy")
    held_out = (
        f"{_dominated(m)}test_accuracy **{test:.4f}** on the held-out test split{_beside(m)}, "
        if isinstance(test, float)
        else ""
    )
    stuck = m.get("chance") or {}
    if stuck.get("learned") is False:
        held_out = (
            f"**stayed at chance**: no better than answering the most common class "
            f"({stuck['majority_share']:.4f} of validation); " + held_out
        )
    if m.get("accuracy_caveat"):  # the task's (text: a preset with random weights)
        held_out = f"{m['accuracy_caveat']}; {held_out}"
    return (
        f"{held_out}val_accuracy **{m['val_accuracy']:.4f}** after {m['epochs_completed']} "
        f"epoch(s) ({m['strategy']}, {m['replicas']} replica(s), {m['precision']}, batch "
        f"{m['global_batch_size']}){speed}."
    )


def _dominated(m: dict[str, Any]) -> str:
    """Where one class dominates the test rows (tables: test_dominated), the ranking scores
    first and what answering the majority class to every row scores: accuracy alone says little."""
    if not m.get("test_dominated"):
        return ""
    share = f"{m['test_positive_share']:.1%} positives; " if "test_positive_share" in m else ""
    pr = m.get("test_pr_auc")
    return (
        f"ROC AUC **{m.get('test_roc_auc') or float('nan'):.4f}**"
        + (f", PR AUC **{pr:.4f}**" if isinstance(pr, float) else "")
        + f" (one class dominates: {share}answering {m['test_majority_class']!r} to every row "
        f"scores accuracy {m['test_majority_accuracy']:.4f}); "
    )


def _beside(m: dict[str, Any]) -> str:
    """The scikit-learn baseline(s) measured in the same run, and which wins: by ROC AUC where
    the task measures it (tables: ranking is the job, and accuracy hides imbalance), else by
    accuracy."""
    base = m.get("baseline") or {}
    if not isinstance(base.get("test_accuracy"), float):
        return ""
    key = "roc_auc" if isinstance(m.get("test_roc_auc"), float) and base.get("roc_auc") else None
    if key:
        models = [b for b in margin.contenders(m) if isinstance(b.get("roc_auc"), float)]
        said = "; ".join(
            f"**{b['roc_auc']:.4f}** / {b['test_accuracy']:.4f} for {b['name']}" for b in models
        )
        who = margin.best_verdict("ROC AUC", "roc_auc", m["test_roc_auc"], models, m)
        trained = [b["name"] for b in models if b in (m.get("compared") or [])]  # tables
        named = f" for {m['model']}" if trained else ""
        where = f"{', '.join(trained)} trained beside it, not exported; " if trained else ""
        return (
            f" and ROC AUC **{m['test_roc_auc']:.4f}**{named}, beside ROC AUC / accuracy {said} "
            f"({where}scikit-learn, same split): {who}"
        )
    who = margin.verdict("", m["test_accuracy"], base["test_accuracy"], "the baseline", m)
    return (
        f" beside **{base['test_accuracy']:.4f}** for the baseline {base['name']} (scikit-learn, "
        f"same split, {base['seconds']:.0f} s): {who}"
    )


def _export(m: dict[str, Any]) -> str:
    parity = "parity **ok**" if m.get("parity_ok") else "parity **FAILED**"
    return (
        f"SavedModel version {m['version']}, {parity}: top-1 agreement {m['top1_agreement']:.1%}, "
        f"largest difference {m['max_abs_diff']:.2g} over {m['examples']} examples."
    )


def _optimize(m: dict[str, Any]) -> str:
    ratio = m.get("best_vs_savedmodel_batch1")
    if not m.get("best_backend") or ratio is None:
        return "no backend ran on this machine (see Skipped)."
    if m.get("comparison") == "end_to_end":  # raw input: the client's preprocessing counted
        return m["best_sentence"][:1].upper() + m["best_sentence"][1:]
    if ratio < 1:  # no converted backend beats the SavedModel: "best" would mislead
        return (
            f"fastest converted backend **{m['best_backend']}**, {ratio:.1f}× the SavedModel at "
            "batch 1 (slower: serve the SavedModel)."
        )
    return f"best backend **{m['best_backend']}**, {ratio:.1f}× the SavedModel at batch 1."


_SENTENCES = {
    "environment": _environment,
    "data": _data,
    "train": _train,
    "export": _export,
    "optimize": _optimize,
    **parts.merged("HEADLINES"),  # an optional part's own
}
