"""One definition of input-bound for 01's estimate and 03's measurement, and no ratio claimed from
pipelines whose timed rounds overlap (issue 42 §3.4)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from {{ cookiecutter.package_name }}.data import report, timing
from {{ cookiecutter.package_name }}.inputbound import INPUT_BOUND_AT
from {{ cookiecutter.package_name }}.observe import input_wait
from {{ cookiecutter.package_name }}.runner import summary

PIPELINE = 1000.0  # examples/s the configured pipeline delivers in these results


def _result(**more) -> dict:
    return {
        "examples_per_sec": PIPELINE,
        "first_epoch_examples_per_sec": PIPELINE,
        "naive_examples_per_sec": 500.0,
        "speedup_vs_naive": 2.0,
        "benchmark_seconds": 6.0,
        **more,
    }


@pytest.mark.parametrize("wait", [0.0, 0.17, 0.29, 0.31, 0.6])
def test_the_data_steps_estimate_and_trainings_measurement_agree(wait: float) -> None:
    """A model that would leave the pipeline's batches waiting `wait` of each step is called
    input-bound by 01 exactly when 03 calls that measured wait input-bound (01 said input-bound
    at 17 % while 03 said not at 19 %)."""
    model = PIPELINE / (1 - wait)
    estimate = report.input_bound_verdict(_result(), model)
    measured = input_wait.input_wait_summary(
        [{"seconds": 10.0, "input_wait_seconds": 10.0 * wait}], skip_first=False
    )
    assert estimate["input_bound"] is measured["input_bound"] is (wait >= INPUT_BOUND_AT)
    assert f"about {wait:.0%} of each step would wait" in estimate["verdict"]
    said = "not input-bound" if wait < INPUT_BOUND_AT else "input-bound"
    assert f": {said}, about" in estimate["verdict"]
    assert measured["input_verdict"].startswith(said)


def test_a_pipeline_faster_than_the_model_says_it_was_timed_alone() -> None:
    """80x the model's rate is the pipeline timed alone; 03's wait is the measurement."""
    verdict = report.input_bound_verdict(_result(), PIPELINE / 80)["verdict"]
    assert "not input-bound, about 0% of each step would wait" in verdict
    assert "80.0× that, timed without the model" in verdict and "03_train" in verdict


def test_the_data_step_reads_the_threshold_without_observe() -> None:
    """01 is the light step: its report module does not import observe/ (exporter, NVML)."""
    code = (
        "import sys; import {{ cookiecutter.package_name }}.data.report; "
        "print([m for m in sys.modules if m.startswith('{{ cookiecutter.package_name }}.observe')])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def _rows(naive: list[float], configured: list[float]) -> list[dict]:
    return [
        {"name": name, "round_rates": rates, "speedup_vs_naive": 1.0, "too_short": False}
        for name, rates in (("naive", naive), ("configured", configured))
    ]


def test_overlapping_rounds_give_no_ratio_but_a_reason() -> None:
    """Pipelines whose rounds overlap (the text smoke's '0.5x the naive one' from 6 s) are within
    noise: the ratios are withheld, the reason and the headline say so."""
    naive, configured = _rows([480.0, 700.0, 520.0], [300.0, 600.0, 250.0])
    result = _result(speedup_vs_naive=0.5, too_short=False, steps=[naive, configured])
    result.update(report.noise_numbers(naive, configured))
    report.withhold_ratios(result)
    assert result["within_noise"] is True and result["speedup_vs_naive"] is None
    assert configured["speedup_vs_naive"] is None
    reason = result[report.REASON_KEY]
    assert reason.startswith("Within noise, too short to compare: in benchmark_seconds=6")
    assert "480-700 examples/s" in reason and "250-600" in reason
    verdict = report.input_bound_verdict(result, None)["verdict"]
    assert "×" not in verdict and "Within noise" in verdict
    meta = {"dataset": "intents", "splits": {"train": {"count": 10}}}
    line = summary._data({**result, **meta, "train_count": 10, "validation_count": 2})
    assert "within noise, too short to compare" in line and "0.5×" not in line


def test_rounds_apart_keep_their_ratio() -> None:
    naive, configured = _rows([480.0, 500.0, 520.0], [900.0, 1000.0, 1100.0])
    result = _result(too_short=False, steps=[naive, configured])
    result.update(report.noise_numbers(naive, configured))
    report.withhold_ratios(result)
    assert result["within_noise"] is False and result["speedup_vs_naive"] == 2.0
    assert report.REASON_KEY not in result
    assert naive["speedup_vs_naive"] == 1.0  # the naive row is never noise against itself


def test_each_round_rate_is_kept_and_the_rate_is_their_median() -> None:
    """timing rows carry the rate of each round, so the noise rule can see the spread."""
    passes = [([100], [1.0], [10], True), ([100], [0.5], [10], True), ([100], [2.0], [10], True)]
    row = timing._row(timing.Variant("naive", "", None), passes, str)
    assert row["round_rates"] == [100.0, 200.0, 50.0]
    assert row["examples_per_sec"] == 100.0


def test_the_first_epoch_is_excepted_only_where_it_would_be_input_bound() -> None:
    slow_first = _result(first_epoch_examples_per_sec=PIPELINE / 4)
    assert (
        "except in the first epoch" in report.input_bound_verdict(slow_first, PIPELINE)["verdict"]
    )
    close = _result(first_epoch_examples_per_sec=PIPELINE * 0.9)
    assert "except" not in report.input_bound_verdict(close, PIPELINE)["verdict"]
