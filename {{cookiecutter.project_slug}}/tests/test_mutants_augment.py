"""Augmentation on the device at the edges a user sees (`make mutate MUTATE=recipe`): flips
mirror left and right only, and pixels come back rounded, as serving's resize gives them.

Part of the image task (tasks/image/augment.py); in-process and fast: small batches, eager calls.
"""

from __future__ import annotations

import keras
import numpy as np
import pytest
import tensorflow as tf

from {{ cookiecutter.package_name }}.artifacts import StepError
from {{ cookiecutter.package_name }}.tasks.image import augment


def halves(axis: int, count: int = 32, size: int = 24) -> tf.Tensor:
    """Images bright (200) on one half and dark (60) on the other: the top half (axis 1) or the
    left half (axis 2)."""
    image = np.full((size, size, 1), 60, np.uint8)
    if axis == 1:
        image[: size // 2] = 200
    else:
        image[:, : size // 2] = 200
    return tf.constant(np.repeat(image[np.newaxis], count, axis=0))


def brighter_first_half(images: tf.Tensor, axis: int) -> np.ndarray:
    pixels = images.numpy().astype(float)
    half = pixels.shape[axis] // 2
    first = np.take(pixels, range(half), axis=axis).mean(axis=(1, 2, 3))
    second = np.take(pixels, range(half, 2 * half), axis=axis).mean(axis=(1, 2, 3))
    return first > second


@pytest.mark.parametrize("level", ["light", "strong"])
def test_flips_mirror_left_and_right_and_never_turn_a_photo_upside_down(level: str) -> None:
    """32 photos, bright above: every one still bright above (rotation is 10 degrees at most);
    bright on the left: some now bright on the right (flipped), some not."""
    labels = tf.zeros([32], tf.int32)
    augmenter = augment.make_augmenter(level, 3, seed=7)
    upright, _ = augmenter(halves(axis=1), labels)
    assert brighter_first_half(upright, axis=1).all()
    left, _ = augmenter(halves(axis=2), labels)
    kept = brighter_first_half(left, axis=2)
    assert 0 < kept.sum() < 32, kept


def test_augmented_pixels_are_rounded_back_to_levels_not_truncated() -> None:
    """Truncating makes every augmented image half a level darker than the photo it came from
    (serving's resize rounds): over 64 photos the mean level stays within a tenth of one."""
    rng = np.random.default_rng(0)
    images = tf.constant(rng.integers(64, 192, (64, 16, 16, 3)), tf.uint8)  # no contrast clips
    moved, _ = augment.make_augmenter("light", 3, seed=1)(images, tf.zeros([64], tf.int32))
    assert not np.array_equal(moved.numpy(), images.numpy())
    shift = moved.numpy().mean() - images.numpy().mean()
    assert abs(shift) < 0.1, shift


def test_to_uint8_rounds_and_clips_to_the_levels_a_model_takes() -> None:
    levels = tf.constant([-3.0, -0.4, 0.4, 0.6, 99.5, 100.5, 127.7, 254.4, 254.6, 255.0, 300.0])
    rounded = [0, 0, 0, 1, 100, 100, 128, 254, 255, 255, 255]  # half to even, as tf.round does
    assert augment.to_uint8(levels).numpy().tolist() == rounded
    assert augment.to_uint8(levels).dtype == tf.uint8


def test_a_level_is_none_light_or_strong_and_only_strong_mixes_labels() -> None:
    for bad in ("heavy", None, 1, "Light"):
        with pytest.raises(StepError) as refused:
            augment.check_level(bad)
        assert str(refused.value) == (
            f"augment={bad!r} is not allowed: use none, light (flip, zoom, rotation, contrast) "
            "or strong (light plus RandAugment and MixUp/CutMix)."
        )
    assert [augment.mixes_labels(level) for level in augment.LEVELS] == [False, False, True]
    assert augment.make_augmenter("none", 3, seed=1) is None


def test_strong_mixes_one_hot_labels_of_the_classes_asked_for_on_grey_images_too() -> None:
    images = tf.constant(np.random.default_rng(1).integers(0, 255, (8, 16, 16, 1)), tf.uint8)
    labels = tf.constant([0, 1, 2, 3, 4, 0, 1, 2])
    mixed, soft = augment.make_augmenter("strong", 5, seed=2)(images, labels)
    assert mixed.dtype == tf.uint8 and mixed.shape == (8, 16, 16, 1)
    assert soft.dtype == tf.float32 and soft.shape == (8, 5)
    np.testing.assert_allclose(soft.numpy().sum(axis=1), 1.0, rtol=1e-5)
    assert (soft.numpy().argmax(axis=1) == labels.numpy()).mean() >= 0.5  # mostly the own label


def test_each_layer_has_its_own_seed_the_documented_range_and_computes_in_float32(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A run's seed gives every layer a stream of its own (two layers on one seed draw the same
    numbers: zoom would follow rotation); zoom 10 %, rotation 10 degrees, contrast 20 % on 0-255,
    MixUp's alpha 0.2; float32 whatever the precision policy. light builds no mixing layers."""
    made = []

    def recording(kind):
        def make(*args, **kwargs):
            made.append((kind.__name__, args, kwargs))
            return kind(*args, **kwargs)

        return make

    for name in ("RandomFlip", "RandomZoom", "RandomRotation", "RandomContrast", "MixUp", "CutMix"):
        monkeypatch.setattr(keras.layers, name, recording(getattr(keras.layers, name)))
    monkeypatch.setattr(augment, "OneOpRandAugment", recording(augment.OneOpRandAugment))
    f32 = {"dtype": "float32"}
    light = [
        ("RandomFlip", ("horizontal",), {"seed": 40, **f32}),
        ("RandomZoom", (0.1,), {"seed": 41, **f32}),
        ("RandomRotation", (10 / 360,), {"seed": 42, **f32}),
        ("RandomContrast", (0.2,), {"value_range": (0, 255), "seed": 43, **f32}),
    ]
    augment.make_augmenter("light", 3, seed=40)
    assert made == light
    made.clear()
    augment.make_augmenter("strong", 3, seed=40)
    assert made == light + [
        ("OneOpRandAugment", (), {"value_range": (0, 255), "seed": 44, **f32}),
        ("MixUp", (), {"alpha": 0.2, "seed": 45, **f32}),
        ("CutMix", (), {"seed": 46, **f32}),
    ]


def test_strong_runs_rand_augment_on_colour_images_grey_ones_too(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Without the mixing, strong is light then RandAugment: other pixels than light's with the
    same seed. Grey images go through it as RGB (its colour ops take three channels) and come
    back grey."""
    seen = []

    class Seeing(augment.OneOpRandAugment):
        def transform_images(self, images, transformation, training=True):
            seen.append(int(images.shape[-1]))
            return super().transform_images(images, transformation, training)

    monkeypatch.setattr(augment, "OneOpRandAugment", Seeing)
    monkeypatch.setattr(augment, "_mix", lambda layer, images, labels: (images, labels))
    rng = np.random.default_rng(4)
    labels = tf.zeros([8], tf.int32)
    for channels in (3, 1):
        images = tf.constant(rng.integers(0, 255, (8, 16, 16, channels)), tf.uint8)
        light, _ = augment.make_augmenter("light", 3, seed=5)(images, labels)
        strong, _ = augment.make_augmenter("strong", 3, seed=5)(images, labels)
        assert strong.shape == images.shape and strong.dtype == tf.uint8
        assert not np.array_equal(strong.numpy(), light.numpy())
    assert seen == [3, 3]


def test_strong_mixes_labels_with_mixup_and_cutmix_each_on_part_of_the_batches(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    keras.utils.set_random_seed(0)
    used = []
    mix = augment._mix

    def recorded(layer, images, labels):
        used.append(type(layer).__name__)
        return mix(layer, images, labels)

    monkeypatch.setattr(augment, "_mix", recorded)
    rng = np.random.default_rng(5)
    images = tf.constant(rng.integers(0, 255, (8, 16, 16, 3)), tf.uint8)
    labels = tf.constant([0, 1, 2, 0, 1, 2, 0, 1])
    augmenter = augment.make_augmenter("strong", 3, seed=6)
    mixed = []
    for _ in range(12):
        _, soft = augmenter(images, labels)
        mixed.append(float(soft.numpy().max(axis=1).min()))
    assert min(mixed) < 0.95, mixed  # two labels in one row: mixed, not one-hot
    assert sorted(set(used)) == ["CutMix", "MixUp"], used
