"""Where each training value comes from: given, offered by an optional part, or the default.

A value given by the caller wins; else, for the TUNABLE and RECIPE parameters, the one an
optional part of the project offers (parts.<name>.suggest: values found for the same model on the
same data); else the default. A TUNABLE value is not given when None; a RECIPE value when it is
its default (Params holds no None for them, and a notebook cannot tell a default it was given
from one it kept): to train with a recipe default over an offered value, remove the part's file.
A part's values found for another model, or on data that 01_data has replaced since, say nothing
about this run: none of them is used, and the sources say why.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from typing import Any

from .. import parts
from ..artifacts import resolve_run_dir
from ..tasks import current as task
from .params import (
    AUTO,
    DEFAULT_LEARNING_RATE,
    Params,
    Placement,
    check_tunable,
    check_values,
)

TUNABLE = ("model", "learning_rate", "width", "dropout")  # None: not given
RECIPE = (  # their default: not given
    "weights",
    "freeze_epochs",
    "unfreeze",
    "warmup_epochs",
    "schedule",
    "weight_decay",
    "label_smoothing",
    *(option.name for option in dataclasses.fields(task().recipe.options)),  # images: augment
)
RECIPE_RATE = "task recipe"  # the source of a task's own rate (text: a KerasHub encoder's)
FINDERS = ("batch-size finder", "range test")  # how train/auto.py names the sources it fills
NAMES = tuple(field.name for field in dataclasses.fields(Params))


@dataclass(frozen=True)
class Resolved:
    """The values a training run uses, where each came from, and where it runs."""

    params: Params  # model and learning_rate filled in; width/dropout None: the model's own
    sources: dict[str, str]  # {name: "given" | "default" | a part's source | a FINDERS name …}
    suggestions: tuple[dict[str, Any], ...]  # what each optional part offered (parts.*.suggest)
    placement: Placement


def resolve_params(
    run_dir: str | os.PathLike[str], given: Params | None = None, *, replicas: int | None = None
) -> tuple[Resolved, dict[str, str]]:
    """The checked values of a training run, and {name: "given" | a part's source | "default"}.

    A TUNABLE value left at None is taken from what an optional part offers for the same model
    on the current data, else from the defaults; any other value counts as given when it
    differs from the default. Raises TrainError for a bad value or a part's unusable file.
    """
    given = given if isinstance(given, Params) else Params(**(given or {}))
    check_values(given, replicas=replicas)  # a bad given value is named as given
    folder = resolve_run_dir(run_dir, create=False)
    suggestions = tuple(suggest(folder, given.model) for suggest in parts.collect("suggest"))
    offered = {
        name: (value, suggestion["source"])
        for suggestion in suggestions
        for name, value in suggestion["values"].items()
    }
    values, sources = {}, {}
    fallback = {"model": task().models.default, "learning_rate": DEFAULT_LEARNING_RATE}
    for field in dataclasses.fields(Params):
        name, value = field.name, getattr(given, field.name)
        if name in TUNABLE and value is None:
            value, source = offered.get(name, (fallback.get(name), "default"))
        elif name in RECIPE and value == field.default and name in offered:
            value, source = offered[name]
        else:
            source = "default" if value == field.default else "given"
        values[name], sources[name] = value, source
    own = task().recipe.learning_rate(Params(**values))  # text: an encoder's, not the range test
    if own and (sources["learning_rate"] == "default" or values["learning_rate"] == AUTO):
        values["learning_rate"], sources["learning_rate"] = own[0], RECIPE_RATE
    params = Params(**values)
    check_tunable(params.model, params.learning_rate, params.width, params.dropout)
    placement = check_values(params, replicas=replicas)
    return Resolved(params, sources, suggestions, placement), sources


def describe_sources(resolved: Resolved, sources: dict[str, str] | None = None) -> str:
    """One sentence on where the values came from, e.g. "Using learning_rate=0.0031 from …"."""
    sources = sources or resolved.sources
    params = resolved.params
    given = [key for key in NAMES if sources.get(key) == "given"]
    parts_said = []
    for suggestion in resolved.suggestions:
        used = [key for key in NAMES if sources.get(key) == suggestion["source"]]
        origin, record = suggestion["origin"], suggestion["record"]
        if suggestion["ignored"]:
            parts_said.append(suggestion["ignored"])
        elif used:
            parts_said.append(
                f"using {_listed(params, used)} from {origin} ({suggestion['detail']})"
            )
        elif record is None:
            parts_said.append(f"no {origin} in the run folder")
        else:
            parts_said.append(f"every value of {origin} is overridden by a given one")
        if record is not None and not suggestion["ignored"]:
            parts_said += [
                f"given {_listed(params, [key])} wins over the {suggestion['source']} "
                f"{_shown(value)}"
                for key, value in suggestion["values"].items()
                if sources.get(key) == "given" and value != getattr(params, key)
            ]
    found = [key for key in NAMES if sources.get(key, "").startswith(FINDERS)]
    if found:
        parts_said.append(f"from the finders: {_listed(params, found)}")
    if given:
        parts_said.append(f"given: {_listed(params, given)}")
    rest = [key for key in NAMES if sources.get(key) == "default"]
    if rest:
        parts_said.append(f"defaults: {', '.join(rest)}")
    sentence = "; ".join(parts_said)
    origins = tuple(suggestion["origin"] for suggestion in resolved.suggestions)
    if not origins or not sentence.startswith(origins):  # a path keeps its case
        sentence = sentence[:1].upper() + sentence[1:]
    return sentence + "."


def sources_table(resolved: Resolved, sources: dict[str, str] | None = None) -> str:
    """A markdown table: each parameter, its value, and where it came from."""
    sources = sources or resolved.sources
    origins = {suggestion["source"]: suggestion["origin"] for suggestion in resolved.suggestions}
    rows = ["| parameter | value | from |", "|---|---|---|"]
    for key in NAMES:
        value = getattr(resolved.params, key)
        shown = "the model's default" if value is None else _shown(value)
        source = sources[key]
        source = f"{source} ({origins[source]})" if source in origins else source
        rows.append(f"| {key} | {shown} | {source} |")
    return "\n".join(rows)


def suggestions_summary(resolved: Resolved) -> dict[str, Any]:
    """What metrics/train.json keeps of each part's offer, under the part's key."""
    summaries = parts.merged("SUMMARIES")
    return {
        suggestion["summary_key"]: summaries[suggestion["summary_key"]](suggestion)
        for suggestion in resolved.suggestions
    }


def read_artifacts(resolved: Resolved) -> list[str]:
    """The lineage names of the parts' files this training read."""
    return [suggestion["artifact"] for suggestion in resolved.suggestions]


def _listed(params: Params, keys: list[str]) -> str:
    return ", ".join(f"{key}={_shown(getattr(params, key))}" for key in keys)


def _shown(value: Any) -> str:
    return f"{value:.3g}" if isinstance(value, float) else str(value)
