"""The artifact contract: one run = one folder, each step writes its numbers to metrics/<step>.json.

Notebooks and the runner share these helpers so that every step finds its inputs in the same place
and a missing input stops a notebook with one sentence naming the step to run first.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

STEPS = ("environment", "data", "tune", "train", "export", "optimize")


class MissingInputError(RuntimeError):
    """An input a step needs is not in the run folder: the message names the step to run first."""


def project_root(start: Path | None = None) -> Path:
    """The folder at or above `start` (default: here) that holds pyproject.toml and notebooks/.

    Notebooks run with their own folder as working directory (JupyterLab and papermill both do), so
    relative run folders are resolved against the project root, not against the notebook's folder.
    """
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / "pyproject.toml").is_file() and (folder / "notebooks").is_dir():
            return folder
    raise FileNotFoundError(
        f"No project found at or above {here}: run this from inside the project "
        "(a folder with pyproject.toml and notebooks/)."
    )


def resolve_run_dir(run_dir: str | os.PathLike[str], create: bool = True) -> Path:
    """An absolute run folder; a relative one is taken from the project root."""
    path = Path(run_dir).expanduser()
    if not path.is_absolute():
        path = project_root() / path
    if create:
        path.mkdir(parents=True, exist_ok=True)
    return path


def write_metrics(run_dir: str | os.PathLike[str], step: str, metrics: dict[str, Any]) -> Path:
    """Write metrics/<step>.json atomically, so a reader never sees half a file."""
    if step not in STEPS:
        raise ValueError(f"Unknown step {step!r}: use one of {', '.join(STEPS)}.")
    return write_json(resolve_run_dir(run_dir) / "metrics" / f"{step}.json", metrics)


def read_metrics(run_dir: str | os.PathLike[str], step: str) -> dict[str, Any]:
    """Read metrics/<step>.json; a missing file names the step that writes it."""
    path = resolve_run_dir(run_dir, create=False) / "metrics" / f"{step}.json"
    if not path.is_file():
        raise MissingInputError(f"{path} is missing: run the {step} step first.")
    return json.loads(path.read_text(encoding="utf-8"))


def require(run_dir: str | os.PathLike[str], relative: str, step: str) -> Path:
    """Return run_dir/relative, or stop with one sentence naming the notebook that writes it."""
    path = resolve_run_dir(run_dir, create=False) / relative
    if not path.exists():
        raise MissingInputError(f"{path} is missing: run {step} first, with the same run_dir.")
    return path


def write_json(path: Path, data: Any) -> Path:
    """Write JSON to a temporary name and rename it into place when complete."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(data, handle, indent=2, sort_keys=True, default=_jsonable)
            handle.write("\n")
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def _jsonable(value: Any) -> Any:
    """numpy scalars and paths, which metrics often hold, as plain JSON values."""
    if hasattr(value, "item"):
        return value.item()
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    raise TypeError(f"{type(value).__name__} is not JSON serializable")
