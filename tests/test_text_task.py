"""The text task (issue 31): baked with `task=text_classification`; an image bake holds none of it.

The folder holds BANKING77 with its licence and citation, the sources with their refusals, the
vocabulary, the tf.data pipeline with length buckets, the two models, the TF-IDF baseline, the
scores and the string-in export; its own tests pass in the bake (make test-full).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest
from conftest import Baked
from test_bake import assert_ruff_clean
from test_default_project import make

TEXT = {"project_name": "Text Intents", "task": "text_classification"}
TABULAR = {"project_name": "Income Rows", "task": "tabular_classification"}
PROFILES = ("default.yaml", "gpu.yaml")


def task_files(baked: Baked, folder: str) -> set[str]:
    """The files of the bake in the task folder tasks/<folder>/."""
    return {f for f in baked.files if f.startswith(f"src/{baked.package}/tasks/{folder}/")}


def listed(baked: Baked, post_gen: ModuleType, task: str) -> set[str]:
    return {path.format(pkg=baked.package) for path in post_gen.TASK_FILES[task]}


@pytest.mark.parametrize(
    ("answers", "task", "mine", "other"),
    [
        ({}, "image_classification", "image", "text"),
        (TEXT, "text_classification", "text", "image"),
        (TABULAR, "tabular_classification", "tabular", "text"),
    ],
    ids=["image", "text", "tabular"],
)
def test_a_bake_holds_only_its_own_task(
    bake: Callable[[dict], Baked],
    post_gen: ModuleType,
    answers: dict,
    task: str,
    mine: str,
    other: str,
) -> None:
    """A bake keeps every file the hook lists for its task (its folder among them, nothing left
    out of the list) and none of another task's: no module, notebook or test of it."""
    baked = bake(answers)
    own = listed(baked, post_gen, task)
    moved = {f for f in own if f.startswith("notebooks/")}  # a task's own notebooks replace 01
    assert task_files(baked, mine) <= own - moved <= baked.files
    others = set().union(*(listed(baked, post_gen, t) for t in post_gen.TASK_FILES if t != task))
    assert task_files(baked, other) == set()
    assert not others & baked.files, sorted(others & baked.files)
    assert (baked.root / "notebooks" / "01_data.ipynb").is_file()
    assert not [p.name for p in (baked.root / "notebooks").iterdir() if p.is_dir()]


def test_the_text_task_vendors_banking77_with_its_licence(
    bake: Callable[[dict], Baked], post_gen: ModuleType
) -> None:
    baked = bake(TEXT)
    data = f"src/{baked.package}/tasks/text/banking77/"
    names = ("LICENSE", "README.md", "train.csv.gz", "test.csv.gz")
    assert {f"{data}{name}" for name in names} <= listed(baked, post_gen, TEXT["task"])
    assert {f"{data}{name}" for name in names} <= baked.files


def test_the_text_bake_is_ruff_clean(bake: Callable[[dict], Baked]) -> None:
    assert_ruff_clean(bake(TEXT).root)


@pytest.mark.parametrize("answers", [TEXT, TABULAR], ids=["text", "tabular"])
def test_a_task_bake_without_tensorrt_is_ruff_clean(
    bake: Callable[[dict], Baked], answers: dict
) -> None:
    """A task's tests hold TensorRT-only cells: declined, they left a blank line at the end of
    tests/test_text_export.py, which ruff format refuses."""
    assert_ruff_clean(bake({**answers, "include_tensorrt": False}).root)


@pytest.mark.parametrize(
    ("answers", "shown"),
    [({}, True), (TEXT, False), (TABULAR, False)],
    ids=["image", "text", "tabular"],
)
def test_augment_is_shown_in_the_image_bake_only(
    bake: Callable[[dict], Baked], answers: dict, shown: bool
) -> None:
    """Issue 43: augment is the image task's own training parameter, so only an image bake's
    notebook 03 (its parameters cell, the Params call, the printed result) and profiles give it."""
    root = bake(answers).root
    cells = json.loads((root / "notebooks" / "03_train.ipynb").read_text(encoding="utf-8"))["cells"]
    code = "".join("".join(cell["source"]) for cell in cells if cell["cell_type"] == "code")
    profiles = [(root / "configs" / name).read_text(encoding="utf-8") for name in PROFILES]
    assert ('augment: str = "none"' in code) is shown
    assert ("augment=augment," in code) is shown
    assert ("metrics['augment']" in code) is shown
    assert ("    augment: none" in profiles[0]) is shown
    assert ("    augment: light" in profiles[1]) is shown


def test_an_unknown_task_is_refused_in_one_sentence(pre_gen: ModuleType) -> None:
    found = pre_gen.check_task({"task": "speech"})
    assert found == [
        "task 'speech' is not a task this template bakes: use one of image_classification, "
        "text_classification, tabular_classification."
    ]
    assert pre_gen.check_task({"task": "text_classification"}) == []


@pytest.fixture(scope="module")
def text_project(bake: Callable[[dict], Baked]) -> Path:
    """The text bake, installed (editable, with its dev extra) into this environment beside the
    default bake: another package name, no second TensorFlow."""
    root = bake(TEXT).root
    make(root, "setup")
    return root


@pytest.fixture(scope="module")
def text_smoke_run(text_project: Path) -> Path:
    """`make run PROFILE=smoke` in the text bake, as its README says: the chain on BANKING77."""
    run_dir = text_project / "artifacts" / "template-test"
    make(text_project, "run", "PROFILE=smoke", f"ARGS=--run-dir {run_dir}")
    return run_dir


@pytest.mark.slow
@pytest.mark.full
def test_the_text_smoke_chain_runs_every_notebook(text_smoke_run: Path) -> None:
    """Every notebook ran on text and wrote its metrics; the report puts the baseline beside the
    model's test accuracy."""
    names = ("environment", "data", "tune", "train", "export", "optimize")
    metrics = {n: json.loads((text_smoke_run / "metrics" / f"{n}.json").read_text()) for n in names}
    assert metrics["data"]["task"] == "text_classification"
    assert (
        0 <= metrics["data"]["padded_share_bucketed"] < metrics["data"]["padded_share_unbucketed"]
    )
    assert metrics["train"]["baseline"]["test_accuracy"] > 0.5
    assert metrics["export"]["top1_agreement"] == 1.0
    headline = (text_smoke_run / "report.md").read_text(encoding="utf-8").split("## Steps")[0]
    assert "for the baseline tfidf" in headline, headline


@pytest.mark.slow
@pytest.mark.full
def test_the_text_bakes_own_tests_and_nbval_pass(text_project: Path, text_smoke_run: Path) -> None:
    """`make test MARKERS="not slow"` in the text bake: its unit tests, then nbval on its notebooks
    (the text 01 and the shared 00, 02-05 rendered for text)."""
    done = make(
        text_project, "test", "MARKERS=not slow", env={"SHARED_SMOKE_RUN": str(text_smoke_run)}
    )
    assert " passed" in done.stdout and " failed" not in done.stdout, done.stdout[-3000:]
