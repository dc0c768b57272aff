"""What `run` prints around the notebooks' progress: the values given, and how it all ended.

Before: the values that differ from the notebooks' defaults, and where each came from (`run
--plan` prints all of them and runs nothing). After: minutes of progress lines later, the end of
the output is what a person reads first, so it holds the headline of report.md (one line per
notebook), the time the whole command took, and where both reports are. A failed run's cause
(notebook, cell, error, the kept failed copy) follows on stderr, as the command's last line.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path
from typing import Any

from ..artifacts import REPORT_FILE, REPORT_HTML, RUN_RECORD
from .plan import DEFAULT, Plan
from .summary import headline, run_status

MARKUP_ESCAPE = re.compile(r"\\([\\`*_\[\]<>])")  # summary.escaped's backslashes, for a terminal


def plan_lines(plan: Plan) -> list[str]:
    """`run --plan`: every selected notebook's values and their sources; nothing runs."""
    return [
        f"Profile {plan.profile}: {plan.description or 'no description'}",
        f"{len(plan.notebooks)} notebook(s); each value and where it comes from:",
        *plan.notes,
        *show(plan, everything=True),
        "Nothing was run (--plan); the steps' own range checks run when the chain starts.",
    ]


def announce(plan: Plan) -> list[str]:
    """What `run` says before anything else: the profile, the runner's notes, the values given."""
    given = show(plan, everything=False)
    return [
        f"Profile {plan.profile}: {len(plan.notebooks)} notebook(s).",
        *plan.notes,
        "Values other than the notebooks' defaults (`run --plan` shows all):"
        if given
        else "Every notebook runs with its own defaults.",
        *given,
    ]


def show(plan: Plan, everything: bool = True) -> list[str]:
    """The plan as lines: per notebook, each value and where it came from. everything=False
    shows only values that are not the notebook's default (what `run` prints before it starts)."""
    lines = []
    for name in plan.notebooks:
        rows = [
            (key, plan.parameters[name].get(key, plan.declared[name][key].default), where)
            for key, where in plan.sources[name].items()
            if everything or where != DEFAULT
        ]
        if not rows:
            continue
        texts = [repr(v) if where != DEFAULT else _shown_default(v) for _, v, where in rows]
        width = max(len(key) for key, _, _ in rows)
        values = max(len(text) for text in texts)
        lines.append(f"  {name}")
        for (key, _, where), text in zip(rows, texts, strict=True):
            lines.append(f"    {key:<{width}}  {text:<{values}}  {where}")
    return lines


def _shown_default(text: str) -> str:
    """A default as the value it is (as -p values are shown), or as written if not a literal."""
    try:
        return repr(ast.literal_eval(text))
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return text


def closing_lines(run_dir: Path, seconds: float, record: dict[str, Any] | None = None) -> list[str]:
    """The headline as plain text, the total time of the command, and the two report paths."""
    if record is None:
        try:
            record = json.loads((run_dir / RUN_RECORD).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            record = None
    lines = [f"Run {run_dir.name}: {run_status(record, run_dir) if record else 'no record'}"]
    if record:
        for line in headline(run_dir, record):
            text = _plain(line)
            if text.startswith("Total:"):
                text = (
                    f"Total: {duration(seconds)} for the whole command; " + text[len("Total: ") :]
                )
            lines.append(f"  {text}")
    else:
        lines.append(f"  Total: {duration(seconds)}.")
    for name, what in ((REPORT_FILE, "Report"), (REPORT_HTML, "Report (HTML, works offline)")):
        path = run_dir / name
        lines.append(f"{what}: {path}" if path.is_file() else f"{what}: not written ({path}).")
    return lines


def duration(seconds: float) -> str:
    """12.3 s, 2 min 05 s, 1 h 02 min."""
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, rest = divmod(int(round(seconds)), 60)
    if minutes < 60:
        return f"{minutes} min {rest:02d} s"
    return f"{minutes // 60} h {minutes % 60:02d} min"


def _plain(markdown: str) -> str:
    """A headline bullet without its markdown: `- **03_train**: …` → `03_train: …`."""
    text = markdown[2:] if markdown.startswith("- ") else markdown
    return re.sub(MARKUP_ESCAPE, r"\1", re.sub(r"\*\*(.+?)\*\*", r"\1", text))
