"""report.md: the run at a glance — the headline (one line per step: what it achieved, or why it
did not), each step's key numbers and figures, each notebook's latest success and any newer
failure, every attempt with its error in one line, what made each artifact (and whether it is
stale now), then every metrics file's scalar values. report.html holds the same and the executed
notebooks, in one file (html.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .. import lineage
from ..artifacts import FIGURES, FIGURES_DIR, LINEAGE_FILE, METRICS_DIR, REPORT_FILE, STEPS
from ..writes import write_text
from .numbers import key_numbers
from .profile import one_line
from .summary import damaged, error_said, headline, read, run_status, step_of

LONG_TEXT = 120  # characters: longer metric strings (saved_model_cli's output) stay in the JSON


def write_report(run_dir: Path, record: dict[str, Any]) -> Path:
    """Write report.md from a run record (the content of run.json)."""
    lines = [
        f"# Run {run_dir.name}",
        "",
        f"Profile **{record['profile']}**: {record.get('description') or 'no description'}  ",
        f"Status: **{run_status(record, run_dir)}**, started {record['started']}, "
        f"finished {record.get('finished') or '-'}  ",
        f"Overrides: {_cell(record.get('overrides') or 'none')}",
        "",
        "## Headline",
        "",
        *headline(run_dir, record),
        "",
        *_steps(run_dir, record),
        "## Notebooks",
        "",
        "`notebooks/<name>.ipynb` is always a notebook's latest success; a failed or interrupted "
        "attempt is kept beside it as `<name>.failed-<n>.ipynb`.",
        "",
        "| notebook | status | seconds | executed notebook | latest success |",
        "|---|---|---:|---|---|",
    ]
    for entry in record["notebooks"]:
        success = entry.get("latest_success")
        if entry["status"] == "ok":
            kept = "this attempt"
        elif success:
            kept = f"{_link(run_dir, success.get('executed'))}, {success.get('finished') or '-'}"
        else:
            kept = "none"
        lines.append(
            f"| {entry['name']} | {entry['status']} | {_seconds(entry.get('seconds'))} | "
            f"{_link(run_dir, entry.get('executed'))} | {kept} |"
        )
    attempts = record.get("attempts") or []
    if attempts:
        lines += [
            "",
            "## Attempts",
            "",
            "Every attempt into this run folder, oldest first.",
            "",
            "| started | notebook | status | seconds | cell | error |",
            "|---|---|---|---:|---|---|",
        ]
        lines += [_attempt_row(attempt) for attempt in attempts]
    lines += ["", "## What made what", "", *_lineage(run_dir)]
    lines += ["", "## All metrics", "", *_metrics(run_dir)]
    text = "\n".join(lines).rstrip() + "\n"  # whole or not at all: a full disk keeps the last
    return write_text(run_dir / REPORT_FILE, text, then="write it again with `report --run-dir`")


def _steps(run_dir: Path, record: dict[str, Any]) -> list[str]:
    """Per notebook of the run: its key numbers as a table, and its figures, embedded."""
    lines = ["## Steps", ""]
    for entry in record["notebooks"]:
        step = step_of(entry["name"])
        lines += [f"### {entry['name']}", ""]
        executed = _link(run_dir, entry.get("executed"))
        seconds = _seconds(entry.get("seconds"))
        lines += [f"Status **{entry['status']}**, {seconds} s; notebook {executed}.", ""]
        metrics = read(run_dir, step)
        if metrics is None:
            why = damaged(run_dir, step)
            lines += [
                f"`{METRICS_DIR}/{step}.json` cannot be read ({why}): re-run {entry['name']}."
                if why
                else f"No `{METRICS_DIR}/{step}.json` in this run folder.",
                "",
            ]
            continue
        rows = key_numbers(step, metrics)
        if rows:
            lines += [
                "| what | value |",
                "|---|---|",
                *(f"| {_cell(what)} | {_cell(value)} |" for what, value in rows),
                "",
            ]
        for name in FIGURES.get(step, ()):
            if (run_dir / FIGURES_DIR / f"{name}.png").is_file():
                lines += [f"![{name}]({FIGURES_DIR}/{name}.png)", ""]
    return lines


def _attempt_row(attempt: dict[str, Any]) -> str:
    error = attempt.get("error") or {}
    cell = "-"
    if error.get("cell") is not None:
        cell = f"[{error['cell']}]"
    elif error.get("cell_index") is not None:
        cell = f"#{error['cell_index']}"
    text = error_said(error) or "-"
    return (
        f"| {attempt.get('started') or '-'} | {attempt['notebook']} | {attempt['status']} | "
        f"{_seconds(attempt.get('seconds'))} | {cell} | {_cell(text)} |"
    )


def _lineage(run_dir: Path) -> list[str]:
    """Each recorded artifact, the step that made it, and whether its inputs are still current.

    A notebook that ran ok can still have made something that later re-runs left stale (an export
    of the previous model): the report says so rather than show a green row alone.
    """
    ledger = lineage.read(run_dir)
    if not ledger:
        return [f"No step recorded its artifacts in `{LINEAGE_FILE}` yet."]
    lines = [
        f"From `{LINEAGE_FILE}`: each artifact, the step that made it, and whether what it was "
        "made from is still what the run folder holds.",
        "",
        "| artifact | made by | made from | now |",
        "|---|---|---|---|",
    ]
    for artifact, entry in sorted(ledger.items()):
        inputs = (entry.get("inputs") or {}) if isinstance(entry, dict) else {}
        made_from = ", ".join(f"{name} `{str(fp)[:12]}`" for name, fp in inputs.items()) or "-"
        why = lineage.unknown(run_dir, artifact)
        if why is not None:
            now = f"**unknown**: {_cell(why)}"
        elif lineage.made_from(run_dir, artifact) is None:
            now = "replaced or removed since it was recorded"
        else:
            changed = lineage.stale_inputs(run_dir, artifact)
            now = f"**stale**: {', '.join(changed)} changed since" if changed else "current"
        step = (entry.get("step") or "?") if isinstance(entry, dict) else "?"
        lines.append(f"| {_cell(artifact)} | {_cell(step)} | {made_from} | {now} |")
    return lines


def _metrics(run_dir: Path) -> list[str]:
    lines: list[str] = []
    files = sorted((run_dir / METRICS_DIR).glob("*.json"), key=_step_order)
    if not files:
        lines.append(f"No notebook wrote {METRICS_DIR}/*.json in this run folder.")
    for path in files:
        lines += [f"### {path.stem}", "", f"From `{METRICS_DIR}/{path.name}`.", ""]
        try:
            metrics = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as error:
            lines += [f"Could not be read: {one_line(error)}.", ""]
            continue
        scalars = {
            key: value
            for key, value in (metrics.items() if isinstance(metrics, dict) else [])
            if value is None
            or isinstance(value, int | float | bool)
            or (isinstance(value, str) and len(value) <= LONG_TEXT)
        }
        if scalars:
            lines += ["| key | value |", "|---|---|"]
            lines += [f"| {_cell(k)} | {_cell(v)} |" for k, v in sorted(scalars.items())]
        else:
            lines.append("No top-level scalar values; see the JSON file.")
        lines.append("")
    return lines


def _link(run_dir: Path, executed: str | None) -> str:
    return f"[{executed}]({executed})" if executed and (run_dir / executed).is_file() else "-"


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def _step_order(path: Path) -> tuple[int, str]:
    return (STEPS.index(path.stem) if path.stem in STEPS else len(STEPS), path.stem)


def _cell(value: Any) -> str:
    """A value as a markdown table cell."""
    if isinstance(value, bool) or value is None:
        text = json.dumps(value)
    elif isinstance(value, float):
        text = f"{value:.6g}"
    elif isinstance(value, dict):
        text = ", ".join(f"{key}={item!r}" for key, item in value.items())
    else:
        text = str(value)
    return text.replace("|", "\\|").replace("\n", " ")
