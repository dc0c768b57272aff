"""ONNX, run with ONNX Runtime: the path that works on every machine.

The trained Keras model is exported with Keras 3's `model.export(format="onnx")` (tf2onnx
underneath). Its first layer rescales uint8, so the ONNX graph takes the same raw images as the
SavedModel. Each precision is its own graph in optimized/:

- fp32: the export itself.
- fp16: weights and activations converted to float16 (ONNX Runtime's converter), inputs and
  outputs kept as they were. The CPU provider has few float16 kernels and computes most of them
  in float32 behind inserted casts, so expect a speed-up only on a GPU provider.
- int8: static quantization with ONNX Runtime's tools: Q/DQ nodes whose scales come from
  calibration on training images. Activations are unsigned (the fast kind on CPU), with 7-bit
  weights on x86 CPUs without VNNI (calibration.int8_format says why), except when the TensorRT
  provider runs the graph, which needs symmetric signed int8.

ONNX Runtime picks its execution provider by what is installed: TensorRT, then CUDA, then CPU.
"""

from __future__ import annotations

import hashlib
import importlib.util
from pathlib import Path
from typing import Any

import numpy as np

from .. import lineage
from ..export.files import load_model
from ..tasks import current
from .base import Job, OptimizeError, Predict
from .calibration import (
    Int8Format,
    calibration_images,
    int8_format,
    quantize_dynamic_int8,
    quantize_int8,
)
from .judge import PRECISION_TOLERANCE
from .lengths import cut, length_ranges

ORT_PROVIDERS = ("TensorrtExecutionProvider", "CUDAExecutionProvider", "CPUExecutionProvider")
PACKAGES = ("onnxruntime", "tf2onnx", "onnx")
# ONNX file -> fingerprint of the model.keras this process exported it from. Every backend and
# precision of a run starts from the same fp32 export, so it is made once per run, and again
# whenever model.keras changes (a file time would miss a model copied in with an older one).
_EXPORTED: dict[Path, str | None] = {}


def onnx_available(precision: str) -> tuple[bool, str]:
    """Runs wherever the onnx extra is installed; the reason names the providers it will use."""
    for module in PACKAGES:
        if importlib.util.find_spec(module) is None:
            return False, f"the {module} package is not installed (pip install '.[onnx]')."
    providers = onnx_providers()
    note = ""
    if precision == "fp16" and providers[0] == "CPUExecutionProvider":
        note = " (float16 on the CPU provider mostly runs in float32 behind casts)"
    return True, f"ONNX Runtime on {', '.join(providers)}{note}."


def onnx_convert(job: Job) -> Path:
    """The ONNX graph for job.precision in optimized/: model_fp32|fp16|int8.onnx."""
    source = export_onnx(job.run_dir, job.out_dir)
    if job.precision == "fp32":
        return source
    target = job.out_dir / f"model_{job.precision}.onnx"
    if job.precision == "fp16":
        return float16_onnx(source, target)
    if current().INT8 == "dynamic":  # weights only, activations' ranges per batch (text)
        return quantize_dynamic_int8(source, target, onnx_int8_format())
    images = calibration_images(job.run_dir, job.calibration_examples)
    return quantize_int8(source, target, images, onnx_int8_format())


def onnx_int8_format() -> Int8Format:
    """Symmetric signed int8 where ONNX Runtime hands the graph to TensorRT; else this CPU's."""
    return int8_format(symmetric=onnx_providers()[0] == "TensorrtExecutionProvider")


def onnx_load(path: Path, job: Job) -> Predict:
    """ONNX Runtime sessions on the preferred providers; predict returns the probabilities.

    With the TensorRT provider, one session per batch size the job serves, each given an explicit
    TensorRT profile built for that batch (trt_profile_*_shapes: min 1, opt = max = the batch)
    and its own engine cache folder: ONNX Runtime's execution context stays on a session's first
    profile, and a profile built for batch 1 would time batch 256 on batch-1 kernels. A batch is
    run by the session of the smallest size that holds it; token ids get a session per batch size
    and length bucket too, and run cut to their bucket (lengths.py). Other providers: one session.
    predict.reason names the providers the session really runs on (session.get_providers()),
    and any asked for that did not load: ONNX Runtime falls back with a printed error only.
    """
    import onnxruntime

    engine = "TensorrtExecutionProvider" in onnx_providers()
    sizes = serving_sizes(job) if engine else (None,)
    ranges = length_ranges(job.run_dir) if engine else None
    asked: list[str] = []
    sessions: dict[tuple[int | None, int], Any] = {}
    for size in sizes:
        for index, length in enumerate(ranges or (None,)):
            providers = provider_options(job, path, batch=size, length=length)
            asked = [item if isinstance(item, str) else item[0] for item in providers]
            if "TensorrtExecutionProvider" in asked and importlib.util.find_spec("tensorrt"):
                import tensorrt  # noqa: F401  (pip's TensorRT puts libnvinfer where ORT finds it)
            sessions[size, index] = onnxruntime.InferenceSession(str(path), providers=providers)
    first = next(iter(sessions.values()))
    name = first.get_inputs()[0].name

    def predict(batch: np.ndarray) -> np.ndarray:
        size = next((s for s in sizes if s is None or s >= len(batch)), sizes[-1])
        batch, index = cut(batch, ranges) if ranges else (batch, 0)
        return sessions[size, index].run(None, {name: batch})[0]

    running = first.get_providers()
    reason, tolerance = running_sentence(asked, running), tf32_tolerance(job.precision, running)
    if tolerance:
        reason += (
            " Its fp32 computes in TF32 (no switch: onnxruntime#26029), so parity allows "
            f"{tolerance:g}, the fp16 tolerance."
        )
    predict.reason, predict.tolerance = reason, tolerance  # type: ignore[attr-defined]
    return predict


def tf32_tolerance(precision: str, running: list[str]) -> float:
    """The tolerance fp32 needs when TensorRT runs it under ONNX Runtime (TF32), else 0."""
    if precision == "fp32" and running[:1] == ["TensorrtExecutionProvider"]:
        return PRECISION_TOLERANCE["tf32"]
    return 0.0


def serving_sizes(job: Job) -> tuple[int, ...]:
    """The batch sizes that get a TensorRT profile of their own: the benchmark's and parity's."""
    return tuple(sorted({*job.batch_sizes, job.max_batch}))


def running_sentence(asked: list[str], running: list[str]) -> str:
    """What the session runs on, and which providers asked for fell back."""
    sentence = f"ONNX Runtime on {', '.join(running)}."
    missing = [provider for provider in asked if provider not in running]
    if missing:
        sentence = sentence[:-1] + (
            f"; {', '.join(missing)} was asked for but did not load, so ONNX Runtime fell "
            "back (its log says why)."
        )
    return sentence


def onnx_providers() -> list[str]:
    """ONNX Runtime's providers in order of preference, those this installation has. Its
    TensorRT provider belongs to the TensorRT part: a project that declined it never asks."""
    import onnxruntime

    present = set(onnxruntime.get_available_providers())
    if not engine_part():
        present.discard(ORT_PROVIDERS[0])
    return [provider for provider in ORT_PROVIDERS if provider in present]


def engine_part() -> bool:
    """Whether this project holds the TensorRT part (its engine backend beside this one)."""
    return importlib.util.find_spec(f"{__package__}.tensorrt_engine") is not None


def provider_options(
    job: Job,
    model: Path | None = None,
    *,
    batch: int | None = None,
    length: tuple[int, int] | None = None,
) -> list[str | tuple[str, dict[str, object]]]:
    """Providers for a session on `model` (optimized/model_<precision>.onnx by default).

    TensorRT's is told the precision and caches its engines in a folder named by a hash of the
    ONNX file (ONNX Runtime keys its cache by file name, node names and versions, not by
    weights, so a retrained model under the same name would otherwise reuse the old engine),
    and for `batch` (and a `length` bucket of token ids) a profile built for it, cached in a
    folder of its own. The folder is made
    here: the provider creates only the last folder of the path, and throws (falling back to
    CUDA) when its parent is missing. CUDA's is told to keep TF32 off for fp32, so that fp32
    computes in float32 like the SavedModel it is compared with.
    """
    model = model or job.out_dir / f"model_{job.precision}.onnx"
    chosen: list[str | tuple[str, dict[str, object]]] = []
    for provider in onnx_providers():
        if provider == "TensorrtExecutionProvider":
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
            chosen.append((provider, options))
        elif provider == "CUDAExecutionProvider":
            chosen.append((provider, {"use_tf32": int(job.precision != "fp32")}))
        else:
            chosen.append(provider)
    return chosen


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


def export_onnx(run_dir: Path, out_dir: Path) -> Path:
    """optimized/model_fp32.onnx from model.keras, exported once per process and model.keras."""

    target, made_from = out_dir / "model_fp32.onnx", lineage.fingerprint(run_dir, "model")
    if target.is_file() and target in _EXPORTED and _EXPORTED[target] == made_from:
        return target
    model = load_model(run_dir, OptimizeError)
    spec = current().model_spec(model)  # uint8 images, int64 token ids: the model's own input
    out_dir.mkdir(parents=True, exist_ok=True)
    model.export(str(target), format="onnx", input_signature=[spec], verbose=False)
    _EXPORTED[target] = made_from
    return target


def float16_onnx(source: Path, target: Path) -> Path:
    """source with float16 weights and activations; inputs and outputs keep their types."""
    import onnx
    from onnxruntime.transformers.float16 import convert_float_to_float16

    onnx.save(convert_float_to_float16(onnx.load(str(source)), keep_io_types=True), str(target))
    return target
