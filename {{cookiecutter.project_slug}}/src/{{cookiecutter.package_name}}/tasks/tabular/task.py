"""The table task behind the seam: census income by default, a user's CSV or Parquet file.

data/ holds each split as Parquet with the schema and the fitted FeatureSpace (features.py); the
pipeline encodes raw columns in tf.data, the models take the encoded matrix, and the export puts the
FeatureSpace in front of the model so a client sends raw named columns. This module is what the
steps ask of the task, grouped at the end into the seam's Task (tasks/base.py); each module below
does one job.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import keras
import numpy as np
import tensorflow as tf

from ...artifacts import DATA_DIR, StepError
from ...seam import NOUNS
from ..base import Bench, Export, Models, Recipe, Scores, Task, examples_of
from . import compare, data_step, export, knobs, models, weights
from .dataset import feature_space, make_dataset, model_examples, raw_examples, read_tabular_meta

__all__ = ["make_dataset", "model_examples", "raw_examples"]

NAME = "tabular_classification"
NOUN = NOUNS["tabular"]
RAW_INPUT = "columns"  # serving_default takes one input per raw column, by the column's name
MODEL_INPUT = export.FEATURES_INPUT
MODEL_SIGNATURE = export.FEATURES_SIGNATURE  # the matrix the model and the compiled backends take
# serving_default takes strings, which a converter of serving_default cannot take: it says so.
RAW_STRINGS = "the category columns, by name, looked up in the graph by the FeatureSpace"
INT8 = "dynamic"  # a few MatMuls and one gather: ranges per batch, no calibration set needed
MODELS = tuple(models.BUILDERS)
DEFAULT_MODEL = "tabm"
MODEL_HELP = (
    "tabm (an efficient ensemble MLP with periodic numeric embeddings, Gorishniy et al. 2024), "
    "wide_deep (Wide & Deep, Cheng et al. 2016) or dcn_v2 (a cross network beside an MLP)"
)
# The builders' knobs, as training takes them: the default and the width's range.
KNOBS = {
    "wide_deep": {"width": 256, "dropout": 0.1, "width_range": (64, 512)},
    "dcn_v2": {"width": 256, "dropout": 0.1, "width_range": (64, 512)},
    "tabm": {"width": 256, "dropout": 0.1, "width_range": (64, 512)},
}
# What an earlier run's weights must share with this run's data (train/finetune.check_source).
SAME_INPUTS = ("fingerprint", "layout")


def build_model(
    name: str,
    meta: dict[str, Any],
    *,
    weights: str | None = None,
    width: int | None = None,
    dropout: float | None = None,
    **own: Any,
) -> keras.Model:
    """The named table model for this data's layout and classes; `own`: its builder's own
    knobs (knobs.values: TabM's members, depth, freqs, sigma)."""
    check_model(name, meta, weights=weights, width=width, dropout=dropout)
    knobs: dict[str, Any] = {"width": width} if width else {}
    if dropout is not None:
        knobs["dropout"] = float(dropout)
    return models.build_model(name, meta["layout"], int(meta["num_classes"]), **knobs, **own)


def check_model(
    name: str,
    meta: dict[str, Any],
    *,
    weights: str | None = None,
    width: int | None = None,
    dropout: float | None = None,
) -> None:
    """Refuse a model name, knob or weights this task has no use for, in one sentence."""
    if name not in MODELS:
        raise models.ModelError(f"model={name!r} is not allowed: use {MODEL_HELP}.")
    if weights is not None:
        raise models.ModelError(
            f"weights={weights!r} is not allowed for tables: there are no pretrained weights "
            "for a table model; start from your own .keras file with weights=PATH."
        )
    check_knobs(name, width=width, dropout=dropout)


def check_knobs(name: str, *, width: Any = None, dropout: Any = None) -> None:
    """A width (a multiple of 8, for Tensor Cores) and a dropout rate from 0 to below 1."""
    if width is not None and (
        isinstance(width, bool) or not isinstance(width, int) or width < 8 or width % 8
    ):
        raise models.ModelError(
            f"width={width!r} is not allowed for {name}: use a multiple of 8 (Tensor Cores "
            f"under mixed precision), e.g. {KNOBS.get(name, {}).get('width', 256)}."
        )
    if dropout is not None and (
        isinstance(dropout, bool) or not isinstance(dropout, int | float) or not 0 <= dropout < 1
    ):
        raise models.ModelError(f"dropout={dropout!r} is not allowed: use 0 to below 1.")


def rebuilt(model: keras.Model, classes: int) -> keras.Model:
    """A .weights.h5 saved with another number of classes: the same builder and layout (read
    back from its Columns layer), and a head of `classes` outputs."""
    columns = model.get_layer("columns")
    slots = [{"name": f"n{i}", "kind": "numeric", "size": None} for i in range(columns.numeric)]
    slots += [
        {"name": f"c{i}", "kind": "categorical", "size": s} for i, s in enumerate(columns.sizes)
    ]
    name = model.name if model.name in MODELS else DEFAULT_MODEL
    if name == "tabm":  # it leaves the crosses (the layout's last index columns) out: say which
        embedded = model.get_layer("embedded").output.shape[-1]
        kept = embedded // model.get_layer("embeddings").output_dim
        for slot in slots[columns.numeric + kept :]:
            slot["kind"] = "cross"
    return models.build_model(name, slots, classes, **knobs.read_back(model))  # members …


def check_options(params: Any) -> None:
    """The table task's own training values: class_weight, TabM's knobs, then compare_models."""
    weights.check(params)
    knobs.check(params)
    compare.check(params)


def parity_examples(meta: dict[str, Any], split: str, default: int) -> int:
    """Every row of the split: tens of thousands of short rows cost seconds, and "the same class
    for every test row" is then a measured claim, not a sample's."""
    return max(default, int(meta["splits"][split]["count"]))


def model_state(meta: dict[str, Any]) -> dict[str, Any]:
    """What a checkpoint depends on beyond the training values: the schema and its layout."""
    return {"schema_fingerprint": meta.get("fingerprint"), "features": len(meta["layout"])}


def model_spec(model: keras.Model) -> tf.TensorSpec:
    """The trained model's input: the FeatureSpace's float32 matrix [batch, width]."""
    return export.features_spec(int(model.inputs[0].shape[-1]))


def check_trained(model: keras.Model, meta: dict[str, Any], model_path: Any) -> None:
    """model.keras must take this data's encoded rows and give one probability per class."""
    width = len(meta["layout"])
    shape = tuple(model.inputs[0].shape)
    if len(shape) != 2 or shape[-1] != width:
        raise StepError(
            f"{model_path} takes inputs of shape {shape}, not this data's {width} encoded "
            "columns [batch, width]: re-run 03_train on this run folder's data."
        )
    if model.outputs[0].shape[-1] != len(meta["classes"]):
        raise StepError(
            f"{model_path} gives {model.outputs[0].shape[-1]} outputs per row, but the data has "
            f"{len(meta['classes'])} classes: re-run 03_train on this run folder's data."
        )


def build_archive(
    model: keras.Model, meta: dict[str, Any], run_dir: str | os.PathLike[str]
) -> keras.export.ExportArchive:
    """serving_default (raw named columns, encoded inside by data/'s FeatureSpace) and features
    (the encoded matrix, for ONNX Runtime and the compiled backends)."""
    check_finite(model, run_dir)
    space = feature_space(run_dir, meta)
    width = len(meta["layout"])
    return export.build_table_archive(model, space, meta["schema"], list(meta["classes"]), width)


def client_encoder(run_dir: str | os.PathLike[str]) -> Any:
    """raw rows -> the matrix MODEL_SIGNATURE takes, as a converted model's client runs it."""
    meta = read_tabular_meta(run_dir)
    return export.client_encoder(feature_space(run_dir, meta), meta["schema"])


def check_finite(model: keras.Model, run_dir: str | os.PathLike[str], count: int = 512) -> None:
    """A model that answers NaN or inf on validation rows (its training diverged) is not exported:
    its parity line would read "largest probability difference nan" and a server answer NaN."""
    inputs, _ = model_examples(run_dir, "validation", count)
    outputs = model.predict(inputs, batch_size=256, verbose=0)
    bad = int((~np.isfinite(outputs).all(axis=-1)).sum())
    if bad:
        raise StepError(
            f"model.keras answers probabilities that are not finite (NaN or inf) on {bad:,} of "
            f"{len(inputs):,} validation rows, so its training diverged: re-run 03_train (a lower "
            "learning rate; 01_data refuses values beyond float32) before exporting."
        )


def baseline(run_dir: str | os.PathLike[str]) -> dict[str, Any] | None:
    """HistGradientBoosting with native categoricals and a logistic regression on one-hot
    columns, fit on the training split and scored on test: the bar the network has to clear,
    the first of them headlined, the other beside it."""
    import pandas as pd

    from .baseline import run_baselines

    meta = read_tabular_meta(run_dir)
    if "test" not in meta["splits"]:
        return None
    data = Path(run_dir) / DATA_DIR
    train, test = (pd.read_parquet(data / meta["splits"][s]["file"]) for s in ("train", "test"))
    first, *others = run_baselines(train, test, meta)
    return {**first, "test_macro_f1": first.get("test_macro_f1"), "others": others}


def test_extras(
    run_dir: str | os.PathLike[str],
    split: str,
    labels: np.ndarray,
    probabilities: np.ndarray,
    classes: list[str],
    *,
    predict: Any = None,
) -> dict[str, Any]:
    """ROC AUC and PR AUC, accuracy at 0.5 and at the threshold chosen on validation, the Brier
    score and the curves of the figure (binary); the ranking scores alone for more classes; and
    what answering the training split's majority class to every row scores, for any number."""
    from .scores import binary_report, class_curves, majority, ranking_scores

    counts = read_tabular_meta(run_dir)["splits"]["train"]["per_class"]
    said = majority(labels, counts, classes)
    if probabilities.shape[1] != 2:
        ranking = ranking_scores(labels, probabilities)
        curves = {"test_curves": class_curves(labels, probabilities, classes)}
        return {**{f"test_{k}": v for k, v in ranking.items()}, **curves, **said}
    validation = predict("validation") if predict is not None else None
    return {**binary_report((labels, probabilities), validation), **said}


def validation_roc_auc(labels: np.ndarray, probabilities: np.ndarray) -> float:
    """02's objective: validation ROC AUC (scores.validation_roc_auc, loaded when first used)."""
    from .scores import validation_roc_auc as score

    return score(labels, probabilities)


def rest_payload(raw: Any) -> dict[str, Any]:
    """TF Serving's REST body: one JSON object per row, named columns, NaN for a
    missing number (json.dumps writes it bare; TF Serving refuses null for a float input)."""
    if getattr(getattr(raw, "dtype", None), "names", None) is None:
        raise StepError(
            "rows without named columns are not allowed: send a structured array (raw_examples "
            "gives one) or JSON objects with one value per column."
        )
    return {"signature_name": export.SIGNATURE, "instances": export.rest_rows(raw)}


def plot_mistakes(raw: np.ndarray, metrics: dict[str, Any], classes: list[str], path: Any) -> Any:
    """figures/export_misclassified.png: the rows the export got most confidently wrong."""
    from .plots import plot_row_mistakes

    return plot_row_mistakes(raw, metrics, classes, path)


def draw_scores(folder: Path, metrics: dict[str, Any], path: Path) -> Path | None:
    """figures/train_scores.png: reliability, ROC and precision-recall of the test split."""
    from .plots import plot_scores

    return plot_scores(folder, metrics, path)


# The figures this task draws beyond every task's (seam.FIGURES names them), by step.
DRAWERS = {"train": {"train_scores": draw_scores}}
BENCH_FEATURES = 64  # gpu-bench's synthetic rows: 32 numbers and 32 categories of 1,000 values


def serving_examples(
    run_dir: str | os.PathLike[str], meta: dict[str, Any], count: int, seed: int = 0
) -> np.ndarray:
    """What a load test of TF Serving sends: `count` real rows of the validation split (in file
    order, repeated when it holds fewer), so the server encodes what users send."""
    split = "validation" if "validation" in meta.get("splits", {}) else "train"
    rows, _ = raw_examples(run_dir, split, count)
    if not len(rows):
        raise StepError(f"the {split} split of {run_dir} holds no rows to send: run 01_data again.")
    return np.resize(rows, count)


def bench_model(quick: bool) -> dict[str, Any]:
    """gpu-bench's reference: Wide & Deep on 64 encoded columns and 2 classes (ranking serves
    large batches of such rows); --quick: the same, narrower."""
    if quick:
        return {
            "model": "wide_deep",
            "size": 16,
            "num_classes": 2,
            "shown": "wide_deep, 16 columns",
        }
    shown = f"wide_deep, {BENCH_FEATURES} columns"
    return {"model": "wide_deep", "size": BENCH_FEATURES, "num_classes": 2, "shown": shown}


def synthetic_meta(size: int, num_classes: int) -> dict[str, Any]:
    """A layout of `size` columns, half numbers and half categories of 1,000 values."""
    half = size // 2
    slots = [{"name": f"n{i}", "kind": "numeric", "size": None} for i in range(size - half)]
    slots += [{"name": f"c{i}", "kind": "categorical", "size": 1000} for i in range(half)]
    return {"layout": slots, "num_classes": num_classes}


def synthetic_batch(
    meta: dict[str, Any], count: int, seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """`count` rows of the layout: normal numbers, uniform category indices, int64 labels."""
    rng = np.random.default_rng(seed)
    columns = []
    for slot in meta["layout"]:
        if slot["kind"] == "numeric":
            columns.append(rng.standard_normal(count))
        else:
            columns.append(rng.integers(0, int(slot["size"]), count))
    rows = np.stack(columns, axis=1).astype(np.float32)
    return rows, rng.integers(0, int(meta["num_classes"]), count).astype(np.int64)


class TabularTask(Task):
    """The table task as every step sees it (tasks/base.py): this module's answers, grouped."""

    name = NAME
    noun = NOUN
    data = data_step.DATA

    def __init__(self) -> None:
        self.models = Models(
            names=MODELS,
            default=DEFAULT_MODEL,
            help=MODEL_HELP,
            knobs=KNOBS,
            check=check_model,
            check_knobs=check_knobs,
            check_trained=check_trained,
            rebuilt=rebuilt,
            state=model_state,
            space=knobs.space,  # TabM's members, depth, frequencies, sigma
            values=knobs.values,
        )
        self.recipe = Recipe(
            options=knobs.TrainOptions,  # class_weight, TabM's knobs
            check=check_options,
            class_weights=weights.weighting,
            summary=weights.summary,
            same_inputs=SAME_INPUTS,
        )
        self.export = Export(
            raw_input=RAW_INPUT,
            model_input=MODEL_INPUT,
            model_signature=MODEL_SIGNATURE,
            build_archive=build_archive,
            model_spec=model_spec,
            rest_payload=rest_payload,
            parity_examples=parity_examples,
            plot_mistakes=plot_mistakes,
            int8=INT8,
            raw_strings=RAW_STRINGS,
            client_encoder=client_encoder,
        )
        self.scores = Scores(
            baseline=baseline,
            extras=test_extras,
            drawers=DRAWERS,
            compare=compare.train_compared,  # compare_models: trained beside, not exported
            objective="val_roc_auc",  # 02 ranks trials by what 03's headline compares
            objective_score=validation_roc_auc,
        )
        self.bench = Bench(
            model=bench_model,
            synthetic_meta=synthetic_meta,
            synthetic_batch=synthetic_batch,
            serving_examples=serving_examples,
        )

    def build_inputs(
        self, run_dir: str | os.PathLike[str], split: str, batch_size: int, **options: Any
    ) -> tf.data.Dataset:
        """(float32 encoded rows [B, F], int32 labels [B]) batches."""
        return make_dataset(run_dir, split, batch_size, **options)

    def examples(
        self, run_dir: str | os.PathLike[str], split: str, count: int, form: str = "raw"
    ) -> tuple[Any, np.ndarray]:
        """The first rows of a split: raw columns (a structured array), or encoded rows."""
        return examples_of(form, raw_examples, model_examples)(run_dir, split, count)

    def build_model(self, name: str, meta: dict[str, Any], **options: Any) -> keras.Model:
        return build_model(name, meta, **options)


TASK = TabularTask()
