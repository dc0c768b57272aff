"""Step 2, tuning: keras-tuner searches the model builder's knobs on the data pipeline of step 1.

    from <package> import tune
    result = tune.search("artifacts/run", algorithm="random", max_trials=4, epochs=2)

Each trial builds models.build_model with values keras-tuner chose for learning_rate, width and
dropout (the names training takes), trains it on data.make_dataset's batches and scores it by
val_accuracy, so what is tuned is exactly what step 3 trains. A search writes into the run folder:

    tuning/tuner/              keras-tuner's own folder: its state and one folder per trial
    tuning/best_hparams.json   the best values, which training (step 3) uses when not given
    metrics/tune.json          best_score, trials_run, seconds, best_hparams, every trial

Why `overwrite=True` by default: keras-tuner keeps its state in the tuner folder and, finding one,
reloads it instead of searching; a finished search then returns at once with the old trials,
whatever changed in the data since. `overwrite=False` resumes an interrupted search instead.

keras-tuner comes with the project's `tune` extra (pip install -e ".[tune]"); only this module
imports it, so training and every other step run without it.
"""

from __future__ import annotations

import json
import math
import os
import time
from pathlib import Path
from typing import Any

import keras
import tensorflow as tf

from . import data, env, models
from .artifacts import StepError, resolve_run_dir, write_json, write_metrics
from .train.devices import resolve_jit
from .train.params import TUNED_FILE, effective_learning_rate

ALGORITHMS = ("random", "hyperband")
OBJECTIVE = "val_accuracy"
TUNER_DIR = "tuning/tuner"
# What a search was started with, kept in the tuner folder: a resumed search must match it.
REQUEST_FILE = "request.json"
SAME_SEARCH = ("algorithm", "model", "epochs", "batch_size", "seed")
# Hyperband trains many models for a few epochs and the best third of them three times as long.
HYPERBAND_FACTOR = 3


class TuneError(StepError):
    """A tuning parameter was refused, or the search found nothing; nothing was written."""


def search(
    run_dir: str | os.PathLike[str],
    *,
    algorithm: str = "random",
    max_trials: int = 4,
    epochs: int = 2,
    batch_size: int = 64,
    model: str = "small_cnn",
    seed: int = 42,
    overwrite: bool = True,
    verbose: bool = True,
) -> dict[str, Any]:
    """Search, write tuning/best_hparams.json and metrics/tune.json; return the metrics.

    `algorithm` "random" tries `max_trials` random points of search_space(model) for `epochs`
    epochs each; "hyperband" trains up to `max_trials` models for 1 to `epochs` epochs, the
    promising ones longer (worth it from about 9 epochs on). `batch_size` is the batch of every
    trial; learning rates follow training's LR_RULE, so the tuned learning_rate means in step 3
    what it meant here. Runs under the global dtype policy (float32 unless set), on one device.
    """
    params = check_params(
        algorithm=algorithm,
        max_trials=max_trials,
        epochs=epochs,
        batch_size=batch_size,
        model=model,
        seed=seed,
        overwrite=overwrite,
    )
    kt = require_keras_tuner()
    folder = resolve_run_dir(run_dir, create=False)
    meta = data.read_meta(folder)  # a folder without data names 01_data
    shape, num_classes = [int(side) for side in meta["image_shape"]], int(meta["num_classes"])
    try:
        models.check_model(model, shape, num_classes)
    except models.ModelError as error:
        raise TuneError(str(error)) from None
    train_count = int(meta["splits"]["train"]["count"])
    if train_count < batch_size:
        raise TuneError(
            f"batch_size={batch_size} is larger than the {train_count} training examples in "
            f"{folder / 'data'}: use at most {train_count}."
        )

    keras.utils.set_random_seed(seed)
    space = search_space(model)
    jit = resolve_jit("auto", env.list_gpus())
    progress = _Progress(max_trials, epochs, verbose)
    hypermodel = _hypermodel(model, shape, num_classes, space, batch_size, jit, progress.built)
    if not overwrite:
        _check_same_search(folder, params)
    tuner = _tuner(kt, params, hypermodel, folder)  # overwrite=True empties tuning/tuner/
    write_json(folder / TUNER_DIR / REQUEST_FILE, {key: params[key] for key in SAME_SEARCH})
    before = progress.trial = _completed(tuner)
    batches = data.make_dataset(
        folder, "train", batch_size, seed=seed, repeat=True, drop_remainder=True
    )
    # A known number of batches: Keras otherwise warns at the end of each validation pass.
    val_batches = math.ceil(int(meta["splits"]["validation"]["count"]) / batch_size)
    validation = data.make_dataset(folder, "validation", batch_size).apply(
        tf.data.experimental.assert_cardinality(val_batches)
    )
    started = time.perf_counter()
    try:
        tuner.search(
            batches,
            validation_data=validation,
            epochs=epochs,
            steps_per_epoch=train_count // batch_size,
            shuffle=False,  # make_dataset shuffles; Keras would only warn that it cannot
            callbacks=[progress],
            verbose=0,  # keras-tuner's own display clears the notebook cell after every trial
        )
    except RuntimeError as error:  # keras-tuner gives up after 3 failed trials in a row
        raise TuneError(f"The search stopped: {_last_line(error)}.") from None
    seconds = time.perf_counter() - started

    trials = [_trial(trial) for trial in tuner.oracle.trials.values()]
    done = [trial for trial in trials if trial["status"] == "COMPLETED"]
    if not done:
        raise TuneError(
            f"No trial completed ({trials[0].get('error') if trials else 'none ran'}): each "
            f"trial's error is in its trial.json under {folder / TUNER_DIR}."
        )
    best = tuner.oracle.get_best_trials(1)[0]
    best_hparams = {"model": model, **_training_values(best.hyperparameters.values)}
    found = {
        "hparams": best_hparams,
        "objective": OBJECTIVE,
        "score": float(best.score),
        "trial": _number(best.trial_id),
        "trial_id": best.trial_id,
        "algorithm": algorithm,
        "trials": len(done),
        "epochs": epochs,
        "batch_size": batch_size,
        "seed": seed,
    }
    write_json(folder / TUNED_FILE, found)
    metrics = {
        "algorithm": algorithm,
        "model": model,
        "objective": OBJECTIVE,
        "best_score": float(best.score),
        "best_trial": _number(best.trial_id),
        "best_trial_id": best.trial_id,
        "best_hparams": best_hparams,
        "trials_run": len(done) - before,
        "trials_completed": len(done),
        "max_trials": max_trials,
        "epochs": epochs,
        "batch_size": batch_size,
        "seed": seed,
        "overwrite": overwrite,
        "seconds": round(seconds, 3),
        "search_space": space,
        "trials": trials,
        "tuner_dir": str(folder / TUNER_DIR),
        "best_hparams_path": str(folder / TUNED_FILE),
        "keras_tuner_version": kt.__version__,
        "keras_version": keras.__version__,
        "tensorflow_version": tf.__version__,
    }
    write_metrics(folder, "tune", metrics)
    return metrics


def check_params(
    *,
    algorithm: str = "random",
    max_trials: int = 4,
    epochs: int = 2,
    batch_size: int = 64,
    model: str = "small_cnn",
    seed: int = 42,
    overwrite: bool = True,
) -> dict[str, Any]:
    """Refuse a bad search request in one sentence before any work; return the parameters."""
    if not isinstance(algorithm, str) or algorithm not in ALGORITHMS:
        raise TuneError(f"algorithm={algorithm!r} is not allowed: use {' or '.join(ALGORITHMS)}.")
    _whole("max_trials", max_trials, 1)
    _whole("epochs", epochs, 1)
    _whole("batch_size", batch_size, 1)
    _whole("seed", seed, 0)
    if not isinstance(model, str) or model not in models.MODELS:
        raise TuneError(
            f"model={model!r} is not allowed: use {' or '.join(models.OWN_MODELS)}, or a "
            "keras.applications model by name (listed in models.APPLICATIONS)."
        )
    if not isinstance(overwrite, bool):
        raise TuneError(f"overwrite={overwrite!r} is not allowed: use true or false.")
    return {
        "algorithm": algorithm,
        "max_trials": max_trials,
        "epochs": epochs,
        "batch_size": batch_size,
        "model": model,
        "seed": seed,
        "overwrite": overwrite,
    }


def search_space(model: str) -> dict[str, dict[str, Any]]:
    """What the tuner may choose, by training's parameter names: type, range, step, default.

    The learning rate is searched on a log scale (1e-4 and 1e-3 are as far apart as 1e-3 and
    1e-2); width in multiples of 8 (Tensor Cores), dropout in steps of 0.05. keras.applications
    models have no width or dropout knob, so only their learning rate is searched.
    """
    space: dict[str, dict[str, Any]] = {
        "learning_rate": {
            "type": "float",
            "min": 1e-4,
            "max": 1e-2,
            "step": None,
            "sampling": "log",
            "default": 1e-3,
        }
    }
    if model in models.OWN_MODELS:
        space["width"] = {
            "type": "int",
            "min": 8,
            "max": 64,
            "step": 8,
            "sampling": "linear",
            "default": models.DEFAULT_WIDTH[model],
        }
        space["dropout"] = {
            "type": "float",
            "min": 0.0,
            "max": 0.5,
            "step": 0.05,
            "sampling": "linear",
            "default": models.DEFAULT_DROPOUT[model],
        }
    return space


def require_keras_tuner() -> Any:
    """The keras_tuner module, or one sentence saying how to install it."""
    try:
        import keras_tuner
    except ImportError:
        raise TuneError(
            "keras-tuner is not installed, and the search needs it: install the project's tune "
            'extra (pip install -e ".[tune]").'
        ) from None
    return keras_tuner


def space_table(space: dict[str, dict[str, Any]]) -> str:
    """The search space as a markdown table, one row per parameter."""
    rows = [
        "| parameter | type | from | to | step | sampling | default |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, spec in space.items():
        cells = [spec[key] for key in ("type", "min", "max", "step", "sampling", "default")]
        rows.append(f"| {name} | " + " | ".join(_cell(cell) for cell in cells) + " |")
    return "\n".join(rows)


def trials_table(result: dict[str, Any]) -> str:
    """The trials of a search as a markdown table, best score first."""
    names = list(result["search_space"])
    rows = [
        f"| trial | {OBJECTIVE} | best epoch | epochs | " + " | ".join(names) + " | status |",
        "|---:|---:|---:|---:|" + "---:|" * len(names) + "---|",
    ]
    ranked = sorted(
        result["trials"],
        key=lambda trial: -1.0 if trial["score"] is None else trial["score"],
        reverse=True,
    )
    for trial in ranked:
        mark = " (best)" if trial["trial"] == result["best_trial"] else ""
        cells = [trial["score"], trial["best_epoch"], trial["epochs"] or result["epochs"]]
        cells += [trial["hparams"].get(name) for name in names]
        rows.append(
            f"| #{trial['trial']}{mark} | "
            + " | ".join(_cell(cell) for cell in cells)
            + f" | {trial['status']} |"
        )
    return "\n".join(rows)


# --- the search -----------------------------------------------------------------------------------


def _hypermodel(
    model: str,
    shape: list[int],
    num_classes: int,
    space: dict[str, dict[str, Any]],
    batch_size: int,
    jit: bool,
    built: list[dict[str, Any]],
) -> Any:
    """build(hp): the model training would build with these values, compiled as training runs it."""

    def build(hp: Any) -> keras.Model:
        chosen = _training_values({name: _choose(hp, name, spec) for name, spec in space.items()})
        built.append(chosen)
        knobs = {key: chosen[key] for key in ("width", "dropout") if key in chosen}
        net = models.build_model(model, shape, num_classes, **knobs)
        rate = effective_learning_rate(chosen["learning_rate"], batch_size)
        net.compile(
            optimizer=keras.optimizers.Adam(rate),
            loss="sparse_categorical_crossentropy",
            metrics=["accuracy"],
            jit_compile=jit,
        )
        return net

    return build


def _choose(hp: Any, name: str, spec: dict[str, Any]) -> Any:
    if spec["type"] == "int":
        return hp.Int(name, spec["min"], spec["max"], step=spec["step"], default=spec["default"])
    return hp.Float(
        name,
        spec["min"],
        spec["max"],
        step=spec["step"],
        sampling=spec["sampling"],
        default=spec["default"],
    )


class _Progress(keras.callbacks.Callback):
    """One line per trial (its values) and per epoch (its scores), instead of keras-tuner's display.

    keras-tuner deep-copies the callbacks of every trial; this one is shared, so it counts trials.
    """

    def __init__(self, max_trials: int, epochs: int, verbose: bool) -> None:
        super().__init__()
        self.max_trials, self.epochs, self.verbose = max_trials, epochs, verbose
        self.built: list[dict[str, Any]] = []  # the values of each model built, in order
        self.trial = 0
        self.started = 0.0

    def __deepcopy__(self, memo: dict) -> _Progress:
        return self

    def on_train_begin(self, logs: dict | None = None) -> None:
        self.trial += 1
        if self.verbose:
            values = ", ".join(f"{key}={value:.3g}" for key, value in self.built[-1].items())
            print(f"Trial #{self.trial} of at most {self.max_trials}: {values}", flush=True)

    def on_epoch_begin(self, epoch: int, logs: dict | None = None) -> None:
        self.started = time.perf_counter()

    def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
        if self.verbose and logs:
            print(
                f"  epoch {epoch + 1}/{self.epochs}: accuracy {logs.get('accuracy', 0):.4f}, "
                f"{OBJECTIVE} {logs.get(OBJECTIVE, 0):.4f} "
                f"({time.perf_counter() - self.started:.1f} s)",
                flush=True,
            )


def _tuner(kt: Any, params: dict[str, Any], hypermodel: Any, folder: Path) -> Any:
    """RandomSearch or Hyperband in run_dir/tuning/tuner, capped at max_trials trials."""
    common = {
        "objective": OBJECTIVE,
        "seed": params["seed"],
        "directory": str(folder / Path(TUNER_DIR).parent),
        "project_name": Path(TUNER_DIR).name,
        "overwrite": params["overwrite"],
    }
    if params["algorithm"] == "random":
        return kt.RandomSearch(hypermodel, max_trials=params["max_trials"], **common)
    tuner = kt.Hyperband(
        hypermodel,
        max_epochs=params["epochs"],
        factor=HYPERBAND_FACTOR,
        # Each Hyperband iteration runs at least one trial; the cap below ends the search.
        hyperband_iterations=params["max_trials"],
        **common,
    )
    tuner.oracle.max_trials = params["max_trials"]
    return tuner


def _check_same_search(folder: Path, params: dict[str, Any]) -> None:
    """Refuse to resume (overwrite=False) a search made with other settings.

    keras-tuner would carry on with the other search's trials, and the best of them could be a
    value found for another model. More max_trials than before is fine: that extends the search.
    """
    path = folder / TUNER_DIR / REQUEST_FILE
    if path.is_file():
        earlier = json.loads(path.read_text(encoding="utf-8"))
        for key in SAME_SEARCH:
            if earlier.get(key) != params[key]:
                raise TuneError(
                    f"{folder / TUNER_DIR} holds a search with {key}={earlier.get(key)!r}, not "
                    f"{params[key]!r}: resume it with the same {', '.join(SAME_SEARCH)}, or "
                    "start over with overwrite=True."
                )


def _completed(tuner: Any) -> int:
    """Trials already completed: those of a reloaded search (overwrite=False), else 0."""
    return sum(trial.status == "COMPLETED" for trial in tuner.oracle.trials.values())


def _trial(trial: Any) -> dict[str, Any]:
    """One trial for metrics/tune.json: its id, status, score, epochs and values."""
    values = trial.hyperparameters.values
    score = trial.score
    record = {
        "trial": _number(trial.trial_id),
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
        "hparams": _training_values(values),
    }
    if trial.status != "COMPLETED" and trial.message:
        record["error"] = _last_line(trial.message)
    return record


def _number(trial_id: str) -> int:
    """The trial's number as the progress lines show it: keras-tuner's id counts from 0."""
    return int(trial_id) + 1


def _last_line(text: object) -> str:
    """The last non-empty line of an error or traceback, without its final full stop."""
    lines = [line.strip() for line in str(text).splitlines() if line.strip()]
    return (lines[-1] if lines else "no message").rstrip(".")


def _training_values(values: dict[str, Any]) -> dict[str, Any]:
    """keras-tuner's values as training takes them: its own "tuner/…" entries left out, width a
    whole number, dropout rounded (keras-tuner's 0.15000000000000002 is 0.15)."""
    convert = {"learning_rate": float, "width": int, "dropout": lambda rate: round(rate, 4)}
    return {name: convert[name](values[name]) for name in convert if name in values}


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def _whole(name: str, value: Any, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise TuneError(f"{name}={value!r} is not allowed: use a whole number >= {minimum}.")
