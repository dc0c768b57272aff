"""One contract for every step: `(run_dir, typed parameters) → metrics`, one entry for all.

Each step module (env, data, train, export, optimize, and an optional part's) exposes three names:

    Params                                   a frozen dataclass: the notebook's parameters (all but
                                             run_dir), with the same names and defaults
    check(run_dir, params, *, inputs=True)   refuse bad values in one sentence (StepError); with
                                             inputs=True also missing or stale inputs in run_dir
    run(run_dir, params, *, verbose=True)    check, do the work, write metrics/<step>.json and the
                                             lineage of what it wrote; return the metrics

The notebook calls `run` and explains its result; `<package> <step> --run-dir DIR -p k=v` calls it
without Jupyter; the runner calls `check` for every selected step before the first notebook
starts (`preflight`), with inputs=False for a step some of whose inputs an earlier selected step
makes, and checks that the others are in the run folder. Before any of that, the ranges every step
shares (limits.py) are applied to every selected notebook's values (`check_ranges`), without
importing a step.
This module only names the steps and converts values; it imports a step's module when asked, so
reading it costs no TensorFlow import.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib
import importlib.util
import os
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import limits, parts
from .artifacts import EXPORT_DIR, META_FILE, MODEL_FILE, StepError


@dataclass(frozen=True)
class Step:
    """A step of the chain: its name (metrics/<name>.json, CLI subcommand) and where it lives."""

    name: str
    notebook: str
    module: str
    reads: tuple[str, ...]
    summary: str


CORE = (
    Step("environment", "00_environment", "env", (), "GPUs, drivers, XLA, precision, matmul"),
    # Step 1's entry is shared too; the task gives its half (tasks.base.Data: sources, Params).
    Step("data", "01_data", "prepare.entry", (), "source → data/ → tf.data, benchmarked"),
    Step("train", "03_train", "train", ("data",), "train with tf.distribute → model.keras"),
    Step("export", "04_export", "export", ("data", "train"), "model.keras → export/<version>/"),
    Step("optimize", "05_optimize", "optimize", ("data", "train", "export"), "backends, timed"),
)


def _chain() -> tuple[Step, ...]:
    """CORE with the steps of the optional parts present (parts/), in notebook order; a step a
    part's output feeds (FEEDS) reads it too."""
    added = [(Step(*part.STEP), part.FEEDS) for part in parts.present() if hasattr(part, "STEP")]
    feeding = {name: [s.name for s, feeds in added if name in feeds] for name in BY_CORE}
    core = [dataclasses.replace(s, reads=(*s.reads, *feeding[s.name])) for s in CORE]
    return tuple(sorted([*core, *(step for step, _ in added)], key=lambda s: s.notebook))


BY_CORE = {step.name: step for step in CORE}
CHAIN = _chain()
BY_NAME = {step.name: step for step in CHAIN}


def param(default: Any, help: str) -> Any:  # noqa: A002 - the word argparse uses
    """A Params field with its help text (shown by `<package> <step> --help`)."""
    return dataclasses.field(default=default, metadata={"help": help})


def for_notebook(stem: str) -> Step | None:
    """The step a notebook belongs to ("03_train" → train); None for a notebook of no step."""
    return next((step for step in CHAIN if step.notebook == stem), None)


def module(step: Step | str) -> types.ModuleType:
    """The step's module, imported now (most import TensorFlow)."""
    step = BY_NAME[step] if isinstance(step, str) else step
    return importlib.import_module(f".{step.module}", __package__)


def available() -> list[Step]:
    """The steps whose module this project has (each step of CHAIN, unless one was removed)."""
    return [step for step in CHAIN if importlib.util.find_spec(f"{__package__}.{step.module}")]


def params_from(step: Step | str, values: Mapping[str, Any]) -> Any:
    """The step's Params from loose values (a profile, -p, a notebook's cell), checked for names
    and types in one sentence; values not given keep their defaults; run_dir is ignored."""
    step = BY_NAME[step] if isinstance(step, str) else step
    cls = module(step).Params
    fields = {field.name: field.default for field in dataclasses.fields(cls)}
    return cls(**chosen(step, values, fields, typing.get_type_hints(cls)))


def literal(text: str) -> Any:
    """A parameters cell's default as Python reads it, or the text itself."""
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return text


def chosen(
    step: Step, values: Mapping[str, Any], fields: Mapping[str, Any], hints: Mapping[str, Any]
) -> dict[str, Any]:
    """The given values by name, checked against the fields (name: default) and their hints."""
    chosen = {}
    for key, value in values.items():
        if key == "run_dir":
            continue
        if key not in fields:
            raise StepError(
                f"Unknown parameter {key!r} for {step.name}: it takes {', '.join(fields)}."
            )
        value = coerce(value, hints[key])
        if not fits(value, hints[key]):
            raise StepError(
                f"{key}={value!r} is {type(value).__name__}, but {step.name} takes "
                f"{type_name(hints[key])} (default {fields[key]!r})."
            )
        chosen[key] = value
    return chosen


def defaults(step: Step | str) -> dict[str, Any]:
    """The step's parameter defaults, by name: what its notebook's parameters cell must hold."""
    step = BY_NAME[step] if isinstance(step, str) else step
    return {field.name: field.default for field in dataclasses.fields(module(step).Params)}


def preflight(run_dir: str | os.PathLike[str], selected: Mapping[str, Mapping[str, Any]]) -> None:
    """Check every selected notebook's values with its step's own checker, in chain order.

    `selected` maps notebook names to their values. A step none of whose inputs an earlier
    selected step writes in this run has all its inputs checked by its checker; one with some
    made earlier (--only 01,04) is checked for the others being in the run folder (OUTPUTS).
    Raises StepError naming the notebook; runs nothing and writes nothing.
    """
    check_ranges(selected)
    folder = Path(run_dir)
    earlier: set[str] = set()
    for stem, values in selected.items():
        step = for_notebook(stem)
        if step is None:
            continue
        made_here = earlier.intersection(step.reads)
        try:
            params = params_from(step, values)
            module(step).check(folder, params, inputs=not made_here)
            if made_here:
                _check_present(folder, [name for name in step.reads if name not in earlier])
        except StepError as error:  # which notebook refused, so the sentence says where to look
            raise StepError(f"{stem} refuses to start: {error}") from None
        earlier.add(step.name)


def check_ranges(selected: Mapping[str, Mapping[str, Any]]) -> None:
    """The shared ranges (limits.py) on every selected step notebook's values, naming the notebook
    that refuses; imports no step, so TensorFlow need not load for a value out of range."""
    for stem, values in selected.items():
        if for_notebook(stem) is None:
            continue
        try:
            limits.check(values)
        except StepError as error:
            raise StepError(f"{stem} refuses to start: {error}") from None


# What a step leaves in the run folder for the steps that read it, where it must be before one of
# them runs without it; a step not named here makes no one's required input (an optional one).
OUTPUTS = {"data": META_FILE, "train": MODEL_FILE, "export": f"{EXPORT_DIR}/<version>"}


def _check_present(folder: Path, reads: list[str]) -> None:
    """Refuse in one sentence an input of OUTPUTS that the run folder lacks, naming its maker."""
    for name in reads:
        if name not in OUTPUTS or _made(folder, name):
            continue
        maker = BY_NAME[name].notebook
        raise StepError(
            f"{folder / OUTPUTS[name]} is missing and no step selected before it makes it: run "
            f"{maker} first, or add {maker[:2]} to --only."
        )


def _made(folder: Path, name: str) -> bool:
    if name == "export":  # any numbered version: the step picks its own
        exports = folder / EXPORT_DIR
        return exports.is_dir() and any(p.name.isdigit() for p in exports.iterdir() if p.is_dir())
    return (folder / OUTPUTS[name]).is_file()


def fits(value: Any, hint: Any) -> bool:
    """True when value may stand for a field annotated `hint` (bool is not a number here; an
    int is a float). The runner checks a notebook's parameters with it too."""
    if hint is Any:
        return True
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        return any(fits(value, arg) for arg in typing.get_args(hint))
    if hint is type(None):
        return value is None
    if isinstance(value, bool):
        return hint is bool
    if hint is float:
        return isinstance(value, int | float)
    return isinstance(value, typing.get_origin(hint) or hint)


def coerce(value: Any, hint: Any) -> Any:
    """A value as a field annotated `hint` takes it: `-p data_dir=` (YAML's null) for a text
    field that does not take None is the empty text, the one way to clear from the command line
    a value saved in a notebook; an int for a float field is a float (3 → 3.0)."""
    if value is None and not fits(None, hint) and fits("", hint):
        return ""
    args = typing.get_args(hint) or (hint,)
    return float(value) if type(value) is int and float in args and int not in args else value


def type_name(hint: Any) -> str:
    """A type as a sentence says it: "int", "int or str", "float or None", "any"."""
    if hint is Any:
        return "any"
    args = typing.get_args(hint) if typing.get_origin(hint) else (hint,)
    return " or ".join("None" if a is type(None) else getattr(a, "__name__", str(a)) for a in args)
