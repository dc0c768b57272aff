"""Other table models trained beside the one 03 exports: the table task's `compare_models`.

`compare_models="wide_deep,dcn_v2"` trains each named model after the main one, on the same
training split, for the same epochs at the same global batch and seed, each with its own recipe
(AdamW and a cosine decay to 1 %, at the learning rate and weight decay RECIPES gives it, scaled
with the batch as 03's rate is), the run's class weights, with `model.fit` on one device and no
early stopping; then scores it on the same test split once. Only the main model is saved and
exported: the compared ones leave their scores in metrics/train.json (`compared`), which the
run's headline weighs with the main model and the baselines. Light to import: the names are
checked before TensorFlow loads.
"""

from __future__ import annotations

import time
from typing import Any

from ...artifacts import StepError

NAMES = ("wide_deep", "dcn_v2", "tabm")  # the task's models (task.MODELS; a test keeps them equal)
# Each model's own learning rate (at a global batch of 64, scaled with the batch) and AdamW weight
# decay: tabm's is configs/default.yaml's; wide_deep's and dcn_v2's as first measured on census
# income (0.001 at batch 256, weight decay 1e-4: wide_deep's test ROC AUC 0.911, 4 epochs).
RECIPES = {
    "tabm": {"learning_rate": 0.0005, "weight_decay": 0.0003},
    "wide_deep": {"learning_rate": 0.00025, "weight_decay": 0.0001},
    "dcn_v2": {"learning_rate": 0.00025, "weight_decay": 0.0001},
}
HELP = (
    "other table models to train and score beside this one (not exported), comma-separated: "
    + ", ".join(NAMES)
    + "; empty: none"
)
REFERENCE_BATCH = 64  # train.params.REFERENCE_BATCH: the rates above are at this global batch


def parse(value: Any) -> list[str]:
    """The model names of `value` (comma-separated, in order, each once); one sentence naming
    the value and the allowed models if any is not one."""
    names = [part.strip() for part in value.split(",")] if isinstance(value, str) else None
    names = [name for name in names or [] if name] if names is not None else None
    if names is None or any(name not in NAMES for name in names) or len(set(names)) < len(names):
        raise StepError(
            f"compare_models={value!r} is not allowed: use a comma-separated list of "
            f"{', '.join(NAMES)} (each once), or an empty string for none."
        )
    return names


def check(params: Any) -> None:
    """Refuse a compare_models that names no table model."""
    parse(params.compare_models)


def check_early(values: dict[str, Any]) -> None:
    """The same refusal from loose values, before TensorFlow loads (early.py)."""
    if "compare_models" in values:
        parse(values["compare_models"])


def train_compared(loop: Any, say: Any) -> list[dict[str, Any]]:
    """One entry per compared model: its name, recipe, test scores and training seconds (the
    model 03 trains is not trained twice where compare_models names it too)."""
    names = [name for name in parse(loop.params.compare_models) if name != loop.params.model]
    if not names or "test" not in loop.meta["splits"]:
        return []
    from ...progress import starting

    entries = []
    for name in names:
        starting(f"Compared model {name}: {loop.params.epochs} epoch(s) with model.fit", "5-300 s")
        entry = train_one(loop, name)
        said = (
            f"test accuracy {entry['test_accuracy']:.4f}"
            + (f", ROC AUC {entry['roc_auc']:.4f}." if entry["roc_auc"] is not None else ".")
            if not entry["diverged"]
            else "its training diverged (probabilities not finite): no score."
        )
        say(
            f"Compared {name} (same split, {entry['epochs']} epoch(s), lr "
            f"{entry['effective_learning_rate']:.3g}, {entry['seconds']:.0f} s): {said}"
        )
        entries.append(entry)
    return entries


def train_one(loop: Any, name: str) -> dict[str, Any]:
    """Fit `name` on the training split (one device, model.fit) and score it on test."""
    import keras
    import numpy as np

    from .dataset import make_dataset
    from .models import build_model
    from .scores import ranking_scores

    params, meta, batch = loop.params, loop.meta, loop.global_batch
    keras.utils.set_random_seed(params.seed)
    recipe = RECIPES[name]
    rate = recipe["learning_rate"] * batch / REFERENCE_BATCH
    train = make_dataset(loop.folder, "train", batch, seed=params.seed, repeat=True)
    steps = max(1, int(meta["splits"]["train"]["count"]) // batch)  # a whole batch each
    schedule = keras.optimizers.schedules.CosineDecay(rate, steps * params.epochs, alpha=0.01)
    model = build_model(name, meta["layout"], int(meta["num_classes"]))
    model.compile(
        optimizer=keras.optimizers.AdamW(schedule, weight_decay=recipe["weight_decay"]),
        loss="sparse_categorical_crossentropy",
    )
    weights = loop.weighting["weights"] if loop.weighting else None
    started = time.perf_counter()
    model.fit(
        train,
        epochs=params.epochs,
        steps_per_epoch=steps,
        shuffle=False,  # the pipeline shuffles, seeded
        verbose=0,
        class_weight=dict(enumerate(weights)) if weights else None,
    )
    seconds = time.perf_counter() - started
    labels, outputs = [], []
    for inputs, truth in make_dataset(loop.folder, "test", batch, training=False, cache=False):
        outputs.append(model(inputs, training=False).numpy())
        labels.append(truth.numpy().astype(int))
    labels, probabilities = np.concatenate(labels), np.concatenate(outputs).astype("float64")
    # A compared model whose training diverged (NaN) is said so, and never stops the run whose
    # main model is still to be saved.
    finite = bool(np.isfinite(probabilities).all())
    ranking = ranking_scores(labels, probabilities) if finite else {"roc_auc": None, "pr_auc": None}
    accuracy = float(np.mean(probabilities.argmax(axis=-1) == labels)) if finite else None
    return {
        "name": name,
        "epochs": params.epochs,
        "global_batch_size": batch,
        "learning_rate": recipe["learning_rate"],
        "effective_learning_rate": rate,
        "weight_decay": recipe["weight_decay"],
        "test_accuracy": accuracy,
        "diverged": not finite,
        "roc_auc": ranking["roc_auc"],
        "pr_auc": ranking["pr_auc"],
        "seconds": round(seconds, 2),
        "parameters": int(model.count_params()),
    }
