"""The training recipe under what a GPU run asks for, checked on the CPU: mixed precision with
strong augmentation, and a keras.applications backbone whose preprocessing is fixed, fine-tuned.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import tensorflow as tf

from {{ cookiecutter.package_name }} import train
from {{ cookiecutter.package_name }}.train import Params, augment
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

