"""The image task behind the seam: uint8 pixels in the shards, CNNs and keras.applications models.

Its code lives here (models.py, nets.py, augment.py, export.py, step 1 in data_step.py); this
module is what the steps ask of it, grouped at the end into the seam's Task (tasks/base.py). Each
call reads the function through its module at call time, so a test or a benchmark that swaps
`pipeline.make_dataset` or `models.build_model` swaps it for every step.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import keras
import numpy as np
import tensorflow as tf

from ...seam import NOUNS
from ...steps import param
from ..base import Bench, Export, Models, Recipe, Scores, Task, examples_of
from ..outputs import SIGNATURE
from . import augment, data_step, models
from . import export as image_export
from . import pipeline as image_pipeline

NAME = "image_classification"
NOUN = NOUNS["image"]
META_KEYS = ("image_shape",)
MODELS = models.MODELS
OWN_MODELS = models.OWN_MODELS
DEFAULT_MODEL = "small_cnn"
RAW_INPUT = image_export.INPUT_NAME
MODEL_INPUT = image_export.INPUT_NAME  # the trained model takes the raw pixels
MODEL_SIGNATURE = SIGNATURE  # the uint8 images the trained model takes are the raw input
INT8 = "static"  # calibrated on training images (activations' ranges vary with the picture)


def make_dataset(run_dir: str | os.PathLike[str], *args: Any, **kwargs: Any) -> tf.data.Dataset:
    """(uint8 images [B, H, W, C], int32 labels [B]) batches: pipeline.make_dataset."""
    return image_pipeline.make_dataset(run_dir, *args, **kwargs)


def raw_examples(
    run_dir: str | os.PathLike[str], split: str, count: int
) -> tuple[np.ndarray, np.ndarray]:
    """The first `count` images of a split and their labels: what serving_default takes."""
    return image_pipeline.first_examples(run_dir, split, count)


model_examples = raw_examples  # an image model takes the raw pixels


def input_shape(meta: dict[str, Any]) -> list[int]:
    """[height, width, channels] of the images in the shards."""
    return [int(side) for side in meta["image_shape"]]


def parity_examples(meta: dict[str, Any], split: str, default: int) -> int:
    """How many of the split's images parity compares: the caller's default (pixels are heavy)."""
    return default


def build_model(name: str, meta: dict[str, Any], **options: Any) -> keras.Model:
    """models.build_model for this data's image shape and classes (weights, width, dropout)."""
    return models.build_model(name, input_shape(meta), int(meta["num_classes"]), **options)


def check_model(name: str, meta: dict[str, Any], **options: Any) -> None:
    """Refuse, in one sentence, a model this data's images cannot be given to."""
    models.check_model(name, input_shape(meta), int(meta["num_classes"]), **options)


def model_spec(model: keras.Model) -> tf.TensorSpec:
    """The trained model's input: uint8 images of its shape, any batch."""
    return tf.TensorSpec([None, *model.input_shape[1:]], tf.uint8, name=image_export.INPUT_NAME)


def build_archive(
    model: keras.Model, meta: dict[str, Any], run_dir: str | os.PathLike[str]
) -> keras.export.ExportArchive:
    """serving_default: uint8 images in; probabilities, class ids and names out."""
    return image_export.build_archive(model, input_shape(meta), list(meta["classes"]))


def rest_payload(raw: Any) -> dict[str, Any]:
    """TF Serving's REST body for a batch of uint8 images."""
    return image_export.rest_payload(raw)


MODEL_HELP = (
    f"{' or '.join(OWN_MODELS)}, or a keras.applications model by name (MobileNetV2, ResNet50, "
    f"EfficientNetB0, … {len(models.APPLICATIONS)} in all, listed in models.APPLICATIONS)"
)
check_knobs = models.check_knobs  # a width or dropout the named model cannot take


def model_state(meta: dict[str, Any]) -> dict[str, Any]:
    """What a checkpoint depends on beyond the training values: the image shape."""
    return {"image_shape": input_shape(meta)}


@dataclass(frozen=True)
class TrainOptions:
    """The image task's own training parameters: train's Params adds them to the shared ones."""

    augment: str = param("none", "on the device, training only: none, light or strong")


PRETRAINED = ("imagenet",)  # weights=imagenet: a keras.applications model's own (models.py)


def check_recipe(params: Any) -> None:
    """The augmentation level: none, light or strong (the other recipe values suit any task)."""
    augment.check_level(params.augment)


def make_augmenter(params: Any, num_classes: int, seed: int) -> Any:
    """params.augment's layers, on the device, inside the training step (None for none)."""
    return augment.make_augmenter(params.augment, num_classes, seed)


def recipe_summary(params: Any) -> dict[str, Any]:
    """train.json's words about the image options: the augmentation level."""
    return {"augment": params.augment}


def recipe_words(params: Any) -> tuple[str, ...]:
    """The augmentation in the recipe's sentence, when there is one."""
    return (f"augment={params.augment} on the device",) if params.augment != "none" else ()


# The task's own models' knobs: the default and the width's range.
KNOBS = {
    name: {
        "width": models.DEFAULT_WIDTH[name],
        "dropout": models.DEFAULT_DROPOUT[name],
        "width_range": (8, 64),
    }
    for name in OWN_MODELS
}
# The task's own recipe values a search may choose among (the default first): augmentation.
RECIPE_CHOICES = {"augment": augment.LEVELS}


def check_trained(model: keras.Model, meta: dict[str, Any], model_path: Any) -> None:
    """model.keras must take this data's raw images and give one probability per class."""
    image_export.check_image_model(model, input_shape(meta), list(meta["classes"]), model_path)


def plot_mistakes(raw: np.ndarray, metrics: dict[str, Any], classes: list[str], path: Any) -> Any:
    """figures/export_misclassified.png: the images the export got wrong, most confident first."""
    from . import plots  # matplotlib, only when a figure is drawn

    return plots.plot_misclassified(raw, metrics, classes, path)


def rebuilt(model: keras.Model, classes: int) -> keras.Model:
    """The same model with a head of `classes` outputs (a .weights.h5 of another task)."""
    name = next((n for n in MODELS if n.lower() == model.name), model.name)
    shape = tuple(int(side) for side in model.inputs[0].shape[1:])
    width = _first_filters(model) if name in OWN_MODELS else None
    return models.build_model(name, shape, classes, width=width)


def _first_filters(model: keras.Model) -> int:
    """The builders' `width`: the filters of the first convolution of small_cnn and resnet_small."""
    conv = next(layer for layer in model.layers if isinstance(layer, keras.layers.Conv2D))
    return int(conv.filters)


# What a load test of TF Serving sends, and what gpu-bench trains on: in the seam's names.
def serving_examples(
    run_dir: str | os.PathLike[str], meta: dict[str, Any], count: int, seed: int = 0
) -> np.ndarray:
    """What a load test of TF Serving sends: `count` random uint8 images of the data's shape (no
    shard is read: a model's cost does not depend on what the pixels show)."""
    shape = input_shape(meta)
    return np.random.default_rng(seed).integers(0, 256, (count, *shape), dtype=np.uint8)


def bench_model(quick: bool) -> dict[str, Any]:
    """gpu-bench's reference: Keras ResNet50 (no weights) at 224x224, as NVIDIA's published
    figures; --quick: small_cnn on 32x32 images, seconds on any machine."""
    if quick:
        return {"model": "small_cnn", "size": 32, "num_classes": 10, "shown": "small_cnn at 32x32"}
    return {"model": "ResNet50", "size": 224, "num_classes": 1000, "shown": "ResNet50 at 224x224"}


def synthetic_meta(size: int, num_classes: int) -> dict[str, Any]:
    """The meta of synthetic RGB images `size` pixels a side, for build_model (gpu-bench)."""
    return {"image_shape": [size, size, 3], "num_classes": num_classes}


def synthetic_batch(
    meta: dict[str, Any], count: int, seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """`count` random uint8 images of the meta's shape and int64 labels of its classes."""
    rng = np.random.default_rng(seed)
    images = rng.integers(0, 256, (count, *input_shape(meta)), dtype=np.uint8)
    return images, rng.integers(0, int(meta["num_classes"]), count).astype(np.int64)


class ImageTask(Task):
    """The image task as every step sees it (tasks/base.py): this module's answers, grouped."""

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
            pretrained=PRETRAINED,
        )
        self.recipe = Recipe(
            options=TrainOptions,
            check=check_recipe,
            augmenter=make_augmenter,
            summary=recipe_summary,
            words=recipe_words,
            choices=RECIPE_CHOICES,
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
        )
        # no scikit-learn baseline in a run yet, nothing beyond the shared test scores (the
        # export's figures show the images themselves)
        self.scores = Scores()
        self.bench = Bench(
            model=bench_model,
            synthetic_meta=synthetic_meta,
            synthetic_batch=synthetic_batch,
            serving_examples=serving_examples,
        )

    def build_inputs(
        self, run_dir: str | os.PathLike[str], split: str, batch_size: int, **options: Any
    ) -> tf.data.Dataset:
        """(uint8 images [B, H, W, C], int32 labels [B]) batches: pipeline.make_dataset."""
        return make_dataset(run_dir, split, batch_size, **options)

    def examples(
        self, run_dir: str | os.PathLike[str], split: str, count: int, form: str = "raw"
    ) -> tuple[Any, np.ndarray]:
        """The first images of a split and their labels: the model takes the raw pixels too."""
        return examples_of(form, raw_examples, model_examples)(run_dir, split, count)

    def build_model(self, name: str, meta: dict[str, Any], **options: Any) -> keras.Model:
        return build_model(name, meta, **options)


TASK = ImageTask()
