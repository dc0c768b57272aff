"""A folder of image files as a source: found without decoding, then checked by decoding once.

The pixels are never held all at once: `scan_image_folder` lists classes and files (cheap, and its
fingerprint says whether an earlier run can be reused), `inspect_image_folder` reads each file's
header (photo_io.probe, in worker processes) to refuse a bad one and to pick the size to write,
and the records step reads the files again (photo_io.encode), so a folder larger than memory
still works. `decode_file` and `load_file_tensor` are the same reading in TensorFlow.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import tensorflow as tf

from ...progress import track
from . import photo_io
from .image_source import DataError, Source, _fingerprint, _first_line, _hw

# What Pillow reads here (photo_io.READABLE); an animated GIF or WebP gives its first frame.
IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".bmp", ".gif", ".webp")
SUFFIXES_SAID = ".jpg, .jpeg, .png, .bmp, .gif or .webp"
NAMED = 3  # sub-folders named in the note on merged ones; the rest are counted


@dataclass
class FolderScan:
    """An image folder's structure, found without decoding a single image."""

    data_dir: Path
    classes: list[str]
    files: list[Path]
    labels: np.ndarray
    fingerprint: str
    notes: list[str] = field(default_factory=list)  # what was skipped or merged, and why


def scan_image_folder(data_dir: Path) -> FolderScan:
    """Class names (sorted sub-folder names) and image files; refuse empty or single classes.

    Hidden entries (.DS_Store, .ipynb_checkpoints) are skipped without a word; files of other
    types are skipped and counted in a note, and images in a class's sub-folders are merged into
    the class, also in a note naming the sub-folders (a nested folder may be a class misplaced).
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
    skipped: list[Path] = []
    nested: Counter[str] = Counter()
    for label, folder in enumerate(folders):
        found = sorted(
            path
            for path in folder.rglob("*")
            if path.is_file()
            and not any(part.startswith(".") for part in path.relative_to(folder).parts)
        )
        images = [path for path in found if path.suffix.lower() in IMAGE_SUFFIXES]
        skipped += [path for path in found if path.suffix.lower() not in IMAGE_SUFFIXES]
        if not images:
            raise DataError(
                f"Class folder {folder} holds no {SUFFIXES_SAID} image: add images or remove "
                "the folder."
            )
        nested.update(
            f"{folder.name}/{path.relative_to(folder).parts[0]}"
            for path in images
            if len(path.relative_to(folder).parts) > 1
        )
        files += images
        labels += [label] * len(images)
    return FolderScan(
        data_dir=data_dir,
        classes=[folder.name for folder in folders],
        files=files,
        labels=np.asarray(labels, dtype=np.int64),
        fingerprint=_fingerprint(data_dir, files),
        notes=_skipped_note(skipped) + _nested_note(nested),
    )


def _skipped_note(skipped: list[Path]) -> list[str]:
    if not skipped:
        return []
    kinds = sorted({path.suffix.lower() or "no extension" for path in skipped})
    return [
        f"{len(skipped)} file(s) skipped, not of a type this step reads ({', '.join(kinds)}; it "
        f"reads {SUFFIXES_SAID}), e.g. {skipped[0]}: convert them to JPEG or PNG to use them."
    ]


def _nested_note(nested: Counter[str]) -> list[str]:
    if not nested:
        return []
    named = [f"{name}/ ({count})" for name, count in sorted(nested.items())[:NAMED]]
    more = f" and {len(nested) - NAMED} more" if len(nested) > NAMED else ""
    return [
        f"{sum(nested.values())} image(s) in sub-folders merged into their class: "
        f"{', '.join(named)}{more}; a class needs its own folder directly in data_dir."
    ]


def inspect_image_folder(
    scan: FolderScan,
    image_size: int | None,
    mixed_sizes: str,
    pmap: Callable[..., Iterable[Any]] = map,
) -> Source:
    """Read every file's header once (in `pmap`'s workers) to refuse a bad file and find the size.

    No pixels are kept: the records step reads the files again, so memory stays flat. Channels:
    1 when every image is greyscale, else 3 (greyscale images are then repeated). Every file
    that cannot be used is counted, and the first is named, before anything is written.
    """
    paths = [str(path) for path in scan.files]
    probes = list(track(pmap(photo_io.probe, paths), len(paths), "Checking images", "image"))
    bad = [
        (path, found.error) for path, found in zip(scan.files, probes, strict=True) if found.error
    ]
    if bad:
        more = f" ({len(bad) - 1} more file(s) fail too, e.g. {bad[1][0]})" if len(bad) > 1 else ""
        raise DataError(
            f"{bad[0][0]} is not a readable image: it {bad[0][1]}{more}; fix or remove it "
            "(allowed: JPEG, PNG, BMP, GIF and WebP files that open in an image viewer)."
        )
    sizes = [(found.height, found.width) for found in probes]
    grayscale = all(found.grey for found in probes)
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
        formats=[found.format for found in probes],
        notes=list(scan.notes),
    )
    if source.resized:
        source.notes.append(f"{source.resized} image(s) resized to {_hw(target)}.")
    rotated = sum(found.orientation != 1 for found in probes)
    if rotated:
        source.notes.append(f"{rotated} image(s) turned upright by their EXIF orientation.")
    animated = sum(found.frames > 1 for found in probes)
    if animated:
        source.notes.append(f"{animated} animated image(s): the first frame of each is used.")
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
