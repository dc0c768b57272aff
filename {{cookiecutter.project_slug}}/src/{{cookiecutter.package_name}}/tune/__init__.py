"""Step 2, tuning: keras-tuner searches the model builder's knobs on the data pipeline of step 1.

    from <package> import tune
    metrics = tune.run("artifacts/run", tune.Params(max_trials=4, epochs=2))

Each trial is a training run of step 3 (train.Loop) with the values keras-tuner chose for the
recipe (learning_rate, schedule, warmup_epochs, weight_decay, label_smoothing, the task's
augment; from given weights, freeze_epochs then unfreeze) and the builder (width, dropout), under
the names training takes, scored by the task's objective (val_accuracy; tables: val_roc_auc):
what is tuned is exactly what step 3 trains.
A search writes into the run folder:

    tuning/tuner/              keras-tuner's own folder: its state and one folder per trial
    tuning/space.json          what was searched: the fixed values and the space
    tuning/trials.json         every trial: values, score, status, why a failed one failed, and
                               the worker (tuner id, pid) that ran it
    tuning/workers/            the output of each worker process (workers > 1)
    tuning/best_hparams.json   the best values, which training (step 3) uses when not given
    metrics/tune.json          best_score, trials_run, seconds, best_hparams, every trial, lineage
    lineage.json               "tuning": made from the data whose fingerprint it names

    checks   what is refused before any work (values, keras-tuner, the data)
    space    the search space and the tables of space and trials
    search   the search itself (`search` also resumes, with overwrite=False)
    trial    one trial: keras-tuner's HyperModel over train.Loop
    tuners   random search (defaults first) or Hyperband; failed trials and when they stop it
    cluster  several trials at once: keras-tuner's chief/worker mode (workers, slurm_tune.sh)
    figure   the score of every trial, figures/tune_trials.png
    offer    what a search offers training: best_hparams.json, checked (parts.tune.suggest)
    entry    the step contract: Params, check, run

keras-tuner is a dependency of projects baked with tuning (pyproject.toml); only this package
imports it, so training and every other step run without it.
"""

from ..parts.tune import TUNED_FILE, TUNING_DIR
from .checks import ALGORITHMS, TuneError, check_params, require_keras_tuner
from .entry import Params, check, run
from .search import TUNER_DIR, search
from .space import objective, search_space, space_table, trials_table

__all__ = [
    "ALGORITHMS",
    "objective",
    "TUNED_FILE",
    "TUNER_DIR",
    "TUNING_DIR",
    "Params",
    "TuneError",
    "check",
    "check_params",
    "require_keras_tuner",
    "run",
    "search",
    "search_space",
    "space_table",
    "trials_table",
]
