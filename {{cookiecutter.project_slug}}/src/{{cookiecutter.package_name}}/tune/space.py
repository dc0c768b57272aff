"""What the tuner may choose, under training's parameter names, and the tables that show it.

Values come back from keras-tuner as training takes them, so the best of them can be handed to
step 3 as they are.
"""

from __future__ import annotations

from typing import Any

from ..tasks import current as task

OBJECTIVE = "val_accuracy"


def search_space(model: str) -> dict[str, dict[str, Any]]:
    """What the tuner may choose, by training's parameter names: type, range, step, default.

    The learning rate is searched on a log scale (1e-4 and 1e-3 are as far apart as 1e-3 and
    1e-2); width in multiples of 8 (Tensor Cores), dropout in steps of 0.05. keras.applications
    models have no width or dropout knob, so only their learning rate is searched.
    """
    space: dict[str, dict[str, Any]] = {
        "learning_rate": {
            "type": "float",
            "min": 1e-4,
            "max": 1e-2,
            "step": None,
            "sampling": "log",
            "default": 1e-3,
        }
    }
    knobs = task().KNOBS.get(model)  # the task's own models: their width, dropout, ranges
    if knobs is not None:
        low, high = knobs["width_range"]
        space["width"] = {
            "type": "int",
            "min": low,
            "max": high,
            "step": 8,
            "sampling": "linear",
            "default": knobs["width"],
        }
        space["dropout"] = {
            "type": "float",
            "min": 0.0,
            "max": 0.5,
            "step": 0.05,
            "sampling": "linear",
            "default": knobs["dropout"],
        }
    return space


def space_table(space: dict[str, dict[str, Any]]) -> str:
    """The search space as a markdown table, one row per parameter."""
    rows = [
        "| parameter | type | from | to | step | sampling | default |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, spec in space.items():
        cells = [spec[key] for key in ("type", "min", "max", "step", "sampling", "default")]
        rows.append(f"| {name} | " + " | ".join(_cell(cell) for cell in cells) + " |")
    return "\n".join(rows)


def trials_table(result: dict[str, Any]) -> str:
    """The trials of a search as a markdown table, best score first."""
    names = list(result["search_space"])
    rows = [
        f"| trial | {OBJECTIVE} | best epoch | epochs | " + " | ".join(names) + " | status |",
        "|---:|---:|---:|---:|" + "---:|" * len(names) + "---|",
    ]
    ranked = sorted(
        result["trials"],
        key=lambda trial: -1.0 if trial["score"] is None else trial["score"],
        reverse=True,
    )
    for trial in ranked:
        mark = " (best)" if trial["trial"] == result["best_trial"] else ""
        cells = [trial["score"], trial["best_epoch"], trial["epochs"] or result["epochs"]]
        cells += [trial["hparams"].get(name) for name in names]
        rows.append(
            f"| #{trial['trial']}{mark} | "
            + " | ".join(_cell(cell) for cell in cells)
            + f" | {trial['status']} |"
        )
    return "\n".join(rows)


def choose(hp: Any, name: str, spec: dict[str, Any]) -> Any:
    """keras-tuner's value for one parameter of the space."""
    if spec["type"] == "int":
        return hp.Int(name, spec["min"], spec["max"], step=spec["step"], default=spec["default"])
    return hp.Float(
        name,
        spec["min"],
        spec["max"],
        step=spec["step"],
        sampling=spec["sampling"],
        default=spec["default"],
    )


def training_values(values: dict[str, Any]) -> dict[str, Any]:
    """keras-tuner's values as training takes them: its own "tuner/…" entries left out, width a
    whole number, dropout rounded (keras-tuner's 0.15000000000000002 is 0.15)."""
    convert = {"learning_rate": float, "width": int, "dropout": lambda rate: round(rate, 4)}
    return {name: convert[name](values[name]) for name in convert if name in values}


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    return f"{value:.4g}" if isinstance(value, float) else str(value)
