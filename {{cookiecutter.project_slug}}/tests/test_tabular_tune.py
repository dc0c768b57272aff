"""02_tune on tables (issue 44 §4): the default model's search space names its knobs, each width
it may draw builds, and a one-trial search writes them where 03_train takes them from."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from tables import make_table_run

pytest.importorskip("keras_tuner", reason="keras-tuner is not installed (a project dependency)")

from {{ cookiecutter.package_name }} import tune  # noqa: E402
from {{ cookiecutter.package_name }}.data.meta import read_meta  # noqa: E402
from {{ cookiecutter.package_name }}.parts.tune import TUNED_FILE  # noqa: E402
from {{ cookiecutter.package_name }}.tasks.tabular import models, task  # noqa: E402
from {{ cookiecutter.package_name }}.train import Params as TrainParams  # noqa: E402
from {{ cookiecutter.package_name }}.train import resolve_params  # noqa: E402
from {{ cookiecutter.package_name }}.tune.space import choose, search_space, space_table  # noqa: E402
from {{ cookiecutter.package_name }}.tune.trial import Trials  # noqa: E402

KNOBS = {"members": 8, "depth": 1, "frequencies": 8, "sigma": 0.5}  # none the builder's default


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_table_run(tmp_path_factory.mktemp("tune"))


def test_the_default_table_model_is_what_02_searches() -> None:
    assert task.DEFAULT_MODEL == "tabm" and tune.Params().model == "tabm"
    space = search_space("tabm")
    assert {"learning_rate", "width", "dropout", "weight_decay"} <= set(space)


def test_every_tabm_width_the_tuner_may_draw_builds(run: Path) -> None:
    spec = search_space("tabm")["width"]
    widths = list(range(spec["min"], spec["max"] + 1, spec["step"]))
    assert spec["default"] in widths and len(widths) > 1
    for width in widths:
        task.check_knobs("tabm", width=width)
    layout = read_meta(run)["layout"]
    for width in (widths[0], widths[-1]):
        assert models.build_model("tabm", layout, 2, width=width).count_params() > 0


def test_tabm_searches_its_own_knobs_and_the_table_shows_them() -> None:
    space = search_space("tabm")
    assert space["members"]["values"] == space["frequencies"]["values"] == [8, 16, 32]
    assert (space["depth"]["min"], space["depth"]["max"]) == (1, 3)
    assert (space["sigma"]["min"], space["sigma"]["max"], space["sigma"]["sampling"]) == (
        0.3,
        30.0,
        "log",
    )
    assert "| members | 8, 16, 32 | one of | 16 | - |" in space_table(space)
    assert "members" not in search_space("wide_deep")  # another model's builder has no members


def test_a_trial_with_knobs_set_builds_them_into_its_model(run: Path) -> None:
    """The values keras-tuner chose reach TabM's builder through the trial's train.Loop."""
    import keras_tuner

    space = search_space("tabm", epochs=1)
    hp = keras_tuner.HyperParameters()
    for name, spec in space.items():
        choose(hp, name, spec)
    hp.values.update(KNOBS)
    fixed = {"model": "tabm", "weights": "none", "epochs": 1, "batch_size": 32, "seed": 42}
    built: list = []
    trials = Trials(keras_tuner, run, read_meta(run), space, fixed, jit=False, built=built)
    model = trials.build(hp)
    assert {name: built[0][name] for name in KNOBS} == KNOBS
    periodic = model.get_layer("periodic")
    assert model.get_layer("members").members == 8
    assert (periodic.freqs, periodic.sigma) == (8, 0.5)
    assert sum(layer.name.startswith("deep_") for layer in model.layers) == 1


def test_a_one_trial_search_of_tabm_reaches_training(run: Path) -> None:
    tune.run(run, tune.Params(max_trials=1, epochs=1, batch_size=32), verbose=False)
    hparams = json.loads((run / TUNED_FILE).read_text(encoding="utf-8"))["hparams"]
    assert hparams["model"] == "tabm" and {"width", "dropout", "learning_rate"} <= set(hparams)
    assert {name: hparams[name] for name in KNOBS} == {
        "members": 16,
        "depth": 2,
        "frequencies": 16,
        "sigma": 3.0,
    }  # one trial: the defaults
    resolved, sources = resolve_params(run, TrainParams(epochs=1))
    assert resolved.params.model == "tabm"
    for name in ("width", "dropout", "learning_rate", *KNOBS):
        assert getattr(resolved.params, name) == hparams[name] and sources[name] == "tuned", name


def test_table_trials_are_ranked_by_validation_roc_auc_and_the_report_says_so(run: Path) -> None:
    """02 ranks table trials by what 03's headline compares with the trees (ROC AUC), not by
    accuracy at 0.5, and its metrics, trials table and figure name that objective."""
    from {{ cookiecutter.package_name }}.tune.figure import plot_trials

    metrics = tune.run(run, tune.Params(max_trials=1, epochs=1, batch_size=32), verbose=False)
    assert tune.objective() == metrics["objective"] == "val_roc_auc"
    (path,) = (run / "tuning" / "tuner").glob("trial_*/trial.json")
    observed = json.loads(path.read_text(encoding="utf-8"))["metrics"]["metrics"]
    auc = observed["val_roc_auc"]["observations"][0]["value"][0]
    assert 0.5 < auc <= 1.0 and metrics["best_score"] == pytest.approx(auc)
    assert "| trial | val_roc_auc |" in tune.trials_table(metrics)
    assert plot_trials(metrics, run / "trials.png") is not None


def test_03_trains_tabm_with_the_knobs_02_found(run: Path, tmp_path: Path) -> None:
    """As if 02's best trial had drawn KNOBS: 03 builds, trains and saves TabM with them."""
    import keras

    from {{ cookiecutter.package_name }} import train

    path = run / TUNED_FILE
    if not path.is_file():
        tune.run(run, tune.Params(max_trials=1, epochs=1, batch_size=32), verbose=False)
    record = json.loads(path.read_text(encoding="utf-8"))
    record["hparams"].update(KNOBS)
    path.write_text(json.dumps(record), encoding="utf-8")
    metrics = train.run(run, TrainParams(epochs=1, batch_size=32), verbose=False)
    assert {name: metrics["parameter_sources"][name] for name in KNOBS} == dict.fromkeys(
        KNOBS, "tuned"
    )
    model = keras.models.load_model(run / "model.keras")
    assert model.get_layer("members").members == 8
    assert (model.get_layer("periodic").freqs, model.get_layer("periodic").sigma) == (8, 0.5)


def test_weights_of_a_tabm_with_other_knobs_are_refused_naming_the_layer(
    run: Path, tmp_path: Path
) -> None:
    """weights=FILE of a TabM built with other members: one sentence naming the layer whose
    shapes differ and what to do, before any epoch (no Keras shape error mid-copy)."""
    from helpers import assert_one_sentence

    from {{ cookiecutter.package_name }}.train import finetune
    from {{ cookiecutter.package_name }}.train.errors import TrainError

    layout = read_meta(run)["layout"]
    models.build_model("tabm", layout, 2, members=16).save(tmp_path / "sixteen.keras")
    with pytest.raises(
        TrainError, match=r"its layer members holds weights of shapes \[\(16,"
    ) as refused:
        finetune.load_into(
            models.build_model("tabm", layout, 2, members=8), str(tmp_path / "sixteen.keras")
        )
    assert "the model's own knobs" in str(refused.value)
    assert_one_sentence(str(refused.value))


@pytest.mark.parametrize("profile", ["smoke", "default", "gpu"])
def test_each_profile_tunes_the_model_it_trains(profile: str) -> None:
    """03_train uses tuned values only for the model they were tuned for: a profile whose 02
    searched wide_deep while 03 trained tabm threw the search away."""
    from {{ cookiecutter.package_name }}.runner.profile import load_profile

    notebooks = load_profile(Path(__file__).parents[1], profile)["notebooks"]
    if "02_tune" not in notebooks:
        pytest.skip(f"the {profile} profile runs no 02_tune: no tuned model to set beside 03's")
    tuned = notebooks["02_tune"].get("model", tune.Params().model)
    trained = notebooks.get("03_train", {}).get("model", task.DEFAULT_MODEL)
    assert tuned == trained == task.DEFAULT_MODEL


def test_a_diverged_trials_objective_is_nan_not_an_error() -> None:
    """NaN probabilities (a trial whose loss diverged) score NaN, so the trial fails with 02's
    one sentence on a loss that is not a number, not with scikit-learn's "Input contains NaN"."""
    from {{ cookiecutter.package_name }}.tasks.tabular.scores import validation_roc_auc

    labels = np.array([0, 1, 0, 1])
    probabilities = np.full((4, 2), np.nan, np.float32)
    assert np.isnan(validation_roc_auc(labels, probabilities))
    ranked = np.array([[0.9, 0.1], [0.2, 0.8], [0.7, 0.3], [0.4, 0.6]], np.float32)
    assert validation_roc_auc(labels, ranked) == 1.0
