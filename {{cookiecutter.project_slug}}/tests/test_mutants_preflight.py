"""The runner's pre-flight with the steps' real checkers (no stub): every selected step is checked,
its inputs too unless an earlier selected step writes them in this run.

A pre-flight that lets a step through costs the minutes the chain takes to reach it; one that
refuses a valid selection blocks the run. Both directions are tested, on an empty run folder (no
data/, no model.keras) and on one holding the data 01_data wrote.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from {{ cookiecutter.package_name }} import steps
from {{ cookiecutter.package_name }}.artifacts import StepError
from {{ cookiecutter.package_name }}.runner import RunnerInputError, plan_run, preflight

PROJECT = Path(__file__).resolve().parents[1]


def test_the_only_selected_step_is_checked_for_its_missing_input(tmp_path: Path) -> None:
    with pytest.raises(StepError, match="^03_train refuses to start: .*01_data"):
        steps.preflight(tmp_path / "run", {"03_train": {}})


def test_the_first_selected_step_is_checked_for_a_bad_value(tmp_path: Path) -> None:
    with pytest.raises(StepError, match="^01_data refuses to start: .*batch_size"):
        steps.preflight(tmp_path / "run", {"01_data": {"batch_size": 0}, "03_train": {}})
    with pytest.raises(StepError, match="^03_train refuses to start: .*epochs"):
        steps.preflight(tmp_path / "run", {"03_train": {"epochs": 0}})


def test_a_step_whose_inputs_no_earlier_step_writes_is_checked_for_them(tmp_path: Path) -> None:
    """00_environment runs earlier but writes nothing 03_train reads: data/ must be there."""
    selected = {"00_environment": {}, "03_train": {}}
    with pytest.raises(StepError, match="^03_train refuses to start: .*01_data"):
        steps.preflight(tmp_path / "run", selected)


def test_a_step_whose_inputs_an_earlier_step_writes_is_not_refused_for_them(
    tmp_path: Path,
) -> None:
    """01_data makes data/ in this run: 03_train's values are checked, its missing data is not."""
    steps.preflight(tmp_path / "run", {"01_data": {}, "03_train": {}})
    steps.preflight(tmp_path / "run", {"00_environment": {}, "01_data": {}, "03_train": {}})
    with pytest.raises(StepError, match="^03_train refuses to start: .*epochs"):
        steps.preflight(tmp_path / "run", {"01_data": {}, "03_train": {"epochs": 0}})


def test_an_input_that_no_earlier_selected_step_makes_is_checked_too(tmp_path: Path) -> None:
    """--only 01,04: 01_data makes data/, but nothing selected makes model.keras, which 04_export
    reads; the run would fail minutes later, after 01_data. The other inputs are still waived."""
    with pytest.raises(StepError) as refused:
        steps.preflight(tmp_path / "run", {"01_data": {}, "04_export": {}})
    assert str(refused.value) == (
        f"04_export refuses to start: {tmp_path / 'run' / 'model.keras'} is missing and no step "
        "selected before it makes it: run 03_train first, or add 03 to --only."
    )
    with pytest.raises(StepError, match="^05_optimize refuses to start: .*model.keras.*03_train"):
        steps.preflight(tmp_path / "run", {"01_data": {}, "05_optimize": {}})
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "model.keras").write_bytes(b"a model made earlier")
    steps.preflight(tmp_path / "run", {"01_data": {}, "04_export": {}})
    with pytest.raises(StepError, match="^05_optimize refuses to start: .*export.*04_export"):
        steps.preflight(tmp_path / "run", {"01_data": {}, "05_optimize": {}})
    (tmp_path / "run" / "export" / "3").mkdir(parents=True)
    steps.preflight(tmp_path / "run", {"01_data": {}, "05_optimize": {}})
    steps.preflight(tmp_path / "run", {"01_data": {}, "03_train": {}, "05_optimize": {}})


def test_the_runners_preflight_refuses_the_plan_of_only_01_04(tmp_path: Path) -> None:
    """runner.preflight itself (not a stub): the refusal reaches `run` as a RunnerInputError."""
    plan = plan_run("smoke", project_dir=PROJECT, only=["01", "04"])
    with pytest.raises(RunnerInputError, match="^04_export refuses to start: .*model.keras"):
        preflight(plan, tmp_path / "run")
    assert not (tmp_path / "run").exists()


def test_a_run_folder_with_data_passes_the_training_check(run_dir: Path) -> None:
    steps.preflight(run_dir, {"03_train": {}})
    steps.preflight(run_dir, {"00_environment": {}, "03_train": {}})


def test_the_plans_values_reach_the_checkers(tmp_path: Path) -> None:
    """The runner's plan for `--only 03` on an empty folder is refused before anything runs."""
    plan = plan_run("smoke", project_dir=PROJECT, only=["03"])
    selected = {name: plan.parameters[name] for name in plan.notebooks}
    with pytest.raises(StepError, match="^03_train refuses to start: .*01_data"):
        steps.preflight(tmp_path / "run", selected)
    assert not (tmp_path / "run").exists()
    plan = plan_run("smoke", {"epochs": 0}, project_dir=PROJECT, only=["01", "03"])
    selected = {name: plan.parameters[name] for name in plan.notebooks}
    with pytest.raises(StepError, match="^03_train refuses to start: .*epochs"):
        steps.preflight(tmp_path / "run", selected)


def test_a_notebook_of_no_step_is_skipped_and_the_rest_still_checked(tmp_path: Path) -> None:
    assert steps.for_notebook("99_extra") is None
    with pytest.raises(StepError, match="^03_train refuses to start: .*01_data"):
        steps.preflight(tmp_path / "run", {"99_extra": {}, "03_train": {}})


def test_params_from_reads_loose_values_into_the_steps_types() -> None:
    params = steps.params_from("train", {"run_dir": "ignored", "epochs": 3})
    assert params.epochs == 3  # run_dir is skipped, not the end of the values
    params = steps.params_from("train", {"learning_rate": 1, "width": None, "dropout": 0})
    assert params.learning_rate == 1.0 and isinstance(params.learning_rate, float)
    assert params.dropout == 0.0 and isinstance(params.dropout, float)
    assert params.width is None
    assert steps.params_from("train", {"batch_size": 32}).batch_size == 32  # int | str: stays int


def test_params_from_refuses_in_one_sentence_naming_what_is_allowed() -> None:
    fields = ", ".join(steps.defaults("train"))
    with pytest.raises(StepError) as refused:
        steps.params_from("train", {"nope": 1})
    assert str(refused.value) == f"Unknown parameter 'nope' for train: it takes {fields}."
    with pytest.raises(StepError) as refused:
        steps.params_from("train", {"epochs": "3"})
    assert str(refused.value) == "epochs='3' is str, but train takes int (default 5)."
    with pytest.raises(StepError) as refused:
        steps.params_from("train", {"learning_rate": [1]})
    assert str(refused.value) == (
        "learning_rate=[1] is list, but train takes float or str or None (default None)."
    )
