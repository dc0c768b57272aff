"""serving/versions.json: read and checked before use, written with the configs as one change.

Every `serve` action and step 4's record start from this file, so a file that cannot be used
(cut short, `[]`, a label that is not a version, a batching entry TF Serving would refuse) is
refused in one sentence naming it and what to do, before anything is changed. A change writes
monitoring.config, batching.config, models.config and then versions.json, each atomically; if one
of them fails (a read-only folder, a full disk), those already written are put back, so
models.config and versions.json never disagree. The folder is probed for a write first, under
the lock (fcntl.flock on serving/.versions.lock, POSIX only like TF Serving's images), so a
read-only serving/ is refused before any file is touched.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..artifacts import StepError, read_metrics
from ..parts.serve import (
    SERVING_BATCHING,
    SERVING_DIR,
    SERVING_MODELS,
    SERVING_MONITORING,
    SERVING_STATE,
)
from ..writes import write_json
from . import config

SERVING_LOCK = "serving/.versions.lock"  # held while versions.json is read and rewritten
MODEL_NAME = (__package__ or "model").split(".")[0]  # the model's name under TF Serving
REQUIRED = ("model_name", "exports", "stable", "canary", "history", "batching")  # loading: later
VERSION_KEYS = ("stable", "canary", "loading")  # a version number or null each
JSON_KINDS = {list: "a list", type(None): "null", str: "a string", bool: "true or false"}


class ServeError(StepError):
    """A version or label change was refused: one sentence naming the value and what is allowed."""


def new_state(folder: Path) -> dict[str, Any]:
    """The state of a run folder no export has been recorded in yet."""
    return {
        "model_name": MODEL_NAME,
        "exports": {},
        "stable": None,
        "canary": None,
        "history": [],
        "loading": None,
        "batching": config.size_batching(_optimize(folder)),
    }


def load_state(folder: Path) -> dict[str, Any]:
    """versions.json, checked (ServeError naming the file if it cannot be used), or a new state."""
    path = folder / SERVING_STATE
    if not path.exists():
        return new_state(folder)
    try:
        text = path.read_text(encoding="utf-8")
        state = json.loads(text) if text.strip() else None
    except (OSError, UnicodeDecodeError, ValueError) as error:
        fault = _reason(error)
    else:
        fault = "it is empty" if state is None and not text.strip() else state_fault(state)
    if fault:
        raise ServeError(
            f"{path} cannot be used ({fault}): restore it, or delete it and run 04_export again, "
            "which starts a new record with the version it exports."
        )
    return {"loading": None, **state}


def state_fault(state: Any) -> str | None:
    """What makes `state` unusable as versions.json, in a few words, or None."""
    if not isinstance(state, dict):
        kind = JSON_KINDS.get(type(state), "a number")
        return f"it holds {kind}, not an object of versions and labels"
    missing = [key for key in REQUIRED if key not in state]
    if missing:
        return f"no {', '.join(missing)}"
    if not isinstance(state["model_name"], str) or not state["model_name"]:
        return f"model_name {state['model_name']!r} is not a name"
    for key in VERSION_KEYS:
        if state.get(key) is not None and not _is_version(state[key]):
            return f"{key} {state[key]!r} is not a version number"
    if not isinstance(state["history"], list) or not all(map(_is_version, state["history"])):
        return f"history {state['history']!r} is not a list of version numbers"
    exports = state["exports"]
    if not isinstance(exports, dict) or not all(
        key.isdigit() and isinstance(record, dict) for key, record in exports.items()
    ):
        return "exports is not an object of version: parity record"
    try:
        config.check_batching(config.batching_config(state["batching"]))
        str(state["batching"]["reason"])
    except (KeyError, TypeError, ValueError, AttributeError) as error:
        return f"its batching entry cannot be used ({_reason(error)})"
    return None


def served(state: dict[str, Any]) -> list[int]:
    """The versions to keep loaded: stable, canary, the previous stable, and one being loaded."""
    keep = [state["stable"], state["canary"], *state["history"][-1:], state.get("loading")]
    return sorted({int(version) for version in keep if version is not None})


def save(folder: Path, state: dict[str, Any]) -> None:
    """Write the three configs from `state`, models.config last, then the state itself; if any
    write fails, put back the files already written and refuse in one sentence."""
    paths = [folder / name for name in (SERVING_MONITORING, SERVING_BATCHING, SERVING_MODELS)]
    before = {path: _read_bytes(path) for path in (*paths, folder / SERVING_STATE)}
    header = f"Written by `{MODEL_NAME} serve` from {SERVING_STATE}; TF Serving re-reads it."
    try:
        config.write_config(paths[0], config.monitoring_config(), header)
        sizing = state["batching"]
        config.write_config(
            paths[1], config.batching_config(sizing), f"{header}\n{sizing['reason']}"
        )
        if state["stable"] is not None:
            labels = {"stable": state["stable"]}
            if state["canary"] is not None:
                labels["canary"] = state["canary"]
            models = config.models_config(state["model_name"], served(state), labels)
            config.write_config(paths[2], models, header)
        write_json(folder / SERVING_STATE, state)
    except OSError as error:
        _put_back(before)
        raise _unwritable(folder, error) from None
    except BaseException:
        _put_back(before)
        raise


@contextlib.contextmanager
def locked(folder: Path, write: bool = True) -> Iterator[None]:
    """Hold serving/.versions.lock: exclusively for a change (after a write probe of serving/,
    ServeError if it cannot be written), shared for a read (unlocked if the lock cannot be
    opened, e.g. a read-only folder where nothing can change it)."""
    lock = folder / SERVING_LOCK
    try:
        lock.parent.mkdir(parents=True, exist_ok=True)
        handle = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as error:
        if write:
            raise _unwritable(folder, error) from None
        try:
            handle = os.open(lock, os.O_RDONLY)
        except OSError:
            yield
            return
    try:
        fcntl.flock(handle, fcntl.LOCK_EX if write else fcntl.LOCK_SH)
        if write:
            _probe(folder)
        yield
    finally:
        os.close(handle)  # closing releases the lock


def _probe(folder: Path) -> None:
    """A file created and removed in serving/: the one test that holds for root, read-only
    mounts and ACLs alike."""
    try:
        fd, probe = tempfile.mkstemp(prefix=".write-probe-", dir=folder / SERVING_DIR)
        os.close(fd)
        os.unlink(probe)
    except OSError as error:
        raise _unwritable(folder, error) from None


def _unwritable(folder: Path, error: OSError) -> ServeError:
    reason = error.strerror or type(error).__name__
    if error.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
        fix = "make it writable (e.g. mount it read-write)"
    elif error.errno in (errno.ENOSPC, errno.EFBIG, errno.EDQUOT):
        fix = "free space on its disk"
    else:
        fix = "remove the cause"
    return ServeError(
        f"{folder / SERVING_DIR} cannot be written ({reason}), so nothing was changed: {fix} and "
        "run the command again."
    )


def _read_bytes(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except OSError:
        return None


def _put_back(before: dict[Path, bytes | None]) -> None:
    """Each file as it was before a failed change (best effort: the folder may be read-only, and
    then nothing was changed)."""
    for path, data in before.items():
        if _read_bytes(path) == data:
            continue
        with contextlib.suppress(OSError):
            if data is None:
                path.unlink(missing_ok=True)
                continue
            fd, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
            try:
                with os.fdopen(fd, "wb") as handle:
                    handle.write(data)
                os.replace(temporary, path)
            finally:
                Path(temporary).unlink(missing_ok=True)


def _is_version(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


def _reason(error: BaseException) -> str:
    """An error in a few words: its type and the first line of its message."""
    if isinstance(error, json.JSONDecodeError):
        return f"not JSON: {error.msg} at line {error.lineno} column {error.colno}"
    if isinstance(error, OSError) and error.strerror:
        return error.strerror
    text = (str(error).strip().splitlines() or [""])[0].rstrip(".")[:120]
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def _optimize(folder: Path) -> dict[str, Any] | None:
    try:
        return read_metrics(folder, "optimize")
    except StepError:
        return None
