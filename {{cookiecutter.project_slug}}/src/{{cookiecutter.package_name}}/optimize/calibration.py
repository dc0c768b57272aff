"""INT8 calibration data, fed from the data pipeline.

Calibration measures the range of every activation on real inputs, so it reads images the model
was trained on: the first `count` images of the train split, in shard order (no shuffling, so two
runs calibrate alike). The validation images stay unseen, for parity.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np

from ..data.pipeline import first_images

CALIBRATION_BATCH = 32


def calibration_images(run_dir: Path, count: int) -> np.ndarray:
    """Up to `count` raw uint8 training images [N, H, W, C] from run_dir/data/."""
    return first_images(run_dir, "train", count)


def calibration_batches(
    images: np.ndarray, batch_size: int = CALIBRATION_BATCH, dtype: str | None = None
) -> Iterator[np.ndarray]:
    """The images in batches of batch_size (the last may be smaller), cast to dtype if given."""
    for start in range(0, len(images), batch_size):
        batch = images[start : start + batch_size]
        yield np.ascontiguousarray(batch if dtype is None else batch.astype(dtype))
