"""Tuning the image task: its builders' width and dropout and its augmentation are searched
beside the shared recipe, reach training when tuned, and fine-tuning adds freeze and thaw. The
search itself (best values, lineage, failed trials, refusals, resuming, the tuned recipe reaching
training) is tested on the fake task in every bake: tests/test_tune_shared.py, and its chief and
worker processes in tests/test_tune_workers_shared.py.

One search of 2 trials x 1 epoch on the 8x8 digits is shared; tests that change a run folder work
on a copy of it.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

pytest.importorskip("keras_tuner", reason="keras-tuner is not installed (a project dependency)")

from {{ cookiecutter.package_name }} import tune  # noqa: E402
from {{ cookiecutter.package_name }}.artifacts import METRICS_DIR  # noqa: E402
from {{ cookiecutter.package_name }}.parts.tune import TUNED_FILE  # noqa: E402
from {{ cookiecutter.package_name }}.tasks.image import data_step  # noqa: E402
from {{ cookiecutter.package_name }}.train import resolve_params, train  # noqa: E402
from {{ cookiecutter.package_name }}.tune.space import choose, training_values  # noqa: E402

TRIALS = 2


@pytest.fixture(scope="module")
def digits(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run folder holding the digits written by the data step, and nothing else."""
    run = tmp_path_factory.mktemp("digits") / "run"
    data_step.prepare(run, "digits")
    return run


@pytest.fixture(scope="module")
def searched(tmp_path_factory: pytest.TempPathFactory, digits: Path) -> tuple[Path, dict]:
    """One random search of 2 trials x 1 epoch through the step's entry, shared by the tests that
    only read it."""
    run = tmp_path_factory.mktemp("searched") / "run"
    shutil.copytree(digits, run)
    return run, tune.run(run, tune.Params(max_trials=TRIALS, epochs=1), verbose=False)


@pytest.fixture
def searched_copy(tmp_path: Path, searched: tuple[Path, dict]) -> Path:
    run = tmp_path / "run"
    shutil.copytree(searched[0], run)
    return run


def test_the_image_search_holds_the_builders_knobs_and_augmentation(
    searched: tuple[Path, dict],
) -> None:
    """best_hparams.json holds small_cnn's width (a multiple of 8) and dropout and the augmentation
    beside the shared recipe, under training's names."""
    run, result = searched
    found = json.loads((run / TUNED_FILE).read_text(encoding="utf-8"))
    metrics = json.loads((run / METRICS_DIR / "tune.json").read_text(encoding="utf-8"))
    hparams = found["hparams"]
    recipe = {"schedule", "weight_decay", "label_smoothing", "augment"}  # 1 epoch: no warmup
    assert set(hparams) == {"model", "learning_rate", "width", "dropout", *recipe}
    assert hparams["model"] == "small_cnn" and hparams["width"] % 8 == 0
    assert 1e-4 <= hparams["learning_rate"] <= 1e-2 and 0 <= hparams["dropout"] <= 0.5
    assert metrics["best_hparams"] == hparams and result["trials_completed"] == TRIALS


def test_the_first_trial_holds_the_image_builders_knobs_at_their_defaults(
    searched: tuple[Path, dict],
) -> None:
    """Trial #1 is training's defaults (test_tune_shared.py checks the recipe on the fake task);
    here the image builder's own knobs are among them, at training's values."""
    _, metrics = searched
    first = min(metrics["trials"], key=lambda trial: trial["trial"])
    assert first["defaults"] and first["hparams"] == metrics["default_hparams"]
    knobs = {name: metrics["default_hparams"][name] for name in ("width", "dropout", "augment")}
    assert knobs == {"width": 32, "dropout": 0.25, "augment": "none"}


def test_the_space_holds_the_recipe_and_its_conditions() -> None:
    """The recipe is searched beside the builder's knobs; freeze_epochs only from given weights,
    unfreeze only once something is frozen (keras-tuner's conditional_scope)."""
    import keras_tuner as kt

    plain = tune.search_space("small_cnn", "none", epochs=4)
    assert {"learning_rate", "schedule", "warmup_epochs", "weight_decay", "label_smoothing"} <= set(
        plain
    )
    assert {"width", "dropout", "augment"} <= set(plain)
    assert plain["learning_rate"]["sampling"] == "log"
    assert plain["schedule"]["values"] == ["constant", "cosine"]
    assert plain["augment"]["values"] == ["none", "light", "strong"]
    assert plain["warmup_epochs"]["max"] == 3
    assert "freeze_epochs" not in plain and "unfreeze" not in plain
    fine = tune.search_space("small_cnn", "earlier/model.keras", epochs=4)
    assert fine["freeze_epochs"]["min"] == 0 and fine["freeze_epochs"]["max"] == 3
    assert fine["unfreeze"]["when"] == {"freeze_epochs": [1, 2, 3]}
    assert "width" not in fine and "dropout" in fine  # the file's weights fix the width
    assert "freeze_epochs" not in tune.search_space("small_cnn", "imagenet", epochs=1)
    assert "width" not in tune.search_space("MobileNetV2", "none", epochs=2)

    def chosen(freeze: int) -> dict:
        hp = kt.HyperParameters()
        hp.values["freeze_epochs"] = freeze
        return {name: choose(hp, name, spec) for name, spec in fine.items()}

    assert chosen(0)["unfreeze"] is None and chosen(2)["unfreeze"] == "all"
    assert "unfreeze" not in training_values(chosen(0))
    assert training_values({**chosen(2), "unfreeze": "4"})["unfreeze"] == 4
    table = tune.space_table(fine)
    assert "| unfreeze | all, 1, 2, 4 |" in table and "freeze_epochs in 1, 2, 3" in table


def test_training_takes_tuned_values_and_says_so(searched_copy: Path, capsys) -> None:
    """Not given: model, learning_rate, width, dropout come from tuning/best_hparams.json."""
    hparams = json.loads((searched_copy / TUNED_FILE).read_text(encoding="utf-8"))["hparams"]
    metrics = train(searched_copy, epochs=1)
    sources = metrics["parameter_sources"]
    assert {key: sources[key] for key in hparams} == dict.fromkeys(hparams, "tuned")
    assert sources["epochs"] == "given" and sources["batch_size"] == "default"
    assert metrics["learning_rate"] == hparams["learning_rate"]
    assert metrics["parameters"]["width"] == hparams["width"]
    assert metrics["parameters"]["dropout"] == hparams["dropout"]
    written = json.loads((searched_copy / "metrics" / "train.json").read_text(encoding="utf-8"))
    assert written["parameter_sources"] == sources
    assert written["tuning"]["hparams"] == hparams
    assert f"from {TUNED_FILE}" in capsys.readouterr().out


def test_the_tuned_augmentation_reaches_training(searched_copy: Path) -> None:
    """best_hparams.json's augmentation (the image task's own recipe choice) is what training runs
    with when not given, said to come from the tuning."""
    path = searched_copy / TUNED_FILE
    found = json.loads(path.read_text(encoding="utf-8"))
    found["hparams"]["augment"] = "light"
    path.write_text(json.dumps(found), encoding="utf-8")
    metrics = train(searched_copy, epochs=1, verbose=False)
    assert metrics["augment"] == "light" and metrics["parameter_sources"]["augment"] == "tuned"


def test_values_tuned_for_another_model_are_not_used(searched: tuple[Path, dict]) -> None:
    """A width found for small_cnn says nothing about resnet_small: none of it is taken."""
    resolved, sources = resolve_params(searched[0], {"model": "resnet_small"})
    assert resolved.params.width is None and resolved.params.learning_rate == 1e-3
    assert sources["learning_rate"] == sources["width"] == "default"
