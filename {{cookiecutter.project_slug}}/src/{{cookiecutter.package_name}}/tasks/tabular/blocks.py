"""What every table model here is built from: the `Columns` split of the FeatureSpace's matrix
(numbers, and indices offset into one shared embedding table), the ReLU stack, the multiple-of-8
check, and the one-sentence error. models.py (Wide & Deep, DCN-v2) and tabm.py (TabM) both build on
them, so neither imports the other's module for them.
"""

from __future__ import annotations

from typing import Any

import keras
import numpy as np
from keras import layers, ops

from ...artifacts import StepError

MULTIPLE = 8
PACKAGE = "tabular_task"  # the name the custom layers are registered under, for .keras files


class ModelError(StepError):
    """A model hyper-parameter the builders cannot use: one sentence naming it."""


@keras.saving.register_keras_serializable(package=PACKAGE)
class Columns(layers.Layer):
    """The numeric columns as they are, and the index columns offset into one shared table.

    Not autocast: under a mixed policy Keras would cast the float32 matrix to float16/bfloat16
    before the int cast, and indices above 2,048 / 256 would round into their neighbours."""

    def __init__(self, numeric: int, sizes: list[int], **kwargs: Any) -> None:
        super().__init__(**{**kwargs, "autocast": False})
        self.numeric, self.sizes = int(numeric), [int(size) for size in sizes]
        self.offsets = np.concatenate([[0], np.cumsum(self.sizes)[:-1]]).astype("int32")

    def call(self, x: Any) -> tuple[Any, Any]:
        numbers = ops.cast(x[:, : self.numeric], self.compute_dtype)
        ids = ops.cast(x[:, self.numeric :], "int32") + ops.convert_to_tensor(self.offsets)
        return numbers, ids

    def compute_output_spec(self, x: Any) -> tuple[Any, Any]:
        batch = x.shape[0]
        return (
            keras.KerasTensor((batch, self.numeric), dtype=self.compute_dtype),
            keras.KerasTensor((batch, len(self.sizes)), dtype="int32"),
        )

    def get_config(self) -> dict[str, Any]:
        return {**super().get_config(), "numeric": self.numeric, "sizes": self.sizes}


def _mlp(x: Any, width: int, dropout: float, depth: int = 2) -> Any:
    """`depth` ReLU layers of `width`, `width/2` ... (multiples of 8), dropout after each."""
    for index in range(depth):
        x = layers.Dense(max(MULTIPLE, width >> index), activation="relu", name=f"deep_{index}")(x)
        x = layers.Dropout(dropout)(x)
    return x


def _check_eights(**values: int) -> None:
    for name, value in values.items():
        if isinstance(value, bool) or not isinstance(value, int) or value < 8 or value % 8:
            raise ModelError(
                f"{name}={value!r} is not allowed: use a multiple of 8 (Tensor Cores under mixed "
                "precision)."
            )
