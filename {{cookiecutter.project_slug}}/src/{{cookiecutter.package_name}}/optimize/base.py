"""What every backend shares: the interface, the job it is given, and the SavedModel reference."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import tensorflow as tf

from ..artifacts import EXPORT_DIR, OPTIMIZED_DIR, MissingInputError, StepError
from ..tasks.outputs import feed

PRECISIONS = ("fp32", "fp16", "int8")
# Validation examples are predicted in batches of this size for parity, so every backend (a
# an engine's batch profile included) must accept it.
PARITY_BATCH = 256
# Training examples that calibrate int8 (never the validation examples parity is measured on).
CALIBRATION_EXAMPLES = 512

Predict = Callable[[np.ndarray], np.ndarray]


class OptimizeError(StepError):
    """A parameter was refused: one sentence naming the value and what is allowed."""


@dataclass(frozen=True)
class Job:
    """One conversion: the run folder, the precision, the batch sizes the result must serve."""

    run_dir: Path
    precision: str
    batch_sizes: tuple[int, ...] = (1,)
    calibration_examples: int = CALIBRATION_EXAMPLES

    @property
    def out_dir(self) -> Path:
        """run_dir/optimized/, where every converted model is written."""
        return self.run_dir / OPTIMIZED_DIR

    @property
    def max_batch(self) -> int:
        """The largest batch any caller sends: the benchmark's or parity's."""
        return max((*self.batch_sizes, PARITY_BATCH))


@dataclass
class Backend:
    """One way to run the model: available() says whether (and why not), convert, load, and
    int8_format(), the int8 format it quantizes to on this machine (None: it does not say)."""

    name: str
    available: Callable[[str], tuple[bool, str]]
    convert: Callable[[Job], Path]
    load: Callable[[Path, Job], Predict]
    int8_format: Callable[[], Any] | None = None


def latest_export(run_dir: Path) -> Path:
    """The highest export/<version>/ holding a SavedModel, or one sentence naming 04_export."""
    versions = [
        path
        for path in (run_dir / EXPORT_DIR).glob("*")
        if path.name.isdigit() and (path / "saved_model.pb").is_file()
    ]
    if not versions:
        raise MissingInputError(
            f"{run_dir / EXPORT_DIR} holds no export/<version>/ SavedModel: run 04_export "
            "first, with the same run_dir."
        )
    return max(versions, key=lambda path: int(path.name))


def run_savedmodel(signature: Any) -> Predict:
    """A SavedModel signature called directly: its input in (uint8 images, token ids, strings,
    a table's columns), probabilities out."""
    return lambda batch: signature(**feed(signature, batch))["probabilities"].numpy()


def gpu_visible() -> bool:
    """Whether TensorFlow sees a GPU (the gpu extra or a CUDA image, and a driver)."""
    return bool(tf.config.list_physical_devices("GPU"))
