"""The learning-rate range test at the edges of each of its rules: the ramp's and the smoothing's
limits, which points the steepest descent is looked for in, when the loss has fallen enough to
count, when it has diverged, and what the record keeps.

test_find.py checks the rules on a realistic curve, where a rule moved by one point or a limit
moved by one step still gives a rate near the right one; these curves sit on the limits.
"""

from __future__ import annotations

import math

import pytest

from {{ cookiecutter.package_name }}.find import FindError, lr_record, lr_schedule, range_test, smooth, suggest

RAMP = lr_schedule(1e-4, 1.0, 10)


def _losses(values):
    """step(lr) for the range test: the next value of the list, whatever the rate."""
    values = iter(values)
    return lambda lr: next(values)


def test_a_ramp_of_two_steps_is_its_two_ends() -> None:
    assert lr_schedule(1e-3, 1.0, 2) == [1e-3, 1.0]
    with pytest.raises(FindError) as error:
        lr_schedule(1e-3, 1.0, 1)
    assert str(error.value) == "A learning-rate ramp needs at least 2 steps, not 1."


@pytest.mark.parametrize("beta", [0.0, 1.0, 1.5, -0.5])
def test_smoothing_refuses_a_beta_outside_0_to_1(beta: float) -> None:
    with pytest.raises(FindError) as error:
        smooth([1.0, 2.0], beta=beta)
    assert str(error.value) == f"The smoothing factor beta must be between 0 and 1, not {beta}."


def test_a_range_equal_at_both_ends_is_refused() -> None:
    with pytest.raises(FindError, match=r"0 < min_lr < max_lr, not 0\.1 to 0\.1\."):
        range_test(lambda lr: 1.0, min_lr=0.1, max_lr=0.1)


def test_rates_and_losses_of_different_lengths_are_refused() -> None:
    with pytest.raises(FindError) as error:
        suggest(RAMP, [1.0] * 9)
    assert str(error.value) == "10 learning rates do not match 9 losses."


def test_ten_finite_losses_are_enough_and_nine_are_not() -> None:
    falling = [10.0, 9.0, 8.0, 6.0, 3.0, 2.5, 2.4, 2.3, 2.2, 2.1]
    assert suggest(RAMP, falling)[2].startswith("steepest descent")
    with pytest.raises(FindError, match="has 9 finite losses, fewer than the 10"):
        suggest(RAMP, [*falling[:9], math.nan])
    result = range_test(_losses(falling), min_lr=1e-4, max_lr=1.0, steps=10)
    assert result.stopped == "end" and len(result.losses) == 10


@pytest.mark.parametrize("points", [10, 19, 20])
def test_the_first_tenth_of_the_points_is_skipped_no_fewer_than_one(points: int) -> None:
    """A sharp fall just before the first point looked at: the average settling, never the
    suggestion. With 20 points two are skipped (20 // 10), with 10 to 19 one; after the fall the
    loss falls ever more slowly, so the first point looked at is the steepest."""
    skip = max(1, points // 10)
    gentle = [2.0 + 0.9 * 0.5**k for k in range(points - skip)]
    values = [20.0] * (skip - 1) + [19.0] + gentle
    rate, index, reason = suggest(lr_schedule(1e-4, 1.0, points), values)
    assert reason.startswith("steepest descent")
    assert index == skip


def _at_floor(floor: float, near: float, points: int = 12) -> list[float]:
    """A flat curve (no descent: the fallback) with its lowest value at point 8 and a value
    `near` above it at point 4."""
    values = [floor + 1.0 + i * 1e-3 for i in range(points)]
    values[4], values[8] = floor + near, floor
    return values


@pytest.mark.parametrize(
    ("floor", "near", "lowest"),
    [
        (1000.0, 5e-7, 4),  # within 1e-9 of 1000 (1e-6): float wobble, the same minimum
        (1000.0, 5e-6, 8),
        (0.5, 5e-10, 4),  # below 1: within 1e-9 absolute
        (0.5, 1.5e-9, 8),
    ],
)
def test_the_lowest_point_is_the_first_within_float_wobble_of_the_minimum(
    floor: float, near: float, lowest: int
) -> None:
    rates = lr_schedule(1e-4, 1.0, 12)
    rate, index, reason = suggest(rates, _at_floor(floor, near), min_drop=0.9)
    assert f"at its lowest point ({rates[lowest]:.2e})" in reason
    assert rate == pytest.approx(rates[lowest] / 10)


def test_the_descent_ends_at_the_lowest_loss_included() -> None:
    """The steepest fall is the very last one, into the lowest loss; after it the loss rises
    (and falls again, more steeply, but that is past the divergence)."""
    values = [10.0, 9.9, 9.8, 9.7, 9.6, 9.5, 2.0, 2.5, 9.0, 3.0, 3.2, 3.4]
    rate, index, _ = suggest(lr_schedule(1e-4, 1.0, 12), values)
    assert index == 6


def test_a_descent_of_two_points_past_the_skipped_one_counts() -> None:
    values = [10.0, 9.0, 6.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]
    assert suggest(RAMP, values)[2].startswith("steepest descent")


@pytest.mark.parametrize(("lowest", "steepest"), [(1.0, False), (0.999, True)])
def test_a_fall_of_exactly_min_drop_is_not_a_descent(lowest: float, steepest: bool) -> None:
    """min_drop is a share of the loss where the descent starts (2.0 here): 50 % of 2.0 is 1.0."""
    values = [3.0, 2.0, 1.5, 1.2, lowest, 1.5, 1.6, 1.7, 1.8, 1.9]
    reason = suggest(RAMP, values, min_drop=0.5)[2]
    assert reason.startswith("steepest descent") is steepest, reason


def test_min_drop_is_a_share_of_the_loss_not_an_absolute_fall() -> None:
    """100 to 99.5 is a fall of 0.5 %: below the default 1 %, whatever the loss's scale."""
    values = [101.0, 100.0, 99.9, 99.8, 99.7, 99.6, 99.5, 99.6, 99.7, 99.8]
    reason = suggest(RAMP, values)[2]
    assert reason.startswith("the smoothed loss never fell by 1 %, so the fallback rule: ")


def test_the_slope_is_against_log_lr_not_the_step_number() -> None:
    """Falls of 1 over a tenfold rise in the rate, then one over a rise of a fifth: against
    log(lr) the second is the steeper (between the points 5 and 6)."""
    rates = [1e-5, 1e-4, 1e-3, 1e-2, 2e-2, 3e-2, 3.6e-2, 4e-2, 5e-2, 6e-2, 7e-2]
    values = [10.0, 9.0, 8.0, 7.0, 6.9, 6.8, 5.8, 5.7, 5.6, 5.5, 5.4]
    assert suggest(rates, values)[1] == 5  # against the step number: 1


def test_the_fallback_says_the_share_it_looked_for() -> None:
    flat = [1.0] * 10
    assert "never fell by 1 %" in suggest(RAMP, flat)[2]
    assert "never fell by 25 %" in suggest(RAMP, flat, min_drop=0.25)[2]


def test_the_defaults_are_recorded_as_used() -> None:
    result = range_test(lambda lr: 1.0)
    assert dict(result.settings) == {
        "min_lr": 1e-6,
        "max_lr": 1.0,
        "steps": 100,
        "beta": 0.9,
        "diverge_factor": 4.0,
    }
    assert result.learning_rates[0] == 1e-6 and result.learning_rates[-1] == 1.0
    assert dict(range_test(lambda lr: 1.0, steps=600).settings)["beta"] == 0.98  # at most
    assert dict(range_test(lambda lr: 1.0, steps=10).settings)["beta"] == 0.5  # at least


def test_the_smoothed_losses_are_the_bias_corrected_average() -> None:
    losses = [3.0, 2.0, 2.5, 1.0, 1.5, 1.2, 0.8, 0.9, 0.7, 0.75]
    result = range_test(_losses(losses), steps=10, beta=0.7)
    assert result.smoothed == pytest.approx(smooth(losses, beta=0.7), rel=1e-12)


def test_a_non_finite_loss_is_a_nan_in_the_smoothed_curve() -> None:
    result = range_test(_losses([1.0] * 12 + [math.inf]), steps=20)
    assert result.stopped == "non_finite" and math.isnan(result.smoothed[-1])
    assert isinstance(result.smoothed[-1], float)


def test_a_loss_of_zero_is_no_basis_for_divergence() -> None:
    """A best loss of 0 would make every later loss a divergence (any loss > 4 × 0)."""
    result = range_test(_losses([0.0] + [0.5] * 11), steps=12)
    assert result.stopped == "end" and len(result.losses) == 12


def test_a_loss_exactly_at_the_factor_has_not_diverged() -> None:
    """beta 0.5 keeps the arithmetic exact: 1, then 5.5 smooths to exactly 4.0 = 4 × best."""
    result = range_test(_losses([1.0, 5.5] + [4.0] * 10), steps=12, beta=0.5)
    assert result.smoothed[:3] == (1.0, 4.0, 4.0)
    assert result.stopped == "end" and len(result.losses) == 12


def test_the_lr_record_names_every_field() -> None:
    result = range_test(_losses([3.0, 2.0, 1.0, 0.5, 0.4, 0.3, 0.3, 0.3, 0.3, 0.3]), steps=10)
    record = lr_record(result)
    assert record == {
        "learning_rates": list(result.learning_rates),
        "losses": list(result.losses),
        "smoothed": list(result.smoothed),
        "suggestion": result.suggestion,
        "index": result.index,
        "stopped": "end",
        "reason": result.reason,
        "steps_run": 10,
        "settings": dict(result.settings),
    }
