"""The search: keras-tuner trains models built by models.build_model on data.make_dataset's batches.

Each trial is scored by val_accuracy, so what is tuned is exactly what step 3 trains. Why
`overwrite=True` by default: keras-tuner keeps its state in the tuner folder and, finding one,
reloads it instead of searching; a finished search then returns at once with the old trials,
whatever changed in the data since. `overwrite=False` resumes an interrupted search instead.
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

from .. import env, lineage
from ..artifacts import resolve_run_dir
from ..parts.tune import TUNED_FILE, TUNING_DIR
from ..tasks import current as task
from ..train.devices import resolve_jit
from ..train.params import effective_learning_rate
from ..writes import write_json, write_metrics
from .checks import Params, TuneError, check_data, check_params, require_keras_tuner
from .space import OBJECTIVE, choose, search_space, training_values
from .trials import Progress, completed, last_line, trial_number, trial_record

TUNER_DIR = f"{TUNING_DIR}/tuner"
# What a search was started with, kept in the tuner folder: a resumed search must match it.
REQUEST_FILE = "request.json"
SAME_SEARCH = ("algorithm", "model", "epochs", "batch_size", "seed")
# Hyperband trains many models for a few epochs and the best third of them three times as long.
HYPERBAND_FACTOR = 3


def search(
    run_dir: str | os.PathLike[str],
    params: Params | None = None,
    *,
    overwrite: bool = True,
    verbose: bool = True,
) -> dict[str, Any]:
    """Search, write tuning/best_hparams.json and metrics/tune.json; return the metrics.

    `algorithm` "random" tries `max_trials` random points of search_space(model) for `epochs`
    epochs each; "hyperband" trains up to `max_trials` models for 1 to `epochs` epochs, the
    promising ones longer (worth it from about 9 epochs on). `batch_size` is the batch of every
    trial; learning rates follow training's LR_RULE, so the tuned learning_rate means in step 3
    what it meant here. Runs under the global dtype policy (float32 unless set), on one device.
    The tuning's lineage names the data it was made from, so training can ignore values tuned on
    data that has since been replaced.
    """
    params = check_params(params or Params(), overwrite)
    algorithm, max_trials, epochs = params["algorithm"], params["max_trials"], params["epochs"]
    batch_size, model, seed = params["batch_size"], params["model"], params["seed"]
    kt = require_keras_tuner()
    folder = resolve_run_dir(run_dir, create=False)
    meta = check_data(folder, model, batch_size)  # a folder without data names 01_data
    data_fp = lineage.fingerprint(folder, "data")
    train_count = int(meta["splits"]["train"]["count"])

    keras.utils.set_random_seed(seed)
    space = search_space(model)
    jit = resolve_jit("auto", env.list_gpus())
    progress = Progress(max_trials, epochs, verbose)
    hypermodel = _hypermodel(model, meta, space, batch_size, jit, progress.built)
    if not overwrite:
        _check_same_search(folder, params)
    tuner = _tuner(kt, params, hypermodel, folder)  # overwrite=True empties tuning/tuner/
    write_json(folder / TUNER_DIR / REQUEST_FILE, {key: params[key] for key in SAME_SEARCH})
    before = progress.trial = completed(tuner)
    batches = task().make_dataset(
        folder, "train", batch_size, seed=seed, repeat=True, drop_remainder=True
    )
    # A known number of batches: Keras otherwise warns at the end of each validation pass.
    val_batches = math.ceil(int(meta["splits"]["validation"]["count"]) / batch_size)
    validation = (
        task()
        .make_dataset(folder, "validation", batch_size)
        .apply(tf.data.experimental.assert_cardinality(val_batches))
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
        raise TuneError(f"The search stopped: {last_line(error)}.") from None
    seconds = time.perf_counter() - started

    trials = [trial_record(trial) for trial in tuner.oracle.trials.values()]
    done = [trial for trial in trials if trial["status"] == "COMPLETED"]
    if not done:
        raise TuneError(
            f"No trial completed ({trials[0].get('error') if trials else 'none ran'}): each "
            f"trial's error is in its trial.json under {folder / TUNER_DIR}."
        )
    best = tuner.oracle.get_best_trials(1)[0]
    best_hparams = {"model": model, **training_values(best.hyperparameters.values)}
    found = {
        "hparams": best_hparams,
        "objective": OBJECTIVE,
        "score": float(best.score),
        "trial": trial_number(best.trial_id),
        "trial_id": best.trial_id,
        "algorithm": algorithm,
        "trials": len(done),
        "epochs": epochs,
        "batch_size": batch_size,
        "seed": seed,
    }
    write_json(folder / TUNED_FILE, found)
    lineage.record(folder, "tuning", "tune", {"data": data_fp})
    metrics = {
        "algorithm": algorithm,
        "model": model,
        "objective": OBJECTIVE,
        "best_score": float(best.score),
        "best_trial": trial_number(best.trial_id),
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
        "lineage": lineage.summary(folder, reads=["data"], writes=["tuning"]),
    }
    write_metrics(folder, "tune", metrics)
    return metrics


def _hypermodel(
    model: str,
    meta: dict[str, Any],
    space: dict[str, dict[str, Any]],
    batch_size: int,
    jit: bool,
    built: list[dict[str, Any]],
) -> Any:
    """build(hp): the model training would build with these values, compiled as training runs it."""

    def build(hp: Any) -> keras.Model:
        chosen = training_values({name: choose(hp, name, spec) for name, spec in space.items()})
        built.append(chosen)
        knobs = {key: chosen[key] for key in ("width", "dropout") if key in chosen}
        net = task().build_model(model, meta, **knobs)
        rate = effective_learning_rate(chosen["learning_rate"], batch_size)
        net.compile(
            optimizer=keras.optimizers.Adam(rate),
            loss="sparse_categorical_crossentropy",
            metrics=["accuracy"],
            jit_compile=jit,
        )
        return net

    return build


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
