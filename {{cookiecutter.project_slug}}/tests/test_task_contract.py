"""The seam between the shared steps and the task is one class, tasks/base.Task: the task this
project was baked for gives every member, and the class, its documentation and the light seam
(seam.py, which answers without importing the task) agree."""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import json
import re
from pathlib import Path

import pytest

from {{ cookiecutter.package_name }} import seam, tasks
from {{ cookiecutter.package_name }}.tasks import base

PACKAGE = "{{ cookiecutter.package_name }}"
GROUPS = {"models": base.Models, "recipe": base.Recipe, "export": base.Export}
SEARCH = ({% if cookiecutter.include_tuning %}"tune",{% endif %})  # the optional part's folder
GROUPS.update(scores=base.Scores, bench=base.Bench, data=base.Data)


def test_the_projects_task_gives_every_member_of_the_interface():
    task = tasks.current()
    assert isinstance(task, base.Task)
    missing = [member for member in base.Task.MEMBERS if getattr(task, member, None) is None]
    assert not missing, f"{type(task).__name__} lacks {missing}"
    for member, kind in GROUPS.items():
        group = getattr(task, member)
        assert isinstance(group, kind), f"{member} is a {type(group).__name__}, not {kind.__name__}"
        for field in dataclasses.fields(kind):
            value = getattr(group, field.name)
            given = (field.default, field.default_factory)
            required = all(value is dataclasses.MISSING for value in given)
            if required and str(field.type).startswith("Callable"):
                assert callable(value), f"{member}.{field.name} is not callable"
    for method in ("build_inputs", "examples", "build_model", "build_losses", "build_metrics"):
        assert callable(getattr(task, method))
    assert not inspect.isabstract(type(task))


def test_the_light_seam_agrees_with_the_task():
    """steps.py and the runner ask seam.py (no TensorFlow); the task says the same."""
    task = tasks.current()
    assert task.name == seam.name() and task.noun == seam.noun()
    step = importlib.import_module("{{ cookiecutter.package_name }}.prepare.entry")
    assert task.data is step.DATA
    assert all(hasattr(step, name) for name in ("Params", "check", "run"))
    assert step.Params is task.data.params


def test_the_documented_members_are_the_class_members():
    """base.py's docstring lists each member once, in the order of Task.MEMBERS."""
    listed = re.findall(r"^    (\w+) ", base.__doc__, flags=re.MULTILINE)
    assert tuple(listed) == base.Task.MEMBERS
    declared = set(base.Task.__annotations__) | {
        name for name, _ in inspect.getmembers(base.Task, inspect.isfunction)
    }
    assert set(base.Task.MEMBERS) <= declared


def test_a_task_that_lacks_a_member_cannot_be_made():
    """A subclass without build_inputs is refused when made, and a group without one of its
    required answers too: the contract cannot be left half-filled."""

    class Partial(base.Task):
        name, noun = "x", "xs"

        def examples(self, run_dir, split, count, form="raw"):
            return None

        def build_model(self, name, meta, **options):
            return None

    with pytest.raises(TypeError, match="build_inputs"):
        Partial()
    with pytest.raises(TypeError, match="check"):
        base.Models(names=(), default="", help="", knobs={})  # type: ignore[call-arg]


def test_examples_are_raw_or_model_and_nothing_else():
    refusal = "form='ids' is not a form of examples: use one of raw, model"
    with pytest.raises(ValueError, match=refusal):
        base.examples_of("ids", print, print)


def test_the_default_loss_and_accuracy_are_sparse_cross_entropy_and_top_class():
    import numpy as np
    import tensorflow as tf

    task = tasks.current()
    probabilities = tf.constant([[0.7, 0.2, 0.1], [0.1, 0.3, 0.6]])
    labels = tf.constant([0, 1], tf.int32)
    loss = task.build_losses()(labels, probabilities).numpy()
    np.testing.assert_allclose(loss, -np.log([0.7, 0.3]), rtol=1e-5)
    assert task.build_metrics()["accuracy"](labels, probabilities).numpy().tolist() == [1.0, 0.0]
    smooth = task.build_losses(label_smoothing=0.1, soft=True, num_classes=3)
    smoothed = smooth(labels, probabilities)
    targets = np.array([[0.9 + 0.1 / 3, 0.1 / 3, 0.1 / 3], [0.1 / 3, 0.9 + 0.1 / 3, 0.1 / 3]])
    expected = -(targets * np.log(probabilities.numpy())).sum(axis=1)
    np.testing.assert_allclose(smoothed.numpy(), expected, rtol=1e-5)


def test_train_params_are_the_shared_ones_then_the_tasks_own():
    """Issue 43: a task's own training parameters (Recipe.options: the image task's augment)
    join the shared ones in train's Params, after them, so a bake's --help, notebook 03 and the
    runner's checks list them in that task's bake and in no other."""
    from {{ cookiecutter.package_name }}.train import params

    own = dataclasses.fields(tasks.current().recipe.options)
    shared = [field.name for field in dataclasses.fields(params.SharedParams)]
    assert [field.name for field in dataclasses.fields(params.Params)] == shared + [
        field.name for field in own
    ]
    assert all(field.metadata.get("help") for field in own)  # train --help's line
    assert params.Params() == params.Params(**{field.name: field.default for field in own})


def test_shared_code_names_no_pretrained_weights_and_reads_no_task_option():
    """Issue 43: ImageNet weights are the image task's (Models.pretrained) and its augment is its
    own (Recipe.options): the shared code outside tasks/ names no pretrained weights, and the
    training code (train/, find/, replica.py, a search's) reads no option of the task's: it asks
    the task (01_data's own Params may share a name)."""
    package = Path(tasks.__file__).parents[1]
    training = ("train", "find", "replica.py", *SEARCH)
    options = "|".join(field.name for field in dataclasses.fields(tasks.current().recipe.options))
    reads = re.compile(rf"params\.({options})\b") if options else None
    found = [
        f"{path.relative_to(package)}:{number}: {line.strip()}"
        for path in sorted(package.rglob("*.py"))
        if path.relative_to(package).parts[0] != "tasks"
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if "imagenet" in line
        or (reads and path.relative_to(package).parts[0] in training and reads.search(line))
    ]
    assert not found, "shared code with a task's words:\n" + "\n".join(found)


@dataclasses.dataclass(frozen=True)
class StandInParams:
    dataset: str = "stand_in"
    val_fraction: float = 0.2
    test_fraction: float = 0.0
    seed: int = 1
    benchmark_seconds: float = 2.0


def test_step_one_is_the_shared_entry_calling_the_tasks_hooks_in_order(
    tmp_path, monkeypatch, capsys
):
    """Issue 43 §2: the CLI and the runner (steps.module) and notebook 01 (entry.run) run one
    step 1, prepare/entry.py; it calls a task's Data hooks in order and writes metrics/data.json."""
    from {{ cookiecutter.package_name }} import steps
    from {{ cookiecutter.package_name }}.prepare import entry

    assert steps.module("data") is entry  # not a task's own module: nothing bypasses the entry
    half = importlib.import_module(f"{PACKAGE}.tasks.{seam.folder()}.data_step")
    assert not hasattr(half, "run"), "the task's data_step.py runs step 1 itself: bypasses entry"
    calls = []

    def hook(name, result=None):
        return lambda *args: calls.append(name) or result

    measured = {"verdict": "fast enough", "rate": 3.0}
    stand_in = base.Data(
        StandInParams, hook("check"), ("reading it", "1 s"), hook("prepare", {"n": 1}),
        hook("describe", "described"), hook("measure", measured),
        lambda meta, result: calls.append("metrics") or {**meta, **result}, {},
        measuring="about {seconds:g} s",
    )  # fmt: skip
    monkeypatch.setattr(entry, "DATA", stand_in)
    metrics = entry.run(tmp_path, StandInParams())
    assert calls == ["check", "prepare", "describe", "measure", "metrics"]
    said = capsys.readouterr().out
    assert said.index("Preparing stand_in: reading it") < said.index("described")
    assert said.index("about 2 s") < said.index("fast enough")
    written = json.loads((tmp_path / "metrics" / "data.json").read_text(encoding="utf-8"))
    assert written["n"] == 1 and written["rate"] == 3.0 and written == metrics
    calls.clear()
    with pytest.raises(Exception, match="val_fraction=1.5 is not allowed"):
        entry.check(tmp_path, StandInParams(val_fraction=1.5))
    assert calls == ["check"]  # the task's own values first, then the shared ones
