"""The training recipe under what a GPU run asks for, checked on the CPU: mixed precision with
strong augmentation, and a keras.applications backbone whose preprocessing is fixed, fine-tuned.
"""

from __future__ import annotations

from pathlib import Path

import keras
import numpy as np
import tensorflow as tf

from {{ cookiecutter.package_name }} import train
from {{ cookiecutter.package_name }}.artifacts import MODEL_FILE
from {{ cookiecutter.package_name }}.tasks.image import augment, data_step, models
from {{ cookiecutter.package_name }}.train import Params, finetune
from {{ cookiecutter.package_name }}.train.devices import dtype_policy


def test_strong_augmentation_built_under_mixed_float16_mixes_in_float32() -> None:
    """MixUp/CutMix built while mixed_float16 is the policy: uint8 images and float32 soft
    labels come out of a traced call (float16 labels times a float32 weight would not trace)."""
    images = tf.constant(np.random.default_rng(0).integers(0, 255, (8, 8, 8, 3)), tf.uint8)
    labels = tf.constant(np.arange(8) % 3)
    with dtype_policy("mixed_float16"):
        strong = augment.make_augmenter("strong", 3, seed=1)
    traced = tf.function(strong)
    for _ in range(4):  # MixUp or CutMix, each on about half of the calls
        pixels, soft = traced(images, labels)
        assert pixels.dtype == tf.uint8 and soft.dtype == tf.float32
        np.testing.assert_allclose(soft.numpy().sum(axis=1), 1.0, rtol=1e-5)


def test_train_under_mixed_float16_with_strong_augmentation_trains(run_dir: Path) -> None:
    """train -p precision=mixed_float16 -p augment=strong: an epoch with a finite loss."""
    values = {"epochs": 1, "batch_size": 128, "width": 8}
    metrics = train.run(
        run_dir, Params(precision="mixed_float16", augment="strong", **values), verbose=False
    )
    assert metrics["compute_dtype"] == "float16" and metrics["augment"] == "strong"
    assert np.isfinite(metrics["history"][0]["loss"])


def test_a_caffe_backbone_thaws_all_but_its_fixed_preprocessing(tmp_path: Path) -> None:
    """VGG16 (caffe preprocessing: a fixed BGR-minus-mean convolution) from a saved VGG16, one
    frozen epoch then unfreeze=all: the thaw trains, and the preprocessing never changes."""
    run = tmp_path / "run"
    data_step.prepare(
        run,
        "synthetic",
        shards=1,
        synthetic_shape=(8, 8, 3),
        synthetic_classes=2,
        synthetic_count=40,
    )
    saved = tmp_path / "vgg16.keras"
    source = models.build_model("VGG16", (8, 8, 3), 2)
    fixed = [weight.numpy() for weight in source.get_layer("preprocess").weights]
    finetune.set_phase(source, finetune.FINE_TUNE, "all")
    assert not source.get_layer("preprocess").trainable
    source.save(saved)
    values = {"model": "VGG16", "weights": str(saved), "freeze_epochs": 1, "unfreeze": "all"}
    metrics = train.train(run, verbose=False, epochs=2, batch_size=8, **values)
    assert [record["phase"] for record in metrics["history"]] == ["frozen", "fine_tune"]
    trained = keras.saving.load_model(run / MODEL_FILE).get_layer("preprocess")
    for mine, theirs in zip(trained.weights, fixed, strict=True):
        np.testing.assert_array_equal(mine.numpy(), theirs)
