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
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from ..artifacts import (
    EXPORT_DIR,
    SERVING_BATCHING,
    SERVING_MODELS,
    SERVING_MONITORING,
    SERVING_STATE,
    StepError,
    read_metrics,
    resolve_run_dir,
    write_json,
)
from . import config

MODEL_NAME = (__package__ or "model").split(".")[0]  # the model's name under TF Serving


class ServeError(StepError):
    """A version or label change was refused: one sentence naming the value and what is allowed."""


def record_export(run_dir: str | os.PathLike[str], metrics: dict[str, Any]) -> str:
    """Step 4's hook: record an export's parity, and write the three configs (the first export
    that passed parity becomes stable). Returns a sentence saying what changed."""
    folder = resolve_run_dir(run_dir, create=False)
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
            f"version {version} is recorded; make it the canary with `{MODEL_NAME} serve canary "
            f"--run-dir {folder} --version {version}`"
        )
    save(folder, state)
    return f"Wrote {folder / SERVING_MODELS} and its batching and monitoring configs: {said}."


def resize_batching(run_dir: str | os.PathLike[str], optimize: dict[str, Any]) -> str:
    """Step 5's hook: rewrite batching.config from the throughput curve just measured."""
    folder = resolve_run_dir(run_dir, create=False)
    state = load_state(folder)
    state["batching"] = config.size_batching(optimize)
    save(folder, state)
    return f"Resized {folder / SERVING_BATCHING}: {state['batching']['reason']}"


def canary(run_dir: str | os.PathLike[str], version: int) -> str:
    """Serve `version` beside the stable one under the label canary."""
    folder, state = _open(run_dir)
    check_servable(folder, state, version)
    if version == state["stable"]:
        raise ServeError(f"Version {version} is the stable version already: it cannot be canary.")
    if version == state["canary"]:
        return f"Version {version} is the canary already: nothing changed."
    if state["canary"] is not None and version not in served(state):
        return _load_first(folder, state, version, "canary")
    state["canary"], state["loading"] = version, None
    save(folder, state)
    return f"Version {version} is the canary; stable stays {state['stable']}."


def promote(run_dir: str | os.PathLike[str], version: int | None = None) -> str:
    """Make the canary (or `version`) stable; the old stable is kept loaded for a rollback."""
    folder, state = _open(run_dir)
    if version is None:
        if state["canary"] is None:
            raise ServeError(
                "There is no canary to promote: make one with `serve canary --version N`, or "
                "name the version with --version N."
            )
        version = state["canary"]
    check_servable(folder, state, version)
    if version == state["stable"]:
        return f"Version {version} is the stable version already: nothing changed."
    if version not in served(state):
        return _load_first(folder, state, version, "stable")
    state["history"].append(state["stable"])
    state["stable"] = version
    state["canary"] = None if state["canary"] == version else state["canary"]
    state["loading"] = None
    save(folder, state)
    return f"Version {version} is stable; version {state['history'][-1]} stays loaded for rollback."


def rollback(run_dir: str | os.PathLike[str]) -> str:
    """Give the label stable back to the previous stable version; the current one is dropped."""
    folder, state = _open(run_dir)
    if not state["history"]:
        raise ServeError(
            f"Nothing to roll back to: version {state['stable']} is the first stable version of "
            f"{folder} (serving/versions.json holds no earlier one)."
        )
    dropped, state["stable"] = state["stable"], state["history"].pop()
    state["canary"] = None if state["canary"] == state["stable"] else state["canary"]
    save(folder, state)
    return f"Rolled back: version {state['stable']} is stable again; version {dropped} is unloaded."


def status(run_dir: str | os.PathLike[str]) -> dict[str, Any]:
    """What models.config serves and labels, read back with TF Serving's message, and the state."""
    folder, state = _open(run_dir)
    return {**state, "models_config": config.read_config(folder / SERVING_MODELS)}


def served(state: dict[str, Any]) -> list[int]:
    """The versions to keep loaded: stable, canary, the previous stable, and one being loaded."""
    keep = [state["stable"], state["canary"], *state["history"][-1:], state.get("loading")]
    return sorted({int(version) for version in keep if version is not None})


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


def load_state(folder: Path) -> dict[str, Any]:
    path = folder / SERVING_STATE
    if path.is_file():
        return json.loads(path.read_text(encoding="utf-8"))
    return {
        "model_name": MODEL_NAME,
        "exports": {},
        "stable": None,
        "canary": None,
        "history": [],
        "loading": None,
        "batching": config.size_batching(_optimize(folder)),
    }


def save(folder: Path, state: dict[str, Any]) -> None:
    """Write the three configs from `state`, models.config last, then the state itself."""
    header = f"Written by `{MODEL_NAME} serve` from {SERVING_STATE}; TF Serving re-reads it."
    config.write_config(folder / SERVING_MONITORING, config.monitoring_config(), header)
    sizing = state["batching"]
    config.write_config(
        folder / SERVING_BATCHING, config.batching_config(sizing), f"{header}\n{sizing['reason']}"
    )
    if state["stable"] is not None:
        labels = {"stable": state["stable"]}
        if state["canary"] is not None:
            labels["canary"] = state["canary"]
        models = config.models_config(state["model_name"], served(state), labels)
        config.write_config(folder / SERVING_MODELS, models, header)
    write_json(folder / SERVING_STATE, state)


def _open(run_dir: str | os.PathLike[str]) -> tuple[Path, dict[str, Any]]:
    folder = resolve_run_dir(run_dir, create=False)
    if not (folder / SERVING_STATE).is_file():
        raise ServeError(
            f"{folder / SERVING_STATE} is missing: run 04_export on {folder} first, which writes "
            "the serving configs."
        )
    state = load_state(folder)
    if state["stable"] is None:
        raise ServeError(f"No export of {folder} passed parity yet: there is nothing to serve.")
    return folder, state


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


def _optimize(folder: Path) -> dict[str, Any] | None:
    try:
        return read_metrics(folder, "optimize")
    except StepError:
        return None
