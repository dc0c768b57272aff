"""run.json: every attempt of every invocation into a run folder, and each notebook's latest
success, so that a failed or interrupted re-run never erases the record of a good one.

    attempts     every notebook attempt, oldest first (what ran, when, how it ended, the error)
    notebooks    per notebook: its latest attempt, plus `latest_success` (or None)
    invocations  every `run` into this folder: profile, overrides, selection, status
    profile, description, overrides, started, finished, status: this invocation

A run.json that cannot be read is set aside as run.json.corrupt-<n>, never silently dropped.
"""

from __future__ import annotations

import json
import os
from datetime import datetime
from pathlib import Path
from typing import Any

from ..artifacts import METRICS_DIR, NOTEBOOKS_DIR, RUN_RECORD, project_root
from ..writes import set_aside, write_json
from .plan import Plan, discover_notebooks
from .profile import one_line
from .report import write_report

# What to do when run.json cannot be written (a full disk): the earlier run.json is kept.
AGAIN = "run again with the same --run-dir (earlier attempts are kept)"
SUCCESS_KEYS = ("started", "finished", "seconds", "executed", "parameters", "profile")

# What a JSON value that is not an object is, in JSON's words.
_KINDS = {list: "array", str: "string", int: "number", float: "number", bool: "boolean"}


def start_record(folder: Path, plan: Plan, only: list[str] | None) -> dict[str, Any]:
    """The record of this invocation, carrying every attempt made earlier into the folder."""
    earlier, set_aside = read_earlier(folder)
    invocation = {
        "started": now(),
        "finished": None,
        "status": "running",
        "profile": plan.profile,
        "overrides": plan.overrides,
        "only": only,
        "notebooks": list(plan.notebooks),
    }
    if set_aside:
        invocation["set_aside"] = set_aside
    return {
        "profile": plan.profile,
        "description": plan.description,
        "overrides": plan.overrides,
        "project_dir": str(plan.project),
        "run_dir": str(folder),
        "started": invocation["started"],
        "finished": None,
        "status": "running",
        "invocations": [*earlier["invocations"], invocation],
        "attempts": earlier["attempts"],
    }


def new_attempt(record: dict[str, Any], plan: Plan, name: str, folder: Path) -> dict[str, Any]:
    """A running attempt of one notebook, added to the record; execute() updates it in place."""
    attempt = {
        "notebook": name,
        "profile": plan.profile,
        "started": now(),
        "finished": None,
        "seconds": None,
        "status": "running",
        "executed": None,
        "parameters": {**plan.parameters[name], "run_dir": str(folder)},
        "kernel_log": f"{NOTEBOOKS_DIR}/{name}.kernel.log",
        "error": None,
    }
    record["attempts"].append(attempt)
    return attempt


def finish_record(record: dict[str, Any], status: str) -> None:
    """This invocation ended: ok, failed or interrupted (with any attempt still running)."""
    for attempt in record["attempts"]:
        if attempt["status"] == "running":
            attempt.update(status="interrupted", finished=now())
    record.update(status=status, finished=now())
    record["invocations"][-1].update(status=status, finished=record["finished"])


def save(folder: Path, record: dict[str, Any], selected: list[str]) -> None:
    """run.json (written atomically) and report.md, from the attempts as they stand; the
    selected notebooks not attempted yet are listed as "not run"."""
    record["notebooks"] = summarize(record["attempts"], selected)
    write_json(folder / RUN_RECORD, record, then=AGAIN)
    write_report(folder, record)


def record_problem(data: Any) -> str | None:
    """What keeps a run.json from being reported, in a few words; None when report can read it.

    The report reads the invocation's profile, status and start, each notebook's name and status
    (and its error, latest success), and each attempt's notebook and status.
    """
    if not isinstance(data, dict):
        return f"a JSON {_KINDS.get(type(data), 'value')}, not an object"
    missing = [key for key in ("profile", "status", "started", "notebooks") if key not in data]
    if missing:
        return f"no {', '.join(missing)}"
    for key in ("notebooks", "attempts"):
        entries, name = data.get(key) or [], "name" if key == "notebooks" else "notebook"
        if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
            return f"{key} must be a list of objects"
        for number, entry in enumerate(entries, start=1):
            if not all(isinstance(entry.get(field), str) for field in (name, "status")):
                return f"{key} entry {number} has no {name} and status"
            if not all(isinstance(entry.get(f) or {}, dict) for f in ("error", "latest_success")):
                return f"{key} entry {number} has an error or latest_success that is not an object"
    return None


def summarize(attempts: list[dict[str, Any]], selected: list[str]) -> list[dict[str, Any]]:
    """Per notebook, in name order: the latest attempt's fields and the latest success."""
    names = sorted({a["notebook"] for a in attempts} | set(selected))
    entries = []
    for name in names:
        own = [a for a in attempts if a["notebook"] == name]
        latest = own[-1] if own else {"status": "not run"}
        success = next((a for a in reversed(own) if a["status"] == "ok"), None)
        entry = {"name": name, "seconds": None, "executed": None, "parameters": {}}
        entry.update({k: v for k, v in latest.items() if k != "notebook"})
        entry["latest_success"] = {k: success.get(k) for k in SUCCESS_KEYS} if success else None
        entries.append(entry)
    return entries


def read_earlier(folder: Path) -> tuple[dict[str, list[dict[str, Any]]], str | None]:
    """Attempts and invocations of earlier runs into the folder; a bad run.json is set aside."""
    path = folder / RUN_RECORD
    empty: dict[str, list[dict[str, Any]]] = {"attempts": [], "invocations": []}
    if not path.exists():
        return empty, None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        earlier = _attempts_of(data) if "attempts" in data else _legacy(data)
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as error:
        kept, why = set_aside(path), one_line(error, 120) or type(error).__name__
        said = f"{path} could not be read ({why}); it is kept as {kept} and a new record starts."
        print(said, flush=True)
        return empty, kept
    for attempt in earlier["attempts"]:
        if attempt["status"] == "running":  # that process was killed before it could say so
            attempt["status"] = "interrupted"
    return earlier, None


def interactive_record(folder: Path) -> dict[str, Any]:
    """A record for a folder the notebooks wrote themselves (Run All in JupyterLab): no runner,
    so no run.json. A step whose metrics/<step>.json is there ran; the project's notebook, if it
    was saved with outputs, is its executed copy. Raises FileNotFoundError without metrics/."""
    from .summary import step_of

    if not (folder / METRICS_DIR).is_dir():
        raise FileNotFoundError(folder / METRICS_DIR)
    try:
        chain = discover_notebooks(project_root(folder))
    except (FileNotFoundError, ValueError):  # a run folder copied out of its project
        chain = {}
    entries, times = [], []
    for name, path in chain.items():
        metrics = folder / METRICS_DIR / f"{step_of(name)}.json"
        entry = {"name": name, "status": "not run", "seconds": None, "executed": None}
        entry.update(parameters={}, error=None, latest_success=None)
        if metrics.is_file():
            finished = datetime.fromtimestamp(metrics.stat().st_mtime).astimezone()
            times.append(finished)
            entry.update(status="ok", finished=finished.isoformat(timespec="seconds"))
            if _has_outputs(path):
                entry["executed"] = os.path.relpath(path, folder)
        entries.append(entry)
    ran = [entry for entry in entries if entry["status"] == "ok"]
    first, last = ("-", None)  # an empty metrics/: nothing ran yet
    if times:
        first = min(times).isoformat(timespec="seconds")
        last = max(times).isoformat(timespec="seconds")
    return {
        "profile": "interactive",
        "description": "notebooks run by hand (JupyterLab); saved notebooks with outputs are shown",
        "overrides": {},
        "run_dir": str(folder),
        "started": first,
        "finished": last,
        "status": "ok" if ran and len(ran) == len(entries) else "partial",
        "invocations": [],
        "attempts": [],
        "notebooks": entries,
    }


def _has_outputs(path: Path) -> bool:
    try:
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        return any(isinstance(cell, dict) and cell.get("outputs") for cell in cells)
    except (OSError, ValueError, KeyError, TypeError):  # not a notebook: shown as not executed
        return False


def _attempts_of(data: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """The lists of this runner's run.json, checked enough that summarize() can trust them."""
    attempts, invocations = data["attempts"], data.get("invocations", [])
    if not isinstance(attempts, list) or not isinstance(invocations, list):
        raise TypeError("attempts and invocations must be lists")
    for attempt in attempts:
        if not isinstance(attempt["notebook"], str) or not isinstance(attempt["status"], str):
            raise TypeError("every attempt needs a notebook and a status")
    return {"attempts": attempts, "invocations": invocations}


def _legacy(data: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """A run.json of the earlier runner (no attempts): its notebooks become attempts."""
    attempts = []
    for entry in data["notebooks"]:
        if entry["status"] == "not run":
            continue
        attempt = {key: value for key, value in entry.items() if key != "name"}
        attempt.update(notebook=str(entry["name"]), started=data.get("started"))
        attempt.setdefault("finished", data.get("finished"))
        attempts.append(attempt)
    keys = ("started", "finished", "status", "profile", "overrides")
    return {"attempts": attempts, "invocations": [{key: data.get(key) for key in keys}]}


def now() -> str:
    return datetime.now().astimezone().isoformat(timespec="seconds")
