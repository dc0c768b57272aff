"""ONNX, run with ONNX Runtime: the path that works on every machine.

The trained Keras model is exported with Keras 3's `model.export(format="onnx")` (tf2onnx
underneath). Its input is the task's model input (uint8 images, token ids, a table's features),
as the SavedModel's model signature takes it. Each precision is its own graph in optimized/:

- fp32: the export itself.
- fp16: weights and activations converted to float16 (ONNX Runtime's converter), inputs and
  outputs kept as they were. The CPU provider has few float16 kernels and computes most of them
  in float32 behind inserted casts, so expect a speed-up only on a GPU provider.
- int8: static quantization with ONNX Runtime's tools: Q/DQ nodes whose scales come from
  calibration on training examples. Activations are unsigned (the fast kind on CPU), with 7-bit
  weights on x86 CPUs without VNNI (calibration.int8_format says why), except where an engine
  provider runs the graph (engine()), which says the format it needs. Tasks whose INT8 is
  "dynamic" (text, tables) quantize weights only, activations per batch (DynamicQuantizeLinear to
  uint8, MatMulInteger): only the CPU provider runs that, so on a GPU session (CUDA, or the
  engine provider) int8 is skipped with the reason (onnx_available) rather than timed on the CPU
  under a GPU's name.

ONNX Runtime picks its execution provider by what is installed: the engine provider where this
project holds the optional part that brings it (engine(): its ort_engine module), then CUDA, then
the CPU.
"""

from __future__ import annotations

import importlib
import importlib.util
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from .. import lineage
from ..export.files import load_model
from ..tasks import current
from .base import Job, OptimizeError, Predict
from .calibration import (
    Int8Format,
    calibration_inputs,
    int8_format,
    quantize_dynamic_int8,
    quantize_int8,
)
from .lengths import cut, engines_sentence, length_ranges

ORT_PROVIDERS = ("CUDAExecutionProvider", "CPUExecutionProvider")  # after the engine's, if any
ENGINE_MODULE = "ort_engine"  # the optional part's provider module: engine()
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
    if precision == "int8" and current().export.int8 == "dynamic":
        # On a GPU provider (any but the CPU's), MatMulInteger falls back to the CPU.
        gpu = [provider for provider in providers if provider != "CPUExecutionProvider"]
        if gpu:
            return False, dynamic_int8_sentence(gpu)
    note = ""
    if precision == "fp16" and providers[0] == "CPUExecutionProvider":
        note = " (float16 on the CPU provider mostly runs in float32 behind casts)"
    return True, f"ONNX Runtime on {', '.join(providers)}{note}."


def dynamic_int8_sentence(gpu: list[str]) -> str:
    """Why dynamic int8 is not measured where a GPU provider runs the session."""
    return (
        "dynamic int8 runs MatMulInteger on the CPU inside a GPU session: its activations are "
        "quantized to uint8 per batch, and CUDA's MatMulInteger takes only int8 x int8 while "
        f"an engine provider has neither op, so {' and '.join(gpu)} would be named while the int8 "
        "MatMuls ran on the CPU; fp32 and fp16 run on the GPU."
    )


def onnx_convert(job: Job) -> Path:
    """The ONNX graph for job.precision in optimized/: model_fp32|fp16|int8.onnx."""
    source = export_onnx(job.run_dir, job.out_dir)
    if job.precision == "fp32":
        return source
    target = job.out_dir / f"model_{job.precision}.onnx"
    if job.precision == "fp16":
        return float16_onnx(source, target)
    if current().export.int8 == "dynamic":  # weights only, activations' ranges per batch (text)
        return quantize_dynamic_int8(source, target, onnx_int8_format())
    inputs = calibration_inputs(job.run_dir, job.calibration_examples)
    return quantize_int8(source, target, inputs, onnx_int8_format())


def onnx_int8_format() -> Int8Format:
    """Symmetric signed int8 where ONNX Runtime hands the graph to the engine; else this CPU's."""
    part = engine()
    if part is not None and onnx_providers()[0] == part.PROVIDER:
        return int8_format(symmetric=True, who=part.NAME)
    return int8_format()


def onnx_load(path: Path, job: Job) -> Predict:
    """ONNX Runtime sessions on the preferred providers; predict returns the probabilities.

    With the engine provider (engine()), one session per batch size the job serves, each given
    an explicit profile built for that batch (min 1, opt = max = the batch) and its own engine
    cache folder: ONNX Runtime's execution context stays on a session's first profile, and a
    profile built for batch 1 would time batch 256 on batch-1 kernels. A batch is
    run by the session of the smallest size that holds it; token ids get a session per batch size
    and length bucket too, and run cut to their bucket (lengths.py). Other providers: one session.
    predict.reason names the providers the session really runs on (session.get_providers()),
    and any asked for that did not load: ONNX Runtime falls back with a printed error only.
    """
    import onnxruntime

    part = engine()
    profiled = part is not None and part.PROVIDER in onnx_providers()
    sizes = serving_sizes(job) if profiled else (None,)
    ranges = length_ranges(job.run_dir) if profiled else None
    asked: list[str] = []
    sessions: dict[tuple[int | None, int], Any] = {}
    for size in sizes:
        for index, length in enumerate(ranges or (None,)):
            providers = provider_options(job, path, batch=size, length=length)
            asked = [item if isinstance(item, str) else item[0] for item in providers]
            if part is not None and part.PROVIDER in asked:
                part.load_library()
            sessions[size, index] = onnxruntime.InferenceSession(str(path), providers=providers)
    first = next(iter(sessions.values()))
    name = first.get_inputs()[0].name

    def predict(batch: np.ndarray) -> np.ndarray:
        size = next((s for s in sizes if s is None or s >= len(batch)), sizes[-1])
        batch, index = cut(batch, ranges) if ranges else (batch, 0)
        return sessions[size, index].run(None, {name: batch})[0]

    running = first.get_providers()
    reason = running_sentence(asked, running)
    tolerance = part.tf32_tolerance(job.precision, running) if part is not None else 0.0
    if tolerance:
        reason += part.tolerance_note(tolerance)
    predict.reason, predict.tolerance = reason, tolerance  # type: ignore[attr-defined]
    return predict


def engine_plan_note(run_dir: Path, request: dict[str, Any]) -> str:
    """The line 05_optimize prints before it starts where the engine provider gets a session per
    batch size and length bucket (token ids): how many engines per precision, and why; else ""."""
    part = engine()
    if "onnx" not in request["backends"] or part is None or part.PROVIDER not in onnx_providers():
        return ""
    ranges = length_ranges(run_dir)
    precisions = [p for p in request["precisions"] if onnx_available(p)[0]]
    if not ranges or not precisions:
        return ""
    sizes = serving_sizes(Job(run_dir, precisions[0], tuple(request["batch_sizes"])))
    return engines_sentence(part.NAME, sizes, ranges, precisions)


def serving_sizes(job: Job) -> tuple[int, ...]:
    """The batch sizes that get an engine profile of their own: the benchmark's and parity's."""
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
    """ONNX Runtime's providers in order of preference, those this installation has. The engine
    provider belongs to an optional part (engine()): a project that declined it never asks."""
    import onnxruntime

    present = set(onnxruntime.get_available_providers())
    part = engine()
    preferred = ([part.PROVIDER] if part is not None else []) + list(ORT_PROVIDERS)
    return [provider for provider in preferred if provider in present]


def engine() -> ModuleType | None:
    """The optional engine part's ONNX Runtime provider (its ENGINE_MODULE: PROVIDER, NAME,
    provider_entry, load_library, tf32_tolerance, tolerance_note), or None where it was declined."""
    if importlib.util.find_spec(f"{__package__}.{ENGINE_MODULE}") is None:
        return None
    return importlib.import_module(f"{__package__}.{ENGINE_MODULE}")


def provider_options(
    job: Job,
    model: Path | None = None,
    *,
    batch: int | None = None,
    length: tuple[int, int] | None = None,
) -> list[str | tuple[str, dict[str, object]]]:
    """Providers for a session on `model` (optimized/model_<precision>.onnx by default).

    The engine provider's entry is the optional part's (engine().provider_entry: the precision,
    its cache, and for `batch` and a `length` bucket a profile of their own). CUDA's is told to
    keep TF32 off for fp32, so that fp32 computes in float32 like the SavedModel it is compared
    with.
    """
    model = model or job.out_dir / f"model_{job.precision}.onnx"
    part = engine()
    chosen: list[str | tuple[str, dict[str, object]]] = []
    for provider in onnx_providers():
        if part is not None and provider == part.PROVIDER:
            chosen.append(part.provider_entry(job, model, batch, length))
        elif provider == "CUDAExecutionProvider":
            chosen.append((provider, {"use_tf32": int(job.precision != "fp32")}))
        else:
            chosen.append(provider)
    return chosen


def export_onnx(run_dir: Path, out_dir: Path) -> Path:
    """optimized/model_fp32.onnx from model.keras, exported once per process and model.keras."""

    target, made_from = out_dir / "model_fp32.onnx", lineage.fingerprint(run_dir, "model")
    if target.is_file() and target in _EXPORTED and _EXPORTED[target] == made_from:
        return target
    model = load_model(run_dir, OptimizeError)
    spec = current().export.model_spec(model)  # uint8 images, int64 token ids: the model's input
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
