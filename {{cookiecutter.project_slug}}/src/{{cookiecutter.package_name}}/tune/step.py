"""Step 2 as one entry: `run(run_dir, Params)` checks, searches, and writes tuning/best_hparams.json
and metrics/tune.json with the lineage of both."""

from __future__ import annotations

import os
from typing import Any

from .. import figures
from ..artifacts import resolve_run_dir, run_folder
from ..writes import check_writable, write_metrics
from .checks import Params, check_data, check_keras_tuner, check_params
from .figure import plot_trials
from .search import search


def check(run_dir: str | os.PathLike[str], params: Params, *, inputs: bool = True) -> None:
    """Refuse in one sentence (TuneError): a bad value, or no keras-tuner; with inputs=True also
    a run folder without data (naming 01_data), a model the images do not fit, a batch larger
    than the training split. Nothing is trained, imported at length or written."""
    check_params(params)
    check_keras_tuner()  # a missing extra is found before any notebook runs, not at step 2
    if inputs:
        check_data(
            resolve_run_dir(run_dir, create=False), params.model, params.batch_size, params.weights
        )


def run(run_dir: str | os.PathLike[str], params: Params, *, verbose: bool = True) -> dict[str, Any]:
    """Check, then search from scratch (overwrite=True); return metrics/tune.json's content."""
    folder = run_folder(run_dir)  # resolved once, here: every call below gets this value
    check(folder, params)
    check_writable(folder)
    metrics = search(folder, params, verbose=verbose)
    drawers = {"tune_trials": lambda _, found, path: plot_trials(found, path)}
    metrics["figures"] = figures.save(folder, "tune", metrics, drawers=drawers)
    write_metrics(folder, "tune", metrics)  # again, with the figures
    if verbose:
        print(
            f"{metrics['trials_run']} trial(s) in {metrics['seconds']:.1f} s; best "
            f"{metrics['objective']} {metrics['best_score']:.4f} with {metrics['best_hparams']}"
        )
    return metrics
