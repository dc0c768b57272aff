"""The task seam: what differs between image, text and table classification, behind one interface.

A project holds one task's folder (the post-gen hook removes the others, as it does a declined
part), and every step asks `current()` for what depends on the task; nothing else in the package
names a task. Which folder that is, seam.py finds without importing TensorFlow, for steps.py and the
runner; `current()` imports it.

The interface is one class, `base.Task` (its members are listed in tasks/base.py): each task's
`tasks/<folder>/task.py` ends with its subclass and the one instance `TASK` that `current()` gives.
A fourth task is one folder, tasks/<folder>/ (task.py with its Task subclass and TASK, data_step.py
with step 1's half, a base.Data named DATA), and its lines in seam.py (FOLDERS, NOUNS, FIGURES); the
README's "Another task" says what each member does.
"""

from __future__ import annotations

import importlib
import os
from typing import Any

from ..seam import data_hooks, folder
from .base import Task


def current() -> Task:
    """The task of this project (tasks/<folder>/task.py's TASK), imported now: it imports
    TensorFlow."""
    task = importlib.import_module(f"{__name__}.{folder()}.task").TASK
    if not isinstance(task, Task):
        raise TypeError(f"tasks/{folder()}/task.py's TASK is {type(task).__name__}, not a Task")
    return task


def read_meta(run_dir: str | os.PathLike[str]) -> dict[str, Any]:
    """The data step's meta.json as every step reads it: data/meta.py's shared checks, then the
    task's own keys (its Data.meta_problem), each refusal one sentence naming 01_data."""
    from ..data.meta import read_meta as read_shared  # here: seam.folder finds this package early

    return read_shared(run_dir, own=data_hooks().meta_problem)
