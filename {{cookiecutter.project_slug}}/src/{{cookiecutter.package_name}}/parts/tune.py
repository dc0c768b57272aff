"""The tuning part (step 2, notebook 02_tune) as the rest of the package sees it.

The search itself lives in the `tune` package; this module holds what the chain, the lineage
ledger, the report and training need to know of it, without importing keras-tuner: the step, its
run-folder names, its artifact, its figure, its sentences in the report, and the values it
offers to training (tuning/best_hparams.json, when the same model was tuned on the same data).
"""

from __future__ import annotations

from typing import Any

from . import Hook

# (name, notebook, module, reads, summary): a steps.Step; FEEDS: the steps that read its output.
STEP = ("tune", "02_tune", "tune", ("data",), "keras-tuner search → tuning/best_hparams.json")
FEEDS = ("train",)

TUNING_DIR = "tuning"  # keras-tuner's state (tuning/tuner/) and TUNED_FILE
TUNED_FILE = "tuning/best_hparams.json"  # the best values, which 03_train takes
SPACE_FILE = "tuning/space.json"  # what was searched: the fixed values and the space
TRIALS_FILE = "tuning/trials.json"  # every trial: values, score, status, why it failed

ARTIFACTS = {"tuning": (TUNED_FILE, "02_tune")}  # lineage: artifact -> (file, the step making it)
FIGURES = {"tune": ("tune_trials",)}  # figures/<name>.png, drawn by tune.figure
LOGGERS = ("keras_tuner",)  # quieted with TensorFlow's own


def headline(metrics: dict[str, Any]) -> str:
    """The report's sentence for metrics/tune.json."""
    return (
        f"best {metrics.get('objective', 'score')} {metrics['best_score']:.4f} of "
        f"{metrics['trials_run']} trial(s) ({metrics['algorithm']} search)."
    )


def key_numbers(metrics: dict[str, Any]) -> list[tuple[str, str]]:
    """The report's rows for metrics/tune.json."""
    values = ", ".join(
        f"{k}={v:.3g}" if isinstance(v, float) else f"{k}={v}"
        for k, v in metrics["best_hparams"].items()
    )
    best = f"{metrics['best_score']:.4f} ({metrics.get('objective', '')}, trial "
    rows = [("best score", f"{best}{metrics['best_trial']})")]
    if metrics.get("default_score") is not None:
        rows.append(("defaults' score", f"{metrics['default_score']:.4f} (trial #1)"))
    failed = metrics.get("trials_failed")
    rows += [
        ("trials run", f"{metrics['trials_run']}" + (f", {failed} failed" if failed else "")),
        *([("ran by", ran_by(metrics["trials"]))] if metrics.get("workers", 1) > 1 else []),
        ("best values", values),
        ("training takes them", f"from {TUNED_FILE}, for every value not given"),
    ]
    return rows


def ran_by(trials: list[dict[str, Any]]) -> str:
    """Which worker process ran which trials: "worker0 (pid 41) #1, #3; worker1 (pid 42) #2"."""
    runs: dict[str, list[str]] = {}
    for trial in trials:
        runs.setdefault(f"{trial.get('worker')} (pid {trial.get('pid')})", []).append(
            f"#{trial['trial']}"
        )
    return "; ".join(f"{who} {', '.join(numbers)}" for who, numbers in sorted(runs.items()))


HEADLINES = {"tune": headline}
KEY_NUMBERS = {"tune": key_numbers}


# What step 2 offers a training (train.value_sources): tune/offer.py reads best_hparams.json, with
# lineage's and training's checks, which this registry (the lowest floor) cannot import.
suggest = Hook("tune.offer", "suggest")


def summary(suggestion: dict[str, Any]) -> dict[str, Any] | None:
    """What metrics/train.json keeps of best_hparams.json: the values, their score, and use."""
    if suggestion["record"] is None and suggestion["ignored"] is None:
        return None
    keys = ("hparams", "objective", "score", "trial", "algorithm")
    kept = {key: (suggestion["record"] or {}).get(key) for key in keys}
    return {**kept, "used": suggestion["ignored"] is None, "ignored": suggestion["ignored"]}


SUMMARIES = {"tuning": summary}
