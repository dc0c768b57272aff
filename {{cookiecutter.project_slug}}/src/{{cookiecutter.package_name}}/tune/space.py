"""What the tuner may choose, under training's parameter names, and the tables that show it.

Values come back from keras-tuner as training takes them, so the best of them can be handed to
step 3 as they are. The space is plain data (JSON), written to tuning/space.json beside the
trials, so a reader sees what was searched; `choose` declares it to keras-tuner.
"""

from __future__ import annotations

from typing import Any

from ..tasks import current as task


def objective() -> str:
    """What trials are ranked by, higher better: the task's (val_accuracy; tables' validation
    ROC AUC, val_roc_auc), so a search optimizes what step 3's headline compares."""
    return task().scores.objective


# The recipe of every task (train/recipe.py's names): the learning rate on a log scale (1e-4 and
# 1e-3 are as far apart as 1e-3 and 1e-2); AdamW's decay from none to strong (a log scale cannot
# hold 0, training's default); label smoothing in steps of 0.05.
RECIPE: dict[str, dict[str, Any]] = {
    "learning_rate": {
        "type": "float",
        "min": 1e-4,
        "max": 1e-2,
        "sampling": "log",
        "default": 1e-3,
    },
    "schedule": {"type": "choice", "values": ["constant", "cosine"], "default": "constant"},
    "weight_decay": {"type": "choice", "values": [0.0, 1e-4, 1e-3, 1e-2], "default": 0.0},
    "label_smoothing": {
        "type": "float",
        "min": 0.0,
        "max": 0.2,
        "step": 0.05,
        "sampling": "linear",
        "default": 0.0,
    },
}
MOST_WARMUP = 3  # epochs of warmup at most (Goyal et al. warm up for 5 of 90)
# After freeze_epochs: every backbone layer, or the top 1, 2 or 4 with weights (as text: keras-tuner
# takes choices of one type; training_values turns "2" into 2).
UNFREEZE = ("all", "1", "2", "4")


def search_space(model: str, weights: str = "none", epochs: int = 2) -> dict[str, dict[str, Any]]:
    """What the tuner may choose, by training's parameter names: type, range or values, default.

    The recipe every task trains with (RECIPE), the task's own part (its KNOBS: a builder's
    width and dropout; its RECIPE_CHOICES: image augmentation), and, only when the search starts
    from `weights`, how long the backbone stays frozen and, only when it is frozen at all, how
    much of it thaws (`when`: a conditional value, active for those values of its parent).
    Epoch counts stay below `epochs`, as training's checks ask. Every default is training's own
    (warmup_epochs 0: what "auto" is up to a batch of 256), so the first trial of a random
    search (the defaults) is the recipe training runs without tuning.
    """
    space: dict[str, dict[str, Any]] = {name: dict(spec) for name, spec in RECIPE.items()}
    warmup = min(MOST_WARMUP, epochs - 1)
    if warmup > 0:
        space["warmup_epochs"] = _whole(0, warmup, 0)
    knobs = task().models.knobs.get(model)  # the task's own builders: width, dropout, ranges
    if knobs is not None:
        low, high = knobs["width_range"]
        # width in multiples of 8 (Tensor Cores), dropout in steps of 0.05; keras.applications
        # models have no such knob
        if weights == "none":  # weights from a file fix the architecture: its width
            space["width"] = {**_whole(low, high, knobs["width"]), "step": 8}
        space["dropout"] = {
            "type": "float",
            "min": 0.0,
            "max": 0.5,
            "step": 0.05,
            "sampling": "linear",
            "default": knobs["dropout"],
        }
    # the model's own knobs (a table ensemble's members, depth, frequencies, sigma) and a shared
    # value's range of its own (text: a pretrained encoder's learning rate), as the task gives them
    space.update({name: dict(spec) for name, spec in task().models.space(model).items()})
    for name, values in task().recipe.choices.items():  # images: augment none, light, strong
        space[name] = {"type": "choice", "values": list(values), "default": values[0]}
    if weights != "none" and epochs > 1:
        space["freeze_epochs"] = _whole(0, epochs - 1, 0)
        space["unfreeze"] = {
            "type": "choice",
            "values": list(UNFREEZE),
            "default": "all",
            "when": {"freeze_epochs": list(range(1, epochs))},
        }
    return space


def space_table(space: dict[str, dict[str, Any]]) -> str:
    """The search space as a markdown table, one row per parameter, conditions in `only when`."""
    rows = [
        "| parameter | values | sampling | default | only when |",
        "|---|---|---|---|---|",
    ]
    for name, spec in space.items():
        if spec["type"] == "choice":
            values = ", ".join(_cell(value) for value in spec["values"])
        else:
            step = f" step {_cell(spec['step'])}" if spec.get("step") else ""
            values = f"{_cell(spec['min'])} to {_cell(spec['max'])}{step}"
        when = "; ".join(
            f"{parent} in {', '.join(_cell(value) for value in allowed)}"
            for parent, allowed in spec.get("when", {}).items()
        )
        sampling = spec.get("sampling", "one of")
        rows.append(
            f"| {name} | {values} | {sampling} | {_cell(spec['default'])} | {when or '-'} |"
        )
    return "\n".join(rows)


def trials_table(result: dict[str, Any]) -> str:
    """The trials of a search as a markdown table, best score first."""
    names = list(result["search_space"])
    score = result.get("objective") or objective()
    rows = [
        f"| trial | {score} | best epoch | epochs | " + " | ".join(names) + " | status |",
        "|---:|---:|---:|---:|" + "---:|" * len(names) + "---|",
    ]
    ranked = sorted(
        result["trials"],
        key=lambda trial: -1.0 if trial["score"] is None else trial["score"],
        reverse=True,
    )
    for trial in ranked:
        marks = [
            "best" if trial["trial"] == result["best_trial"] else "",
            "defaults" if trial.get("defaults") else "",
        ]
        mark = f" ({', '.join(m for m in marks if m)})" if any(marks) else ""
        cells = [trial["score"], trial["best_epoch"], trial["epochs"] or result["epochs"]]
        cells += [trial["hparams"].get(name) for name in names]
        status = trial["status"] + (f": {trial['error']}" if trial.get("error") else "")
        rows.append(
            f"| #{trial['trial']}{mark} | "
            + " | ".join(_cell(cell) for cell in cells)
            + f" | {status.replace('|', '/')} |"
        )
    return "\n".join(rows)


def choose(hp: Any, name: str, spec: dict[str, Any]) -> Any:
    """keras-tuner's value for one parameter of the space; None when its condition is not met
    (keras-tuner's conditional_scope: the value is not part of that trial)."""
    for parent, allowed in spec.get("when", {}).items():
        with hp.conditional_scope(parent, allowed):
            return _declare(hp, name, spec)
    return _declare(hp, name, spec)


def training_values(
    values: dict[str, Any], space: dict[str, dict[str, Any]] | None = None
) -> dict[str, Any]:
    """keras-tuner's values as training takes them: its own "tuner/…" entries and inactive
    (None) values left out, whole numbers as int, floats rounded (keras-tuner's
    0.15000000000000002 is 0.15), an unfreeze count as a number; a model's own knobs in `space`
    by their spec's type (a choice as chosen)."""
    convert = {
        "learning_rate": float,
        "width": int,
        "dropout": _rounded,
        "schedule": str,
        "warmup_epochs": int,
        "weight_decay": float,
        "label_smoothing": _rounded,
        "augment": str,
        "freeze_epochs": int,
        "unfreeze": lambda text: text if text == "all" else int(text),
    }
    for name, spec in (space or {}).items():
        convert.setdefault(name, _OWN.get(spec["type"], _same))
    return {name: convert[name](values[name]) for name in convert if values.get(name) is not None}


def defaults(space: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The values of the space's defaults, as training takes them (conditions not met left out)."""
    chosen = {name: spec["default"] for name, spec in space.items() if "when" not in spec}
    for name, spec in space.items():
        if all(chosen.get(parent) in allowed for parent, allowed in spec.get("when", {}).items()):
            chosen.setdefault(name, spec["default"])
    return training_values(chosen, space)


def _declare(hp: Any, name: str, spec: dict[str, Any]) -> Any:
    if spec["type"] == "choice":
        return hp.Choice(name, spec["values"], default=spec["default"])
    if spec["type"] == "int":
        return hp.Int(name, spec["min"], spec["max"], step=spec["step"], default=spec["default"])
    return hp.Float(
        name,
        spec["min"],
        spec["max"],
        step=spec.get("step"),
        sampling=spec["sampling"],
        default=spec["default"],
    )


def _whole(low: int, high: int, default: int) -> dict[str, Any]:
    return {
        "type": "int",
        "min": low,
        "max": high,
        "step": 1,
        "sampling": "linear",
        "default": default,
    }


def _rounded(value: float) -> float:
    return round(float(value), 4)


def _significant(value: float) -> float:
    return float(f"{float(value):.4g}")  # a log-scale knob (sigma 0.3 to 30): 4 digits


def _same(value: Any) -> Any:
    return value


_OWN = {"int": int, "float": _significant}


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    return f"{value:.4g}" if isinstance(value, float) else str(value)
