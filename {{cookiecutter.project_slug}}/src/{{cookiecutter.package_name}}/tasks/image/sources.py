"""Where the images come from: one loader per source, and the checks that refuse bad input early.

Every source ends up as the same thing, a `Source`: class names, one label per example, and the
pixels as uint8 (N, H, W, C) — or, for a folder of image files, the file list, read again when the
records are written, so a folder larger than memory still works. Every check raises `DataError`
with one sentence that names the value or file and says what is allowed, before any file is written.

This module is the dispatcher: `check_parameters` and `load`. The sources themselves live in
memory.py (digits, keras, synthetic), image_folder.py and tfrecord_dir.py; their names are
importable from here too.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from ... import limits
from .image_folder import (
    IMAGE_SUFFIXES,
    FolderScan,
    decode_file,
    inspect_image_folder,
    load_file_tensor,
    resize_uint8,
    scan_image_folder,
)
from .image_source import FORMAT, META_NAME, SPLITS, DataError, Source, _is_int
from .memory import (
    KERAS_CLASSES,
    _check_synthetic,
    _resize_source,
    load_digits,
    load_keras,
    load_synthetic,
)
from .shards import ENCODINGS, JPEG_QUALITY
from .tfrecord_dir import _TFRECORD_HINT, TFRecordDir, check_tfrecords, open_tfrecord_dir

__all__ = [
    "FORMAT",
    "IMAGE_SUFFIXES",
    "KERAS_CLASSES",
    "MAX_IMAGE_SIZE",
    "META_NAME",
    "MIN_IMAGE_SIZE",
    "MIXED_SIZES",
    "SOURCES",
    "SPLITS",
    "DataError",
    "FolderScan",
    "Source",
    "TFRecordDir",
    "check_parameters",
    "check_tfrecords",
    "decode_file",
    "inspect_image_folder",
    "load",
    "load_digits",
    "load_file_tensor",
    "load_keras",
    "load_synthetic",
    "open_tfrecord_dir",
    "resize_uint8",
    "scan_image_folder",
]

SOURCES = ("digits", "image_folder", "tfrecord", "mnist", "fashion_mnist", "cifar10", "synthetic")
MIXED_SIZES = ("resize", "refuse")
MIN_IMAGE_SIZE, MAX_IMAGE_SIZE = 8, 4096
_FOLDER_HINT = "a folder with one sub-folder of .jpg/.jpeg/.png images per class"
_HINTS = {"image_folder": _FOLDER_HINT, "tfrecord": _TFRECORD_HINT}


def check_parameters(
    dataset: str,
    *,
    data_dir: str | os.PathLike[str] | None = None,
    image_size: int | None = None,
    val_fraction: float = 0.2,
    shards: int = 4,
    seed: int = 42,
    mixed_sizes: str = "resize",
    synthetic_shape: Sequence[int] = (32, 32, 3),
    synthetic_classes: int = 10,
    synthetic_count: int = 1000,
    encoding: str = "auto",
    jpeg_quality: int = JPEG_QUALITY,
    workers: int | str = "auto",
) -> Path | None:
    """Refuse a bad parameter in one sentence before anything is read; return data_dir as a Path."""
    if dataset not in SOURCES:
        raise DataError(
            f"dataset={dataset!r} is not a known source: use one of {', '.join(SOURCES)}."
        )
    if image_size is not None and not (
        _is_int(image_size) and MIN_IMAGE_SIZE <= image_size <= MAX_IMAGE_SIZE
    ):
        raise DataError(
            f"image_size={image_size!r} is not allowed: use a whole number from {MIN_IMAGE_SIZE} "
            f"to {MAX_IMAGE_SIZE} (pixels per side), or None to keep the source's size."
        )
    if mixed_sizes not in MIXED_SIZES:
        raise DataError(
            f"mixed_sizes={mixed_sizes!r} is not allowed: use 'resize' (to the most common size) "
            "or 'refuse'."
        )
    if isinstance(val_fraction, bool) or not isinstance(val_fraction, int | float):
        raise DataError(f"val_fraction={val_fraction!r} is not a number: use one between 0 and 1.")
    if not 0 < val_fraction < 1:
        raise DataError(
            f"val_fraction={val_fraction!r} is not allowed: use a number between 0 and 1 "
            "(both excluded), e.g. 0.2."
        )
    if not _is_int(shards) or shards < 1:
        raise DataError(
            f"shards={shards!r} is not allowed: use a whole number >= 1 (files per split)."
        )
    limits.whole("seed", seed, DataError)  # the range every step's seed shares
    if encoding not in ENCODINGS:
        raise DataError(
            f"encoding={encoding!r} is not allowed: use 'auto' (JPEG for photos, PNG for small "
            "lossless images), 'jpeg' or 'png'."
        )
    if not _is_int(jpeg_quality) or not 1 <= jpeg_quality <= 100:
        raise DataError(
            f"jpeg_quality={jpeg_quality!r} is not allowed: use a whole number from 1 to 100 "
            f"(default {JPEG_QUALITY})."
        )
    if workers != "auto" and (not _is_int(workers) or workers < 1):
        raise DataError(
            f"workers={workers!r} is not allowed: use 'auto' (the cores) or a whole number >= 1 "
            "(processes that read and encode image files)."
        )
    if dataset == "synthetic":
        _check_synthetic(synthetic_shape, synthetic_classes, synthetic_count)
    if dataset == "tfrecord" and image_size is not None:
        raise DataError(
            f"image_size={image_size!r} does not apply to dataset='tfrecord', whose shards are "
            "copied as they were written: drop image_size (None)."
        )
    return _check_data_dir(dataset, data_dir)


def load(
    dataset: str,
    *,
    image_size: int | None = None,
    seed: int = 42,
    synthetic_shape: Sequence[int] = (32, 32, 3),
    synthetic_classes: int = 10,
    synthetic_count: int = 1000,
) -> Source:
    """Load an in-memory source (digits, the keras sets, synthetic), resized to image_size.

    The two sources on disk take two steps, so the cheap checks come before the heavy ones:
    `scan_image_folder` then `inspect_image_folder`, and `open_tfrecord_dir` then `check_tfrecords`.
    """
    if dataset == "digits":
        source = load_digits()
    elif dataset in KERAS_CLASSES:
        source = load_keras(dataset)
    elif dataset == "synthetic":
        source = load_synthetic(synthetic_shape, synthetic_classes, synthetic_count, seed)
    else:
        raise DataError(
            f"dataset={dataset!r} is not held in memory: use scan_image_folder or "
            "open_tfrecord_dir for the sources on disk."
        )
    return _resize_source(source, image_size)


def _check_data_dir(dataset: str, data_dir: str | os.PathLike[str] | None) -> Path | None:
    if data_dir in (None, ""):
        if dataset in _HINTS:
            raise DataError(f"dataset={dataset!r} needs data_dir: {_HINTS[dataset]}.")
        return None
    if dataset not in _HINTS:
        raise DataError(
            f"data_dir={os.fspath(data_dir)!r} is only read by dataset='image_folder' or "
            f"'tfrecord', not by dataset={dataset!r}: drop data_dir or choose one of those."
        )
    path = Path(data_dir).expanduser().resolve()
    if not path.exists():
        raise DataError(
            f"data_dir {path} does not exist: dataset={dataset!r} needs {_HINTS[dataset]}."
        )
    if not path.is_dir():
        raise DataError(
            f"data_dir {path} is not a folder: dataset={dataset!r} needs {_HINTS[dataset]}."
        )
    return path
