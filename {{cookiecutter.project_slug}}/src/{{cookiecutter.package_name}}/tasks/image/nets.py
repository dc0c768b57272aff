"""The networks written here, small_cnn and resnet_small, and the head every model ends in.

models.py chooses and checks a model by name and builds keras.applications backbones; the two
small networks and the float32 softmax head (see models.py's docstring) are built here.
"""

from __future__ import annotations

import math

import keras
from keras import layers

BN_MOMENTUM = 0.9


def small_cnn(
    shape: tuple[int, int, int], num_classes: int, width: int, dropout: float
) -> keras.Model:
    """Two 3x3 convolutions per stage, pooling until the image is at most 4x4, then a dense head.

    Sized for the 8x8 digits (one stage: 8x8 -> 4x4, about 120k weights at width 32); larger
    images get more stages, so the dense head never grows with the image.
    """
    inputs = keras.Input(shape, dtype="uint8", name="image")
    x = layers.Rescaling(1.0 / 255, name="rescale")(inputs)
    stages = max(1, math.ceil(math.log2(max(shape[0], shape[1]) / 4)))
    for stage in range(stages):
        filters = width * min(2**stage, 4)
        for conv in range(2):
            x = layers.Conv2D(
                filters, 3, padding="same", activation="relu", name=f"stage{stage}_conv{conv}"
            )(x)
        x = layers.MaxPooling2D(padding="same", name=f"stage{stage}_pool")(x)
    x = layers.Flatten(name="flatten")(x)
    x = layers.Dense(4 * width, activation="relu", name="features")(x)
    x = layers.Dropout(dropout, name="dropout")(x)
    return keras.Model(inputs, head(x, num_classes), name="small_cnn")


def resnet_small(
    shape: tuple[int, int, int], num_classes: int, width: int, dropout: float
) -> keras.Model:
    """A ResNet-20-like net for small images (CIFAR-sized, 32x32): three stages of two blocks.

    Widths width, 2·width, 4·width; the second and third stage halve the image. Batch norm
    keeps moving statistics with momentum 0.9 instead of Keras' 0.99: with 0.99 they still
    lag far behind the weights after the few hundred steps of a short run, and validation then
    sits at chance level while training accuracy is high.
    """
    inputs = keras.Input(shape, dtype="uint8", name="image")
    x = layers.Rescaling(1.0 / 255, name="rescale")(inputs)
    x = layers.Conv2D(width, 3, padding="same", use_bias=False, name="stem_conv")(x)
    x = layers.BatchNormalization(momentum=BN_MOMENTUM, name="stem_bn")(x)
    x = layers.ReLU(name="stem_relu")(x)
    for stage in range(3):
        for block in range(2):
            strides = 2 if stage > 0 and block == 0 else 1
            x = _residual_block(x, width * 2**stage, strides, f"block{stage}{block}")
    x = layers.GlobalAveragePooling2D(name="pool")(x)
    if dropout:
        x = layers.Dropout(dropout, name="dropout")(x)
    return keras.Model(inputs, head(x, num_classes), name="resnet_small")


def _residual_block(
    x: keras.KerasTensor, filters: int, strides: int, name: str
) -> keras.KerasTensor:
    """Two 3x3 convolutions and a shortcut; fixed layer names, so that weights from another
    process (train's `weights=` file) are matched by name."""
    shortcut = x
    conv = {"padding": "same", "use_bias": False}
    x = layers.Conv2D(filters, 3, strides=strides, name=f"{name}_conv1", **conv)(x)
    x = layers.BatchNormalization(momentum=BN_MOMENTUM, name=f"{name}_bn1")(x)
    x = layers.ReLU(name=f"{name}_relu1")(x)
    x = layers.Conv2D(filters, 3, name=f"{name}_conv2", **conv)(x)
    x = layers.BatchNormalization(momentum=BN_MOMENTUM, name=f"{name}_bn2")(x)
    if strides != 1 or shortcut.shape[-1] != filters:
        shortcut = layers.Conv2D(
            filters, 1, strides=strides, use_bias=False, name=f"{name}_shortcut"
        )(shortcut)
        shortcut = layers.BatchNormalization(momentum=BN_MOMENTUM, name=f"{name}_shortcut_bn")(
            shortcut
        )
    x = layers.Add(name=f"{name}_add")([x, shortcut])
    return layers.ReLU(name=f"{name}_out")(x)


def head(x: keras.KerasTensor, num_classes: int) -> keras.KerasTensor:
    """Logits in the policy's compute dtype, then a float32 softmax (see the module docstring)."""
    x = layers.Dense(num_classes, name="logits")(x)
    return layers.Activation("softmax", dtype="float32", name="probabilities")(x)
