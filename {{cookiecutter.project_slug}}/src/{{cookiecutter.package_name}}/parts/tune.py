"""The tuning part (step 2, notebook 02_tune) as the rest of the package sees it.

The search itself lives in the `tune` package; this module holds what the chain, the lineage
ledger, the report and training need to know of it, without importing keras-tuner: the step, its
run-folder names, its artifact, its figure, its sentences in the report, and the values it
offers to training (tuning/best_hparams.json, when the same model was tuned on the same data).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

# (name, notebook, module, reads, summary): a steps.Step; FEEDS: the steps that read its output.
STEP = ("tune", "02_tune", "tune", ("data",), "keras-tuner search → tuning/best_hparams.json")
FEEDS = ("train",)

TUNING_DIR = "tuning"  # keras-tuner's state (tuning/tuner/) and TUNED_FILE
TUNED_FILE = "tuning/best_hparams.json"  # the best values, which 03_train takes

ARTIFACTS = {"tuning": (TUNED_FILE, "02_tune")}  # lineage: artifact -> (file, the step making it)
FIGURES = {"tune": ("tune_trials",)}  # figures/<name>.png, drawn by tune.figure
LOGGERS = ("keras_tuner",)  # quieted with TensorFlow's own
TUNABLE = ("model", "learning_rate", "width", "dropout")  # what a search finds, training takes


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
    return [
        ("best score", f"{best}{metrics['best_trial']})"),
        ("trials run", str(metrics["trials_run"])),
        ("best values", values),
    ]


HEADLINES = {"tune": headline}
KEY_NUMBERS = {"tune": key_numbers}


def suggest(folder: Path, model: str | None) -> dict[str, Any]:
    """What step 2 offers a training of `model` (None: any) in `folder`, as train.sources reads it:
    source and origin (how parameter_sources and the table name it), values (those to use),
    record (best_hparams.json as read, None when absent or not read), ignored (why none is used),
    detail (the search's score and trial), artifact (its lineage name), summary_key (its key in
    metrics/train.json). Raises TrainError for a file that cannot be used."""
    from .. import lineage

    record, ignored = None, None
    if (folder / TUNED_FILE).is_file():
        if lineage.stale_inputs(folder, "tuning"):
            ignored = (
                f"{TUNED_FILE} was tuned on other data (01_data re-ran since): none of its "
                "values is used"
            )
        else:
            record = read_tuning(folder)
    values = dict(record["hparams"]) if record else {}
    if values and model not in (None, values["model"]):
        ignored = (
            f"{TUNED_FILE} was tuned for {values['model']}, not {model}: none of its values is used"
        )
        values = {}
    score = (record or {}).get("score")
    shown = f"{score:.4f}" if isinstance(score, int | float) else "?"
    detail = (
        f"{(record or {}).get('objective', 'score')} {shown}, trial "
        f"#{(record or {}).get('trial', '?')}"
    )
    return {
        "source": "tuned",
        "origin": TUNED_FILE,
        "values": values,
        "record": record,
        "ignored": ignored,
        "detail": detail,
        "artifact": "tuning",
        "summary_key": "tuning",
    }


def summary(suggestion: dict[str, Any]) -> dict[str, Any] | None:
    """What metrics/train.json keeps of best_hparams.json: the values, their score, and use."""
    if suggestion["record"] is None and suggestion["ignored"] is None:
        return None
    keys = ("hparams", "objective", "score", "trial", "algorithm")
    kept = {key: (suggestion["record"] or {}).get(key) for key in keys}
    return {**kept, "used": suggestion["ignored"] is None, "ignored": suggestion["ignored"]}


def read_tuning(folder: Path) -> dict[str, Any] | None:
    """folder/tuning/best_hparams.json (see tune.search), checked; None when there is none."""
    from ..train.params import DEFAULT_LEARNING_RATE, TrainError, check_tunable

    path = folder / TUNED_FILE
    if not path.is_file():
        return None
    try:
        content = json.loads(path.read_text(encoding="utf-8"))
        hparams = content["hparams"]
        extra = sorted(set(hparams) - set(TUNABLE))
        if extra or "model" not in hparams:
            raise ValueError(f"hparams must hold model and only {', '.join(TUNABLE)}")
        check_tunable(
            hparams["model"],
            hparams.get("learning_rate", DEFAULT_LEARNING_RATE),
            hparams.get("width"),
            hparams.get("dropout"),
        )
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as error:
        reason = " ".join(str(error).split()).rstrip(".")
        if not isinstance(error, TrainError):
            reason = f"{type(error).__name__}: {reason}"
        raise TrainError(
            f"{path} cannot be used ({reason}): run 02_tune again, or delete it to train with "
            "the given and default values."
        ) from None
    return content


SUMMARIES = {"tuning": summary}
