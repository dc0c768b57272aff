"""Model builders by name: one call gives a Keras model that takes raw uint8 images.

Every model rescales its input itself, so the data pipeline stays uint8 (a quarter of the bytes
through the input pipeline) and the exported SavedModel takes raw images. Every model's output layer
is a float32 softmax whatever the global dtype policy: a softmax computed in float16 can round small
probabilities to 0 and large logits to inf, which wrecks the loss and the accuracy. Widths are
multiples of 8 so that float16 matrix multiplications map onto Tensor Cores.

    model = build_model("small_cnn", (8, 8, 1), 10)
    model = build_model("MobileNetV2", (32, 32, 3), 10)  # random weights, works offline
    model = build_model("ResNet50", (224, 224, 3), 5, weights="imagenet")  # downloads once
"""

from __future__ import annotations

from collections.abc import Sequence

import keras
import numpy as np
from keras import layers

from ...artifacts import StepError
from .nets import head, resnet_small, small_cnn

# Builders written here, then every model of keras.applications (its class name, e.g. "ResNet50").
OWN_MODELS = ("small_cnn", "resnet_small")
APPLICATIONS = tuple(sorted(name for name in dir(keras.applications) if name[:1].isupper()))
MODELS = OWN_MODELS + APPLICATIONS
DEFAULT_WIDTH = {"small_cnn": 32, "resnet_small": 16}
# The rate of the Dropout before the classifier (resnet_small has none unless asked for).
DEFAULT_DROPOUT = {"small_cnn": 0.25, "resnet_small": 0.0}
WEIGHTS = (None, "imagenet")

# The smallest image side each application accepts; smaller inputs are resized inside the model.
_MIN_SIDE = {"InceptionV3": 75, "InceptionResNetV2": 75, "Xception": 71}
_DEFAULT_MIN_SIDE = 32
# The input scaling each application's ImageNet weights were trained with (its preprocess_input):
# "tf" to [-1, 1], "torch" to ImageNet mean/std, "caffe" BGR minus the ImageNet mean, "raw" 0..255
# (the application normalizes inside itself).
_PREPROCESS_BY_MODULE = {
    "resnet": "caffe",
    "vgg16": "caffe",
    "vgg19": "caffe",
    "densenet": "torch",
    "convnext": "raw",
    "efficientnet": "raw",
    "efficientnet_v2": "raw",
    "mobilenet_v3": "raw",
}
_CAFFE_MEAN_BGR = (103.939, 116.779, 123.68)
_TORCH_MEAN = (0.485, 0.456, 0.406)
_TORCH_STD = (0.229, 0.224, 0.225)


class ModelError(StepError):
    """A model name, shape or option was refused, or ImageNet weights could not be loaded."""


def build_model(
    name: str,
    input_shape: Sequence[int],
    num_classes: int,
    *,
    weights: str | None = None,
    width: int | None = None,
    dropout: float | None = None,
) -> keras.Model:
    """A model by name for uint8 images of `input_shape` (H, W, C) and `num_classes` classes.

    `width` is the base number of filters of `small_cnn` (default 32) and `resnet_small` (default
    16), a multiple of 8; `dropout` the rate of the Dropout before their classifier (default 0.25
    and 0: none). These two are the knobs a hyper-parameter search varies; None: the default.
    `weights` is None (random, works offline) or "imagenet" for a keras.applications model
    (downloaded on first use into ~/.keras/models). The model follows the global dtype policy
    (keras.mixed_precision.set_dtype_policy), except for its float32 output.
    """
    shape = check_model(
        name, input_shape, num_classes, weights=weights, width=width, dropout=dropout
    )
    if name in OWN_MODELS:
        width = width or DEFAULT_WIDTH[name]
        dropout = DEFAULT_DROPOUT[name] if dropout is None else float(dropout)
        builder = small_cnn if name == "small_cnn" else resnet_small
        return builder(shape, num_classes, width, dropout)
    return _application(name, shape, num_classes, weights)


def check_model(
    name: str,
    input_shape: Sequence[int],
    num_classes: int,
    *,
    weights: str | None = None,
    width: int | None = None,
    dropout: float | None = None,
) -> tuple[int, int, int]:
    """Refuse a bad model request with one sentence before anything is built; return the shape."""
    if name not in MODELS:
        raise ModelError(
            f"Unknown model {name!r}: use {', '.join(OWN_MODELS)} or a keras.applications model "
            f"({', '.join(APPLICATIONS)})."
        )
    shape = tuple(input_shape) if isinstance(input_shape, Sequence) else ()
    if len(shape) != 3 or not all(_is_int(side) and side >= 1 for side in shape):
        raise ModelError(
            f"input_shape={input_shape!r} is not allowed: use (height, width, channels) as "
            "positive whole numbers, e.g. (8, 8, 1)."
        )
    if not _is_int(num_classes) or num_classes < 2:
        raise ModelError(f"num_classes={num_classes!r} is not allowed: use a whole number >= 2.")
    if name in OWN_MODELS and weights is not None:
        raise ModelError(
            f"weights={weights!r} is not allowed for {name}: use None (pretrained weights exist "
            "for keras.applications models only)."
        )
    if weights not in WEIGHTS:
        raise ModelError(f"weights={weights!r} is not allowed for {name}: use None or 'imagenet'.")
    check_knobs(name, width=width, dropout=dropout)
    if name in APPLICATIONS and shape[2] not in (1, 3):
        raise ModelError(
            f"input_shape={input_shape!r} has {shape[2]} channels, but {name} takes 1 (grey, "
            "repeated to RGB inside the model) or 3."
        )
    return shape  # type: ignore[return-value]


def check_knobs(name: str, *, width: int | None = None, dropout: float | None = None) -> None:
    """Refuse a width or dropout the named model cannot take, in one sentence (None: default)."""
    for knob, value in (("width", width), ("dropout", dropout)):
        if value is not None and name not in OWN_MODELS:
            raise ModelError(
                f"{knob}={value!r} is not allowed for {name}: it is a knob of "
                f"{' and '.join(OWN_MODELS)} only; use None."
            )
    if width is not None and (not _is_int(width) or width < 8 or width % 8):
        raise ModelError(
            f"width={width!r} is not allowed: use a multiple of 8 (8, 16, 32, …), "
            "which keeps float16 matrix multiplications on Tensor Cores."
        )
    if dropout is not None and (
        isinstance(dropout, bool)
        or not isinstance(dropout, int | float | np.floating)
        or not 0 <= dropout < 1
    ):
        raise ModelError(f"dropout={dropout!r} is not allowed: use a rate from 0 to below 1.")


def _application(
    name: str, shape: tuple[int, int, int], num_classes: int, weights: str | None
) -> keras.Model:
    """A keras.applications backbone behind the preprocessing its ImageNet weights expect.

    Grey images are repeated to three channels and images smaller than the backbone accepts are
    resized up, both inside the model, so it still takes the raw uint8 images of the data set.
    """
    inputs = keras.Input(shape, dtype="uint8", name="image")
    x = layers.Rescaling(1.0, name="to_float")(inputs)
    if shape[2] == 1:
        x = layers.Concatenate(name="grey_to_rgb")([x, x, x])
    side = _MIN_SIDE.get(name, _DEFAULT_MIN_SIDE)
    height, width = max(shape[0], side), max(shape[1], side)
    if (height, width) != shape[:2]:
        x = layers.Resizing(height, width, name="resize_to_min")(x)
    x, caffe = _preprocess(x, _preprocess_mode(name))
    constructor = getattr(keras.applications, name)
    try:
        backbone = constructor(
            include_top=False, weights=weights, input_shape=(height, width, 3), pooling="avg"
        )
    except Exception as error:  # keras raises a bare Exception when the download fails
        if weights is None:
            raise
        reason = " ".join(str(error).split())[:300].rstrip(".")
        raise ModelError(
            f"ImageNet weights for {name} could not be loaded ({reason}): connect to the "
            "internet once (they are cached in ~/.keras/models) or use weights=none."
        ) from None
    model = keras.Model(inputs, head(backbone(x), num_classes), name=name.lower())
    if caffe is not None:
        _set_caffe_weights(caffe)
    return model


def _preprocess(x: keras.KerasTensor, mode: str) -> tuple[keras.KerasTensor, layers.Layer | None]:
    """Scale 0..255 floats the way the backbone's ImageNet weights expect (its preprocess_input)."""
    if mode == "tf":
        return layers.Rescaling(1.0 / 127.5, offset=-1.0, name="preprocess")(x), None
    if mode == "torch":
        x = layers.Rescaling(1.0 / 255)(x)
        variance = [std**2 for std in _TORCH_STD]
        return layers.Normalization(mean=_TORCH_MEAN, variance=variance, name="preprocess")(x), None
    if mode == "caffe":
        # RGB -> BGR and minus the ImageNet mean, as a fixed 1x1 convolution: plain Keras layers
        # keep model.keras loadable anywhere, without custom objects.
        caffe = layers.Conv2D(3, 1, trainable=False, name="preprocess")
        return caffe(x), caffe
    return x, None


def _set_caffe_weights(layer: layers.Layer) -> None:
    kernel = np.zeros((1, 1, 3, 3), dtype="float32")
    for channel in range(3):
        kernel[0, 0, channel, 2 - channel] = 1.0
    layer.set_weights([kernel, -np.array(_CAFFE_MEAN_BGR, dtype="float32")])


def _preprocess_mode(name: str) -> str:
    module = getattr(keras.applications, name).__module__.rsplit(".", 1)[-1]
    return _PREPROCESS_BY_MODULE.get(module, "tf")


def _is_int(value: object) -> bool:
    return isinstance(value, int | np.integer) and not isinstance(value, bool)
