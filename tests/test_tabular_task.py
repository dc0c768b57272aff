"""The tabular task (issue 32): baked with `task=tabular_classification`; the other bakes hold none
of it (tests/test_text_task.py checks each bake's files against the hook's lists).

The folder holds census income with its licence and citation, the sources with their refusals,
the schema, the Parquet data folder, the baselines and the data step; pandas and pyarrow are
dependencies of this bake only.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import tomllib
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest
from conftest import Baked
from test_bake import assert_ruff_clean
from test_default_project import make

TABULAR = {"project_name": "Income Rows", "task": "tabular_classification"}
# sha256 of the UCI files as the census README quotes them (../shared/data/README.md).
CENSUS = {
    "adult.data": "5b00264637dbfec36bdeaab5676b0b309ff9eb788d63554ca0a249491c86603d",
    "adult.test": "72567b94f5c1a6f8501377dd80f93892c3848ff071cf91ba47e00b0785a28074",
}


def test_the_tabular_task_vendors_census_income_unchanged_with_its_licence(
    bake: Callable[[dict], Baked], post_gen: ModuleType
) -> None:
    baked = bake(TABULAR)
    data = f"src/{baked.package}/tasks/tabular/census/"
    names = ("LICENSE", "README.md", "adult.data.gz", "adult.test.gz")
    listed = {path.format(pkg=baked.package) for path in post_gen.TASK_FILES[TABULAR["task"]]}
    assert {f"{data}{name}" for name in names} <= listed & baked.files
    readme = baked.text(f"{data}README.md")
    assert "10.24432/C5XW20" in readme and "Becker" in readme and "Kohavi" in readme
    assert "Attribution 4.0 International" in baked.text(f"{data}LICENSE")
    for name, digest in CENSUS.items():
        packed = (baked.root / data / f"{name}.gz").read_bytes()
        assert packed[4:8] == b"\0\0\0\0"  # gzip without a time stamp: the same bytes every time
        assert hashlib.sha256(gzip.decompress(packed)).hexdigest() == digest
        assert digest in readme


def test_only_the_tabular_bake_depends_on_pandas_and_pyarrow(
    bake: Callable[[dict], Baked],
) -> None:
    def dependencies(answers: dict) -> str:
        project = tomllib.loads(bake(answers).text("pyproject.toml"))
        return " ".join(project["project"]["dependencies"])

    assert "pandas>=2.2" in dependencies(TABULAR) and "pyarrow>=15" in dependencies(TABULAR)
    for other in ({}, {"task": "text_classification"}):
        assert "pandas" not in dependencies(other) and "pyarrow" not in dependencies(other)


def test_the_tabular_bake_ships_census_as_package_data(bake: Callable[[dict], Baked]) -> None:
    baked = bake(TABULAR)
    data = tomllib.loads(baked.text("pyproject.toml"))["tool"]["setuptools"]["package-data"]
    assert data == {f"{baked.package}.tasks.tabular": ["census/*"]}


def test_the_tabular_bake_is_ruff_clean(bake: Callable[[dict], Baked]) -> None:
    assert_ruff_clean(bake(TABULAR).root)


@pytest.mark.parametrize("task", ["tabular", "Tabular_Classification", "tables"])
def test_a_near_miss_of_the_tabular_task_is_refused(pre_gen: ModuleType, task: str) -> None:
    found = pre_gen.check_task({"task": task})
    assert len(found) == 1 and "tabular_classification" in found[0] and repr(task) in found[0]
    assert pre_gen.check_task({"task": "tabular_classification"}) == []


@pytest.fixture(scope="module")
def tabular_project(bake: Callable[[dict], Baked]) -> Path:
    """The tabular bake, installed (editable, with its dev extra) into this environment beside the
    default bake: another package name, no second TensorFlow."""
    root = bake(TABULAR).root
    make(root, "setup")
    return root


@pytest.fixture(scope="module")
def tabular_smoke_run(tabular_project: Path) -> Path:
    """`make run PROFILE=smoke` in the tabular bake, as its README says: the chain on census."""
    run_dir = tabular_project / "artifacts" / "template-test"
    make(tabular_project, "run", "PROFILE=smoke", f"ARGS=--run-dir {run_dir}")
    return run_dir


@pytest.mark.slow
@pytest.mark.full
def test_the_tabular_smoke_chain_runs_every_notebook(tabular_smoke_run: Path) -> None:
    """Every notebook ran on census income; the report sets the model's ROC AUC beside both
    baselines and says which wins."""
    names = ("environment", "data", "tune", "train", "export", "optimize")
    metrics = {
        n: json.loads((tabular_smoke_run / "metrics" / f"{n}.json").read_text()) for n in names
    }
    assert metrics["data"]["task"] == "tabular_classification"
    assert metrics["train"]["test_roc_auc"] > 0.85
    assert len(metrics["train"]["baseline"]["others"]) == 1
    assert metrics["export"]["top1_agreement"] == 1.0
    headline = (tabular_smoke_run / "report.md").read_text(encoding="utf-8").split("## Steps")[0]
    # It names the leader: "X wins by …", or "X scores highest, within noise: …" (the smoke keeps
    # 4,000 training rows, so the model and the trees may be within two standard errors).
    assert "ROC AUC" in headline, headline
    assert " wins by " in headline or " scores highest, within noise: " in headline, headline


@pytest.mark.slow
@pytest.mark.full
def test_the_tabular_bakes_own_tests_and_nbval_pass(
    tabular_project: Path, tabular_smoke_run: Path
) -> None:
    """`make test MARKERS="not slow"` in the tabular bake: its unit tests, then nbval on its
    notebooks (the tabular 01 and the shared 00, 02-05 rendered for tables)."""
    done = make(
        tabular_project,
        "test",
        "MARKERS=not slow",
        env={"SHARED_SMOKE_RUN": str(tabular_smoke_run)},
    )
    assert " passed" in done.stdout and " failed" not in done.stdout, done.stdout[-3000:]
