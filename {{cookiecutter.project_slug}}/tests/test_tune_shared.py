"""Tuning on the fake task (tests/fake_task.py), in every bake that keeps 02: keras-tuner's search
writes the best values and its lineage, a failing trial is recorded with why, bad values are refused
in one sentence, and training takes the tuned values unless given. The fake model has no width or
dropout, so the search holds the shared recipe alone; each task's own knobs are tested in its own
files (test_tune.py: the image builders' width, augmentation and fine-tuning).

One search of 2 trials x 1 epoch is shared; tests that change a run folder work on a copy of it.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import fake_task
import pytest
from helpers import assert_one_sentence

pytest.importorskip("keras_tuner", reason="keras-tuner is not installed (a project dependency)")

from {{ cookiecutter.package_name }} import lineage, tune  # noqa: E402
from {{ cookiecutter.package_name }}.artifacts import (  # noqa: E402
    LINEAGE_FILE,
    METRICS_DIR,
    MODEL_FILE,
    MissingInputError,
    StaleInputError,
)
from {{ cookiecutter.package_name }}.parts.tune import (  # noqa: E402
    SPACE_FILE,
    TRIALS_FILE,
    TUNED_FILE,
)
from {{ cookiecutter.package_name }}.train import Params as TrainParams  # noqa: E402
from {{ cookiecutter.package_name }}.train import (  # noqa: E402
    TrainError,
    describe_sources,
    resolve_params,
    train,
)
from {{ cookiecutter.package_name }}.tune import trial as trial_module  # noqa: E402
from {{ cookiecutter.package_name }}.writes import write_json  # noqa: E402

TRIALS = 2
SEARCH = {"max_trials": TRIALS, "epochs": 1, "batch_size": 16}
RECIPE = {"learning_rate", "schedule", "weight_decay", "label_smoothing"}  # 1 epoch: no warmup
pytestmark = pytest.mark.usefixtures("fake_module")  # the fake task is the task of every test


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run folder holding the fake task's data/, and nothing else."""
    return fake_task.write_data(tmp_path_factory.mktemp("fake-data") / "run")


@pytest.fixture(scope="module")
def searched(
    tmp_path_factory: pytest.TempPathFactory, data: Path, fake_module
) -> tuple[Path, dict]:
    """One random search of 2 trials x 1 epoch through the step's entry, shared by the tests that
    only read it."""
    run = tmp_path_factory.mktemp("fake-searched") / "run"
    shutil.copytree(data, run)
    return run, tune.run(run, tune.Params(**SEARCH), verbose=False)


@pytest.fixture
def searched_copy(tmp_path: Path, searched: tuple[Path, dict]) -> Path:
    run = tmp_path / "run"
    shutil.copytree(searched[0], run)
    return run


def copy(data: Path, tmp_path: Path) -> Path:
    shutil.copytree(data, tmp_path / "run")
    return tmp_path / "run"


def test_search_writes_best_hparams_and_tune_metrics(searched: tuple[Path, dict]) -> None:
    """best_hparams.json holds the best trial's values under training's names; tune.json the run."""
    run, result = searched
    found = json.loads((run / TUNED_FILE).read_text(encoding="utf-8"))
    metrics = json.loads((run / METRICS_DIR / "tune.json").read_text(encoding="utf-8"))
    assert metrics == json.loads(json.dumps(result))
    hparams = found["hparams"]
    assert set(hparams) == {"model", *RECIPE} and hparams["model"] == fake_task.MODEL
    assert 1e-4 <= hparams["learning_rate"] <= 1e-2
    scores = [trial["score"] for trial in metrics["trials"]]
    assert found["score"] == metrics["best_score"] == max(scores)
    assert metrics["best_hparams"] == hparams and found["trial"] == metrics["best_trial"]
    assert metrics["trials_run"] == metrics["trials_completed"] == TRIALS
    assert metrics["seconds"] > 0 and metrics["objective"] == "val_accuracy"
    assert (run / "tuning" / "tuner" / "oracle.json").is_file()
    written = json.loads((run / SPACE_FILE).read_text(encoding="utf-8"))
    assert written["space"] == metrics["search_space"] and written["fixed"]["epochs"] == 1
    listed = json.loads((run / TRIALS_FILE).read_text(encoding="utf-8"))["trials"]
    assert listed == metrics["trials"]
    assert "figures/tune_trials.png" in metrics["figures"]


def test_the_first_trial_of_a_random_search_is_the_default_recipe(
    searched: tuple[Path, dict],
) -> None:
    """Trial #1 trains training's defaults, so the search's gain over them is one run's numbers."""
    _, metrics = searched
    first = min(metrics["trials"], key=lambda trial: trial["trial"])
    assert first["defaults"] and first["hparams"] == metrics["default_hparams"]
    assert metrics["default_hparams"] == {
        "learning_rate": 1e-3,
        "schedule": "constant",
        "weight_decay": 0.0,
        "label_smoothing": 0.0,
    }
    assert metrics["default_score"] == first["score"] <= metrics["best_score"]
    assert "(defaults)" in tune.trials_table(metrics) or "(best, defaults)" in tune.trials_table(
        metrics
    )


def test_the_searched_model_defaults_to_the_current_tasks() -> None:
    """model=None is the task's default, asked when the values are made: the fake task's here,
    not the bake's own task's, whose module was imported before the fake was installed."""
    assert tune.Params().model == fake_task.MODEL
    assert tune.Params(model=None).model == fake_task.MODEL
    assert tune.Params(model="other").model == "other"  # given: kept (the checks refuse it)


def test_a_failing_trial_is_recorded_with_its_reason_and_the_search_goes_on(
    tmp_path: Path, data: Path, fake_module, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A NaN loss and a builder that raises each fail their trial, with why; the others run."""
    run = copy(data, tmp_path)
    epochs_run, raised = [], []
    real_epoch, real_build = trial_module.run_epoch, fake_module.build_model

    def epoch(loop, *args, **kwargs):  # trial 2's only epoch ends with a NaN loss
        epochs_run.append(real_epoch(loop, *args, **kwargs))
        return {**epochs_run[-1], "loss": float("nan")} if len(epochs_run) == 2 else epochs_run[-1]

    def build(*args, **kwargs):  # trial 3's model cannot be built
        if len(epochs_run) == 2 and not raised:
            raised.append(True)
            raise MemoryError("the builder ran out of memory")
        return real_build(*args, **kwargs)

    monkeypatch.setattr(trial_module, "run_epoch", epoch)
    monkeypatch.setattr(fake_module, "build_model", build)
    metrics = tune.search(run, tune.Params(**{**SEARCH, "max_trials": 4}), verbose=False)
    status = {trial["trial"]: trial["status"] for trial in metrics["trials"]}
    assert status == {1: "COMPLETED", 2: "FAILED", 3: "FAILED", 4: "COMPLETED"}
    errors = {trial["trial"]: trial.get("error", "") for trial in metrics["trials"]}
    assert errors[2].startswith("FailedTrialError: the loss is not a number after epoch 1")
    assert errors[3] == "MemoryError: the builder ran out of memory"
    assert metrics["trials_failed"] == 2 and metrics["trials_completed"] == 2
    assert metrics["best_trial"] in (1, 4) and len(epochs_run) == 3
    table = tune.trials_table(metrics)
    assert "FAILED: MemoryError: the builder ran out of memory" in table
    listed = json.loads((run / TRIALS_FILE).read_text(encoding="utf-8"))["trials"]
    assert [trial["status"] for trial in listed] == ["COMPLETED", "FAILED", "FAILED", "COMPLETED"]


def test_the_search_records_the_data_it_tuned_on(searched: tuple[Path, dict]) -> None:
    """lineage.json says tuning was made from the current data; tune.json names both prints."""
    run, metrics = searched
    data_fp, tuning_fp = lineage.fingerprint(run, "data"), lineage.fingerprint(run, "tuning")
    entry = lineage.read(run)["tuning"]
    assert entry["step"] == "tune" and entry["inputs"] == {"data": data_fp}
    assert entry["fingerprint"] == tuning_fp is not None
    assert metrics["lineage"] == {"reads": {"data": data_fp}, "writes": {"tuning": tuning_fp}}
    assert lineage.stale_inputs(run, "tuning") == []


def test_tuning_is_stale_once_the_data_is_prepared_again(searched_copy: Path) -> None:
    """01 again with another seed: the ledger now says tuning was made from other data."""
    fake_task.write_data(searched_copy, seed=7)
    assert lineage.stale_inputs(searched_copy, "tuning") == ["data"]


@pytest.mark.parametrize(
    ("values", "named"),
    [
        ({"max_trials": 0}, "max_trials=0"),
        ({"epochs": 0}, "epochs=0"),
        ({"batch_size": -5}, "batch_size=-5"),
        ({"algorithm": "grid"}, "algorithm='grid'"),
        ({"model": "resnet"}, "model='resnet'"),
        ({"weights": "missing.keras"}, "weights='missing.keras'"),
        ({"seed": -1}, "seed=-1"),
    ],
)
def test_check_refuses_a_bad_value_without_reading_the_run_folder(
    tmp_path: Path, values: dict, named: str
) -> None:
    """The runner's pre-flight (inputs=False) needs no data yet and writes nothing."""
    run = tmp_path / "run"
    with pytest.raises(tune.TuneError) as refused:
        tune.check(run, tune.Params(**values), inputs=False)
    assert named in str(refused.value)
    assert_one_sentence(str(refused.value))
    assert not run.exists()


def test_check_refuses_a_batch_larger_than_the_training_set(data: Path) -> None:
    """With inputs, the one shared batch check names the batch and the training examples."""
    tune.check(data, tune.Params(max_trials=1), inputs=False)  # the value alone is fine
    with pytest.raises(tune.TuneError) as refused:
        tune.check(data, tune.Params(batch_size=5000))
    train_count = fake_task.COUNTS["train"]
    assert f"batch_size=5000 is larger than the {train_count} training examples" in str(
        refused.value
    )
    assert_one_sentence(str(refused.value))


def test_a_run_folder_without_data_names_the_data_step(tmp_path: Path) -> None:
    """Tuning before step 1 stops in one sentence naming 01_data; the pre-flight without inputs
    lets it pass (01 runs first in the same chain)."""
    with pytest.raises(MissingInputError) as refused:
        tune.check(tmp_path, tune.Params())
    assert "01_data" in str(refused.value)
    tune.check(tmp_path, tune.Params(), inputs=False)
    with pytest.raises(MissingInputError) as error:
        tune.search(tmp_path / "empty", tune.Params())
    assert "01_data" in str(error.value)
    assert_one_sentence(str(error.value))


def test_overwrite_searches_again_instead_of_reloading(searched_copy: Path) -> None:
    """keras-tuner reloads a finished search and returns at once; overwrite=True searches anew."""
    reloaded = tune.search(searched_copy, tune.Params(**SEARCH), overwrite=False)
    assert reloaded["trials_run"] == 0 and reloaded["trials_completed"] == TRIALS
    stale = searched_copy / "tuning" / "tuner" / "stale"
    stale.write_text("from the first search", encoding="utf-8")
    again = tune.search(searched_copy, tune.Params(**SEARCH), verbose=False)
    assert again["trials_run"] == TRIALS and not stale.exists()


def test_resuming_another_search_is_refused(searched_copy: Path) -> None:
    """overwrite=False with another model or epochs is refused before keras-tuner mixes them."""
    with pytest.raises(tune.TuneError) as error:
        tune.search(searched_copy, tune.Params(**{**SEARCH, "epochs": 2}), overwrite=False)
    assert "epochs=1" in str(error.value)
    assert_one_sentence(str(error.value))


def test_training_takes_tuned_values_and_says_so(searched_copy: Path, capsys) -> None:
    """Not given: the model and the recipe come from tuning/best_hparams.json, said so."""
    hparams = json.loads((searched_copy / TUNED_FILE).read_text(encoding="utf-8"))["hparams"]
    metrics = train(searched_copy, epochs=1, batch_size=16)
    sources = metrics["parameter_sources"]
    assert {key: sources[key] for key in hparams} == dict.fromkeys(hparams, "tuned")
    assert sources["epochs"] == sources["batch_size"] == "given"
    assert sources["precision"] == "default"
    assert metrics["learning_rate"] == hparams["learning_rate"]
    written = json.loads((searched_copy / "metrics" / "train.json").read_text(encoding="utf-8"))
    assert written["parameter_sources"] == sources
    assert written["tuning"]["hparams"] == hparams
    assert f"from {TUNED_FILE}" in capsys.readouterr().out


def test_every_tuned_recipe_value_reaches_training(searched_copy: Path) -> None:
    """best_hparams.json's schedule, warmup, weight decay and label smoothing are what training
    runs with when not given, each said to come from the tuning; a given value wins."""
    path = searched_copy / TUNED_FILE
    found = json.loads(path.read_text(encoding="utf-8"))
    recipe = {"schedule": "cosine", "warmup_epochs": 1, "weight_decay": 0.001}
    found["hparams"].update(recipe, label_smoothing=0.1)
    path.write_text(json.dumps(found), encoding="utf-8")
    metrics = train(searched_copy, epochs=2, batch_size=16, label_smoothing=0.05, verbose=False)
    sources = metrics["parameter_sources"]
    assert {key: sources[key] for key in recipe} == dict.fromkeys(recipe, "tuned")
    assert metrics["schedule"]["name"] == "cosine" and metrics["schedule"]["warmup_epochs"] == 1
    assert metrics["weight_decay"] == 0.001
    assert metrics["label_smoothing"] == 0.05 and sources["label_smoothing"] == "given"
    resolved, _ = resolve_params(searched_copy, TrainParams(epochs=2, learning_rate=0.005))
    assert resolved.params.learning_rate == 0.005 and resolved.params.label_smoothing == 0.1


def test_a_broken_best_hparams_file_is_refused_naming_it(searched_copy: Path) -> None:
    """A hand-edited file with a value training refuses stops training in one sentence."""
    path = searched_copy / TUNED_FILE
    found = json.loads(path.read_text(encoding="utf-8"))
    found["hparams"]["learning_rate"] = -1
    path.write_text(json.dumps(found), encoding="utf-8")
    with pytest.raises(TrainError) as error:
        train(searched_copy, epochs=1, verbose=False)
    assert str(path) in str(error.value) and "learning_rate=-1" in str(error.value)
    assert_one_sentence(str(error.value))


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({"algorithm": "grid"}, "algorithm='grid'"),
        ({"batch_size": 0}, "batch_size=0"),
        ({"model": "resnet"}, "model='resnet'"),
        ({"batch_size": 100_000}, "batch_size=100000"),
    ],
)
def test_bad_parameters_are_refused_in_one_sentence(
    tmp_path: Path, data: Path, options: dict, named: str
) -> None:
    """Each bad value is named in one sentence, and nothing is written into the run folder."""
    run = copy(data, tmp_path)
    with pytest.raises(tune.TuneError) as error:
        tune.search(run, tune.Params(**options))
    assert named in str(error.value)
    assert_one_sentence(str(error.value))
    assert not (run / "tuning").exists() and not (run / "metrics" / "tune.json").exists()


def test_tuning_made_on_other_data_is_ignored_saying_so(tmp_path: Path, data: Path) -> None:
    """Tuning made on data that 01_data has replaced since: none of its values is used."""
    run_dir = copy(data, tmp_path)
    path = run_dir / TUNED_FILE
    path.parent.mkdir(parents=True)
    hparams = {"model": fake_task.MODEL, "learning_rate": 0.01}
    found = {"hparams": hparams, "objective": "val_accuracy", "score": 0.9, "trial": "03"}
    path.write_text(json.dumps(found), encoding="utf-8")
    lineage.record(run_dir, "tuning", "tune", {"data": lineage.fingerprint(run_dir, "data")})
    resolved, sources = resolve_params(run_dir, TrainParams())
    assert resolved.params.learning_rate == 0.01 and sources["learning_rate"] == "tuned"

    fake_task.write_data(run_dir, seed=7)
    resolved, sources = resolve_params(run_dir, TrainParams())
    assert resolved.params.learning_rate == 1e-3 and set(sources.values()) == {"default"}
    sentence = describe_sources(resolved)
    assert (
        f"{TUNED_FILE} was tuned on other data (01_data re-ran since): none of its values is used"
    ) in sentence
    assert_one_sentence(sentence)


# --- its figure: the score of every trial ------------------------------------------------------

TUNE = {
    "algorithm": "random",
    "objective": "val_accuracy",
    "epochs": 2,
    "best_trial": 2,
    "best_score": 0.9611,
    "trials": [
        {
            "trial": 1,
            "status": "COMPLETED",
            "score": 0.8417,
            "hparams": {"learning_rate": 0.000312, "width": 16, "dropout": 0.1},
        },
        {
            "trial": 2,
            "status": "COMPLETED",
            "score": 0.9611,
            "hparams": {"learning_rate": 0.00271, "width": 32, "dropout": 0.25},
        },
        {
            "trial": 3,
            "status": "FAILED",
            "score": None,
            "hparams": {"learning_rate": 0.0101, "width": 48, "dropout": 0.4},
        },
    ],
}


def test_the_trials_figure_is_a_png_and_nothing_to_draw_is_no_file(tmp_path: Path) -> None:
    """figures/tune_trials.png: a PNG with a bar per trial; no trials, no file and no error."""
    from {{ cookiecutter.package_name }} import figures
    from {{ cookiecutter.package_name }}.tune.figure import plot_trials

    drawers = {"tune_trials": lambda _, metrics, path: plot_trials(metrics, path)}
    assert figures.save(tmp_path, "tune", TUNE, say=pytest.fail, drawers=drawers) == [
        "figures/tune_trials.png"
    ]
    assert (tmp_path / "figures" / "tune_trials.png").read_bytes()[:4] == b"\x89PNG"
    empty = tmp_path / "empty"
    assert figures.save(empty, "tune", {"trials": []}, say=pytest.fail, drawers=drawers) == []
    assert not (empty / "figures" / "tune_trials.png").exists()


# Moved from test_mutants_lineage.py (mutate.py's lineage group): the tuning artifact's lineage.


def test_changing_the_tuned_values_changes_their_fingerprint(tmp_path: Path) -> None:
    path = tmp_path / TUNED_FILE
    path.parent.mkdir(parents=True)
    assert lineage.fingerprint(tmp_path, "tuning") is None  # missing: no fingerprint
    path.write_text('{"width": 32}', encoding="utf-8")
    before = lineage.fingerprint(tmp_path, "tuning")
    path.write_text('{"width": 64}', encoding="utf-8")
    assert lineage.fingerprint(tmp_path, "tuning") not in (before, None)


def test_a_model_made_from_replaced_tuning_is_stale_naming_the_tune_step(tmp_path: Path) -> None:
    (tmp_path / MODEL_FILE).write_bytes(b"model")
    ledger = {
        "model": {
            "fingerprint": lineage.fingerprint(tmp_path, "model"),
            "step": "hand",
            "inputs": {"tuning": "old"},
        }
    }
    write_json(tmp_path / LINEAGE_FILE, ledger)
    (tmp_path / TUNED_FILE).parent.mkdir(parents=True)
    (tmp_path / TUNED_FILE).write_text("{}", encoding="utf-8")
    with pytest.raises(StaleInputError, match="tuning that was replaced by 02_tune since"):
        lineage.check_made_from(tmp_path, "model", needed_by="04_export")


def test_the_unknown_artifact_sentence_names_tuning_among_the_known_ones(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="use data, tuning, model or export/<version>"):
        lineage.fingerprint(tmp_path, "weights")


def test_the_report_says_which_worker_ran_which_trials_only_for_several() -> None:
    """The report's tune rows name each worker process and its trials when workers ran them, and
    leave the row out for a search in one process (issue 34)."""
    from {{ cookiecutter.package_name }}.parts.tune import key_numbers

    trials = [
        {"trial": 1, "worker": "worker1", "pid": 42},
        {"trial": 2, "worker": "worker0", "pid": 41},
        {"trial": 3, "worker": "worker1", "pid": 42},
    ]
    metrics = {
        "best_hparams": {"learning_rate": 0.0031, "width": 56},
        "best_score": 0.93,
        "objective": "val_accuracy",
        "best_trial": 3,
        "trials_run": 3,
        "trials": trials,
    }
    rows = dict(key_numbers({**metrics, "workers": 2}))
    assert rows["ran by"] == "worker0 (pid 41) #2; worker1 (pid 42) #1, #3"
    assert "ran by" not in dict(key_numbers({**metrics, "workers": 1}))
