"""What 04_export takes and what it refuses, before any model is loaded.

`check(run_dir, params, inputs=False)` looks at the values only and costs nothing (the runner's
pre-flight check). With inputs=True it also looks at the run folder: data/ and a readable
model.keras, a model trained on the data that is there now (lineage), and a version folder that
is free (unless overwrite) and can be written.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..artifacts import EXPORT_DIR, StepError, check_writable, resolve_run_dir
from ..steps import param
from .files import check_trained_model


class ExportError(StepError):
    """A version, folder or model was refused: one sentence naming the value and what is allowed."""


@dataclass(frozen=True)
class Params:
    """04_export's parameters: its notebook's `parameters` cell, same names and defaults."""

    version: int = param(
        1, "export/<version>/: a whole number, 1 or more (the version TF Serving loads)"
    )
    overwrite: bool = param(
        True, "replace an existing export/<version>/ (profiles pass false: refused)"
    )


def check(run_dir: str | os.PathLike[str], params: Params, *, inputs: bool = True) -> None:
    """Refuse bad values, and with inputs=True missing, unreadable or stale inputs, in one sentence.

    A version number should always mean the same model once TF Serving may be serving it, so an
    existing version is refused unless overwrite=True.
    """
    check_version(params.version)
    if not isinstance(params.overwrite, bool):
        raise ExportError(f"overwrite={params.overwrite!r} is not allowed: use true or false.")
    if not inputs:
        return
    folder = resolve_run_dir(run_dir, create=False)
    check_trained_model(folder, ExportError, needed_by="04_export")
    target = export_target(folder, params.version)
    if target.exists() and not params.overwrite:
        raise ExportError(
            f"{target} exists already: pass overwrite=True to replace it, or choose another "
            "version."
        )
    check_writable(target.parent, flag="the export folder")


def check_version(version: Any) -> int:
    """TF Serving names versions by positive whole numbers: refuse anything else in one sentence."""
    if isinstance(version, bool) or not isinstance(version, int | np.integer) or version < 1:
        raise ExportError(
            f"version={version!r} is not allowed: use a whole number >= 1 (TF Serving loads "
            "export/<version>/ folders named by positive integers)."
        )
    return int(version)


def export_target(run_dir: str | os.PathLike[str], version: int) -> Path:
    """run_dir/export/<version>/, the folder a version is written to."""
    return resolve_run_dir(run_dir, create=False) / EXPORT_DIR / str(int(version))
