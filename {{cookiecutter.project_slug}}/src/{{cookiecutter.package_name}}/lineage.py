"""What made what in a run folder: fingerprints of each artifact and of the inputs it was made from.

People re-run steps out of order (JupyterLab invites it): 01 again with another seed, 03 again
after that. A run folder must then not lie about itself: checkpoints made on the old split must not
be resumed, and an export made from an older model.keras must not be benchmarked as this one.

Every step that writes an artifact records it in run_dir/lineage.json with `record`: the
artifact's fingerprint, the step, and the fingerprints of the inputs it read. A later step calls
`check_made_from` before building on an artifact; it refuses in one sentence (StaleInputError)
when an input has changed since, naming the step to re-run. An artifact with no record in a
readable ledger (made by hand, or by a version of the project without lineage) cannot be checked
and is taken as it is; `describe` says so.

A ledger that cannot be read, or is missing beside artifacts, is not taken as empty: every
artifact in the folder then has *unknown* lineage, and a step that checks what it builds on
refuses it (UnknownLineageError, naming the step to re-run), since replaced data or an older model
could hide behind it. A step recording into such a ledger sets the unreadable file aside
(lineage.json.corrupt-<n>), says so in one line, and keeps the other artifacts marked unknown.

Which artifacts a folder holds and their fingerprints (sha256 hex digests) are fingerprints.py's;
`fingerprint` and `present` are read from here too, beside the ledger they feed.
"""

from __future__ import annotations

import contextlib
import json
import os
from datetime import datetime
from pathlib import Path
from typing import Any

from . import parts
from .artifacts import LINEAGE_FILE, StaleInputError, resolve_run_dir
from .fingerprints import fingerprint, present
from .writes import set_aside, write_json

# Which step writes each artifact: the step a refusal tells the user to re-run.
MADE_BY = {
    "data": "01_data",
    "model": "03_train",
    "export": "04_export",
    **{name: step for name, (_, step) in parts.merged("ARTIFACTS").items()},
}
UNKNOWN = "unknown"  # an entry's key: why what the artifact was made from is not known
ROOTS = ("data",)  # made from nothing in the run folder: their lineage is never unknown


class UnknownLineageError(StaleInputError):
    """lineage.json cannot say what an artifact was made from: re-run the step that makes it."""


def record(
    run_dir: str | os.PathLike[str],
    artifact: str,
    step: str,
    inputs: dict[str, str | None],
    *,
    origins: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Record that `step` wrote `artifact` from `inputs` ({artifact: fingerprint}); return it.

    `origins` holds what came from outside the run folder (a model's starting weights: path and
    sha256), kept beside the inputs; staleness checks only look at the inputs."""
    folder = resolve_run_dir(run_dir, create=False)
    entry = {
        "fingerprint": fingerprint(folder, artifact),
        "step": step,
        "inputs": dict(inputs),
        "recorded": datetime.now().astimezone().isoformat(timespec="seconds"),
    }
    if origins:
        entry["origins"] = dict(origins)
    ledger, problem = _load(folder, besides=artifact)
    if problem is not None:
        ledger = _rebuilt(folder, artifact, step, problem)
    ledger[artifact] = entry
    write_json(folder / LINEAGE_FILE, ledger)
    return entry


def read(run_dir: str | os.PathLike[str]) -> dict[str, Any]:
    """lineage.json as {artifact: entry}; {} when a folder holding no artifact has none.

    When it cannot be read, or is missing beside artifacts, each artifact in the folder reads as
    an entry of unknown lineage ({"unknown": why}), never as no entry at all."""
    folder = resolve_run_dir(run_dir, create=False)
    ledger, problem = _load(folder)
    if problem is None:
        return ledger
    return {name: _unknown_entry(folder, name, problem) for name in _built(folder)}


def unknown(run_dir: str | os.PathLike[str], artifact: str) -> str | None:
    """Why the lineage of `artifact` as it is now is unknown; None when it is known or absent."""
    folder = resolve_run_dir(run_dir, create=False)
    ledger, problem = _load(folder)
    if problem is not None:
        return problem if artifact in _built(folder) else None
    entry = ledger.get(artifact)
    if not isinstance(entry, dict) or not entry.get(UNKNOWN):
        return None
    if entry.get("fingerprint") != fingerprint(folder, artifact):
        return None  # it describes an earlier artifact of that name: no record of this one
    return str(entry[UNKNOWN])


def made_from(run_dir: str | os.PathLike[str], artifact: str) -> dict[str, str | None] | None:
    """The inputs the artifact as it is now was made from; None when there is no such record.

    A record whose fingerprint differs from the artifact's current one describes an earlier
    artifact of that name (replaced by hand, or by a step that failed before recording), so it
    says nothing about this one.
    """
    entry = _load(resolve_run_dir(run_dir, create=False))[0].get(artifact)  # unknown: no entry
    if not isinstance(entry, dict) or entry.get("fingerprint") != fingerprint(run_dir, artifact):
        return None
    inputs = entry.get("inputs")
    return inputs if isinstance(inputs, dict) else None


def stale_inputs(run_dir: str | os.PathLike[str], artifact: str) -> list[str]:
    """The inputs of `artifact` that have changed since it was made ([] when there is no record
    or none changed); UnknownLineageError when lineage.json cannot say (see `unknown`)."""
    why = unknown(run_dir, artifact)
    if why is not None:
        raise UnknownLineageError(_unknown_sentence(run_dir, artifact, why))
    inputs = made_from(run_dir, artifact) or {}
    return [name for name, was in inputs.items() if was != fingerprint(run_dir, name)]


def check_made_from(run_dir: str | os.PathLike[str], artifact: str, *, needed_by: str) -> None:
    """Refuse in one sentence when `artifact` was made from inputs that have since changed, or
    when lineage.json cannot say what it was made from."""
    why = unknown(run_dir, artifact)
    if why is not None:
        raise UnknownLineageError(_unknown_sentence(run_dir, artifact, why, needed_by))
    changed = stale_inputs(run_dir, artifact)
    if not changed:
        return
    name = changed[0]
    now = fingerprint(run_dir, name)
    kind = artifact.partition("/")[0]
    maker = MADE_BY.get(name.partition("/")[0], "another step")
    what = "is gone" if now is None else f"was replaced by {maker}"
    raise StaleInputError(
        f"{artifact} in {resolve_run_dir(run_dir, create=False)} was made from a {name} that "
        f"{what} since: re-run {MADE_BY.get(kind, 'the step that writes it')} before {needed_by}."
    )


def summary(run_dir: str | os.PathLike[str], reads: list[str], writes: list[str]) -> dict[str, Any]:
    """What a step's metrics record of its lineage: {reads: {artifact: fp}, writes: {...}}."""
    return {
        "reads": {name: fingerprint(run_dir, name) for name in reads},
        "writes": {name: fingerprint(run_dir, name) for name in writes},
    }


def describe(run_dir: str | os.PathLike[str], artifact: str) -> str:
    """One sentence on where the artifact came from, for notebooks and the CLI."""
    why = unknown(run_dir, artifact)
    if why is not None:
        return f"{artifact}: lineage unknown ({why}), so what it was made from cannot be checked."
    inputs = made_from(run_dir, artifact)
    if inputs is None:
        return f"{artifact}: no lineage record, so what it was made from cannot be checked."
    changed = stale_inputs(run_dir, artifact)
    shown = ", ".join(f"{name} {str(fp)[:12]}" for name, fp in inputs.items()) or "nothing"
    state = f"stale: {', '.join(changed)} changed since" if changed else "current"
    return f"{artifact}: made from {shown}; {state}."


def _load(folder: Path, besides: str | None = None) -> tuple[dict[str, Any], str | None]:
    """(ledger, None), or ({}, why it cannot be trusted): unreadable, or missing while the folder
    holds artifacts (other than `besides`, the one being recorded now)."""
    path = folder / LINEAGE_FILE
    try:
        ledger = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        others = _built(folder, besides)
        return {}, (f"{LINEAGE_FILE} is missing beside {', '.join(others)}" if others else None)
    except OSError as error:
        return {}, f"{LINEAGE_FILE} cannot be read ({error.strerror or type(error).__name__})"
    except ValueError:
        return {}, f"{LINEAGE_FILE} is not valid JSON"
    if not isinstance(ledger, dict):
        return {}, f"{LINEAGE_FILE} holds a JSON {type(ledger).__name__}, not a ledger"
    return ledger, None


def _built(folder: Path, besides: str | None = None) -> list[str]:
    """The artifacts in the folder made from others (all but ROOTS and `besides`)."""
    return [name for name in present(folder) if name not in (*ROOTS, besides)]


def _unknown_entry(folder: Path, artifact: str, why: str) -> dict[str, Any]:
    now = fingerprint(folder, artifact)
    return {"fingerprint": now, "step": None, "inputs": None, UNKNOWN: why}


def _rebuilt(folder: Path, artifact: str, step: str, problem: str) -> dict[str, Any]:
    """A new ledger for a record into one that cannot be trusted: the unreadable file set aside,
    every other artifact in the folder marked unknown, and one line saying so."""
    path, kept = folder / LINEAGE_FILE, None
    if path.exists():
        with contextlib.suppress(OSError):  # the new ledger replaces it all the same
            kept = set_aside(path)
    stamp = datetime.now().astimezone().isoformat(timespec="seconds")
    why = f"{problem}, found when the {step} step recorded {artifact} at {stamp}"
    others = _built(folder, artifact)
    makers = sorted({MADE_BY.get(name.partition("/")[0], "its step") for name in others})
    one = len(others) == 1
    said = (
        f"{', '.join(others)} in {folder} now {'has' if one else 'have'} unknown lineage, and "
        f"the steps that build on {'it' if one else 'them'} refuse until "
        f"{', '.join(makers)} re-run{'s' if len(makers) == 1 else ''}"
        if others
        else f"a new one is started in {folder}"
    )
    print(f"{problem}: {said}" + (f"; the unreadable file is kept as {kept}." if kept else "."))
    return {name: _unknown_entry(folder, name, why) for name in others}


def _unknown_sentence(
    run_dir: str | os.PathLike[str], artifact: str, why: str, needed_by: str | None = None
) -> str:
    kind = artifact.partition("/")[0]
    before = f" before {needed_by}" if needed_by else ""
    return (
        f"{artifact} in {resolve_run_dir(run_dir, create=False)} has unknown lineage ({why}), so "
        f"what it was made from cannot be checked against the run folder: re-run "
        f"{MADE_BY.get(kind, 'the step that writes it')}{before}."
    )
