"""The text task's folder (issue 31): baked only on request, `_task=text_classification`, until
every step runs text through the task seam; an image bake holds none of it.

The folder holds BANKING77 with its licence and citation, the sources with their refusals, the
vocabulary, the tf.data pipeline with length buckets, the two models, the TF-IDF baseline, the
scores and the string-in export; its own tests pass in the bake (make test-full).
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from types import ModuleType

import pytest
from conftest import Baked
from test_bake import assert_ruff_clean

TEXT = {"project_name": "Text Intents", "_task": "text_classification"}


def task_files(baked: Baked) -> set[str]:
    """The files of the bake that belong to a task folder or to its tests."""
    package = f"src/{baked.package}/tasks/"
    return {f for f in baked.files if f.startswith(package) or f.startswith("tests/test_text_")}


def test_an_image_bake_holds_no_task_folder(bake: Callable[[dict], Baked]) -> None:
    assert task_files(bake({})) == set()


def test_the_hook_lists_every_file_of_the_text_task(
    bake: Callable[[dict], Baked], post_gen: ModuleType
) -> None:
    """An image bake removes exactly what a text bake holds of the task: nothing is left over."""
    baked = bake(TEXT)
    listed = {path.format(pkg=baked.package) for path in post_gen.TASK_FILES[TEXT["_task"]]}
    assert task_files(baked) <= listed <= baked.files
    data = f"src/{baked.package}/tasks/text/banking77/"
    assert {f"{data}{name}" for name in ("LICENSE", "train.csv.gz", "test.csv.gz")} <= listed


def test_the_text_bake_is_ruff_clean(bake: Callable[[dict], Baked]) -> None:
    assert_ruff_clean(bake(TEXT).root)


def test_an_unknown_task_is_refused_in_one_sentence(pre_gen: ModuleType) -> None:
    found = pre_gen.check_task({"task": "speech"})
    assert found == [
        "_task 'speech' is not a task this template bakes: use one of image_classification, "
        "text_classification."
    ]
    assert pre_gen.check_task({"task": "text_classification"}) == []


@pytest.mark.slow
@pytest.mark.full
def test_the_text_tasks_own_tests_pass_in_its_bake(bake: Callable[[dict], Baked]) -> None:
    """Installed beside the default bake (no second TensorFlow), its text tests pass."""
    baked = bake(TEXT)
    install = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "-e", "."]
    subprocess.run(install, cwd=baked.root, check=True, timeout=600)
    tests = sorted(f for f in task_files(baked) if f.startswith("tests/"))
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *tests],
        cwd=baked.root,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert " passed" in done.stdout and " failed" not in done.stdout, done.stdout[-2000:]
