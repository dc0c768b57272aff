"""Other table models trained beside the exported one (`compare_models`, issue 44's acceptance:
every table model and baseline in one run): the refusal before TensorFlow loads, both models'
entries from one tiny run, and a headline that names the best of all models and baselines."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from tables import make_table_run

from {{ cookiecutter.package_name }} import train
from {{ cookiecutter.package_name }}.runner import numbers, summary
from {{ cookiecutter.package_name }}.tasks.tabular import compare, models, scores, task
from {{ cookiecutter.package_name }}.train import Params, TrainError, check_values

SENTENCE = (
    "compare_models='wide_deep,xgb' is not allowed: use a comma-separated list of wide_deep, "
    "dcn_v2, tabm (each once), or an empty string for none."
)
EARLY = """
import sys
from {{ cookiecutter.package_name }} import seam
try:
    seam.early_check({"compare_models": "wide_deep,xgb"})
except Exception as error:
    print(error)
print("tensorflow" in sys.modules)
"""


def test_the_names_are_the_task_models() -> None:
    assert compare.NAMES == task.MODELS and set(compare.RECIPES) == set(task.MODELS)


def test_an_unknown_model_is_refused_in_one_sentence_before_tensorflow_loads() -> None:
    done = subprocess.run(
        [sys.executable, "-c", EARLY], capture_output=True, text=True, timeout=120
    )
    assert done.stdout.splitlines() == [SENTENCE, "False"], done.stdout + done.stderr
    with pytest.raises(TrainError, match="^compare_models='wide_deep,xgb' is not allowed"):
        check_values(Params(compare_models="wide_deep,xgb"))
    assert compare.parse(" wide_deep, dcn_v2 ") == ["wide_deep", "dcn_v2"]
    assert compare.parse("") == []


def test_a_tiny_run_scores_each_compared_model_on_the_same_test_rows(tmp_path: Path) -> None:
    folder = make_table_run(tmp_path / "run")
    params = Params(model="tabm", epochs=1, batch_size=64, width=32, compare_models="wide_deep")
    trained = train.run(folder, params, verbose=False)
    written = json.loads((folder / "metrics" / "train.json").read_text(encoding="utf-8"))
    for metrics in (trained, written):
        (entry,) = metrics["compared"]
        assert entry["name"] == "wide_deep" and entry["epochs"] == 1, entry
        assert 0 <= entry["roc_auc"] <= 1 and 0 < entry["test_accuracy"] <= 1, entry
        assert entry["seconds"] > 0 and entry["global_batch_size"] == 64, entry
    assert trained["model"] == "tabm" and isinstance(trained["test_roc_auc"], float)
    rows = dict(numbers.compared_rows(written))
    assert set(rows) == {
        "tabm (exported)",
        "wide_deep (trained beside, not exported)",
        "hist_gradient_boosting (scikit-learn)",
        "logistic_regression_one_hot (scikit-learn)",
    }, rows
    assert "  every model and baseline on the same test rows, best first:" in scores.test_lines(
        written
    )


def _metrics(model: float, compared: float, trees: float) -> dict:
    """train.json's keys the headline reads: 16,281 test rows, 3,846 positives (census)."""
    per_class = {"<=50K": {"support": 12435}, ">50K": {"support": 3846}}
    return {
        "model": "tabm",
        "test_accuracy": 0.87,
        "test_roc_auc": model,
        "test_examples": 16281,
        "test_per_class": per_class,
        "compared": [{"name": "dcn_v2", "test_accuracy": 0.86, "roc_auc": compared}],
        "baseline": {
            "name": "hist_gradient_boosting",
            "test_accuracy": 0.871,
            "roc_auc": trees,
            "others": [{"name": "logistic_regression", "test_accuracy": 0.85, "roc_auc": 0.906}],
        },
    }


def test_the_headline_names_the_best_of_models_and_baselines() -> None:
    said = summary._beside(_metrics(0.900, 0.930, 0.926))  # a compared model beyond noise
    assert said.startswith(" and ROC AUC **0.9000** for tabm, beside ROC AUC / accuracy "), said
    assert "**0.9300** / 0.8600 for dcn_v2; **0.9260** / 0.8710 for hist_gradient_boosting" in said
    assert "(dcn_v2 trained beside it, not exported; scikit-learn, same split)" in said
    assert said.endswith(": dcn_v2 wins by 0.0300 ROC AUC"), said
    said = summary._beside(_metrics(0.9233, 0.9101, 0.9262))  # the trees, within noise
    assert said.endswith(
        ": hist_gradient_boosting scores highest, within noise: they differ by 0.0029 ROC AUC, "
        "under two standard errors (0.0060) on 16,281 test rows"
    ), said
    wins = summary._beside(_metrics(0.95, 0.91, 0.92))
    assert wins.endswith(": the model wins by 0.0300 ROC AUC"), wins
    assert "\n" not in said


def test_a_compared_model_that_diverges_is_said_not_raised(tmp_path: Path, monkeypatch) -> None:
    """NaN probabilities (a rate too high for the batch) give no score and a sentence; the run
    goes on to save its main model."""
    import keras

    def nan_model(name, slots, classes, **_):
        inputs = keras.Input((len(slots),))
        outputs = keras.layers.Dense(classes)(inputs) * float("nan")
        return keras.Model(inputs, outputs)

    monkeypatch.setattr(models, "build_model", nan_model)
    folder = make_table_run(tmp_path / "run")
    meta = json.loads((folder / "data" / "meta.json").read_text(encoding="utf-8"))
    params = Params(epochs=1, compare_models="dcn_v2")
    loop = SimpleNamespace(folder=folder, meta=meta, params=params, global_batch=64, weighting=None)
    said: list[str] = []
    (entry,) = compare.train_compared(loop, said.append)
    assert entry["diverged"] and entry["roc_auc"] is None and entry["test_accuracy"] is None
    assert said[-1].endswith("its training diverged (probabilities not finite): no score."), said
    assert dict(numbers.compared_rows(_metrics(0.9, 0.9, 0.9) | {"compared": [entry]}))
