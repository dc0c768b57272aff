"""The image task's training crop at the edges (`make mutate MUTATE=recipe`): the pixels a crop
hands the model, rounded as serving's resize rounds, and the window of the photo it takes
(tasks/image/decode.py's random_crop_record)."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from {{ cookiecutter.package_name }}.tasks.image import decode


def test_a_training_crop_rounds_its_resized_pixels_as_serving_does(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Truncating would make every cropped image half a level darker than the same photo
    resized for serving (its resize rounds)."""
    image = np.zeros((32, 24, 3), np.uint8)
    jpeg = tf.io.encode_jpeg(tf.constant(image))
    levels = tf.constant([-3.0, 0.4, 0.6, 99.5, 100.5, 127.7, 254.4, 254.6, 300.0])
    resized = []

    def resize(images, size, method, antialias):
        resized.append((images.shape.as_list(), size, method, antialias))
        return tf.reshape(tf.tile(levels, [8 * 2]), [*size, 3])

    monkeypatch.setattr(tf.image, "resize", resize)
    crop = decode.random_crop_record((8, 6, 3))
    cropped, label = crop(jpeg, tf.constant(4), tf.constant([1, 2], tf.int64))
    assert int(label) == 4 and cropped.dtype == tf.uint8 and cropped.shape == (8, 6, 3)
    assert cropped.numpy().reshape(-1)[:9].tolist() == [0, 0, 1, 100, 100, 128, 254, 255, 255]
    ((shape, size, method, antialias),) = resized
    assert size == [8, 6] and method == "bilinear" and antialias is True
    height, width, channels = shape
    area = height * width / (32 * 24)
    assert channels == 3 and decode.CROP_AREA[0] - 0.05 <= area <= 1.0
    assert 3 / 4 - 0.1 <= width / height <= 4 / 3 + 0.1


def test_a_training_crop_is_a_window_of_the_photo_of_the_area_and_aspect_asked_for(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """40 crops of a 48x64 JPEG of noise: each the photo's own window (as a whole decode, then
    the slice, resized and rounded, gives it), of 35 % to all of its area, 3:4 to 4:3, spread
    over both ranges; the channels the model takes, and a static shape for tf.data."""
    rng = np.random.default_rng(3)
    jpeg = tf.io.encode_jpeg(tf.constant(rng.integers(0, 255, (48, 64, 3)), tf.uint8))
    whole = tf.io.decode_jpeg(jpeg, channels=3)
    sample = tf.image.stateless_sample_distorted_bounding_box
    windows = []

    def recorded(*args, **kwargs):
        begin, size, box = sample(*args, **kwargs)
        windows.append((begin.numpy().tolist(), size.numpy().tolist()))
        return begin, size, box

    monkeypatch.setattr(tf.image, "stateless_sample_distorted_bounding_box", recorded)
    crop = decode.random_crop_record((8, 6, 3))
    areas, aspects = [], []
    for seed in range(40):
        cropped, _ = crop(jpeg, tf.constant(0), tf.constant([seed, 7], tf.int64))
        (top, left, _), (height, width, _) = windows[-1]
        part = whole[top : top + height, left : left + width]
        expected = tf.image.resize(part, (8, 6), method="bilinear", antialias=True)
        expected = tf.cast(tf.clip_by_value(tf.round(expected), 0, 255), tf.uint8)
        # decoding only the window's blocks upsamples colour at its edges a level apart
        differ = np.abs(cropped.numpy().astype(int) - expected.numpy().astype(int))
        assert differ.max() <= 2 and differ.mean() < 0.2, differ.max()  # another window: ~80
        areas.append(height * width / (48 * 64))
        aspects.append(width / height)
    assert 0.35 - 0.02 <= min(areas) < 0.5 and 0.85 < max(areas) <= 1.0, areas
    assert 0.75 - 0.03 <= min(aspects) < 0.85 and 1.2 < max(aspects) <= 4 / 3 + 0.03, aspects
    monkeypatch.undo()
    grey, _ = decode.random_crop_record((8, 6, 1))(jpeg, tf.constant(0), tf.constant([1, 2]))
    assert grey.shape == (8, 6, 1)
    traced = tf.data.Dataset.from_tensors((jpeg, tf.constant(0), tf.constant([1, 2], tf.int64)))
    assert traced.map(crop).element_spec[0].shape == (8, 6, 3)
