"""A step says what it starts before a stretch that prints nothing of its own for seconds."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from {{ cookiecutter.package_name }} import progress, tasks
from {{ cookiecutter.package_name }}.export import entry as export_step
from {{ cookiecutter.package_name }}.train import evaluate


class Reached(Exception):
    """The slow work was reached: the test stops there."""


def stop_with_output(capsys, seen: list[str]):
    """A stand-in for the slow work: records what was printed before it, then stops."""

    def slow(*_args, **_kwargs):
        seen.append(capsys.readouterr().out)
        raise Reached

    return slow


def test_starting_is_one_progress_line(capsys) -> None:
    progress.starting("Fitting", "about 5 s")
    assert capsys.readouterr().out == f"{progress.MARK}Fitting … (about 5 s)\n"


def test_export_says_it_exports_before_the_save(tmp_path: Path, monkeypatch, capsys) -> None:
    seen: list[str] = []
    monkeypatch.setattr(export_step, "check", lambda *a, **k: None)
    monkeypatch.setattr(export_step, "export_savedmodel", stop_with_output(capsys, seen))
    with pytest.raises(Reached):
        export_step.run(
            str(tmp_path), SimpleNamespace(version=1, overwrite=False, replace_served=False)
        )
    assert f"{progress.MARK}Exporting model.keras to a SavedModel …" in seen[0]


def test_training_says_it_fits_the_baseline_before_it(tmp_path: Path, monkeypatch, capsys) -> None:
    seen: list[str] = []
    truth, probabilities = np.array([0, 1]), np.array([[0.9, 0.1], [0.2, 0.8]])
    monkeypatch.setattr(evaluate, "predict", lambda loop, split: (truth, probabilities))
    scores = SimpleNamespace(extras=lambda *a, **k: {}, baseline=stop_with_output(capsys, seen))
    real = tasks.current()  # the test split is scored by the task's own loss and accuracy
    stand_in = SimpleNamespace(
        scores=scores,
        noun="texts",
        build_losses=real.build_losses,
        build_metrics=real.build_metrics,
    )
    monkeypatch.setattr(evaluate, "task", lambda: stand_in)
    loop = SimpleNamespace(folder=tmp_path, meta={"splits": {"test": {}}, "classes": ["a", "b"]})
    loop.verbose, loop.role = True, SimpleNamespace(is_chief=True)
    with pytest.raises(Reached):
        evaluate.test_split(loop, print)
    assert f"{progress.MARK}Baseline: a scikit-learn model fitted" in seen[0]
