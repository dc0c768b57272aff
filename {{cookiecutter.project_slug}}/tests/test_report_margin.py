"""The headline names a winner between the model and its baseline only where the gap is beyond
noise on the test split's rows (issue 42 §3.9: "wins by 0.0069 ROC AUC" on 34 rows)."""

from __future__ import annotations

from {{ cookiecutter.package_name }}.runner import margin
from {{ cookiecutter.package_name }}.runner.summary import _beside


def _tables(rows: tuple[int, int], model: float, baseline: float) -> dict:
    per_class = {"<=50K": {"support": rows[0]}, ">50K": {"support": rows[1]}}
    return {
        "test_accuracy": 0.9,
        "test_roc_auc": model,
        "test_examples": sum(rows),
        "test_per_class": per_class,
        "baseline": {"name": "hist_gradient_boosting", "test_accuracy": 0.9, "roc_auc": baseline},
    }


def test_a_gap_on_34_rows_is_within_noise() -> None:
    said = _beside(_tables((26, 8), 0.9931, 0.9862))
    assert said.endswith(
        "within noise: they differ by 0.0069 ROC AUC, under two standard errors (0.0588) on 34 "
        "test rows"
    ), said
    assert "wins" not in said


def test_the_same_gap_on_16281_test_rows_names_the_winner() -> None:
    said = _beside(_tables((12435, 3846), 0.9131, 0.9062))
    assert said.endswith(": the model wins by 0.0069 ROC AUC"), said
    said = _beside(_tables((12435, 3846), 0.9062, 0.9131))
    assert said.endswith(": hist_gradient_boosting wins by 0.0069 ROC AUC"), said


def _text(rows: int, model: float, baseline: float) -> dict:
    return {
        "test_accuracy": model,
        "test_examples": rows,
        "test_per_class": {"a": {"support": rows // 2}, "b": {"support": rows - rows // 2}},
        "baseline": {"name": "tfidf_logreg", "test_accuracy": baseline, "seconds": 2.0},
    }


def test_accuracy_gaps_use_the_binomial_error() -> None:
    assert _beside(_text(100, 0.90, 0.88)).endswith(
        "within noise: they differ by 0.0200, under two standard errors (0.0600) on 100 test rows"
    )
    assert _beside(_text(3080, 0.93, 0.88)).endswith(": the model wins by 0.0500")
    assert _beside(_text(3080, 0.88, 0.93)).endswith(": the baseline wins by 0.0500")


def test_a_perfect_score_still_has_an_error_of_one_row() -> None:
    """1.0 on 34 rows is not certainty: the error is at least one row's worth, 1/34."""
    assert margin.standard_error("accuracy", 1.0, _text(34, 1.0, 1.0)) == 1 / 34
    assert margin.standard_error("roc_auc", 1.0, _tables((26, 8), 1.0, 1.0)) == 1 / 34
