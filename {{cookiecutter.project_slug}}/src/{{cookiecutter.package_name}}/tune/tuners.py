"""The tuners: random search that tries training's defaults first, or Hyperband, in tuning/tuner/.

Why the defaults first: a search is worth its cost only by what it finds beyond the recipe that
training runs untuned; trial #1 of a random search trains exactly that recipe, so the score of the
defaults and the best score come from one run, on the same data and budget.

A trial that fails (a NaN loss, out of memory, an error of the builder or a value training refuses)
is recorded by keras-tuner as FAILED, with its message, and the next trial starts; only
CONSECUTIVE_FAILURES failures in a row end the search (keras-tuner's RuntimeError), since then
something every trial shares is broken, not one set of values.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..parts.tune import TUNING_DIR

TUNER_DIR = f"{TUNING_DIR}/tuner"
CONSECUTIVE_FAILURES = 3  # keras-tuner's max_consecutive_failed_trials
# Hyperband trains many models for a few epochs and the best third of them three times as long.
HYPERBAND_FACTOR = 3


def make_tuner(kt: Any, params: dict[str, Any], hypermodel: Any, folder: Path) -> Any:
    """Random search (defaults first) or Hyperband in run_dir/tuning/tuner, capped at max_trials."""
    common = {
        "directory": str(folder / Path(TUNER_DIR).parent),
        "project_name": Path(TUNER_DIR).name,
        "overwrite": params["overwrite"],
    }
    oracle_args = {
        "objective": kt.Objective("val_accuracy", direction="max"),
        "seed": params["seed"],
        "max_consecutive_failed_trials": CONSECUTIVE_FAILURES,
    }
    if params["algorithm"] == "random":
        oracle = defaults_first(kt)(max_trials=params["max_trials"], **oracle_args)
        return kt.Tuner(oracle=oracle, hypermodel=hypermodel, **common)
    tuner = kt.Hyperband(
        hypermodel,
        max_epochs=params["epochs"],
        factor=HYPERBAND_FACTOR,
        # Each Hyperband iteration runs at least one trial; the cap below ends the search.
        hyperband_iterations=params["max_trials"],
        objective=oracle_args["objective"],
        seed=params["seed"],
        max_consecutive_failed_trials=CONSECUTIVE_FAILURES,
        **common,
    )
    tuner.oracle.max_trials = params["max_trials"]
    return tuner


def defaults_first(kt: Any) -> type:
    """keras-tuner's RandomSearchOracle, whose first trial holds every default of the space."""

    class DefaultsFirst(kt.oracles.RandomSearchOracle):
        def populate_space(self, trial_id: str) -> dict[str, Any]:
            if self.trials:  # the defaults ran already (or a resumed search has trials)
                return super().populate_space(trial_id)
            values = kt.HyperParameters()
            for hp in self.hyperparameters.space:
                values.merge([hp])
                if values.is_active(hp):  # a conditional value only when its parent allows it
                    values.values[hp.name] = hp.default
            return {"status": "RUNNING", "values": values.values}

    return DefaultsFirst
