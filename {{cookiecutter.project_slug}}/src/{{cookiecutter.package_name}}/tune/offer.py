"""What a search offers training: tuning/best_hparams.json, checked, when the same model was tuned
on the same data (train.value_sources asks through parts.tune.suggest, a Hook to here).

Kept in the tuning package, not in parts/tune.py: it reads lineage's ledger and training's checks,
which sit above the parts registry.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

from .. import lineage
from ..artifacts import StepError
from ..parts.tune import TUNED_FILE
from ..tasks import current as task
from ..train.params import DEFAULT_LEARNING_RATE, TrainError, check_tunable
from ..train.params import Params as TrainParams
from ..train.recipe import check_recipe
from ..train.value_sources import RECIPE
from ..train.value_sources import TUNABLE as BUILDER

# What a search finds, training takes when not given (train/value_sources.py): the builder's values,
# and the recipe's (with the weights the search started from, which its freeze_epochs need).
TUNABLE = BUILDER + RECIPE

LONGEST = 10**6  # epochs: a tuned freeze_epochs or warmup_epochs fits some run


def suggest(folder: Path, model: str | None) -> dict[str, Any]:
    """What step 2 offers a training of `model` (None: any) in `folder`, as training reads it:
    source and origin (how parameter_sources and the table name it), values (those to use),
    record (best_hparams.json as read, None when absent or not read), ignored (why none is used),
    detail (the search's score and trial), artifact (its lineage name), summary_key (its key in
    metrics/train.json). Raises TrainError for a file that cannot be used."""
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


def read_tuning(folder: Path) -> dict[str, Any] | None:
    """folder/tuning/best_hparams.json (see tune.search), checked; None when there is none."""
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
        # The recipe's values, by training's checks (any epoch count: the run's is checked later)
        # (with the model: its own knobs, an ensemble's size, are checked against it)
        recipe = TrainParams(**{key: hparams[key] for key in ("model", *RECIPE) if key in hparams})
        check_recipe(dataclasses.replace(recipe, epochs=LONGEST))
        task().recipe.check(recipe)
    except StepError as error:  # training's sentence, as it would refuse the value given
        raise _unusable(path, str(error)) from None
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as error:
        raise _unusable(path, f"{type(error).__name__}: {error}") from None
    return content


def _unusable(path: Path, reason: str) -> TrainError:
    reason = " ".join(reason.split()).rstrip(".")
    return TrainError(
        f"{path} cannot be used ({reason}): run 02_tune again, or delete it to train with "
        "the given and default values."
    )
