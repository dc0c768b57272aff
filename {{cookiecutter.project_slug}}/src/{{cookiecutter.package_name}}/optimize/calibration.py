"""INT8 calibration data, fed from the data pipeline.

Calibration measures the range of every activation on real inputs, so it reads examples the
model was trained on: the first `count` of the train split, in shard order (no shuffling, so two
runs calibrate alike). The validation examples stay unseen, for parity. quantize_int8 calibrates an
ONNX graph on them with ONNX Runtime's quantizer, for every backend that runs int8.

The int8 format follows the machine that runs it (int8_format). On x86 CPUs without VNNI, ONNX
Runtime's uint8 x int8 kernels add pairs of products in 16 bits (VPMADDUBSW), which saturates
when weights use all 8 bits: measured here on a 2-core AVX2 machine, the smoke model's largest
probability difference went from 0.025 (7-bit weights) to 0.19. ONNX Runtime's quantization
guide advises reduce_range (7-bit weights) there; VNNI, ARM and GPUs add in 32 bits.
"""

from __future__ import annotations

import platform
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

CALIBRATION_BATCH = 32
# CPU flags (as /proc/cpuinfo names them) whose int8 dot products add in 32 bits: no saturation.
VNNI_FLAGS = ("avx512_vnni", "avx_vnni", "amx_int8")
CPUINFO = Path("/proc/cpuinfo")


@dataclass(frozen=True)
class Int8Format:
    """How a graph is quantized: activation and weight types, 7-bit weights or not, and why."""

    activations: str  # "uint8" or "int8"
    weights: str  # "int8"
    reduce_range: bool
    reason: str

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def int8_format(
    symmetric: bool = False,
    flags: set[str] | None = None,
    machine: str | None = None,
    *,
    who: str = "The engine",
) -> Int8Format:
    """The int8 format for the machine that runs the graph, with the sentence that says why.

    symmetric: an engine runs it (`who`, as the sentence names it), which takes only signed int8
    with zero points 0. Otherwise
    ONNX Runtime on this CPU: uint8 activations and int8 weights (U8S8), with 7-bit weights
    (reduce_range) on x86 without VNNI. flags and machine default to this machine's; empty
    flags mean they could not be read, and the safe 7-bit format is chosen.
    """
    if symmetric:
        why = f"{who} takes only symmetric signed int8 (S8S8)."
        return Int8Format("int8", "int8", False, why)
    machine = (machine or platform.machine()).lower()
    if machine in {"aarch64", "arm64"} or machine.startswith("arm"):
        why = f"U8S8 at full range: this {machine} CPU's int8 dot products add in 32 bits."
        return Int8Format("uint8", "int8", False, why)
    flags = (cpu_flags() or set()) if flags is None else flags
    vnni = sorted(set(VNNI_FLAGS) & flags)
    if vnni:
        why = f"U8S8 at full range: this CPU has VNNI ({', '.join(vnni)}), which adds in 32 bits."
        return Int8Format("uint8", "int8", False, why)
    seen = "has no VNNI" if flags else "may lack VNNI (its flags could not be read)"
    why = (
        f"U8S8 with 7-bit weights (reduce_range): this CPU {seen}, so ONNX Runtime's "
        "uint8 x int8 kernels add pairs of products in 16 bits and full 8-bit weights could "
        "saturate; its quantization guide advises reduce_range there."
    )
    return Int8Format("uint8", "int8", True, why)


def cpu_flags(path: Path = CPUINFO) -> set[str] | None:
    """This CPU's feature flags from /proc/cpuinfo (Linux), or None where it cannot be read."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() in {"flags", "Features"}:
            return set(value.split())
    return None


def calibration_inputs(run_dir: Path, count: int) -> np.ndarray:
    """Up to `count` training examples from run_dir/data/, as the model takes them."""
    from ..tasks import current

    return current().examples(run_dir, "train", count, form="model")[0]


def calibration_batches(
    inputs: np.ndarray, batch_size: int = CALIBRATION_BATCH, dtype: str | None = None
) -> Iterator[np.ndarray]:
    """The inputs in batches of batch_size (the last may be smaller), cast to dtype if given."""
    for start in range(0, len(inputs), batch_size):
        batch = inputs[start : start + batch_size]
        yield np.ascontiguousarray(batch if dtype is None else batch.astype(dtype))


def quantize_int8(source: Path, target: Path, inputs: np.ndarray, fmt: Int8Format) -> Path:
    """source statically quantized to int8 (Q/DQ format) in `fmt`, calibrated on `inputs`.

    Weights are int8 per channel (7-bit with fmt.reduce_range). Activations are uint8 for ONNX
    Runtime's CPU and CUDA providers, or symmetric int8 (zero point 0) for an engine, which only
    takes that; for an engine biases also stay float32 (it cannot dequantize int32).
    """
    symmetric = fmt.activations == "int8"
    import onnx
    from onnxruntime.quantization import (
        CalibrationDataReader,
        QuantFormat,
        QuantType,
        quantize_static,
    )

    graph = onnx.load(str(source)).graph.input[0]
    name = graph.name
    dtype = onnx.helper.tensor_dtype_to_np_dtype(graph.type.tensor_type.elem_type)

    class Reader(CalibrationDataReader):
        def __init__(self) -> None:
            self.batches = calibration_batches(inputs, dtype=dtype)

        def get_next(self) -> dict[str, np.ndarray] | None:
            batch = next(self.batches, None)
            return None if batch is None else {name: batch}

    with pre_processed(source, target) as prepared:
        quantize_static(
            str(prepared),
            str(target),
            Reader(),
            quant_format=QuantFormat.QDQ,
            per_channel=True,
            reduce_range=fmt.reduce_range,
            activation_type=QuantType.QInt8 if symmetric else QuantType.QUInt8,
            weight_type=QuantType.QInt8,
            # An engine's ONNX parser dequantizes only 8-bit (or narrower) values, so for symmetric
            # int8 biases stay float32 instead of the default int32 DequantizeLinear (QuantizeBias).
            extra_options={
                "ActivationSymmetric": symmetric,
                "WeightSymmetric": True,
                "QuantizeBias": not symmetric,
            },
        )
    return target


def quantize_dynamic_int8(source: Path, target: Path, fmt: Int8Format) -> Path:
    """source with int8 weights and activations quantized per batch at run time (no calibration).

    Suits models whose MatMuls carry the cost (a Transformer's): their activations' ranges vary
    with the input's length and words, so ranges measured on calibration batches fit less well.
    7-bit weights where this CPU's kernels would saturate (fmt.reduce_range). A MatMul whose
    weights are not one matrix (a table's per-feature embeddings, [features, in, out]) stays
    float: ONNX Runtime's DynamicQuantizeMatMul takes per-channel zero points of a 2-D B only,
    and fails at run time ("b zero point is not valid") on every other. The graph is pre-processed
    first, as for static int8 (shape inference, constant folding; without it ONNX Runtime logs a
    warning into 05's output): on the text and table models it gave the same int8 outputs.
    """
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    with pre_processed(source, target) as prepared:
        graph = onnx.load(str(prepared)).graph
        ranks = {weight.name: len(weight.dims) for weight in graph.initializer}
        batched = [
            node.name
            for node in graph.node
            if node.op_type == "MatMul" and ranks.get(node.input[1], 2) != 2
        ]
        quantize_dynamic(
            str(prepared),
            str(target),
            weight_type=QuantType.QInt8,
            per_channel=True,
            reduce_range=fmt.reduce_range,
            nodes_to_exclude=batched,
        )
    return target


@contextmanager
def pre_processed(source: Path, target: Path) -> Iterator[Path]:
    """source after ONNX Runtime's quantization pre-processing (shape inference, constant
    folding), beside target; removed afterwards, also when quantizing fails."""
    from onnxruntime.quantization.shape_inference import quant_pre_process

    prepared = target.with_suffix(".prepared.onnx")
    try:
        quant_pre_process(str(source), str(prepared), skip_symbolic_shape=True)
        yield prepared
    finally:
        prepared.unlink(missing_ok=True)
