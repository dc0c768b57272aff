"""Where each training value comes from: given, tuned by step 2, or the default.

A value given by the caller wins; else, for the TUNABLE parameters, the one step 2 (02_tune)
wrote to run_dir/tuning/best_hparams.json, when it tuned the same model on the same data; else the
default. Values tuned for another model, or on data that 01_data has replaced since (the lineage
ledger says so), say nothing about this run: none of them is used, and the sources say why.
"""

from __future__ import annotations

import dataclasses
import json
import os
from dataclasses import dataclass
from typing import Any

from .. import lineage
from ..artifacts import TUNED_FILE, resolve_run_dir
from .params import (
    DEFAULT_LEARNING_RATE,
    DEFAULT_MODEL,
    Params,
    Placement,
    TrainError,
    check_tunable,
    check_values,
)

TUNABLE = ("model", "learning_rate", "width", "dropout")
FINDERS = ("batch-size finder", "range test")  # how train/auto.py names the sources it fills
NAMES = tuple(field.name for field in dataclasses.fields(Params))


@dataclass(frozen=True)
class Resolved:
    """The values a training run uses, where each came from, and where it runs."""

    params: Params  # model and learning_rate filled in; width/dropout None: the model's own
    sources: dict[str, str]  # {name: "given" | "tuned" | "default" | a FINDERS name …}
    tuning: dict[str, Any] | None  # best_hparams.json as read; None when absent or not read
    tuning_ignored: str | None  # why none of its values is used, when it is not
    placement: Placement

    def __getitem__(self, key: str) -> Any:
        """resolved["width"]: the value used, for code written against the former dict."""
        return getattr(self.params, key)


def resolve_params(
    run_dir: str | os.PathLike[str], given: Params | None = None, *, replicas: int | None = None
) -> tuple[Resolved, dict[str, str]]:
    """The checked values of a training run, and {name: "given" | "tuned" | "default"}.

    A TUNABLE value left at None is taken from the tuning file when step 2 tuned the same model
    on the current data, else from the defaults; any other value counts as given when it differs
    from the default. Raises TrainError for a bad value or an unreadable tuning file.
    """
    given = given if isinstance(given, Params) else Params(**(given or {}))
    check_values(given, replicas=replicas)  # a bad given value is named as given
    folder = resolve_run_dir(run_dir, create=False)
    tuning, ignored = None, None
    if (folder / TUNED_FILE).is_file():
        if lineage.stale_inputs(folder, "tuning"):
            ignored = (
                f"{TUNED_FILE} was tuned on other data (01_data re-ran since): none of its "
                "values is used"
            )
        else:
            tuning = read_tuning(folder)
    tuned = dict(tuning["hparams"]) if tuning else {}
    if tuned and given.model not in (None, tuned["model"]):
        ignored = (
            f"{TUNED_FILE} was tuned for {tuned['model']}, not {given.model}: none of its "
            "values is used"
        )
        tuned = {}
    values, sources = {}, {}
    fallback = {"model": DEFAULT_MODEL, "learning_rate": DEFAULT_LEARNING_RATE}
    for field in dataclasses.fields(Params):
        name, value = field.name, getattr(given, field.name)
        if name in TUNABLE and value is None:
            source = "tuned" if name in tuned else "default"
            value = tuned.get(name, fallback.get(name))
        else:
            source = "default" if value == field.default else "given"
        values[name], sources[name] = value, source
    params = Params(**values)
    check_tunable(params.model, params.learning_rate, params.width, params.dropout)
    placement = check_values(params, replicas=replicas)
    return Resolved(params, sources, tuning, ignored, placement), sources


def read_tuning(run_dir: str | os.PathLike[str]) -> dict[str, Any] | None:
    """run_dir/tuning/best_hparams.json (see tune.py), checked; None when there is none."""
    path = resolve_run_dir(run_dir, create=False) / TUNED_FILE
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


def describe_sources(resolved: Resolved, sources: dict[str, str] | None = None) -> str:
    """One sentence on where the values came from, e.g. "Using learning_rate=0.0031 from …"."""
    sources = sources or resolved.sources
    params, tuning = resolved.params, resolved.tuning
    tuned = [key for key in NAMES if sources.get(key) == "tuned"]
    given = [key for key in NAMES if sources.get(key) == "given"]
    parts = []
    if resolved.tuning_ignored:
        parts.append(resolved.tuning_ignored)
    elif tuned:
        score = tuning.get("score")
        shown = f"{score:.4f}" if isinstance(score, int | float) else "?"
        found = f"{tuning.get('objective', 'score')} {shown}"
        parts.append(
            f"using {_listed(params, tuned)} from {TUNED_FILE} ({found}, trial "
            f"#{tuning.get('trial', '?')})"
        )
    elif tuning is None:
        parts.append(f"no {TUNED_FILE} in the run folder")
    else:
        parts.append(f"every value of {TUNED_FILE} is overridden by a given one")
    if tuning is not None and not resolved.tuning_ignored:
        parts += [
            f"given {_listed(params, [key])} wins over the tuned {_shown(value)}"
            for key, value in tuning["hparams"].items()
            if sources.get(key) == "given" and value != getattr(params, key)
        ]
    found = [key for key in NAMES if sources.get(key, "").startswith(FINDERS)]
    if found:
        parts.append(f"from the finders: {_listed(params, found)}")
    if given:
        parts.append(f"given: {_listed(params, given)}")
    rest = [key for key in NAMES if sources.get(key) == "default"]
    if rest:
        parts.append(f"defaults: {', '.join(rest)}")
    sentence = "; ".join(parts)
    if not sentence.startswith(TUNED_FILE):  # a path keeps its case
        sentence = sentence[:1].upper() + sentence[1:]
    return sentence + "."


def sources_table(resolved: Resolved, sources: dict[str, str] | None = None) -> str:
    """A markdown table: each parameter, its value, and where it came from."""
    sources = sources or resolved.sources
    rows = ["| parameter | value | from |", "|---|---|---|"]
    for key in NAMES:
        value = getattr(resolved.params, key)
        shown = "the model's default" if value is None else _shown(value)
        source = f"{sources[key]} ({TUNED_FILE})" if sources[key] == "tuned" else sources[key]
        rows.append(f"| {key} | {shown} | {source} |")
    return "\n".join(rows)


def tuning_summary(resolved: Resolved) -> dict[str, Any] | None:
    """What metrics/train.json keeps of best_hparams.json: the values, their score, and use."""
    if resolved.tuning is None and resolved.tuning_ignored is None:
        return None
    keys = ("hparams", "objective", "score", "trial", "algorithm")
    kept = {key: (resolved.tuning or {}).get(key) for key in keys}
    return {**kept, "used": resolved.tuning_ignored is None, "ignored": resolved.tuning_ignored}


def _listed(params: Params, keys: list[str]) -> str:
    return ", ".join(f"{key}={_shown(getattr(params, key))}" for key in keys)


def _shown(value: Any) -> str:
    return f"{value:.3g}" if isinstance(value, float) else str(value)
