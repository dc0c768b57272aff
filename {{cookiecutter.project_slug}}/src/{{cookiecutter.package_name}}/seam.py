"""Which task this project was baked for, found on disk: the one question about the task that the
light floors (steps, the runner) ask, answered without importing a task or TensorFlow.

The task's code itself (tasks/<folder>/) is reached through `tasks.current()`.
"""

from __future__ import annotations

import importlib.util
from functools import cache
from types import ModuleType
from typing import Any

# The bake's answer → the folder of its code (tasks/<folder>/).
FOLDERS = {
    "image_classification": "image",
    "text_classification": "text",
    "tabular_classification": "tabular",
}
# What one example of each task is called, in sentences and on axes (tasks/<folder>/task.py NOUN).
NOUNS = {"image": "images", "text": "texts", "tabular": "rows"}
# The figures a task draws beyond every task's, by step (artifacts.FIGURES adds them to its step's).
FIGURES = {
    "text": {"data": ("data_lengths",)},
    "tabular": {"data": ("data_missing", "data_columns"), "train": ("train_scores",)},
}
_TASKS = f"{__package__}.tasks"


@cache
def folder() -> str:
    """The one task folder this project holds (found with find_spec: nothing is imported)."""
    found = [name for name in FOLDERS.values() if _package(f"{_TASKS}.{name}")]
    if len(found) != 1:
        raise RuntimeError(
            f"{_TASKS} holds {len(found)} task folders ({', '.join(found) or 'none'}): a project "
            "holds exactly one (bake it again with the task you want)."
        )
    return found[0]


def _package(name: str) -> bool:
    """A regular package (with its __init__.py): a folder left with stray files is no task."""
    spec = importlib.util.find_spec(name)
    return spec is not None and spec.origin is not None


def task_module(name: str) -> ModuleType | None:
    """tasks/<folder>/<name>.py imported, or None where the task has no such module (a module only
    some tasks have, such as early.py)."""
    module = f"{_TASKS}.{folder()}.{name}"
    return importlib.import_module(module) if importlib.util.find_spec(module) else None


def early_check(values: dict) -> None:
    """The task's own checks of a step's values before TensorFlow loads (tasks/<folder>/early.py's
    `check`, where the task has one; text: a KerasHub preset this machine cannot download; tables:
    a class_weight it cannot parse)."""
    early = task_module("early")
    if early is not None:
        early.check(values)


def name() -> str:
    """The bake's answer for this project's task, e.g. "image_classification"."""
    return next(answer for answer, path in FOLDERS.items() if path == folder())


def data_hooks() -> Any:
    """Step 1's task half, tasks/<folder>/data_step.py's DATA (a tasks.base.Data), imported
    without TensorFlow: prepare/entry.py checks the values before anything heavy loads."""
    return importlib.import_module(f"{_TASKS}.{folder()}.data_step").DATA


def noun() -> str:
    """What this task's examples are called ("images", "texts"), without importing the task."""
    return NOUNS[folder()]


def figures(step: str) -> tuple[str, ...]:
    """The figure names this task adds to a step's (figures/<name>.png)."""
    return FIGURES.get(folder(), {}).get(step, ())
