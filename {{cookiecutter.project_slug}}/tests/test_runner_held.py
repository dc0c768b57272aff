"""A value saved in a notebook's parameters cell runs headless too, so the runner's pre-flight
check sees it, refuses it before anything runs, and `-p key=` clears a text value (issue 42 §3.2).

The project's own notebooks and profiles are copied, and 01's data_dir is set in its cell as
JupyterLab saves it; every task's embedded dataset refuses a data_dir.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from helpers import assert_one_sentence

from {{ cookiecutter.package_name }} import runner, steps
from {{ cookiecutter.package_name }}.runner.chain import checked_values

ROOT = Path(__file__).resolve().parents[1]


def copy_with_saved(tmp_path: Path, name: str, key: str, value: object) -> Path:
    """The project's notebooks and profiles, with `key = value` saved in `name`'s cell."""
    project = tmp_path / "project"
    shutil.copytree(ROOT / "notebooks", project / "notebooks")
    shutil.copytree(ROOT / "configs", project / "configs")
    shutil.copy(ROOT / "pyproject.toml", project / "pyproject.toml")
    path = project / "notebooks" / f"{name}.ipynb"
    notebook = json.loads(path.read_text(encoding="utf-8"))
    cell = next(c for c in notebook["cells"] if "parameters" in c["metadata"].get("tags", []))
    lines = "".join(cell["source"]).splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if line.startswith(f"{key}:"))
    annotation = lines[at].split("=", 1)[0]
    lines[at] = f"{annotation}= {value!r}  # saved in JupyterLab\n"
    cell["source"] = lines
    path.write_text(json.dumps(notebook, indent=1), encoding="utf-8")
    return project


def test_a_value_saved_in_a_notebook_is_refused_before_anything_runs(tmp_path: Path) -> None:
    """`make run PROFILE=smoke` ran 00, then failed in 01 on a data_dir saved in 01: now the
    pre-flight check refuses it, names the notebook and says how to clear it; no run folder."""
    saved = str(tmp_path)  # a folder that exists: only its use by the embedded dataset is wrong
    project = copy_with_saved(tmp_path, "01_data", "data_dir", saved)
    folder = tmp_path / "run"
    plan = runner.plan_run("smoke", {}, project_dir=project)  # the whole chain, as make run
    with pytest.raises(runner.RunnerInputError) as refused:
        runner.preflight(plan, folder)  # what run_chain does before it makes the run folder
    said = str(refused.value)
    assert said.startswith("01_data refuses to start: data_dir="), said
    assert "notebooks/01_data.ipynb" in said and "-p data_dir= (an empty value)" in said, said
    assert_one_sentence(said)
    assert not folder.exists()


def test_p_key_empty_clears_a_saved_text_value(tmp_path: Path) -> None:
    """`-p data_dir=` (and `-p data_dir=''`, which the shell makes the same) gives the empty text:
    the plan passes it to 01, and the pre-flight check then takes the run."""
    project = copy_with_saved(tmp_path, "01_data", "data_dir", str(tmp_path))
    for item in ("data_dir=", "01_data.data_dir="):
        overrides = runner.parse_overrides([item])
        plan = runner.plan_run("smoke", overrides, project_dir=project, only=["01"])
        assert plan.parameters["01_data"]["data_dir"] == "", item
        assert checked_values(plan)["01_data"]["data_dir"] == ""
        runner.preflight(plan, tmp_path / "run")  # refuses nothing


def test_the_check_runs_on_the_cells_values_under_the_profile_and_p(tmp_path: Path) -> None:
    """A value only the cell sets is checked as the cell holds it; the profile's and -p's win."""
    project = copy_with_saved(tmp_path, "03_train", "label_smoothing", 0.05)
    plan = runner.plan_run("smoke", {"seed": 3}, project_dir=project, only=["03"])
    values = checked_values(plan)["03_train"]
    assert values["label_smoothing"] == 0.05 and values["seed"] == 3  # the cell's, -p's
    assert values["patience"] == 3 and values["epochs"] == 2  # the profile's
    assert "run_dir" not in values


def test_p_key_empty_keeps_none_where_a_parameter_takes_none(tmp_path: Path) -> None:
    """`-p learning_rate=` meant None before and still does; only text-only ones get ""."""
    plan = runner.plan_run(
        "smoke", runner.parse_overrides(["learning_rate="]), project_dir=ROOT, only=["03"]
    )
    assert plan.parameters["03_train"]["learning_rate"] is None


def test_a_step_subcommand_takes_p_key_empty_for_a_text_parameter() -> None:
    """`<package> data -p data_dir=` was refused as NoneType; it is the empty text."""
    assert steps.params_from("data", runner.parse_overrides(["data_dir="])).data_dir == ""
