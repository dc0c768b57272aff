"""What every image source and the records share: `Source`, the records' format and small helpers.

Kept apart so the source modules (in memory, image folder, TFRecord folder) and the writer can all
use them without importing each other. The small helpers here turn a value, a file list or an
error into the pieces of the one-sentence refusals the sources raise.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ...data.base import META_NAME, SPLITS, DataError

__all__ = ["FORMAT", "META_NAME", "SPLITS", "DataError", "Source"]

FORMAT = 1  # bump when the records change, so an older data folder is not reused


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
    formats: list[str] | None = None  # each file's format (JPEG, PNG) as its header says


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


def meta_problem(meta: dict[str, Any]) -> str | None:
    """What is wrong with meta.json's image_shape (tasks.read_meta asks, after the shared keys):
    the [height, width, channels] the models and the pipeline are built for, each at least 1."""
    if meta.get("task", "image_classification") != "image_classification":
        return None  # another task's meta (one without "task" predates the other tasks)
    shape = meta.get("image_shape")
    sides = shape if isinstance(shape, list) and len(shape) == 3 else [0]
    if not all(isinstance(s, int) and not isinstance(s, bool) and s >= 1 for s in sides):
        return f"image_shape={shape!r}, not [height, width, channels]"
    return None
