"""The ranges of the whole-number parameters that mean the same in every step that takes them.

`epochs` wherever a step trains, `seed` wherever one draws: one range and one sentence wherever
the value is given, so a value one step refuses is not run for ever by another (an epochs of
999999999999 was refused by training and searched for ever by another step). The runner's
pre-flight applies them to every selected notebook's values before TensorFlow loads
(steps.check_ranges), which takes seconds rather than the minute an import can take on a busy
machine; each step's own checker applies them again (`whole`), with its own error class. This
module imports nothing heavy.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from . import seam
from .artifacts import StepError

MAX_EPOCHS = 100_000  # far beyond any real run: a larger number is a typo, not a plan
MAX_TRIALS = 10_000  # models one search may try: far beyond any search that ends this year
MAX_SEED = 2**32 - 1  # NumPy's seeds end there (keras.utils.set_random_seed seeds NumPy)

# name: (smallest, largest or None)
RANGES: dict[str, tuple[int, int | None]] = {
    "epochs": (1, MAX_EPOCHS),
    "max_trials": (1, MAX_TRIALS),
    "batch_size": (1, None),
    "seed": (0, MAX_SEED),
    "patience": (0, MAX_EPOCHS),
    "logical_cpus": (0, None),
    "version": (1, None),  # export/<version>/: TF Serving's versions are positive
    "iterations": (1, None),
    "calibration_examples": (1, None),
    "matmul_repeats": (1, None),
}


def allowed(name: str) -> str:
    """What the range of `name` allows, as the sentences say it ("from 1 to 100000")."""
    minimum, maximum = RANGES[name]
    return f">= {minimum}" if maximum is None else f"from {minimum} to {maximum}"


def whole(name: str, value: Any, error: type[StepError] = StepError, note: str = "") -> None:
    """Refuse `value` for `name` in one sentence (`error`) unless it is a whole number in range."""
    minimum, maximum = RANGES[name]
    if (
        isinstance(value, bool)
        or not isinstance(value, int)
        or value < minimum
        or (maximum is not None and value > maximum)
    ):
        raise error(f"{name}={value!r} is not allowed: use a whole number {allowed(name)}{note}.")


def check(values: Mapping[str, Any]) -> None:
    """Refuse the first whole number out of its name's range among `values` (one step's).

    Only whole numbers are judged here: a value of another type (batch_size=auto, a typo'd
    string) is the step's own checker's to accept or refuse, with its own sentence.
    """
    for name, value in values.items():
        if name in RANGES and isinstance(value, int) and not isinstance(value, bool):
            whole(name, value)
    seam.early_check(dict(values))  # the task's own (text: a preset name offline)
