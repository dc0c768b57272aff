"""Transfer learning: start from earlier weights, train the new head first, then fine-tune.

The Keras guide to transfer learning and fine-tuning, as a recipe in two phases:

1. `weights`: "none" (random), a name the task's builders fetch weights for themselves (its
   Models.pretrained: the image task's keras.applications weights), or a path to
   a `.keras` model (an earlier run's model.keras) or a `.weights.h5` file. A file's weights are
   copied layer by layer, by name (by order when the names differ but every shape lines up: a model
   saved by an older version of the builders); the classifier (`logits`) is copied only when it
   has the same number of classes: a new task gets a new, random head.
2. For `freeze_epochs` the backbone (every layer but the head) is frozen: only the head trains,
   so the large gradients of a random head cannot wreck the pretrained features. Frozen
   BatchNormalization layers run in inference mode in Keras 3 (their moving statistics are used
   and kept), which is what the guide asks for.
3. Then the top of the backbone is unfrozen (`unfreeze="all"` or a count of layers with weights,
   counted from the head down) and trains at the rate times `fine_tune_lr_factor` (schedule.py).
   BatchNormalization layers stay frozen even then: their statistics were estimated on far more
   data than one fine-tuning batch holds, and updating them from small batches undoes the transfer.
   Fixed preprocessing (the image models' `preprocess` layer: caffe's BGR-minus-mean
   convolution, torch's normalization) never trains in any phase: its weights are constants of
   the pretraining recipe, and the optimizer is built without them, so thawing them would end the
   run ("Unknown variable").

The phase is a function of the epoch, so a run resumed in either phase freezes the same layers.
"""

from __future__ import annotations

import hashlib
import io
import re
import zipfile
from pathlib import Path
from typing import Any

import h5py
import keras
import numpy as np

from ..tasks import current as task
from .errors import TrainError

HEAD = ("logits",)  # the layers a new task replaces (nets.head)
FIXED = ("preprocess",)  # constant preprocessing inside the model (models._preprocess)
WEIGHT_FILES = (".keras", ".weights.h5")
FROZEN, FINE_TUNE = "frozen", "fine_tune"
DENSE = re.compile(r"^dense(?:_(\d+))?$")


def pretrained(weights: Any) -> str | None:
    """The name of weights the task's builders fetch themselves (build_model's weights=), else
    None: none, or a file that load_into copies."""
    return weights if weights in task().models.pretrained else None


def from_file(weights: Any) -> bool:
    """Whether `weights` names a file (not none, not one of the task's pretrained names)."""
    return weights != "none" and pretrained(weights) is None


def allowed() -> str:
    """The values weights takes, in words: "none, <the task's pretrained names> or the path"."""
    return f"{', '.join(('none', *task().models.pretrained))} or the path of a .keras or"


def check_weights(weights: Any) -> None:
    """Refuse a weights value that is not none, a pretrained name of the task's or an existing
    file of a known kind."""
    if not isinstance(weights, str) or not weights:
        raise TrainError(f"weights={weights!r} is not allowed: use {allowed()} .weights.h5 file.")
    if not from_file(weights):
        return
    path = Path(weights).expanduser()
    if not path.name.endswith(WEIGHT_FILES):
        raise TrainError(
            f"weights={weights!r} is not allowed: use {allowed()} .weights.h5 file (an earlier "
            "run's model.keras, for instance)."
        )
    if not path.is_file():
        raise TrainError(
            f"weights={weights!r} does not exist: give the path of an existing .keras or "
            ".weights.h5 file, or none."
        )


def check_file(weights: str) -> None:
    """Refuse a weights file that cannot be a Keras file at all (cut short, not a zip or HDF5),
    without TensorFlow: whether its layers fit the model is seen when they are copied."""
    if not from_file(weights):
        return
    path = Path(weights).expanduser()
    try:
        if path.name.endswith(".keras"):
            with zipfile.ZipFile(path) as archive:
                names = set(archive.namelist())
                if not {"config.json", "model.weights.h5"} <= names:
                    raise ValueError("no config.json and model.weights.h5 inside")
                with archive.open("model.weights.h5") as inner:
                    h5py.File(io.BytesIO(inner.read()), "r").close()
        else:
            h5py.File(path, "r").close()
    except (OSError, ValueError, zipfile.BadZipFile) as error:
        reason = " ".join(str(error).split())[:160].rstrip(".") or type(error).__name__
        raise TrainError(
            f"weights={weights!r} is not a readable {_kind(path)} file ({reason}): it is cut "
            "short or corrupt; give a file written by model.save or model.save_weights."
        ) from None


def check_source(weights: str, meta: dict[str, Any]) -> None:
    """An earlier run's model.keras must have read its inputs as this run's data encodes them:
    the same text vocabulary, the same table schema (the task's SAME_INPUTS keys of meta.json),
    or its embedding rows would stand for other words or categories. Checked against the
    data/meta.json of the run folder the file sits in; a file outside a run folder is taken as
    it is (nothing to compare it with)."""
    import json

    keys = task().recipe.same_inputs
    source = Path(weights).expanduser().parent / "data" / "meta.json"
    if not from_file(weights) or not keys or not source.is_file():
        return
    try:
        earlier = json.loads(source.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return
    differ = [key for key in keys if key in earlier and earlier.get(key) != meta.get(key)]
    if differ:
        raise TrainError(
            f"weights={weights!r} was trained on other inputs ({differ[0]} in {source} is not "
            "this run's): its embedding rows would mean other words or categories; copy that "
            "run's data/ folder here, or use weights=none."
        )


def file_sha256(weights: str) -> str | None:
    """The weights file's sha256 (None for none and a pretrained name): the lineage of a
    fine-tuned model."""
    if not from_file(weights):
        return None
    digest = hashlib.sha256()
    with open(Path(weights).expanduser(), "rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def load_into(model: keras.Model, weights: str) -> dict[str, Any]:
    """Copy a file's weights into `model` (see the module docstring); what was copied, or refuse.

    Returns {"layers": copied layers, "head": "copied" or "new", "matched_by": "name" or "order"}.
    """
    path = Path(weights).expanduser()
    source = _read(path, model)
    pairs, matched_by = _pairs(model, source, path)
    head = "new"
    for target, origin in pairs:
        if target.name in HEAD and not _same_shapes(target, origin):
            continue
        target.set_weights(origin.get_weights())
        head = "copied" if target.name in HEAD else head
    copied = sum(1 for target, origin in pairs if _same_shapes(target, origin))
    return {"layers": copied, "head": head, "matched_by": matched_by}


def phase(epoch: int, freeze_epochs: int) -> str:
    """The phase epoch `epoch` (counted from 0) trains in."""
    return FROZEN if epoch < freeze_epochs else FINE_TUNE


def set_phase(model: keras.Model, which: str, unfreeze: str | int) -> int:
    """Make the phase's layers trainable and freeze the rest; return the trainable weight count."""
    layers = backbone_layers(model)
    model.trainable = True
    if which == FROZEN:
        for layer in layers:
            layer.trainable = False
    else:
        trainable = [layer for layer in layers if not _is_batch_norm(layer)]
        keep = len(trainable) if unfreeze == "all" else int(unfreeze)
        chosen = set(id(layer) for layer in trainable[len(trainable) - keep :])  # 0: none
        for layer in layers:
            layer.trainable = id(layer) in chosen
    for layer in _flat(model):  # model.trainable = True above thawed these too
        if layer.name in FIXED:
            layer.trainable = False
    return len(model.trainable_weights)


def backbone_layers(model: keras.Model) -> list[keras.layers.Layer]:
    """Every layer with weights but the head and the fixed preprocessing, nested models
    (keras.applications) opened up."""
    return [layer for layer in _flat(model) if layer.weights and layer.name not in HEAD + FIXED]


def _flat(model: keras.Model) -> list[keras.layers.Layer]:
    layers = []
    for layer in model.layers:
        if isinstance(layer, keras.Model):
            layers.extend(_flat(layer))
        else:
            layers.append(layer)
    return layers


def _is_batch_norm(layer: keras.layers.Layer) -> bool:
    return isinstance(layer, keras.layers.BatchNormalization)


def _read(path: Path, model: keras.Model) -> keras.Model:
    """The file as a model: a .keras loads whole; a .weights.h5 into this architecture with the
    file's class count (read from its head)."""
    try:
        if path.name.endswith(".keras"):
            return keras.saving.load_model(path, compile=False)
        with h5py.File(path, "r") as h5:
            classes = _head_classes(h5)
        source = (
            keras.models.clone_model(model)
            if classes is None
            else task().models.rebuilt(model, classes)  # the same builder, another head
        )
        source.load_weights(path)
        return source
    except TrainError:
        raise
    except Exception as error:  # h5py, zipfile and Keras raise many kinds for a damaged file
        reason = " ".join(str(error).split())[:200].rstrip(".") or type(error).__name__
        raise TrainError(
            f"weights={str(path)!r} cannot be read as {_kind(path)} for {model.name} ({reason}): "
            "it is damaged or holds another architecture; give an intact file written by "
            "model.save or model.save_weights for the same model, or weights=none."
        ) from None


def _pairs(model: keras.Model, source: keras.Model, path: Path) -> tuple[list, str]:
    """(target layer, source layer) pairs by name, else by order; refuse another architecture."""
    targets = [layer for layer in model.layers if layer.weights]
    origins = [layer for layer in source.layers if layer.weights]
    by_name = {layer.name: layer for layer in origins}
    named = [(t, by_name[t.name]) for t in targets if t.name in by_name]
    if len(named) == len(targets) and all(
        _same_shapes(t, o) for t, o in named if t.name not in HEAD
    ):
        return named, "name"
    ordered = list(zip(targets, origins, strict=False))
    if len(origins) == len(targets) and all(
        _same_shapes(t, o) for t, o in ordered if t.name not in HEAD
    ):
        return ordered, "order"
    differ = [(t, o) for t, o in named if t.name not in HEAD and not _same_shapes(t, o)]
    if len(named) == len(targets) == len(origins) and differ:  # the same layers, other sizes
        target, origin = differ[0]
        theirs = [tuple(np.shape(weight)) for weight in origin.get_weights()]
        raise TrainError(
            f"weights={str(path)!r} holds another architecture ({source.name}, {len(origins)} "
            f"layers with weights) than {model.name} ({len(targets)}): its layer {target.name} "
            f"holds weights of shapes {theirs}, this model's "
            f"{[tuple(weight.shape) for weight in target.weights]}; build the model the file was "
            "trained as (the same width and the model's own knobs), or use weights=none."
        )
    raise TrainError(
        f"weights={str(path)!r} holds another architecture ({source.name}, {len(origins)} layers "
        f"with weights) than {model.name} ({len(targets)}): use weights from the same model, "
        "with the same input shape, or weights=none."
    )


def _same_shapes(target: keras.layers.Layer, origin: keras.layers.Layer) -> bool:
    shapes = [tuple(weight.shape) for weight in target.weights]
    return shapes == [tuple(np.shape(weight)) for weight in origin.get_weights()]


def _head_classes(h5: h5py.File) -> int | None:
    """The class count of a .weights.h5's head: the bias of its last top-level Dense layer.

    Keras 3 keys a .weights.h5 by layer type and order (dense, dense_1, …), not by layer name."""
    layers = h5.get("layers")
    names = [name for name in (layers.keys() if layers else []) if DENSE.match(name)]
    if not names:
        return None
    last = max(names, key=lambda name: int(DENSE.match(name).group(1) or 0))
    bias = layers[last].get("vars/1")
    return int(bias.shape[0]) if bias is not None else None


def _kind(path: Path) -> str:
    return "a Keras model" if path.name.endswith(".keras") else "Keras weights"
