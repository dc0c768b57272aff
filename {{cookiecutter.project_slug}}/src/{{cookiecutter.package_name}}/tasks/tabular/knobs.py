"""A table model's own knobs: TabM's members, MLP depth, numeric-embedding frequencies and sigma.

Each is a training parameter of the table task (train's Params adds TrainOptions), None meaning
"the builder's default", so 03 takes the value step 2 found the way it takes a found width (a
recipe value left at its default is taken from step 2's best values). `space` gives 02 the
search's specs (the format of step 2's space), `values` gives the builder the values set, and
`check` refuses a value in one sentence, before TensorFlow loads too (early.py). Light to
import: no TensorFlow.

What 02 searches, and why: members 8/16/32 (TabM's ensemble size: more members average more,
cost grows linearly), depth 1-3 shared layers (the paper's MLPs are 1-4 deep), 8/16/32
frequencies per number and their initial scale sigma on a log scale from 0.3 to 30 (Gorishniy et
al. 2022 search sigma over [0.01, 100]; census income scored best at 20, on validation loss and
test ROC AUC alike).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ...artifacts import StepError
from ...steps import param
from .weights import TrainOptions as WeightOptions

SPECS: dict[str, dict[str, dict[str, Any]]] = {
    "tabm": {
        "members": {"type": "choice", "values": [8, 16, 32], "default": 16},
        "depth": {
            "type": "int",
            "min": 1,
            "max": 3,
            "step": 1,
            "sampling": "linear",
            "default": 2,
        },
        "frequencies": {"type": "choice", "values": [8, 16, 32], "default": 16},
        "sigma": {"type": "float", "min": 0.3, "max": 30.0, "sampling": "log", "default": 3.0},
    }
}
BUILDER = {"members": "members", "depth": "depth", "frequencies": "freqs", "sigma": "sigma"}
# What a given value may be (02 searches inside these): (least, most, whole number)
LIMITS = {
    "members": (1, 64, True),
    "depth": (1, 8, True),
    "frequencies": (1, 64, True),
    "sigma": (0.01, 100.0, False),
}
DEFAULT_MODEL = "tabm"  # task.DEFAULT_MODEL (not imported: task.py loads TensorFlow)


@dataclass(frozen=True)
class TrainOptions(WeightOptions):
    """The table task's own training parameters: class_weight, then TabM's knobs."""

    members: int | None = param(None, "tabm: ensemble members (02 searches 8, 16, 32); None: 16")
    depth: int | None = param(None, "tabm: shared MLP layers (02 searches 1 to 3); None: 2")
    frequencies: int | None = param(
        None, "tabm: periodic frequencies per number (02 searches 8, 16, 32); None: 16"
    )
    sigma: float | None = param(
        None, "tabm: the frequencies' initial scale (02 searches 0.3 to 30, log); None: 3"
    )


def space(model: str) -> dict[str, dict[str, Any]]:
    """The search's specs of `model`'s own knobs (none for wide_deep and dcn_v2)."""
    return {name: dict(spec) for name, spec in SPECS.get(model, {}).items()}


def values(params: Any) -> dict[str, Any]:
    """build_model's keyword values of params.model's knobs that are set (not None)."""
    return {
        BUILDER[name]: getattr(params, name, None)
        for name in SPECS.get(params.model, {})
        if getattr(params, name, None) is not None
    }


def check_early(given: Mapping[str, Any]) -> None:
    """Refuse, in one sentence, a knob value out of LIMITS or a knob of another model."""
    model = given.get("model") or DEFAULT_MODEL
    for name, (least, most, whole) in LIMITS.items():
        value = given.get(name)
        if value is None:
            continue
        owners = [owner for owner, specs in SPECS.items() if name in specs]
        if isinstance(model, str) and model not in owners:
            raise StepError(
                f"{name}={value!r} is not allowed for model={model}: it is a knob of "
                f"{', '.join(owners)} only; leave it unset."
            )
        kind = int if whole else int | float
        if isinstance(value, bool) or not isinstance(value, kind) or not least <= value <= most:
            number = "a whole number" if whole else "a number"
            searched = _searched(SPECS[owners[0]][name])
            raise StepError(
                f"{name}={value!r} is not allowed: use {number} from {least:g} to {most:g} "
                f"(02 searches {searched})."
            )


def check(params: Any) -> None:
    """The same refusal from train's Params (Recipe.check)."""
    check_early({name: getattr(params, name) for name in ("model", *LIMITS)})


def read_back(model: Any) -> dict[str, Any]:
    """The knobs a built TabM was made with, read from its layers (a rebuild keeps them)."""
    names = [layer.name for layer in model.layers]
    if "members" not in names:
        return {}
    knobs = {"members": model.get_layer("members").members}
    knobs["depth"] = sum(1 for name in names if name.startswith("deep_"))
    knobs["width"] = int(model.get_layer("deep_0").units)
    if "periodic" in names:
        periodic = model.get_layer("periodic")
        knobs.update(freqs=periodic.freqs, sigma=periodic.sigma, numeric_embed=periodic.embed)
    return knobs


def _searched(spec: dict[str, Any]) -> str:
    if spec["type"] == "choice":
        return ", ".join(str(value) for value in spec["values"])
    return f"{spec['min']:g} to {spec['max']:g}"
