"""The tabular task (issue 32): baked with `task=tabular_classification`; the other bakes hold none
of it (tests/test_text_task.py checks each bake's files against the hook's lists).

The folder holds census income with its licence and citation, the sources with their refusals,
the schema, the Parquet data folder, the baselines and the data step; pandas and pyarrow are
dependencies of this bake only.
"""

from __future__ import annotations

import gzip
import hashlib
import tomllib
from collections.abc import Callable
from types import ModuleType

import pytest
from conftest import Baked
from test_bake import assert_ruff_clean

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
