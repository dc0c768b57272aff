"""Where the images come from: one loader per source, and the checks that refuse bad input early.

Every source ends up as the same thing, a `Source`: class names, one label per example, and the
pixels as uint8 (N, H, W, C) — or, for a folder of image files, the file list, read again when the
records are written, so a folder larger than memory still works. Every check raises `DataError`
with one sentence that names the value or file and says what is allowed, before any file is written.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import tensorflow as tf

from ..artifacts import META_FILE, StepError

SOURCES = ("digits", "image_folder", "tfrecord", "mnist", "fashion_mnist", "cifar10", "synthetic")
IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png")
MIXED_SIZES = ("resize", "refuse")
SPLITS = ("train", "validation")
MIN_IMAGE_SIZE, MAX_IMAGE_SIZE = 8, 4096
META_NAME = Path(META_FILE).name  # a data folder's own meta.json, in a run or copied out
FORMAT = 1  # bump when the records change, so an older data folder is not reused

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
_FOLDER_HINT = "a folder with one sub-folder of .jpg/.jpeg/.png images per class"
_TFRECORD_HINT = (
    "a folder with the shards and meta.json that prepare() wrote (a run's data/ folder)"
)
_HINTS = {"image_folder": _FOLDER_HINT, "tfrecord": _TFRECORD_HINT}
_RESIZE_CHUNK = 1024


class DataError(StepError):
    """Bad input for the data step: one sentence naming the file or value and what is allowed."""


@dataclass
class Source:
    """A loaded source: `images` in memory, or `files` read again (decoded, resized) when written.

    `image_shape` is the shape every written image has; images of another size are resized to it.
    """

    dataset: str
    classes: list[str]
    labels: np.ndarray
    image_shape: tuple[int, int, int]
    images: np.ndarray | None = None
    files: list[Path] | None = None
    resized: int = 0
    notes: list[str] = field(default_factory=list)


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
    if not _is_int(seed):
        raise DataError(f"seed={seed!r} is not allowed: use a whole number, e.g. 42.")
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


@dataclass
class FolderScan:
    """An image folder's structure, found without decoding a single image."""

    data_dir: Path
    classes: list[str]
    files: list[Path]
    labels: np.ndarray
    fingerprint: str


def scan_image_folder(data_dir: Path) -> FolderScan:
    """Class names (sorted sub-folder names) and image files; refuse empty or single classes.

    Hidden entries (.DS_Store, .ipynb_checkpoints) and files of other types are skipped.
    """
    folders = sorted(
        entry for entry in data_dir.iterdir() if entry.is_dir() and not entry.name.startswith(".")
    )
    if not folders:
        raise DataError(
            f"data_dir {data_dir} has no class sub-folders: put the images in one sub-folder per "
            f"class, e.g. {data_dir / 'cat' / '001.jpg'}."
        )
    if len(folders) == 1:
        raise DataError(
            f"data_dir {data_dir} holds a single class folder ({folders[0].name}): a classifier "
            "needs at least two, one sub-folder per class."
        )
    files: list[Path] = []
    labels: list[int] = []
    for label, folder in enumerate(folders):
        images = sorted(
            path
            for path in folder.rglob("*")
            if path.suffix.lower() in IMAGE_SUFFIXES
            and path.is_file()
            and not any(part.startswith(".") for part in path.relative_to(folder).parts)
        )
        if not images:
            raise DataError(
                f"Class folder {folder} holds no .jpg, .jpeg or .png image: add images or remove "
                "the folder."
            )
        files += images
        labels += [label] * len(images)
    return FolderScan(
        data_dir=data_dir,
        classes=[folder.name for folder in folders],
        files=files,
        labels=np.asarray(labels, dtype=np.int64),
        fingerprint=_fingerprint(data_dir, files),
    )


def inspect_image_folder(scan: FolderScan, image_size: int | None, mixed_sizes: str) -> Source:
    """Decode every image once to refuse a corrupt one and to find the size to write.

    The pixels are not kept: the records step reads the files again, so memory stays flat.
    Channels: 1 when every image is grayscale, else 3 (grayscale images are then repeated).
    """
    sizes: list[tuple[int, int]] = []
    grayscale = True
    for path in scan.files:
        height, width, channels = decode_file(path).shape
        sizes.append((height, width))
        grayscale = grayscale and channels in (1, 2)
    counts = Counter(sizes)
    if image_size is not None:
        target = (image_size, image_size)
    elif len(counts) > 1 and mixed_sizes == "refuse":
        first, second = list(counts)[:2]
        file_a, file_b = scan.files[sizes.index(first)], scan.files[sizes.index(second)]
        raise DataError(
            f"Images in {scan.data_dir} have mixed sizes, e.g. {file_a} is {_hw(first)} and "
            f"{file_b} is {_hw(second)}: set image_size to resize them all, or "
            f"mixed_sizes='resize' to resize them to the most common size "
            f"({_hw(counts.most_common(1)[0][0])})."
        )
    else:
        target = counts.most_common(1)[0][0]
    source = Source(
        dataset="image_folder",
        classes=scan.classes,
        labels=scan.labels,
        image_shape=(*target, 1 if grayscale else 3),
        files=scan.files,
        resized=sum(count for size, count in counts.items() if size != target),
    )
    if source.resized:
        source.notes.append(f"{source.resized} image(s) resized to {_hw(target)}.")
    return source


def decode_file(path: Path, channels: int = 0) -> np.ndarray:
    """One image file as uint8 (H, W, C); DataError naming the file when it cannot be read."""
    try:
        data = path.read_bytes()
        return tf.io.decode_image(data, channels=channels, expand_animations=False).numpy()
    except (OSError, tf.errors.OpError) as error:
        raise DataError(
            f"{path} is not a readable image ({_first_line(error)}): fix or remove it "
            "(allowed: .jpg, .jpeg, .png files that open in an image viewer)."
        ) from None


def load_file_tensor(path: tf.Tensor, image_shape: Sequence[int]) -> tf.Tensor:
    """Inside tf.data: read, decode to `image_shape`'s channels, resize to its height and width."""
    image = tf.io.decode_image(
        tf.io.read_file(path), channels=int(image_shape[2]), expand_animations=False
    )
    size = tf.constant(list(image_shape[:2]), dtype=tf.int32)
    return tf.cond(
        tf.reduce_all(tf.shape(image)[:2] == size),
        lambda: image,
        lambda: resize_uint8(image, image_shape[:2]),
    )


def resize_uint8(images: tf.Tensor | np.ndarray, size: Sequence[int]) -> tf.Tensor:
    """Resize (bilinear, antialiased when shrinking) and round back to uint8."""
    resized = tf.image.resize(images, list(size), method="bilinear", antialias=True)
    return tf.cast(tf.clip_by_value(tf.round(resized), 0, 255), tf.uint8)


@dataclass
class TFRecordDir:
    """Shards written earlier by prepare(), with what their meta.json says about them."""

    data_dir: Path
    meta: dict[str, Any]
    classes: list[str]
    image_shape: tuple[int, int, int]
    files: dict[str, list[Path]]
    per_class: dict[str, dict[str, int]]
    fingerprint: str


def open_tfrecord_dir(data_dir: Path) -> TFRecordDir:
    """Read meta.json and find the shards it lists; no record is read yet (see check_tfrecords)."""
    meta_path = data_dir / META_NAME
    if not meta_path.is_file():
        raise DataError(
            f"{data_dir} has no meta.json: dataset='tfrecord' needs {_TFRECORD_HINT}, "
            "e.g. artifacts/<run>/data."
        )
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
        classes = [str(name) for name in meta["classes"]]
        shape = tuple(int(side) for side in meta["image_shape"])
        splits = {split: meta["splits"][split] for split in SPLITS}
        names = {split: [str(name) for name in splits[split]["shards"]] for split in SPLITS}
        per_class = {
            split: {str(name): int(n) for name, n in splits[split]["per_class"].items()}
            for split in SPLITS
        }
    except (ValueError, KeyError, TypeError, AttributeError) as error:
        raise DataError(
            f"{meta_path} does not describe TFRecord shards ({type(error).__name__}: "
            f"{_first_line(error)}): use the meta.json that prepare() wrote next to them."
        ) from None
    if len(shape) != 3 or shape[2] not in (1, 3) or meta.get("encoding", "png") != "png":
        raise DataError(
            f"{meta_path} says image_shape={list(shape)} and encoding={meta.get('encoding')!r}: "
            "allowed are [H, W, 1] or [H, W, 3] images encoded as 'png'."
        )
    if len(classes) < 2:
        raise DataError(f"{meta_path} lists {len(classes)} class(es): a classifier needs two.")
    files: dict[str, list[Path]] = {split: [] for split in SPLITS}
    for split in SPLITS:
        for name in names[split]:
            path = data_dir / name
            if Path(name).name != name or not path.is_file():
                raise DataError(
                    f"{meta_path} lists the shard {name!r}, which is not a file in {data_dir}: "
                    "copy the whole data folder, shards and meta.json together."
                )
            files[split].append(path)
    listed = [meta_path, *files["train"], *files["validation"]]
    return TFRecordDir(
        data_dir=data_dir,
        meta=meta,
        classes=classes,
        image_shape=shape,  # type: ignore[arg-type]
        files=files,
        per_class=per_class,
        fingerprint=_fingerprint(data_dir, listed),
    )


def check_tfrecords(source: TFRecordDir) -> None:
    """Read every record: refuse a truncated or corrupt shard, or counts meta.json contradicts."""
    meta_path = source.data_dir / META_NAME
    for split in SPLITS:
        counts: Counter[int] = Counter()
        for path in source.files[split]:
            labels, shape = _read_shard(path, source.image_shape)
            if shape is not None:
                raise DataError(
                    f"{path} holds an image of shape {shape}, but {meta_path} says "
                    f"{list(source.image_shape)}: write the shards again with prepare()."
                )
            outside = labels[(labels < 0) | (labels >= len(source.classes))]
            if outside.size:
                raise DataError(
                    f"{path} holds the label {int(outside[0])}, outside the "
                    f"{len(source.classes)} classes in {meta_path}: write the shards again "
                    "with prepare()."
                )
            counts.update(labels.tolist())
        found = {name: counts.get(index, 0) for index, name in enumerate(source.classes)}
        if found != source.per_class[split]:
            raise DataError(
                f"{meta_path} does not match its shards: the {split} shards hold "
                f"{_per_class(found)}, meta.json says {_per_class(source.per_class[split])}."
            )


def _read_shard(path: Path, image_shape: Sequence[int]) -> tuple[np.ndarray, list[int] | None]:
    """All labels of one shard, and the first image shape that is not `image_shape` (if any)."""
    features = {
        "image": tf.io.FixedLenFeature([], tf.string),
        "label": tf.io.FixedLenFeature([], tf.int64),
    }

    def parse(record: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        example = tf.io.parse_single_example(record, features)
        return example["label"], tf.shape(tf.io.decode_png(example["image"]))

    dataset = tf.data.TFRecordDataset(str(path)).map(parse, num_parallel_calls=tf.data.AUTOTUNE)
    labels, shapes = [np.zeros(0, dtype=np.int64)], [np.asarray([image_shape], dtype=np.int32)]
    try:
        for label, shape in dataset.batch(1024).as_numpy_iterator():
            labels.append(label)
            shapes.append(shape)
    except tf.errors.OpError as error:
        raise DataError(
            f"{path} is truncated or corrupt ({_first_line(error)}): copy it again, or write the "
            "shards again with prepare()."
        ) from None
    all_shapes = np.concatenate(shapes)
    odd = np.flatnonzero((all_shapes != all_shapes[0]).any(axis=1))
    return np.concatenate(labels), (all_shapes[odd[0]].tolist() if odd.size else None)


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


def _fingerprint(root: Path, files: list[Path]) -> str:
    """Names, sizes and modification times: changes when a file is added, removed or rewritten."""
    digest = hashlib.sha256()
    for path in files:
        stat = path.stat()
        digest.update(f"{path.relative_to(root)}\t{stat.st_size}\t{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()


def _per_class(counts: dict[str, int]) -> str:
    return ", ".join(f"{name}: {count}" for name, count in counts.items())


def _hw(size: tuple[int, int]) -> str:
    return f"{size[0]}x{size[1]}"


def _is_int(value: Any) -> bool:
    return isinstance(value, int | np.integer) and not isinstance(value, bool)


def _first_line(error: Any) -> str:
    """An error's first line without TensorFlow's '{{function_node …}}' and '[Op:…]' wrapping."""
    text = re.sub(r"\{\{function_node [^}]*\}\}\s*", "", str(error))
    text = re.sub(r"\s*\[Op:[^\]]*\].*", "", text, flags=re.S).strip()
    lines = text.splitlines()
    return lines[0].rstrip(".") if lines else type(error).__name__
