"""Augmentation on the device: Keras preprocessing layers run inside the training step.

Why not in tf.data: the input pipeline runs on the host's CPU cores, which at 224 px already
struggle to decode and batch fast enough for a GPU; random crops, rotations and RandAugment there
take cores from decoding. Inside the training step they run where the step runs (the GPU), on
the whole batch at once. Why not inside the model: the exported SavedModel must not hold a random
op, and a model whose layers only act in training is one flag away from augmenting at serving
time. So the augmenter is its own small Keras model, called by the train step before the model
(replica.py) and never saved: model.keras, the export and every prediction never see it.

Levels (`augment`):
  none    nothing
  light   horizontal flip, zoom (±10 %), rotation (±10°), contrast (±20 %)
  strong  light, then RandAugment (2 ops), then MixUp or CutMix (each on half of the batches),
          which mixes two images and their labels: the loss then takes soft labels.

Flipping suits photographs; for digits or text (a mirrored 2 is no 2) leave augment at none.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import keras
import tensorflow as tf

from ...artifacts import StepError

LEVELS = ("none", "light", "strong")
ZOOM, ROTATION, CONTRAST = 0.1, 10 / 360, 0.2
MIX_ALPHA = 0.2  # MixUp's Beta(α, α): small α mixes mostly one image with a little of another
# Every layer computes in float32 whatever the global policy: under mixed_float16 Keras casts the
# images and labels to float16 while MixUp draws its weight in float32, and the step fails ('Mul'
# type mismatch). Augmentation is cheap next to the model, and float32 keeps every pixel level.
F32 = {"dtype": "float32"}


def check_level(level: Any) -> None:
    if not isinstance(level, str) or level not in LEVELS:
        raise StepError(
            f"augment={level!r} is not allowed: use none, light (flip, zoom, rotation, contrast) "
            "or strong (light plus RandAugment and MixUp/CutMix)."
        )


def mixes_labels(level: str) -> bool:
    """Whether the level turns labels into soft (mixed) labels: the loss must take them."""
    return level == "strong"


def make_augmenter(
    level: str, num_classes: int, seed: int
) -> Callable[[tf.Tensor, tf.Tensor], tuple[tf.Tensor, tf.Tensor]] | None:
    """`augment(images uint8, labels int) -> (images uint8, labels)`; None for level none.

    Labels come back as they went in, or one-hot mixed (float32 [B, classes]) for strong. Build it
    outside the strategy's scope: the layers' seed generators are then plain variables that every
    replica advances, rather than mirrored ones a replica may not assign to.
    """
    check_level(level)
    if level == "none":
        return None
    geometric = keras.Sequential(
        [
            keras.layers.RandomFlip("horizontal", seed=seed, **F32),
            keras.layers.RandomZoom(ZOOM, seed=seed + 1, **F32),
            keras.layers.RandomRotation(ROTATION, seed=seed + 2, **F32),
            keras.layers.RandomContrast(CONTRAST, value_range=(0, 255), seed=seed + 3, **F32),
        ],
        name="augment_light",
    )
    rand = (
        OneOpRandAugment(value_range=(0, 255), seed=seed + 4, **F32) if level == "strong" else None
    )
    mixup = keras.layers.MixUp(alpha=MIX_ALPHA, seed=seed + 5, **F32) if rand else None
    cutmix = keras.layers.CutMix(seed=seed + 6, **F32) if rand else None

    def augment(images: tf.Tensor, labels: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        x = geometric(tf.cast(images, tf.float32), training=True)
        if rand is None:
            return to_uint8(x), labels
        channels = x.shape[-1]
        if channels == 1:  # RandAugment's colour ops take RGB
            x = tf.image.grayscale_to_rgb(x)
        x = rand(x, training=True)
        if channels == 1:
            x = tf.image.rgb_to_grayscale(x)
        onehot = tf.one_hot(tf.cast(labels, tf.int32), num_classes, dtype=tf.float32)
        mixed = tf.cond(
            tf.random.uniform([]) < 0.5,
            lambda: _mix(mixup, x, onehot),
            lambda: _mix(cutmix, x, onehot),
        )
        return to_uint8(mixed[0]), mixed[1]

    return augment


class OneOpRandAugment(keras.layers.RandAugment):
    """Keras's RandAugment, computing only the ops it picked.

    Keras computes all 11 transforms for each of its `num_ops` picks and keeps the picked one
    with `where`: 22 whole-batch image transforms a step for 2 ops. `tf.switch_case` runs the
    picked branch alone (the TensorFlow backend, the one this project uses); the random draws
    are Keras's own, so a seed gives the same images either way (tests/test_train_recipe.py).
    """

    def transform_images(self, images: Any, transformation: Any, training: bool = True) -> Any:
        images = tf.cast(images, self.compute_dtype)
        if not training:
            return images
        transforms = transformation["transforms"]  # in _AUGMENT_LAYERS order, as the picks count
        for pick in tf.unstack(tf.cast(transformation["layer_idxes"], tf.int32), self.num_ops):
            images = tf.switch_case(
                pick, [self._branch(name, value, images) for name, value in transforms.items()]
            )
        return images

    def _branch(self, name: str, value: Any, images: tf.Tensor) -> Callable[[], tf.Tensor]:
        layer = getattr(self, name)
        return lambda: tf.cast(layer.transform_images(images, value), self.compute_dtype)


def to_uint8(images: tf.Tensor) -> tf.Tensor:
    """Back to the raw pixels the model takes (it rescales inside itself)."""
    return tf.cast(tf.clip_by_value(tf.round(images), 0.0, 255.0), tf.uint8)


def _mix(layer: keras.layers.Layer, images: tf.Tensor, labels: tf.Tensor):
    out = layer({"images": images, "labels": labels}, training=True)
    return out["images"], tf.cast(out["labels"], tf.float32)
