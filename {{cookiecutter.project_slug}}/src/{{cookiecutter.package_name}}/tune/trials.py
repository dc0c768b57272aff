"""Following a search: a progress line per trial and epoch, and each trial as metrics keep it."""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Any

import keras

from ..progress import line
from .space import objective, training_values
from .tuners import TUNER_DIR, ran_by


class Progress(keras.callbacks.Callback):
    """One line per trial (its values) and per epoch (its scores), instead of keras-tuner's display.

    keras-tuner deep-copies the callbacks of every trial; this one is shared, so it counts trials.
    """

    def __init__(self, max_trials: int, epochs: int, verbose: bool) -> None:
        super().__init__()
        self.max_trials, self.epochs, self.verbose = max_trials, epochs, verbose
        self.built: list[dict[str, Any]] = []  # the values of each model built, in order
        self.trial = 0
        self.started = 0.0
        # The tuner (search.py sets it): its trial_begun is the id of the trial being trained. A
        # worker's own count said "Trial #1" in every worker's log for trials #1 and #2.
        self.tuner: Any = None

    def __deepcopy__(self, memo: dict) -> Progress:
        return self

    def on_train_begin(self, logs: dict | None = None) -> None:
        self.trial += 1
        begun = getattr(self.tuner, "trial_begun", None)
        number = self.trial if begun is None else trial_number(begun)
        if self.verbose:
            values = ", ".join(f"{key}={shown(value)}" for key, value in self.built[-1].items())
            line(f"Trial #{number} of at most {self.max_trials}: {values}")

    def on_epoch_begin(self, epoch: int, logs: dict | None = None) -> None:
        self.started = time.perf_counter()

    def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
        if self.verbose and logs:
            line(
                f"  epoch {epoch + 1}/{self.epochs}: accuracy {logs.get('accuracy', 0):.4f}, "
                f"{objective()} {logs.get(objective(), 0):.4f} "
                f"({time.perf_counter() - self.started:.1f} s)"
            )


def completed(tuner: Any) -> int:
    """Trials already completed: those of a reloaded search (overwrite=False), else 0."""
    return sum(trial.status == "COMPLETED" for trial in tuner.oracle.trials.values())


def trial_record(
    trial: Any, folder: Path, space: dict[str, dict[str, Any]] | None = None
) -> dict[str, Any]:
    """One trial for metrics/tune.json: its id, status, score, epochs and values, and the
    processes that ran it (the last one's tuner id and pid as `worker` and `pid`)."""
    values = trial.hyperparameters.values
    score = trial.score
    record = {
        "trial": trial_number(trial.trial_id),
        "trial_id": trial.trial_id,
        "status": str(trial.status),
        "score": None if score is None or not math.isfinite(score) else float(score),
        # best_step counts from this trial's first epoch; a Hyperband trial may continue another.
        "best_epoch": (
            None
            if trial.best_step is None
            else int(values.get("tuner/initial_epoch", 0)) + int(trial.best_step) + 1
        ),
        "epochs": int(values.get("tuner/epochs", 0)) or None,
        "hparams": training_values(values, space),
    }
    runs = ran_by(folder / TUNER_DIR / f"trial_{trial.trial_id}")
    last = runs[-1] if runs else {}
    record.update(worker=last.get("tuner_id"), pid=last.get("pid"), ran_by=runs)
    if trial.status != "COMPLETED":
        record["error"] = reason(trial.message) if trial.message else "no message"
    return record


def trial_number(trial_id: str) -> int:
    """The trial's number as the progress lines show it: keras-tuner's id counts from 0."""
    return int(trial_id) + 1


def shown(value: object) -> str:
    """A value as the progress lines and tables show it: 0.00123, 32, cosine."""
    return f"{value:.3g}" if isinstance(value, float) else str(value)


def reason(message: str) -> str:
    """Why a trial failed, from keras-tuner's traceback: its last line, the exception's module
    path left out ("FailedTrialError: the loss is not a number …", "ValueError: …")."""
    text = last_line(message)
    head, colon, rest = text.partition(": ")
    if colon and " " not in head:
        return f"{head.rsplit('.', 1)[-1]}: {rest}"
    return text


def last_line(text: object) -> str:
    """The last non-empty line of an error or traceback, without its final full stop."""
    lines = [line.strip() for line in str(text).splitlines() if line.strip()]
    return (lines[-1] if lines else "no message").rstrip(".")
