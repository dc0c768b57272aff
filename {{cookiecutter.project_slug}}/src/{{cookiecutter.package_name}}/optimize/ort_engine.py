"""ONNX Runtime's TensorRT execution provider: the part of the ONNX backend that only a project
with the TensorRT part holds (the post-gen hook removes this module with it).

The ONNX backend (onnx_backend.py) asks for this module as an optional capability: where it is
present, the provider below comes first, int8 is symmetric (TensorRT takes only S8S8), each batch
size the job serves gets a session with a TensorRT profile of its own, and fp32 is held to the
TF32 tolerance (ONNX Runtime has no switch to keep TensorRT's fp32 out of TF32).
"""

from __future__ import annotations

import hashlib
import importlib.util
from pathlib import Path

from .base import Job
from .judge import PRECISION_TOLERANCE

PROVIDER = "TensorrtExecutionProvider"
NAME = "ONNX Runtime's TensorRT provider"  # who needs symmetric int8, as calibration says it


def load_library() -> None:
    """pip's TensorRT puts libnvinfer where ONNX Runtime finds it once `tensorrt` is imported."""
    if importlib.util.find_spec("tensorrt"):
        import tensorrt  # noqa: F401


def provider_entry(
    job: Job, model: Path, batch: int | None = None, length: tuple[int, int] | None = None
) -> tuple[str, dict[str, object]]:
    """The provider, told the precision, caching its engines in a folder named by a hash of the
    ONNX file (ONNX Runtime keys its cache by file name, node names and versions, not by weights,
    so a retrained model under the same name would otherwise reuse the old engine), and for
    `batch` (and a `length` bucket of token ids) a profile built for it, cached in a folder of
    its own. The folder is made here: the provider creates only the last folder of the path, and
    throws (falling back to CUDA) when its parent is missing."""
    cache = job.out_dir / "ort_trt_cache" / file_hash(model)
    options: dict[str, object] = {
        "trt_fp16_enable": job.precision == "fp16",
        "trt_int8_enable": job.precision == "int8",
        "trt_engine_cache_enable": True,
    }
    if batch is not None:
        cache = cache / (f"batch_{batch}" + (f"_tokens_{length[1]}" if length else ""))
        options.update(profile_shapes(model, batch, length))
    cache.mkdir(parents=True, exist_ok=True)
    options["trt_engine_cache_path"] = str(cache)
    return PROVIDER, options


def tf32_tolerance(precision: str, running: list[str]) -> float:
    """The tolerance fp32 needs when TensorRT runs it under ONNX Runtime (TF32), else 0."""
    if precision == "fp32" and running[:1] == [PROVIDER]:
        return PRECISION_TOLERANCE["tf32"]
    return 0.0


def tolerance_note(tolerance: float) -> str:
    """What the reason adds when fp32 is held to the TF32 tolerance."""
    return (
        " Its fp32 computes in TF32 (no switch: onnxruntime#26029), so parity allows "
        f"{tolerance:g}, the fp16 tolerance."
    )


def profile_shapes(
    model: Path, batch: int, length: tuple[int, int] | None = None
) -> dict[str, str]:
    """trt_profile_{min,opt,max}_shapes for the model's input: batches 1 to `batch`, built for
    `batch`, and token ids of `length`'s fewest to most, built for the most (the format is
    trtexec's, "name:1x32x32x3")."""
    import onnx

    graph_input = onnx.load(str(model), load_external_data=False).graph.input[0]
    dims = [str(dim.dim_value) for dim in graph_input.type.tensor_type.shape.dim[1:]]

    def shape(size: int, tokens: int | None = None) -> str:
        return f"{graph_input.name}:" + "x".join([str(size), *([str(tokens)] if tokens else dims)])

    fewest, most = length or (None, None)
    return {
        "trt_profile_min_shapes": shape(1, fewest),
        "trt_profile_opt_shapes": shape(batch, most),
        "trt_profile_max_shapes": shape(batch, most),
    }


def file_hash(path: Path) -> str:
    """The first 16 hex digits of the file's SHA-256: changes whenever its weights do."""
    digest = hashlib.sha256()
    with open(path, "rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()[:16]
