"""The search: keras-tuner trains models built by models.build_model on the task's build_inputs.

Each trial is scored by the task's objective (tune.objective: val_accuracy; tables: validation
ROC AUC, what their headline compares), so what is tuned is exactly what step 3 trains. Why
`overwrite=True` by default: keras-tuner keeps its state in the tuner folder and, finding one,
reloads it instead of searching; a finished search then returns at once with the old trials,
whatever changed in the data since. `overwrite=False` resumes an interrupted search instead.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import keras
import tensorflow as tf

from .. import env, lineage
from ..artifacts import resolve_run_dir
from ..parts.tune import SPACE_FILE, TRIALS_FILE, TUNED_FILE
from ..progress import starting
from ..train.devices import resolve_jit
from ..writes import write_json, write_metrics
from . import cluster
from .checks import Params, TuneError, check_data, check_params, require_keras_tuner
from .space import defaults, objective, search_space, training_values
from .trial import Trials
from .trials import Progress, completed, last_line, trial_number, trial_record
from .tuners import TUNER_DIR, make_tuner
from .workers import Workers, start_workers, wait_for_chief

# What a search was started with, kept in the tuner folder: a resumed search must match it.
REQUEST_FILE = "request.json"
SAME_SEARCH = ("algorithm", "model", "weights", "epochs", "batch_size", "seed")


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
    worker = cluster.is_worker()
    params = check_params(params or Params(), False if worker else overwrite)  # a worker: no rm
    folder = resolve_run_dir(run_dir, create=False)
    workers = None
    if not worker and (params["workers"] > 1 or cluster.role()):  # the chief: it trains nothing
        cluster.keep_off_gpus()  # before keras-tuner builds a model in it (make_tuner)
        if cluster.role() is None:  # its own workers: their TensorFlow loads while it gets ready
            workers = start_workers(folder, params)
    try:
        return _search(folder, params, worker, workers, verbose)
    finally:  # on any failure too: no worker waits an hour for an oracle that never comes
        if workers is not None:
            workers.stop()


def _search(
    folder: Path,
    params: dict[str, Any],
    worker: bool,
    workers: Workers | None,
    verbose: bool,
) -> dict[str, Any]:
    algorithm, max_trials, epochs = params["algorithm"], params["max_trials"], params["epochs"]
    batch_size, model, seed = params["batch_size"], params["model"], params["seed"]
    weights = params["weights"]
    if verbose and not worker:
        starting("Loading keras-tuner and building the search's first model", "3-20 s on a CPU")
    kt = require_keras_tuner()
    meta = check_data(folder, model, batch_size, weights)  # no data: names 01_data
    data_fp = lineage.fingerprint(folder, "data")

    keras.utils.set_random_seed(seed)
    space = search_space(model, weights, epochs)
    jit = resolve_jit("auto", env.list_gpus())
    progress = Progress(max_trials, epochs, verbose)
    fixed = {"model": model, "weights": weights, "epochs": epochs, "batch_size": batch_size}
    trials_of = Trials(
        kt,
        folder,
        meta,
        space,
        {**fixed, "seed": seed, "patience": 0},
        jit=jit,
        built=progress.built,
    )
    if not params["overwrite"] and not worker:
        _check_same_search(folder, params)
    if worker:  # the chief's tuner first: made with overwrite, it removes tuner/
        wait_for_chief()
    tuner = make_tuner(kt, params, trials_of.hypermodel, folder)  # overwrite: a new tuner/
    progress.tuner = tuner
    if worker:  # trials from the chief until it says stop; the chief writes every result
        tuner.search(epochs=epochs, callbacks=[progress], verbose=0)
        return {"role": tuner.tuner_id, "pid": os.getpid(), "trials_run": progress.trial}
    requeued = cluster.requeue_lost(tuner.oracle)  # trials a dead process left RUNNING
    request = {key: params[key] for key in SAME_SEARCH}
    write_json(folder / TUNER_DIR / REQUEST_FILE, {**request, "data": data_fp, "finished": False})
    write_json(folder / SPACE_FILE, {"fixed": fixed, "space": space})
    before = progress.trial = completed(tuner)
    started = time.perf_counter()
    try:
        if params["workers"] > 1 or cluster.role():
            cluster.run_chief(tuner, folder, workers, verbose)
        else:  # each trial reads training's own pipeline (train.Loop): no data passed here
            tuner.search(epochs=epochs, callbacks=[progress], verbose=0)  # 0: keras-tuner's
            # display would clear the notebook cell after every trial
    except RuntimeError as error:  # CONSECUTIVE_FAILURES failed trials in a row
        raise TuneError(f"The search stopped: {last_line(error)}.") from None
    seconds = time.perf_counter() - started

    trials = [trial_record(trial, folder, space) for trial in tuner.oracle.trials.values()]
    untuned = defaults(space)
    for trial in trials:
        trial["defaults"] = trial["hparams"] == untuned
    write_json(folder / TRIALS_FILE, {"objective": objective(), "trials": trials})
    done = [trial for trial in trials if trial["status"] == "COMPLETED"]
    if not done:
        raise TuneError(
            f"No trial completed ({trials[0].get('error') if trials else 'none ran'}): each "
            f"trial's error is in its trial.json under {folder / TUNER_DIR}."
        )
    best = tuner.oracle.get_best_trials(1)[0]
    given = {"weights": weights} if weights != "none" else {}
    best_hparams = {"model": model, **given, **training_values(best.hyperparameters.values, space)}
    scored = [t["score"] for t in done if t["defaults"] and t["score"] is not None]
    found = {
        "hparams": best_hparams,
        "objective": objective(),
        "score": float(best.score),
        "trial": trial_number(best.trial_id),
        "trial_id": best.trial_id,
        "algorithm": algorithm,
        "trials": len(done),
        "default_score": max(scored) if scored else None,
        "epochs": epochs,
        "batch_size": batch_size,
        "seed": seed,
    }
    write_json(folder / TUNED_FILE, found)
    lineage.record(folder, "tuning", "tune", {"data": data_fp})
    metrics = {
        "algorithm": algorithm,
        "model": model,
        "objective": objective(),
        "best_score": float(best.score),
        "best_trial": trial_number(best.trial_id),
        "best_trial_id": best.trial_id,
        "best_hparams": best_hparams,
        "default_hparams": untuned,
        "default_score": max(scored) if scored else None,  # trial #1 of a random search
        "trials_run": len(done) - before,
        "trials_completed": len(done),
        "trials_failed": sum(trial["status"] == "FAILED" for trial in trials),
        "max_trials": max_trials,
        "epochs": epochs,
        "batch_size": batch_size,
        "seed": seed,
        "overwrite": params["overwrite"],
        "workers": params["workers"],
        "trials_requeued": requeued,
        "seconds": round(seconds, 3),
        "weights": weights,
        "search_space": space,
        "trials": trials,
        "tuner_dir": str(folder / TUNER_DIR),
        "space_path": str(folder / SPACE_FILE),
        "trials_path": str(folder / TRIALS_FILE),
        "best_hparams_path": str(folder / TUNED_FILE),
        "keras_tuner_version": kt.__version__,
        "keras_version": keras.__version__,
        "tensorflow_version": tf.__version__,
        "lineage": lineage.summary(folder, reads=["data"], writes=["tuning"]),
    }
    write_metrics(folder, "tune", metrics)
    write_json(folder / TUNER_DIR / REQUEST_FILE, {**request, "data": data_fp, "finished": True})
    return metrics


def resumable(run_dir: str | os.PathLike[str], params: Params) -> bool:
    """Whether the run folder holds an unfinished search (stopped, killed) of the same settings
    on the same data: the same command then continues it instead of starting over."""
    folder = resolve_run_dir(run_dir, create=False)
    path = folder / TUNER_DIR / REQUEST_FILE
    try:
        earlier = json.loads(path.read_text(encoding="utf-8"))
    except (FileNotFoundError, json.JSONDecodeError):
        return False
    same = all(earlier.get(key) == getattr(params, key) for key in SAME_SEARCH)
    data_fp = lineage.fingerprint(folder, "data")
    return same and earlier.get("finished") is False and earlier.get("data") == data_fp


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
