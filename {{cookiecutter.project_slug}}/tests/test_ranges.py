"""A parameter that several steps take (epochs, seed, batch_size …) has one range everywhere, and
the runner refuses a value out of it before TensorFlow loads."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import assert_one_sentence

from {{ cookiecutter.package_name }} import limits, steps
from {{ cookiecutter.package_name }}.artifacts import StepError

PACKAGE = "{{ cookiecutter.package_name }}"
ROOT = Path(__file__).resolve().parents[1]
SHARED = [
    (step.name, name)
    for step in steps.available()
    for name in limits.RANGES
    if name in {field.name for field in dataclasses.fields(steps.module(step).Params)}
]


def test_the_shared_names_are_taken_by_the_steps_that_run_for_long() -> None:
    """The table below is not empty: the long-running steps' epochs, seeds and batches are in it."""
    assert {("train", "epochs"), ("train", "seed"), ("data", "seed")} <= set(SHARED)
{%- if cookiecutter.include_tuning %}
    assert {("tune", "epochs"), ("tune", "max_trials"), ("tune", "seed")} <= set(SHARED)
{%- endif %}


@pytest.mark.parametrize(("step", "name"), SHARED)
def test_each_step_refuses_a_shared_parameter_out_of_range_with_the_same_sentence(
    tmp_path: Path, step: str, name: str
) -> None:
    """Below the smallest and above the largest value: the step's own checker refuses it with
    limits' sentence, the one the runner's pre-flight says; the smallest value is taken."""
    minimum, maximum = limits.RANGES[name]
    for value in (*([] if maximum is None else [maximum + 1]), minimum - 1):
        with pytest.raises(StepError) as step_refused:
            steps.module(step).check(tmp_path, steps.params_from(step, {name: value}), inputs=False)
        with pytest.raises(StepError) as shared:
            limits.check({name: value})
        said = str(step_refused.value)  # the step may add a note: "… >= 1 or auto (…)."
        assert said.startswith(str(shared.value).rstrip(".")), said
        assert_one_sentence(str(step_refused.value))
    steps.module(step).check(tmp_path, steps.params_from(step, {name: minimum}), inputs=False)


@pytest.mark.parametrize(
    ("only", "value"),
    [
{%- if cookiecutter.include_tuning %}
        ("02", "epochs=999999999999"),
{%- endif %}
        ("03", "epochs=999999999999"),
        ("01", "seed=-1"),
    ],
)
def test_the_runner_refuses_a_value_out_of_range_before_tensorflow_loads(
    tmp_path: Path, only: str, value: str
) -> None:
    """`run --only 02 -p epochs=999999999999` ran a search for ever: exit 2, one sentence naming
    the notebook, no run folder, and TensorFlow never imported (checked in the process)."""
    run_dir = tmp_path / "run"
    code = (
        "import sys\n"
        f"from {PACKAGE}.cli import main\n"
        f"args = ['run', '--profile', 'smoke', '--only', {only!r}, '-p', {value!r}]\n"
        f"status = main([*args, '--run-dir', {str(run_dir)!r}])\n"
        "assert status == 2, status\n"
        "assert 'tensorflow' not in sys.modules, 'TensorFlow was imported'\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT
    )
    assert done.returncode == 0, done.stdout + done.stderr
    name, number = value.split("=")
    expected = f"{name}={number} is not allowed: use a whole number {limits.allowed(name)}."
    assert f"refuses to start: {expected}" in done.stderr, done.stderr
    assert not run_dir.exists()


FIRST = {step: name for step, name in reversed(SHARED) if step != "data"}  # one name a step


@pytest.mark.parametrize(("step", "name"), sorted(FIRST.items()))
def test_each_step_command_refuses_a_value_out_of_range_before_tensorflow_loads(
    tmp_path: Path, step: str, name: str
) -> None:
    """`train -p epochs=-1` (export, optimize … alike) loaded TensorFlow (8-31 s) before the step
    refused: exit 2, limits' sentence, and TensorFlow never imported (checked in the process)."""
    value = f"{name}={limits.RANGES[name][0] - 1}"
    code = (
        "import sys\n"
        f"from {PACKAGE}.cli import main\n"
        f"status = main([{step!r}, '--run-dir', {str(tmp_path / 'run')!r}, '-p', {value!r}])\n"
        "assert status == 2, status\n"
        "assert 'tensorflow' not in sys.modules, 'TensorFlow was imported'\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT
    )
    assert done.returncode == 0, done.stdout + done.stderr
    expected = f"{value} is not allowed: use a whole number {limits.allowed(name)}"
    assert expected in done.stderr, done.stderr
