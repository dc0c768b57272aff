"""The image task's SavedModel input: raw uint8 images of the data set's shape, any batch.

The model rescales its uint8 input inside itself, so the serving graph is the model called in
inference mode plus the outputs every task returns (tasks/outputs.py): no preprocessing left for
a client to get wrong, and pixels travel to TF Serving as JSON integers.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import keras
import numpy as np
import tensorflow as tf

from ...artifacts import StepError
from ..outputs import SIGNATURE, serving_outputs

INPUT_NAME = "images"


def build_archive(
    model: keras.Model, image_shape: Sequence[int], classes: Sequence[str]
) -> keras.export.ExportArchive:
    """An ExportArchive whose only endpoint, serving_default, is the whole serving graph."""
    serve = serving_outputs(model, classes)
    archive = keras.export.ExportArchive()
    archive.track(model)
    spec = tf.TensorSpec([None, *image_shape], tf.uint8, name=INPUT_NAME)
    archive.add_endpoint(SIGNATURE, serve, input_signature=[spec])
    return archive


def check_image_model(
    model: keras.Model, shape: list[int], classes: list[str], model_path: Path
) -> None:
    """The model must take the data set's raw images and give one probability per class."""
    expected = (None, *shape)
    inputs = tuple(model.inputs[0].shape)
    if inputs != expected or keras.backend.standardize_dtype(model.inputs[0].dtype) != "uint8":
        raise StepError(
            f"{model_path} takes {model.inputs[0].dtype} images of shape {inputs}, but the data "
            f"holds uint8 images of shape {expected}: re-run 03_train on this run folder's data."
        )
    if model.outputs[0].shape[-1] != len(classes):
        raise StepError(
            f"{model_path} gives {model.outputs[0].shape[-1]} outputs per image, but the data "
            f"has {len(classes)} classes: re-run 03_train on this run folder's data."
        )


def rest_payload(images: Any) -> dict[str, Any]:
    """The JSON body of a `:predict` request for a batch of raw uint8 images [N, H, W, C]."""
    array = np.asarray(images)
    if array.dtype != np.uint8 or array.ndim != 4:
        raise StepError(
            f"images of dtype {array.dtype} and shape {array.shape} are not allowed: send raw "
            "uint8 images [batch, height, width, channels], the model rescales them itself."
        )
    return {"signature_name": SIGNATURE, "inputs": {INPUT_NAME: array.tolist()}}
