"""INT8 calibration data, fed from the data pipeline.

Calibration measures the range of every activation on real inputs, so it reads images the model
was trained on: the first `count` images of the train split, in shard order (no shuffling, so two
runs calibrate alike). The validation images stay unseen, for parity. quantize_int8 calibrates an
ONNX graph on them with ONNX Runtime's quantizer, for every backend that runs int8.
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


def quantize_int8(source: Path, target: Path, images: np.ndarray, symmetric: bool) -> Path:
    """source statically quantized to int8 (Q/DQ format), calibrated on `images`.

    Weights are int8 per channel. Activations are uint8 for ONNX Runtime's CPU and CUDA
    providers, or symmetric int8 (zero point 0) for TensorRT, which only takes that; for
    TensorRT biases also stay float32 (it cannot dequantize int32).
    """
    import onnx
    from onnxruntime.quantization import (
        CalibrationDataReader,
        QuantFormat,
        QuantType,
        quantize_static,
    )
    from onnxruntime.quantization.shape_inference import quant_pre_process

    graph = onnx.load(str(source)).graph.input[0]
    name = graph.name
    dtype = onnx.helper.tensor_dtype_to_np_dtype(graph.type.tensor_type.elem_type)

    class Reader(CalibrationDataReader):
        def __init__(self) -> None:
            self.batches = calibration_batches(images, dtype=dtype)

        def get_next(self) -> dict[str, np.ndarray] | None:
            batch = next(self.batches, None)
            return None if batch is None else {name: batch}

    prepared = target.with_suffix(".prepared.onnx")
    quant_pre_process(str(source), str(prepared), skip_symbolic_shape=True)
    quantize_static(
        str(prepared),
        str(target),
        Reader(),
        quant_format=QuantFormat.QDQ,
        per_channel=True,
        activation_type=QuantType.QInt8 if symmetric else QuantType.QUInt8,
        weight_type=QuantType.QInt8,
        # TensorRT's ONNX parser dequantizes only 8-bit (or narrower) values, so for it biases
        # stay float32 instead of the default int32 DequantizeLinear (QuantizeBias).
        extra_options={
            "ActivationSymmetric": symmetric,
            "WeightSymmetric": True,
            "QuantizeBias": not symmetric,
        },
    )
    prepared.unlink()
    return target
