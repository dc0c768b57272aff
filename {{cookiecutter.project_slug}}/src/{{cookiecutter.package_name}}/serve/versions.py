"""Which exported versions TF Serving serves, under which label: canary, promote, roll back.

serving/versions.json holds what the configs are made from: each export's parity verdict from step
4 (record_export), the stable and canary versions, and the earlier stable versions (history).
Every change rewrites models.config atomically (config.write_config); TF Serving polls the file and
moves its labels without a restart. The previous stable version stays loaded, so a rollback is a
label move, not a load.

TF Serving moves an existing label only onto a version it has already loaded (a label on a version
still loading would drop the requests sent to it). So making an unloaded version the canary or the
stable is two commands: the first adds it to the served versions, the second, once TF Serving
reports it AVAILABLE, moves the label.

Each change reads versions.json, changes it and writes the configs under an exclusive lock, so two
commands at the same moment (canary and rollback) take turns instead of one silently undoing the
other; state.py reads and checks the file, and writes a change whole or not at all.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..artifacts import EXPORT_DIR, StepError, read_metrics, resolve_run_dir
from ..parts.serve import SERVING_BATCHING, SERVING_MODELS, SERVING_STATE
from . import config
from .protos import ConfigError
from .state import MODEL_NAME, ServeError, load_state, locked, save, served

__all__ = ["MODEL_NAME", "ServeError", "load_state", "locked", "save", "served"]


def record_export(run_dir: str | os.PathLike[str], metrics: dict[str, Any]) -> str:
    """Step 4's hook: record an export's parity, and write the three configs (the first export
    that passed parity becomes stable). Returns a sentence saying what changed."""
    folder = resolve_run_dir(run_dir, create=False)
    with locked(folder):
        state = load_state(folder)
        version = int(metrics["version"])
        state["exports"][str(version)] = {
            key: metrics.get(key) for key in ("parity_ok", "max_abs_diff", "tolerance", "precision")
        }
        if state["stable"] is None and metrics.get("parity_ok"):
            state["stable"] = version
            said = f"version {version} is the stable version"
        elif not metrics.get("parity_ok"):
            said = f"version {version} failed parity and will not be served"
        else:
            said = (
                f"version {version} is recorded; make it the canary with `{MODEL_NAME} serve "
                f"canary --run-dir {folder} --version {version}`"
            )
        save(folder, state)
    return f"Wrote {folder / SERVING_MODELS} and its batching and monitoring configs: {said}."


def resize_batching(run_dir: str | os.PathLike[str], optimize: dict[str, Any]) -> str:
    """Step 5's hook: rewrite batching.config from the throughput curve just measured."""
    folder = resolve_run_dir(run_dir, create=False)
    with locked(folder):
        state = load_state(folder)
        state["batching"] = config.size_batching(optimize)
        save(folder, state)
    return f"Resized {folder / SERVING_BATCHING}: {state['batching']['reason']}"


def canary(run_dir: str | os.PathLike[str], version: int) -> str:
    """Serve `version` beside the stable one under the label canary."""
    with _open(run_dir) as (folder, state):
        check_servable(folder, state, version)
        if version == state["stable"]:
            raise ServeError(
                f"Version {version} is the stable version already: it cannot be canary."
            )
        if version == state["canary"]:
            models_config(folder)  # "nothing changed" only where TF Serving is told so
            return f"Version {version} is the canary already: nothing changed."
        if state["canary"] is not None and version not in served(state):
            return _load_first(folder, state, version, "canary")
        state["canary"], state["loading"] = version, None
        save(folder, state)
        return f"Version {version} is the canary; stable stays {state['stable']}."


def promote(run_dir: str | os.PathLike[str], version: int | None = None) -> str:
    """Make the canary (or `version`) stable; the old stable is kept loaded for a rollback."""
    with _open(run_dir) as (folder, state):
        if version is None:
            if state["canary"] is None:
                raise ServeError(
                    "There is no canary to promote: make one with `serve canary --version N`, or "
                    "name the version with --version N."
                )
            version = state["canary"]
        check_servable(folder, state, version)
        if version == state["stable"]:
            models_config(folder)  # "nothing changed" only where TF Serving is told so
            return f"Version {version} is the stable version already: nothing changed."
        if version not in served(state):
            return _load_first(folder, state, version, "stable")
        state["history"].append(state["stable"])
        state["stable"] = version
        state["canary"] = None if state["canary"] == version else state["canary"]
        state["loading"] = None
        save(folder, state)
        kept = state["history"][-1]
        return f"Version {version} is stable; version {kept} stays loaded for rollback."


def rollback(run_dir: str | os.PathLike[str]) -> str:
    """Give the label stable back to the previous stable version; the current one is dropped."""
    with _open(run_dir) as (folder, state):
        if not state["history"]:
            raise ServeError(
                f"Nothing to roll back to: version {state['stable']} is the first stable version "
                f"of {folder} (serving/versions.json holds no earlier one)."
            )
        dropped, state["stable"] = state["stable"], state["history"].pop()
        state["canary"] = None if state["canary"] == state["stable"] else state["canary"]
        save(folder, state)
        stable = state["stable"]
        return f"Rolled back: version {stable} is stable again; version {dropped} is unloaded."


def status(run_dir: str | os.PathLike[str]) -> dict[str, Any]:
    """What models.config serves and labels, read back with TF Serving's message, and the state
    (read under a shared lock: a read-only serving/ can still be looked at)."""
    with _open(run_dir, write=False) as (folder, state):
        return {**state, "models_config": models_config(folder)}


def models_config(folder: Path) -> dict[str, Any]:
    """models.config as TF Serving reads it, or one sentence saying how to write it again."""
    path = folder / SERVING_MODELS
    try:
        return config.read_config(path)
    except (OSError, ConfigError) as error:
        reason = error.strerror if isinstance(error, OSError) else str(error).rstrip(".")
        raise ServeError(
            f"{path} cannot be used ({reason or type(error).__name__}): write it again from "
            f"{SERVING_STATE} with `{MODEL_NAME} serve rewrite --run-dir {folder}`."
        ) from None


def rewrite(run_dir: str | os.PathLike[str]) -> str:
    """Write the three configs again from versions.json (a models.config lost or damaged)."""
    with _open(run_dir) as (folder, state):
        save(folder, state)
        labels = ", ".join(f"{key} {state[key]}" for key in ("stable", "canary") if state[key])
        return (
            f"Wrote {folder / SERVING_MODELS} and its batching and monitoring configs again from "
            f"{folder / SERVING_STATE}: serving {served(state)}, {labels}."
        )


def check_recordable(run_dir: str | os.PathLike[str]) -> None:
    """Export asks before it writes export/<version>/: versions.json can be read and serving/
    written, so a new version is never left without its parity record (ServeError if not)."""
    folder = resolve_run_dir(run_dir, create=False)
    if (folder / SERVING_STATE).exists():
        with locked(folder):
            load_state(folder)


def check_servable(folder: Path, state: dict[str, Any], version: Any) -> int:
    """A version that exists under export/ and passed parity in step 4, or one sentence."""
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise ServeError(f"version={version!r} is not allowed: use a whole number >= 1.")
    if not (folder / EXPORT_DIR / str(version) / "saved_model.pb").is_file():
        have = sorted(int(name) for name in state["exports"])
        raise ServeError(
            f"Version {version} does not exist in {folder / EXPORT_DIR} (exported: "
            f"{', '.join(map(str, have)) or 'none'}): export it first with 04_export."
        )
    record = state["exports"].get(str(version)) or _from_export_metrics(folder, version)
    if not record or record.get("parity_ok") is not True:
        found = f"max_abs_diff {record.get('max_abs_diff')}" if record else "no parity record"
        raise ServeError(
            f"Version {version} did not pass parity in step 4 ({found}): re-export it with "
            "04_export before serving it."
        )
    return version


@contextlib.contextmanager
def _open(
    run_dir: str | os.PathLike[str], write: bool = True
) -> Iterator[tuple[Path, dict[str, Any]]]:
    """The run folder and its serving state, read and kept under the lock until the change is
    written (a shared lock where write=False)."""
    folder = resolve_run_dir(run_dir, create=False)
    if not (folder / SERVING_STATE).is_file():
        raise ServeError(
            f"{folder / SERVING_STATE} is missing: run 04_export on {folder} first, which writes "
            "the serving configs."
        )
    with locked(folder, write=write):
        state = load_state(folder)
        if state["stable"] is None:
            raise ServeError(f"No export of {folder} passed parity yet: there is nothing to serve.")
        yield folder, state


def role(run_dir: str | os.PathLike[str], version: int) -> str | None:
    """What versions.json records export/<version>/ as ("the stable version in …/versions.json"),
    or None when it does not name it as served or kept for a rollback (export asks, before it
    replaces a version)."""
    folder = resolve_run_dir(run_dir, create=False)
    if not (folder / SERVING_STATE).is_file():
        return None
    state = load_state(folder)  # ServeError, naming the file, if it cannot be used
    roles = {
        state["loading"]: "the version TF Serving is loading",
        **{old: "an earlier stable version kept for rollback" for old in state["history"]},
        state["canary"]: "the canary version",
        state["stable"]: "the stable version",
    }
    found = roles.get(int(version))
    return f"{found} in {folder / SERVING_STATE}" if found else None


def _load_first(folder: Path, state: dict[str, Any], version: int, label: str) -> str:
    state["loading"] = version
    save(folder, state)
    return (
        f"Version {version} is now served without a label: TF Serving moves `{label}` only onto "
        f"a loaded version, so run this command again once http://127.0.0.1:8501/v1/models/"
        f"{state['model_name']}/versions/{version} reports AVAILABLE."
    )


def _from_export_metrics(folder: Path, version: int) -> dict[str, Any] | None:
    """metrics/export.json's parity, when it describes this version (an older run folder)."""
    try:
        metrics = read_metrics(folder, "export")
    except StepError:
        return None
    return metrics if metrics.get("version") == version else None
