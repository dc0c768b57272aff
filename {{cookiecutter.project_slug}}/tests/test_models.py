"""Model builders: raw uint8 in, float32 probabilities out, under every precision policy."""

from __future__ import annotations

import keras
import numpy as np
import pytest
from helpers import assert_one_sentence

from {{ cookiecutter.package_name }}.tasks.image import models
from {{ cookiecutter.package_name }}.tasks.outputs import output_dtype
from {{ cookiecutter.package_name }}.train import dtype_policy

POLICIES = ("float32", "mixed_float16", "mixed_bfloat16")
# One model per builder path: the two written here, and keras.applications models covering each
# input preprocessing (tf, caffe, torch, raw), grey-to-RGB and resizing up to the minimum size.
CASES = {
    "small_cnn": (8, 8, 1),
    "resnet_small": (32, 32, 3),
    "MobileNetV2": (8, 8, 1),
    "ResNet50": (32, 32, 3),
    "DenseNet121": (32, 32, 3),
    "EfficientNetB0": (32, 32, 3),
}


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("name", CASES)
def test_model_takes_uint8_and_outputs_float32_probabilities(name: str, policy: str) -> None:
    """Under every policy the model takes raw uint8 images and returns float32 probabilities."""
    shape = CASES[name]
    with dtype_policy(policy):
        model = models.build_model(name, shape, 10)
        images = np.random.default_rng(0).integers(0, 256, (2, *shape), dtype=np.uint8)
        probabilities = model(images, training=False)
    assert keras.backend.standardize_dtype(model.inputs[0].dtype) == "uint8"
    assert output_dtype(model) == "float32"
    assert keras.backend.standardize_dtype(probabilities.dtype) == "float32"
    assert model.layers[-1].dtype_policy.compute_dtype == "float32"
    hidden = model.get_layer("logits").dtype_policy.compute_dtype
    assert hidden == {"float32": "float32", "mixed_float16": "float16"}.get(policy, "bfloat16")
    np.testing.assert_allclose(np.sum(probabilities, axis=-1), 1.0, rtol=1e-3)


@pytest.mark.parametrize(
    ("name", "module"),
    [("ResNet50", "resnet"), ("MobileNetV2", "mobilenet_v2"), ("DenseNet121", "densenet")],
)
def test_applications_scale_inputs_like_their_preprocess_input(name: str, module: str) -> None:
    """The model's own preprocessing equals keras' preprocess_input, so ImageNet weights fit."""
    model = models.build_model(name, (32, 32, 3), 10)
    scaled = keras.Model(model.input, model.get_layer("preprocess").output)
    images = np.random.default_rng(1).integers(0, 256, (2, 32, 32, 3), dtype=np.uint8)
    expected = getattr(keras.applications, module).preprocess_input(images.astype("float32"))
    np.testing.assert_allclose(scaled(images), expected, rtol=1e-5, atol=1e-3)


def test_own_models_use_widths_in_multiples_of_8() -> None:
    """Every convolution and hidden dense layer has a multiple of 8 units (Tensor Cores)."""
    for name in models.OWN_MODELS:
        model = models.build_model(name, (32, 32, 3), 10, width=24)
        widths = [
            layer.filters if isinstance(layer, keras.layers.Conv2D) else layer.units
            for layer in model.layers
            if isinstance(layer, keras.layers.Conv2D | keras.layers.Dense)
            and layer.name != "logits"
        ]
        assert widths and all(width % 8 == 0 for width in widths), (name, widths)


def test_unknown_model_is_refused_naming_the_models() -> None:
    """A mistyped name is refused in one sentence that lists the builders and applications."""
    with pytest.raises(ValueError, match="'resnet50'") as error:
        models.build_model("resnet50", (32, 32, 3), 10)
    assert_one_sentence(str(error.value))
    assert "small_cnn" in str(error.value) and "ResNet50" in str(error.value)


@pytest.mark.parametrize(
    ("name", "options", "named"),
    [
        ("small_cnn", {"width": 12}, "width=12"),
        ("small_cnn", {"weights": "imagenet"}, "weights='imagenet'"),
        ("MobileNetV2", {"width": 16}, "width=16"),
        ("MobileNetV2", {"weights": "/no/such.h5"}, "weights='/no/such.h5'"),
    ],
)
def test_bad_options_are_refused_in_one_sentence(name: str, options: dict, named: str) -> None:
    """Widths not a multiple of 8, and weights a model cannot take, are refused before building."""
    with pytest.raises(models.ModelError) as error:
        models.build_model(name, (32, 32, 3), 10, **options)
    assert named in str(error.value)
    assert_one_sentence(str(error.value))


def test_bad_shape_and_classes_are_refused() -> None:
    """A shape that is not (H, W, C) or fewer than two classes is refused, naming the value."""
    with pytest.raises(models.ModelError, match=r"input_shape=\(8, 8\)"):
        models.build_model("small_cnn", (8, 8), 10)
    with pytest.raises(models.ModelError, match="num_classes=1"):
        models.build_model("small_cnn", (8, 8, 1), 1)
    with pytest.raises(models.ModelError, match="4 channels"):
        models.build_model("MobileNetV2", (32, 32, 4), 10)


def test_imagenet_weights_offline_fail_in_one_sentence(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without network, weights='imagenet' fails with one sentence saying what to do."""

    def offline(*args, **kwargs):
        raise Exception(  # what keras.utils.get_file raises when the download fails
            "URL fetch failure on https://storage.googleapis.com/x.h5: None -- "
            "[Errno -2] Name or service not known"
        )

    monkeypatch.setattr("keras.src.utils.file_utils.get_file", offline)
    with pytest.raises(models.ModelError, match="ImageNet weights for MobileNetV2") as error:
        models.build_model("MobileNetV2", (32, 32, 3), 10, weights="imagenet")
    assert "weights=none" in str(error.value)
    assert_one_sentence(str(error.value))
