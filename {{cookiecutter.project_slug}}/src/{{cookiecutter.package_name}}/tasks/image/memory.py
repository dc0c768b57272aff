"""The sources held in memory: scikit-learn's digits, the keras datasets, seeded synthetic images.

Each loads its pixels whole, as uint8 (N, H, W, C), and is resized in chunks when image_size asks
for another size. They are small enough for that; a folder of image files may not be, so it is
read file by file instead (image_folder.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .image_folder import resize_uint8
from .image_source import DataError, Source, _first_line, _hw, _is_int

KERAS_CLASSES = {
    "mnist": [str(digit) for digit in range(10)],
    "fashion_mnist": [
        "T-shirt/top",
        "Trouser",
        "Pullover",
        "Dress",
        "Coat",
        "Sandal",
        "Shirt",
        "Sneaker",
        "Bag",
        "Ankle boot",
    ],
    "cifar10": [
        "airplane",
        "automobile",
        "bird",
        "cat",
        "deer",
        "dog",
        "frog",
        "horse",
        "ship",
        "truck",
    ],
}
_RESIZE_CHUNK = 1024


def load_digits() -> Source:
    """scikit-learn's bundled 8×8 digits (1797 images): the default, needs no network."""
    from sklearn.datasets import load_digits as sklearn_digits

    bunch = sklearn_digits()
    # Values are 0..16 (counts of set pixels in 4x4 blocks); spread them over 0..255.
    images = np.rint(bunch.images * (255.0 / 16.0)).clip(0, 255).astype(np.uint8)[..., None]
    classes = [str(name) for name in bunch.target_names]
    return _in_memory("digits", classes, images, bunch.target)


def load_keras(name: str) -> Source:
    """mnist, fashion_mnist or cifar10 through keras.datasets: downloaded once, then cached.

    Keras' train and test parts are pooled; the seeded split of this step divides them again.
    """
    import keras

    try:
        (x_train, y_train), (x_test, y_test) = getattr(keras.datasets, name).load_data()
    except Exception as error:  # keras raises a bare Exception("URL fetch failure …") offline
        raise DataError(
            f"Downloading {name} through keras.datasets failed ({_first_line(error)}): it needs "
            "internet on first use; offline, use dataset='digits' (bundled with scikit-learn) or "
            "dataset='image_folder' with a data_dir of your images."
        ) from None
    images = np.concatenate([x_train, x_test])
    if images.ndim == 3:
        images = images[..., None]
    labels = np.concatenate([np.ravel(y_train), np.ravel(y_test)])
    return _in_memory(name, list(KERAS_CLASSES[name]), images.astype(np.uint8), labels)


def load_synthetic(
    shape: Sequence[int] = (32, 32, 3), classes: int = 10, count: int = 1000, seed: int = 42
) -> Source:
    """Seeded random images, balanced over `classes`; each class has its own mean pattern.

    For benchmarks and tests: any size and count without a download, and still learnable.
    """
    _check_synthetic(shape, classes, count)
    rng = np.random.default_rng(seed)
    height, width, channels = (int(side) for side in shape)
    labels = rng.permutation(np.arange(count) % classes)
    patterns = rng.integers(0, 256, size=(classes, height, width, channels), dtype=np.uint16)
    noise = rng.integers(0, 256, size=(count, height, width, channels), dtype=np.uint16)
    images = ((6 * patterns[labels] + 4 * noise) // 10).astype(np.uint8)  # 60% class, 40% noise
    return _in_memory("synthetic", [str(index) for index in range(classes)], images, labels)


def _check_synthetic(shape: Sequence[int], classes: int, count: int) -> None:
    sides = list(shape) if isinstance(shape, list | tuple) else []
    if not (len(sides) == 3 and all(_is_int(side) and side >= 1 for side in sides)) or sides[
        2
    ] not in (1, 3):
        raise DataError(
            f"synthetic_shape={shape!r} is not allowed: use [height, width, channels] with whole "
            "numbers >= 1 and channels 1 or 3, e.g. [32, 32, 3]."
        )
    if not _is_int(classes) or classes < 2:
        raise DataError(f"synthetic_classes={classes!r} is not allowed: use a whole number >= 2.")
    if not _is_int(count) or count < 2 * classes:
        raise DataError(
            f"synthetic_count={count!r} is not allowed: use a whole number >= {2 * classes} "
            f"(two per class, one for each split, with synthetic_classes={classes})."
        )


def _in_memory(dataset: str, classes: list[str], images: np.ndarray, labels: Any) -> Source:
    return Source(
        dataset=dataset,
        classes=classes,
        labels=np.asarray(labels, dtype=np.int64),
        image_shape=tuple(int(side) for side in images.shape[1:]),  # type: ignore[arg-type]
        images=images,
    )


def _resize_source(source: Source, image_size: int | None) -> Source:
    """In-memory images to image_size×image_size, in chunks so a big source stays within memory."""
    assert source.images is not None
    height, width, channels = source.image_shape
    if image_size is None or (height, width) == (image_size, image_size):
        return source
    target = (image_size, image_size)
    source.images = np.concatenate(
        [
            resize_uint8(source.images[start : start + _RESIZE_CHUNK], target).numpy()
            for start in range(0, len(source.images), _RESIZE_CHUNK)
        ]
    )
    source.image_shape = (*target, channels)
    source.resized = len(source.images)
    source.notes.append(
        f"{source.resized} image(s) resized from {_hw((height, width))} to {_hw(target)}."
    )
    return source
