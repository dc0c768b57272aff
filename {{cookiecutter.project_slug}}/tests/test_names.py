"""Names say what they are: a file name the package uses in several folders means one thing in
each, so a reader (or a traceback) that meets it knows what kind of module it is (issue 43 §8).

A name the task folders share (tasks/<folder>/task.py, sources.py, models.py) is one role per task
by construction. A name shared anywhere else is listed in SAME_ROLE with what it means in every
folder; a new one is added there, or the file gets a name of its own.
"""

from __future__ import annotations

import importlib.util
from collections import defaultdict
from pathlib import Path

PACKAGE = "{{ cookiecutter.package_name }}"

SAME_ROLE = {
    "__init__.py": "a package",
    "__main__.py": "what `python -m` runs",
    "base.py": "what the modules of its folder share",
    "bench.py": "a benchmark: what it measures, and how the runs are judged",
    "benchmark.py": "how fast its folder's work runs (step 1's input pipeline, training)",
    "cluster.py": "the processes its step runs on together, and which one this is",
    "commands.py": "the subcommands of its folder, for cli.py",
    "devices.py": "the devices its step uses and how (memory growth; strategy and precision)",
    "early.py": "the checks made before TensorFlow loads (a step's values; a task's own)",
    "entry.py": "a step's entry: Params, check, run (steps.py)",
    "export.py": "its folder's part of step 4 (the task's signature, 04's figures)",
    "files.py": "the files its folder reads in, checked",
    "params.py": "a step's parameters and the checks of their values",
    "pipeline.py": "the tf.data input pipeline (its shared half, or a task's)",
    "plots.py": "the figures its folder draws",
    "report.py": "what its step (or the runner) reports: lines, metrics, report.md",
    "search.py": "a search over candidate values, and where it goes next",
    "state.py": "what its folder keeps between runs (checkpoints; served versions)",
    "timing.py": "how its step times things fairly",
    "versions.py": "versions and whether they fit (TensorFlow's and CUDA's; the served model's)",
}


def test_a_file_name_means_one_thing_in_every_folder():
    spec = importlib.util.find_spec(PACKAGE)
    root = Path(next(iter(spec.submodule_search_locations)))
    folders = defaultdict(set)
    for path in root.rglob("*.py"):
        folders[path.name].add(path.parent.relative_to(root).as_posix())
    per_task = {name for name, where in folders.items() if all(_task(f) for f in where)}
    shared = {name: sorted(where) for name, where in folders.items() if len(where) > 1}
    unlisted = {n: w for n, w in shared.items() if n not in per_task and n not in SAME_ROLE}
    assert len(folders) > 50, "too few modules found: the rule below would hold vacuously"
    assert not unlisted, (
        "a file name used in several folders without one meaning (rename the file, or add the "
        f"name to SAME_ROLE with what it means in each): {unlisted}"
    )


def _task(folder: str) -> bool:
    """A task's own folder (tasks/<folder>/ and below), where each task names its own files."""
    return folder.startswith("tasks/")
