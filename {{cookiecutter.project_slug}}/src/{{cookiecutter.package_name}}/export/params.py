"""What 04_export takes and what it refuses, before any model is loaded.

`check(run_dir, params, inputs=False)` looks at the values only and costs nothing (the runner's
pre-flight check). With inputs=True it also looks at the run folder: data/ and a readable
model.keras, a model trained on the data that is there now (lineage), and a version folder that
is free (unless overwrite) and can be written. A version recorded as served (stable, canary, kept
for a rollback; an optional part says, where the project has one) is replaced only with
replace_served, so a later rollback never "restores" a model that silently took its place; a part
that records each export checks here that it can (before_export), so no version is written that
its record then lacks.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .. import parts
from ..artifacts import EXPORT_DIR, StepError, resolve_run_dir
from ..steps import param
from ..writes import check_writable
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
    replace_served: bool = param(
        False, "also replace a version recorded as served (stable, canary, kept for rollback)"
    )


def check(run_dir: str | os.PathLike[str], params: Params, *, inputs: bool = True) -> None:
    """Refuse bad values, and with inputs=True missing, unreadable or stale inputs, in one sentence.

    A version number should always mean the same model once TF Serving may be serving it, so an
    existing version is refused unless overwrite=True.
    """
    check_version(params.version)
    for name in ("overwrite", "replace_served"):
        if not isinstance(getattr(params, name), bool):
            value = getattr(params, name)
            raise ExportError(f"{name}={value!r} is not allowed: use true or false.")
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
    served_as = recorded_as_served(folder, params.version)
    if target.exists() and served_as and not params.replace_served:
        raise ExportError(
            f"{target} is {served_as}: export another version (e.g. version="
            f"{next_version(folder)}), or pass replace_served=True to replace it."
        )
    check_writable(target.parent, flag="the export folder")
    for part_check in parts.collect("before_export"):  # an optional part's records, if any
        part_check(folder)


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


def recorded_as_served(run_dir: str | os.PathLike[str], version: int) -> str | None:
    """What an optional part records export/<version>/ as ("the stable version in …"), or None
    (always None in a project without such a part)."""
    folder = resolve_run_dir(run_dir, create=False)
    found = [served_as(folder, int(version)) for served_as in parts.collect("served_as")]
    return next((said for said in found if said), None)


def next_version(run_dir: str | os.PathLike[str]) -> int:
    """One more than the highest version under export/ (1 when there is none)."""
    folder = resolve_run_dir(run_dir, create=False) / EXPORT_DIR
    taken = [int(p.name) for p in folder.iterdir() if p.name.isdigit()] if folder.is_dir() else []
    return max(taken, default=0) + 1
