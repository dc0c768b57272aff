"""Step 2 as one entry: `run(run_dir, Params)` checks, searches, and writes tuning/best_hparams.json
and metrics/tune.json with the lineage of both."""

from __future__ import annotations

import os
from typing import Any

from .. import figures
from ..artifacts import resolve_run_dir, run_folder
from ..writes import check_writable, write_metrics
from . import cluster
from .checks import Params, check_data, check_keras_tuner, check_params
from .figure import plot_trials
from .search import TUNER_DIR, resumable, search


def check(run_dir: str | os.PathLike[str], params: Params, *, inputs: bool = True) -> None:
    """Refuse in one sentence (TuneError): a bad value, or no keras-tuner; with inputs=True also
    a run folder without data (naming 01_data), a model the data do not fit, a batch larger
    than the training split. Nothing is trained, imported at length or written."""
    check_params(params)
    check_keras_tuner()  # a missing extra is found before any notebook runs, not at step 2
    if inputs:
        check_data(
            resolve_run_dir(run_dir, create=False), params.model, params.batch_size, params.weights
        )


def run(run_dir: str | os.PathLike[str], params: Params, *, verbose: bool = True) -> dict[str, Any]:
    """Check, then search: from scratch, or on from where an unfinished search of the same
    settings on the same data stopped (killed, interrupted); return metrics/tune.json's content.
    A worker of a chief elsewhere (cluster.is_worker) runs trials and writes no metrics."""
    folder = run_folder(run_dir)  # resolved once, here: every call below gets this value
    check(folder, params)
    check_writable(folder)
    resume = not cluster.is_worker() and resumable(folder, params)
    if resume and verbose:
        print(f"Resuming the unfinished search in {folder / TUNER_DIR}.")
    metrics = search(folder, params, overwrite=not resume, verbose=verbose)
    if cluster.is_worker():
        return metrics
    drawers = {"tune_trials": lambda _, found, path: plot_trials(found, path)}
    metrics["figures"] = figures.save(folder, "tune", metrics, drawers=drawers)
    write_metrics(folder, "tune", metrics)  # again, with the figures
    if verbose:
        print(
            f"{metrics['trials_run']} trial(s) in {metrics['seconds']:.1f} s; best "
            f"{metrics['objective']} {metrics['best_score']:.4f} with {metrics['best_hparams']}"
        )
    return metrics
