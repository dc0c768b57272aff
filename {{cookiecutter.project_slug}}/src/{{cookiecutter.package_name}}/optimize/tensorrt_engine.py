"""A TensorRT engine built from the ONNX, with NVIDIA's Polygraphy doing the TensorRT plumbing.

The engine is built from the same ONNX export as the onnx backend, with a float32 input (see
`float_input_onnx`), and serialized to optimized/model_<precision>.engine:

- fp32: TF32 stays off (Polygraphy's default), so results match the SavedModel to float32
  rounding; fp16: TensorRT may run layers in float16.
- int8: built from an explicitly quantized graph (Q/DQ nodes, symmetric int8), calibrated on
  training examples by ONNX Runtime's quantizer; TensorRT 10 prefers this to the older implicit
  calibrators, and it is the same calibration the onnx backend uses.
- One optimization profile per batch size the benchmark times (and parity's batch), each
  built for its batch (opt = max = that batch, min 1): TensorRT picks its kernels at a profile's
  opt shape, so a single profile built for batch 1 would time batch 256 on batch-1 kernels.
  predict switches the runner to the profile of the smallest size that holds the batch.
- Token ids (text) keep their int64 input (TensorRT 10 takes it) and get a profile per batch
  size and length bucket (lengths.py): predict cuts a batch to its bucket and picks that
  profile. Their int8 is not built: the template's Q/DQ calibration of the embedding lookup was
  never tested on a GPU, so fp16 is a text engine's reduced precision (ONNX Runtime's dynamic
  int8 runs on).

Polygraphy (NVIDIA's TensorRT toolkit) builds the network from the ONNX, sets the builder
flags and the profile, and its TrtRunner owns the device buffers and the CUDA stream.
"""

from __future__ import annotations

import importlib.util
import weakref
from pathlib import Path

import numpy as np

from ..tasks import current
from .base import Job, Predict, gpu_visible
from .calibration import Int8Format, calibration_inputs, int8_format, quantize_int8
from .lengths import Ranges, cut, length_ranges
from .onnx_backend import PACKAGES, export_onnx, serving_sizes


def tensorrt_available(precision: str) -> tuple[bool, str]:
    """Needs the trt extra (tensorrt, polygraphy, the onnx tools), a GPU, and, for token ids,
    TensorRT 10 (int64 inputs) and a precision other than int8 (the module docstring says why)."""
    ids = current().export.length_ranges is not None
    if ids and precision == "int8":
        return False, (
            "int8 of a token-ids engine is not built: the template never tested calibrating an "
            "embedding lookup on a GPU; use fp16, or ONNX Runtime's dynamic int8."
        )
    for module in ("tensorrt", "polygraphy", *PACKAGES):
        if importlib.util.find_spec(module) is None:
            return False, f"the {module} package is not installed (pip install '.[trt]')."
    if not gpu_visible():
        return False, "no GPU visible."
    import tensorrt

    if ids and int(tensorrt.__version__.split(".")[0]) < 10:
        return False, f"int64 token ids need TensorRT 10 or later, not {tensorrt.__version__}."
    return True, f"TensorRT {tensorrt.__version__} engine built from the ONNX ({precision})."


def batch_profiles(
    job: Job, shape: tuple[int, ...], ranges: Ranges | None = None
) -> list[dict[str, tuple[int, ...]]]:
    """The engine's profiles, one per batch size served (ascending): min 1, opt = max = size;
    with length ranges, one per size and range (fewest tokens at min, most at opt and max)."""
    if ranges is None:
        return [
            {"min": (1, *shape), "opt": (size, *shape), "max": (size, *shape)}
            for size in serving_sizes(job)
        ]
    return [
        {"min": (1, fewest), "opt": (size, most), "max": (size, most)}
        for size in serving_sizes(job)
        for fewest, most in ranges
    ]


def profile_index(sizes: tuple[int, ...], batch: int, bucket: int = 0, buckets: int = 1) -> int:
    """The profile that runs `batch`: the one of the smallest size that holds it (and, with
    `buckets` length ranges to a size, of its `bucket`)."""
    size = next((index for index, size in enumerate(sizes) if size >= batch), len(sizes) - 1)
    return size * buckets + bucket


def builder_flags(precision: str) -> dict[str, bool]:
    """Polygraphy CreateConfig flags for a precision (fp32 sets none; TF32 stays off)."""
    return {"fp16": precision == "fp16", "int8": precision == "int8"}


def engine_source(job: Job) -> Path:
    """The ONNX the engine is built from: float32 input, Q/DQ-quantized for int8; token ids as
    they are (int64)."""
    source = export_onnx(job.run_dir, job.out_dir)
    if length_ranges(job.run_dir) is not None:
        return source
    source = float_input_onnx(source, job.out_dir / "tensorrt_input_fp32.onnx")
    if job.precision != "int8":
        return source
    inputs = calibration_inputs(job.run_dir, job.calibration_examples)
    target = job.out_dir / "tensorrt_input_int8.onnx"
    return quantize_int8(source, target, inputs, tensorrt_int8_format())


def tensorrt_int8_format() -> Int8Format:
    """TensorRT takes only symmetric signed int8."""
    return int8_format(symmetric=True, who="TensorRT")


def tensorrt_convert(job: Job) -> Path:
    """Build and serialize optimized/model_<precision>.engine."""
    import onnx
    from polygraphy.backend.trt import (
        CreateConfig,
        EngineFromNetwork,
        NetworkFromOnnxPath,
        Profile,
        SaveEngine,
    )

    source = engine_source(job)
    graph_input = onnx.load(str(source)).graph.input[0]  # "images", "token_ids": the task's
    dims = graph_input.type.tensor_type.shape.dim
    shape = tuple(dim.dim_value for dim in dims[1:])
    profiles = batch_profiles(job, shape, length_ranges(job.run_dir))
    config = CreateConfig(
        profiles=[Profile().add(graph_input.name, **shapes) for shapes in profiles],
        **builder_flags(job.precision),
    )
    target = job.out_dir / f"model_{job.precision}.engine"
    SaveEngine(EngineFromNetwork(NetworkFromOnnxPath(str(source)), config=config), str(target))()
    return target


def tensorrt_load(path: Path, job: Job) -> Predict:
    """Deserialize the engine into a TrtRunner; predict picks the batch's profile (cutting token
    ids to their bucket), feeds float32 images or int64 ids, and copies the output."""
    from polygraphy.backend.common import BytesFromPath
    from polygraphy.backend.trt import EngineFromBytes, TrtRunner

    runner = TrtRunner(EngineFromBytes(BytesFromPath(str(path))))
    runner.activate()
    sizes, active, ranges = serving_sizes(job), [0], length_ranges(job.run_dir)

    def predict(batch: np.ndarray) -> np.ndarray:
        bucket = 0
        if ranges:
            batch, bucket = cut(batch.astype(np.int64), ranges)
        wanted = profile_index(sizes, len(batch), bucket, len(ranges or ((0, 0),)))
        if wanted != active[0]:
            runner.set_profile(wanted)
            active[0] = wanted
        fed = batch if ranges else batch.astype(np.float32)
        outputs = runner.infer({current().export.model_input: fed})
        # The model has one output, the probabilities. The runner reuses its host buffers on
        # the next call, so copy before returning.
        return np.array(next(iter(outputs.values())), copy=True)

    weakref.finalize(predict, runner.deactivate)
    return predict


def float_input_onnx(source: Path, target: Path) -> Path:
    """source taking float32 images (values 0-255) instead of uint8, for TensorRT.

    The export's first node casts the uint8 input to float32; with a float32 input that cast
    becomes an identity, so the graph computes the same. TensorRT handles float inputs on every
    version, uint8 ones only on some.
    """
    import onnx

    model = onnx.load(str(source))
    model.graph.input[0].type.tensor_type.elem_type = onnx.TensorProto.FLOAT
    onnx.checker.check_model(model)
    onnx.save(model, str(target))
    return target
