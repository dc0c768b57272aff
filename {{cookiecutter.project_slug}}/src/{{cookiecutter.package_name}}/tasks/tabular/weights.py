"""Class weights for rare positives: the table task's own training parameter `class_weight`.

`none` (every row counts once), `balanced` (each class weighs n_rows / (n_classes * its rows), as
scikit-learn's class_weight="balanced": the classes then weigh the same in the loss), or
`label:weight` pairs (`">50K:3"`; a class not named keeps 1). The weights come from the training
split's label counts (data/meta.json), multiply each row's loss in the train step
(replica.weighted: every replica's sum still divided by the global batch, so Mirrored and mixed
precision see the same mean), and are said in 03 and kept in train.json. Validation and test
losses stay unweighted: early stopping, the threshold and the calibration read the true log loss.
Light to import: the values are checked before TensorFlow loads.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from ...artifacts import StepError
from ...steps import param
from . import compare

MODES = ("none", "balanced")
HELP = "none, balanced (n / (classes * count)), or label:weight pairs, e.g. '>50K:3'"


@dataclass(frozen=True)
class TrainOptions:
    """The table task's own training parameters: train's Params adds them to the shared ones."""

    class_weight: str = param("none", HELP)
    compare_models: str = param("", compare.HELP)  # compare.py: trained beside, not exported


def parse(value: Any) -> dict[str, float] | str:
    """`value` as a mode ("none", "balanced") or {label: weight}; one sentence if it is neither."""
    if isinstance(value, str) and value.strip() in MODES:
        return value.strip()
    pairs: dict[str, float] = {}
    for part in value.split(",") if isinstance(value, str) else [""]:
        label, colon, number = part.strip().rpartition(":")
        try:
            weight = float(number) if colon and label.strip() else math.nan
        except ValueError:
            weight = math.nan
        if not (math.isfinite(weight) and weight > 0) or label.strip() in pairs:
            raise StepError(
                f"class_weight={value!r} is not allowed: use {HELP} (each label once, each "
                "weight a number > 0)."
            )
        pairs[label.strip()] = weight
    return pairs


def check(params: Any) -> None:
    """Refuse a class_weight that is not none, balanced or label:weight pairs."""
    parse(params.class_weight)


def check_early(values: dict[str, Any]) -> None:
    """The same refusal from loose values, before TensorFlow loads (early.py)."""
    if "class_weight" in values:
        parse(values["class_weight"])


def balanced(counts: list[int]) -> list[float]:
    """n / (classes * count) per class (scikit-learn's "balanced", counting the classes that
    have training rows); a class with none gets 0 (no row of it is ever weighted)."""
    total, classes = sum(counts), sum(1 for count in counts if count)
    return [total / (classes * count) if count else 0.0 for count in counts]


def weighting(params: Any, meta: dict[str, Any]) -> dict[str, Any] | None:
    """{"weights" per class (meta's order), "shares" of the training rows, "sentence"}, or None
    for class_weight=none. A label the data has no class of is refused in one sentence."""
    asked = parse(params.class_weight)
    if asked == "none":
        return None
    classes = [str(name) for name in meta["classes"]]
    counts = [int(n) for n in meta["splits"]["train"]["per_class"]]
    if asked == "balanced":
        weights = balanced(counts)
    else:
        unknown = sorted(set(asked) - set(classes))
        if unknown:
            raise StepError(
                f"class_weight names {', '.join(map(repr, unknown))}, which is no class of this "
                f"data: use the labels {', '.join(map(repr, classes))}."
            )
        weights = [asked.get(name, 1.0) for name in classes]
    total = max(sum(counts), 1)
    shares = [count / total for count in counts]
    sentence = (
        f"class_weight={params.class_weight}: weights "
        f"{' / '.join(f'{w:.2g}' for w in weights)} from "
        f"{' / '.join(f'{100 * s:.0f} %' for s in shares)} of the training rows "
        "(the training loss is weighted; validation and test losses are not)"
    )
    return {"weights": weights, "classes": classes, "shares": shares, "sentence": sentence}


def summary(params: Any) -> dict[str, Any]:
    """train.json's words about the table options: the class_weight asked."""
    return {"class_weight": params.class_weight}
