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

import json
import os
import socket
import time
from pathlib import Path
from typing import Any

from ..parts.tune import TUNING_DIR
from ..writes import write_json
from .space import objective

TUNER_DIR = f"{TUNING_DIR}/tuner"
# In each trial's folder (tuning/tuner/trial_NN/): every process that started the trial, in order;
# more than one when a worker died and another ran the trial again.
RAN_BY_FILE = "ran_by.json"
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
        "objective": kt.Objective(objective(), direction="max"),
        "seed": params["seed"],
        "max_consecutive_failed_trials": CONSECUTIVE_FAILURES,
    }
    if params["algorithm"] == "random":
        oracle = defaults_first(kt)(max_trials=params["max_trials"], **oracle_args)
        return recording(kt.Tuner)(oracle=oracle, hypermodel=hypermodel, **common)
    tuner = recording(kt.Hyperband)(
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


def recording(base: type) -> type:
    """The tuner class `base`, noting in each trial's folder which process ran it (RAN_BY_FILE):
    keras-tuner's oracle forgets which tuner ran a trial once it ends."""

    class Recording(base):
        def on_trial_begin(self, trial: Any) -> None:
            super().on_trial_begin(trial)
            self.trial_begun = trial.trial_id  # trials.Progress numbers its lines by it
            note_runner(Path(self.get_trial_dir(trial.trial_id)), self.tuner_id)

    return Recording


def note_runner(trial_dir: Path, tuner_id: str) -> None:
    """Add this process (tuner id, pid, host) to the trial's RAN_BY_FILE."""
    runs = ran_by(trial_dir)
    here = {"tuner_id": tuner_id, "pid": os.getpid(), "host": socket.gethostname()}
    write_json(trial_dir / RAN_BY_FILE, [*runs, {**here, "started": round(time.time(), 3)}])


def ran_by(trial_dir: Path) -> list[dict[str, Any]]:
    """The processes that started the trial in `trial_dir`, oldest first ([] when none noted)."""
    path = trial_dir / RAN_BY_FILE
    try:
        runs = json.loads(path.read_text(encoding="utf-8"))
    except (FileNotFoundError, json.JSONDecodeError):
        return []
    return runs if isinstance(runs, list) else []


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
