"""The learning-rate range test's decisions: the ramp, the smoothing, when to stop, the suggestion.

One short training run raises the learning rate exponentially, one step at each rate (the caller's
`step(lr)` trains a copy of the model and returns the loss). The loss falls once the rate is large
enough to learn and explodes once it is too large; the suggestion is the rate where the smoothed
loss fell fastest against log(lr), the steepest descent (Smith's range test, as in fastai and
Lightning), which sits well below the rate that diverges.

Smoothing: a bias-corrected exponential moving average. Its memory, 1/(1-beta) steps, is a tenth
of the ramp by default (beta = 1 - 10/steps, between 0.5 and 0.98: 0.9 for 100 steps, fastai's
0.98 from 500): 0.98 on a 100-step ramp lags the raw loss by a factor of about three in the rate.
Even a tenth of the ramp lags: a moving average at step i averages the steps before it, so its
steepest fall comes later on the ramp than the loss's own, and the suggestion sat 1.4 to 2.7 times
above the true steepest rate of a known curve, and up to 3 times above it on digits (two replicas,
52 steps: 0.0296, where epoch 1 then diverged to a loss of 4.4 and a validation accuracy of 0.1003,
chance). So the moving average only watches for divergence while the ramp runs; the suggestion is
read, once it has ended, from the loss smoothed forwards and then backwards (`centered`: the same
average run both ways, which delays nothing), 0.85-0.9 times the true rate on the known curve.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .batch import FindError

MIN_POINTS = 10  # fewer finite losses than this cannot place a steepest descent
MIN_DROP = 0.01  # the smoothed loss must fall by this share of its value to count as descending


@dataclass(frozen=True)
class LrResult:
    """What the range test tried, what it measured, and the rate it suggests (with why)."""

    learning_rates: tuple[float, ...]
    losses: tuple[float, ...]
    smoothed: tuple[float, ...]
    suggestion: float
    index: int  # of the suggestion in learning_rates (the nearest below it for the fallback)
    stopped: str  # "diverged", "non_finite" or "end"
    reason: str
    settings: tuple[tuple[str, Any], ...] = ()  # the test's arguments, beta as used


def lr_schedule(min_lr: float, max_lr: float, steps: int) -> list[float]:
    """`steps` learning rates from min_lr to max_lr (both included), each a constant factor up."""
    _check_range(min_lr, max_lr)
    if steps < 2:
        raise FindError(f"A learning-rate ramp needs at least 2 steps, not {steps}.")
    ratio = max_lr / min_lr
    rates = [min_lr * ratio ** (i / (steps - 1)) for i in range(steps)]
    rates[-1] = max_lr
    return rates


def smooth(losses: Sequence[float], beta: float = 0.98) -> list[float]:
    """Bias-corrected exponential moving average: the first values are not pulled towards 0."""
    if not 0 < beta < 1:
        raise FindError(f"The smoothing factor beta must be between 0 and 1, not {beta}.")
    average, smoothed = 0.0, []
    for i, loss in enumerate(losses):
        average = beta * average + (1 - beta) * float(loss)
        smoothed.append(average / (1 - beta ** (i + 1)))
    return smoothed


def centered(losses: Sequence[float], beta: float) -> list[float]:
    """The losses smoothed forwards and then backwards with the same bias-corrected average:
    smooth as much, delayed by nothing. Only the finite prefix is smoothed (NaN after it)."""
    values = [float(loss) for loss in losses]
    finite = next((i for i, value in enumerate(values) if not math.isfinite(value)), len(values))
    if finite == 0:
        return [math.nan] * len(values)
    forward = smooth(values[:finite], beta)
    return smooth(forward[::-1], beta)[::-1] + [math.nan] * (len(values) - finite)


def suggest(
    learning_rates: Sequence[float], smoothed: Sequence[float], *, min_drop: float = MIN_DROP
) -> tuple[float, int, str]:
    """(rate, its index, why): the steepest descent of the smoothed loss against log(lr).

    The first tenth of the points (the average settling) and everything after the lowest
    smoothed loss (the divergence) are ignored, and non-finite losses end the curve. If the loss
    never falls by `min_drop` of its value, the fallback rule is one tenth of the rate at the
    lowest smoothed loss (no lower than the first rate tried).
    """
    rates = np.asarray(learning_rates, dtype=float)
    values = np.asarray(smoothed, dtype=float)
    if len(rates) != len(values):
        raise FindError(f"{len(rates)} learning rates do not match {len(values)} losses.")
    finite = len(values) if np.isfinite(values).all() else int(np.argmin(np.isfinite(values)))
    if finite < MIN_POINTS:
        raise FindError(
            f"The range test has {finite} finite losses, fewer than the {MIN_POINTS} "
            f"a suggestion needs: start the ramp lower or give it more steps."
        )
    skip = max(1, finite // 10)
    floor = values[:finite].min()  # the first point at the minimum, float wobble aside
    lowest = int(np.argmax(values[:finite] <= floor + 1e-9 * max(1.0, abs(floor))))
    window = slice(skip, lowest + 1)
    drop = values[skip] - values[lowest]
    if lowest - skip >= 2 and drop > min_drop * abs(values[skip]):
        slopes = np.gradient(values[window], np.log(rates[window]))
        index = skip + int(np.argmin(slopes))
        rate = float(rates[index])
        return rate, index, f"steepest descent of the smoothed loss at {rate:.2e}."
    rate = max(float(rates[lowest]) / 10, float(rates[0]))
    index = int(np.searchsorted(rates, rate, side="right")) - 1
    return (
        rate,
        index,
        f"the smoothed loss never fell by {min_drop * 100:g} %, so the fallback rule: one tenth "
        f"of the rate at its lowest point ({rates[lowest]:.2e}), no lower than the first rate "
        f"tried, {rate:.2e}.",
    )


def range_test(
    step: Callable[[float], float],
    *,
    min_lr: float = 1e-6,
    max_lr: float = 1.0,
    steps: int = 100,
    beta: float | None = None,
    diverge_factor: float = 4.0,
) -> LrResult:
    """Run step(lr) along the ramp until the end, a non-finite loss, or divergence (the smoothed
    loss above diverge_factor times its best), and suggest a rate. beta=None: 1 - 10/steps,
    clipped to [0.5, 0.98] (the module's docstring says why)."""
    _check_range(min_lr, max_lr)
    if steps < MIN_POINTS:
        raise FindError(f"The range test needs at least {MIN_POINTS} steps, not {steps}.")
    if beta is None:
        beta = min(0.98, max(0.5, 1 - 10 / steps))
    if not 0 < beta < 1:
        raise FindError(f"The smoothing factor beta must be between 0 and 1, not {beta}.")
    if not diverge_factor > 1:
        raise FindError(f"diverge_factor must be larger than 1, not {diverge_factor}.")
    rates, losses, smoothed = [], [], []
    average, best, stopped = 0.0, math.inf, "end"
    for i, rate in enumerate(lr_schedule(min_lr, max_lr, steps)):
        loss = float(step(rate))
        rates.append(rate)
        losses.append(loss)
        if not math.isfinite(loss):
            smoothed.append(math.nan)
            stopped = "non_finite"
            break
        average = beta * average + (1 - beta) * loss
        smoothed.append(average / (1 - beta ** (i + 1)))
        best = min(best, smoothed[-1])
        if best > 0 and smoothed[-1] > diverge_factor * best:
            stopped = "diverged"
            break
    suggestion, index, reason = suggest(rates, centered(losses, beta))
    settings = {
        "min_lr": min_lr,
        "max_lr": max_lr,
        "steps": steps,
        "beta": beta,
        "diverge_factor": diverge_factor,
    }
    return LrResult(
        tuple(rates),
        tuple(losses),
        tuple(smoothed),
        suggestion,
        index,
        stopped,
        reason,
        tuple(settings.items()),
    )


def lr_record(result: LrResult) -> dict[str, Any]:
    """metrics/lr_finder.json: every rate tried with its loss, the suggestion and why.

    A non-finite loss stays a float (NaN or Infinity in the file, as Python's json writes it), so
    the lists stay aligned with the rates.
    """
    return {
        "learning_rates": list(result.learning_rates),
        "losses": list(result.losses),
        "smoothed": list(result.smoothed),
        "suggestion": result.suggestion,
        "index": result.index,
        "stopped": result.stopped,
        "reason": result.reason,
        "steps_run": len(result.learning_rates),
        "settings": dict(result.settings),
    }


def _check_range(min_lr: float, max_lr: float) -> None:
    if not 0 < min_lr < max_lr:
        raise FindError(
            f"The learning-rate range needs 0 < min_lr < max_lr, not {min_lr} to {max_lr}."
        )
