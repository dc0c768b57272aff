"""Optimized inference: ONNX Runtime everywhere, TensorRT where the machine can, measured honestly.

Every backend converts the trained model into run_dir/optimized/, predicts the validation images
and is compared with the SavedModel signature of 04_export (the reference a server would use). A
backend whose probabilities differ by more than its precision allows is `failed` and is never
counted as a win; a backend the machine cannot run is `skipped` with one sentence saying why. The
benchmark times `model.predict`, the SavedModel signature called directly and each backend that
ran: warm-up first, then batch-1 latency (p50, p99) and throughput at larger batches.
"""

from __future__ import annotations

import importlib.util
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import keras
import numpy as np
import tensorflow as tf

from .artifacts import MissingInputError, require, resolve_run_dir
from .export.parity import TOLERANCE, validation_images
from .export.savedmodel import EXPORT_FOLDER, INPUT_NAME, SIGNATURE, model_precision
from .train.loop import MODEL_FILE

BACKENDS = ("onnx", "tensorrt", "tf_trt")
PRECISIONS = ("fp32", "fp16", "int8")
OPTIMIZED_FOLDER = "optimized"
# Largest allowed |backend - SavedModel| probability per precision the backend computes in; fp32
# reuses the export's float32 tolerance, fp16 its mixed-precision one, int8 keeps ~2 digits.
PRECISION_TOLERANCE = {"fp32": TOLERANCE["float32"], "fp16": TOLERANCE["mixed"], "int8": 5e-2}
WARMUP = 5
PARITY_EXAMPLES = 256
ORT_PROVIDERS = ("TensorrtExecutionProvider", "CUDAExecutionProvider", "CPUExecutionProvider")

Predict = Callable[[np.ndarray], np.ndarray]


class OptimizeError(ValueError):
    """A parameter was refused: one sentence naming the value and what is allowed."""


@dataclass
class Backend:
    """One way to run the model: available() says whether (and why not), convert/load/predict."""

    name: str
    available: Callable[[str], tuple[bool, str]]
    convert: Callable[[Path, Path, str], Path]
    load: Callable[[Path], Predict]
    notes: dict[str, Any] = field(default_factory=dict)


def optimize(
    run_dir: str | os.PathLike[str],
    backends: str | Sequence[str] = "onnx,tensorrt,tf_trt",
    precisions: str | Sequence[str] = "fp32",
    batch_sizes: str | Sequence[int] = "1,32,256",
    iterations: int = 200,
    max_examples: int = PARITY_EXAMPLES,
) -> dict[str, Any]:
    """Convert, check parity and benchmark; return what metrics/optimize.json holds.

    Keys: export_dir, precisions, batch_sizes, iterations, baselines (model.predict and the
    SavedModel signature), backends (one entry per backend and precision, ran|skipped|failed),
    best_backend, best_vs_savedmodel_batch1 and best_vs_predict_batch1 (None when no backend ran
    with parity).
    """
    request = check_optimize(run_dir, backends, precisions, batch_sizes, iterations)
    folder, export_dir = request["run_dir"], request["export_dir"]
    images = validation_images(folder, max_examples)
    model = keras.models.load_model(folder / MODEL_FILE, compile=False)
    signature = tf.saved_model.load(str(export_dir)).signatures[SIGNATURE]
    reference = run_savedmodel(signature)
    expected = predict_all(reference, images)
    model_tolerance = TOLERANCE["float32" if model_precision(model) == "float32" else "mixed"]
    sizes, count = request["batch_sizes"], request["iterations"]
    baselines = [
        {"name": "model.predict", **benchmark(run_predict(model), images, sizes, count)},
        {"name": "savedmodel", **benchmark(reference, images, sizes, count)},
    ]
    entries = []
    for name in request["backends"]:
        for precision in request["precisions"]:
            tolerance = max(model_tolerance, PRECISION_TOLERANCE[precision])
            entry = run_backend(BACKEND_TABLE[name], folder, precision, images, expected, tolerance)
            if entry["status"] == "ran":
                entry.update(benchmark(entry.pop("predict"), images, sizes, count))
            entry.pop("predict", None)
            entries.append(entry)
    return {
        "export_dir": str(export_dir),
        "precisions": request["precisions"],
        "batch_sizes": sizes,
        "iterations": count,
        "parity_examples": int(len(images)),
        "baselines": baselines,
        "backends": entries,
        **best_ratios(baselines, entries),
    }


def check_optimize(
    run_dir: str | os.PathLike[str],
    backends: str | Sequence[str],
    precisions: str | Sequence[str],
    batch_sizes: str | Sequence[int],
    iterations: int,
) -> dict[str, Any]:
    """Refuse bad parameters or missing inputs in one sentence, before any model is loaded."""
    chosen = _names(backends, BACKENDS, "backends")
    kinds = _names(precisions, PRECISIONS, "precisions")
    sizes = _sizes(batch_sizes)
    if isinstance(iterations, bool) or not isinstance(iterations, int | np.integer):
        raise OptimizeError(f"iterations={iterations!r} is not allowed: use a whole number >= 1.")
    if iterations < 1:
        raise OptimizeError(f"iterations={iterations!r} is not allowed: use a whole number >= 1.")
    folder = resolve_run_dir(run_dir, create=False)
    require(folder, MODEL_FILE, "03_train")
    export_dir = latest_export(folder)
    return {
        "run_dir": folder,
        "export_dir": export_dir,
        "backends": chosen,
        "precisions": kinds,
        "batch_sizes": sizes,
        "iterations": int(iterations),
    }


def latest_export(run_dir: Path) -> Path:
    """The highest export/<version>/ holding a SavedModel, or one sentence naming 04_export."""
    versions = [
        path
        for path in (run_dir / EXPORT_FOLDER).glob("*")
        if path.name.isdigit() and (path / "saved_model.pb").is_file()
    ]
    if not versions:
        raise MissingInputError(
            f"{run_dir / EXPORT_FOLDER} holds no export/<version>/ SavedModel: run 04_export "
            "first, with the same run_dir."
        )
    return max(versions, key=lambda path: int(path.name))


def run_backend(
    backend: Backend,
    run_dir: Path,
    precision: str,
    images: np.ndarray,
    expected: np.ndarray,
    tolerance: float,
) -> dict[str, Any]:
    """Convert, load and check one backend: status ran, skipped (with why) or failed (with why)."""
    entry: dict[str, Any] = {"name": backend.name, "precision": precision, "tolerance": tolerance}
    entry.update(dict.fromkeys(["parity_ok", "max_abs_diff", "top1_agreement", "artifact"]))
    ok, reason = backend.available(precision)
    if not ok:
        return {**entry, "status": "skipped", "reason": reason}
    try:
        artifact = backend.convert(run_dir, run_dir / OPTIMIZED_FOLDER, precision)
        predict = backend.load(artifact)
        got = predict_all(predict, images)
    except Exception as error:  # a conversion that breaks is a result, not a crash of the step
        return {**entry, "status": "failed", "reason": f"{backend.name} failed: {error}".strip()}
    entry["artifact"] = str(artifact)
    entry.update(parity(expected, got, tolerance))
    if not entry["parity_ok"]:
        return {**entry, "status": "failed", "reason": entry["verdict"]}
    return {**entry, "status": "ran", "reason": reason, "predict": predict, **backend.notes}


def parity(expected: np.ndarray, got: np.ndarray, tolerance: float) -> dict[str, Any]:
    """max_abs_diff, top1_agreement and parity_ok (max_abs_diff within tolerance) with a verdict."""
    if got.shape != expected.shape:
        diff, agreement = float("inf"), 0.0
    else:
        diff = float(np.max(np.abs(expected - got)))
        agreement = float(np.mean(np.argmax(expected, -1) == np.argmax(got, -1)))
    ok = bool(diff <= tolerance)
    verdict = (
        f"Largest probability difference {diff:.2g} against the SavedModel (allowed {tolerance:g})."
        if ok
        else f"Probabilities differ from the SavedModel by up to {diff:.2g}, more than the "
        f"{tolerance:g} allowed: not the same model, so not counted."
    )
    return {"max_abs_diff": diff, "top1_agreement": agreement, "parity_ok": ok, "verdict": verdict}


def benchmark(
    predict: Predict, images: np.ndarray, batch_sizes: Sequence[int], iterations: int
) -> dict[str, Any]:
    """Warm-up, then batch-1 latency p50/p99 (ms) and images/s at every batch size.

    Batch 1 is timed `iterations` times; a larger batch max(3, iterations // 10) times, enough for
    a steady figure without letting batch 256 dominate the step's run time.
    """
    throughput: dict[str, float] = {}
    p50 = p99 = None
    for size in batch_sizes:
        batch = _batch(images, size)
        for _ in range(WARMUP):
            predict(batch)
        repeats = iterations if size == 1 else max(3, iterations // 10)
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            predict(batch)
            times.append(time.perf_counter() - start)
        seconds = np.array(times)
        if size == 1:
            p50, p99 = (float(v) * 1e3 for v in np.percentile(seconds, [50, 99]))
        throughput[str(size)] = float(size * repeats / seconds.sum())
    return {"p50_ms": p50, "p99_ms": p99, "throughput": throughput}


def best_ratios(baselines: list[dict[str, Any]], entries: list[dict[str, Any]]) -> dict[str, Any]:
    """Batch-1 p50 of each baseline over that of the fastest backend that ran with parity."""
    winners = [e for e in entries if e["status"] == "ran" and e["parity_ok"] and e.get("p50_ms")]
    if not winners:
        return dict.fromkeys(
            ["best_backend", "best_vs_savedmodel_batch1", "best_vs_predict_batch1"]
        )
    best = min(winners, key=lambda entry: entry["p50_ms"])
    p50 = {line["name"]: line["p50_ms"] for line in baselines}

    def ratio(name: str) -> float | None:
        return None if p50.get(name) is None else float(p50[name] / best["p50_ms"])

    return {
        "best_backend": f"{best['name']} ({best['precision']})",
        "best_vs_savedmodel_batch1": ratio("savedmodel"),
        "best_vs_predict_batch1": ratio("model.predict"),
    }


def run_savedmodel(signature: Any) -> Predict:
    """The SavedModel's serving_default called directly: uint8 images in, probabilities out."""
    return lambda batch: signature(**{INPUT_NAME: tf.constant(batch)})["probabilities"].numpy()


def run_predict(model: keras.Model) -> Predict:
    """model.predict as most users call it: a whole Keras predict loop per call."""
    return lambda batch: model.predict(batch, batch_size=len(batch), verbose=0)


def predict_all(predict: Predict, images: np.ndarray, batch: int = 256) -> np.ndarray:
    """Probabilities for all images, in batches, as float32."""
    parts = [predict(images[start : start + batch]) for start in range(0, len(images), batch)]
    return np.concatenate(parts).astype("float32")


def skip_sentences(metrics: dict[str, Any]) -> list[str]:
    """One line per backend that did not run: its name, precision and why."""
    return [
        f"{entry['name']} ({entry['precision']}) {entry['status']}: {entry['reason']}"
        for entry in metrics["backends"]
        if entry["status"] != "ran"
    ]


# ONNX: Keras 3's model.export(format="onnx") (tf2onnx underneath) on the trained model, whose
# first layer rescales uint8, so the ONNX graph takes the same raw images as the SavedModel.


def onnx_available(precision: str) -> tuple[bool, str]:
    for module in ("onnxruntime", "tf2onnx", "onnx"):
        if importlib.util.find_spec(module) is None:
            return False, f"the {module} package is not installed (pip install '.[onnx]')."
    if precision != "fp32":
        return False, f"the onnx backend converts in fp32 only, not {precision}."
    return True, f"ONNX Runtime on {', '.join(onnx_providers())}."


def onnx_convert(run_dir: Path, out_dir: Path, precision: str) -> Path:
    model = keras.models.load_model(run_dir / MODEL_FILE, compile=False)
    spec = tf.TensorSpec([None, *model.input_shape[1:]], tf.uint8, name=INPUT_NAME)
    out_dir.mkdir(parents=True, exist_ok=True)
    target = out_dir / f"model_{precision}.onnx"
    model.export(str(target), format="onnx", input_signature=[spec], verbose=False)
    return target


def onnx_load(path: Path) -> Predict:
    import onnxruntime

    session = onnxruntime.InferenceSession(str(path), providers=onnx_providers())
    name = session.get_inputs()[0].name
    return lambda batch: session.run(None, {name: batch})[0]


def onnx_providers() -> list[str]:
    """ONNX Runtime's providers in order of preference, those this installation has."""
    import onnxruntime

    present = set(onnxruntime.get_available_providers())
    return [provider for provider in ORT_PROVIDERS if provider in present]


# TensorRT engine from the ONNX: the engine build is not written yet, so this backend says so
# on a machine that could run it; on others it names what is missing.


def tensorrt_available(precision: str) -> tuple[bool, str]:
    if importlib.util.find_spec("tensorrt") is None:
        return False, "the tensorrt package is not installed (pip install '.[trt]')."
    if not tf.config.list_physical_devices("GPU"):
        return False, "no GPU visible."
    return False, (
        "building TensorRT engines from the ONNX is not implemented yet; the onnx backend uses "
        "TensorRT through ONNX Runtime's TensorrtExecutionProvider where onnxruntime-gpu has it."
    )


def _not_built(run_dir: Path, out_dir: Path, precision: str) -> Path:
    raise NotImplementedError("building TensorRT engines is not implemented yet.")


def _no_load(path: Path) -> Predict:
    raise NotImplementedError("loading TensorRT engines is not implemented yet.")


# TF-TRT: only in TensorFlow builds with TensorRT (pip TensorFlow >= 2.18 has none).


def tf_trt_available(precision: str) -> tuple[bool, str]:
    if not tf.sysconfig.get_build_info().get("is_tensorrt_build", False):
        return False, "this TensorFlow was built without TensorRT."
    if not tf.config.list_physical_devices("GPU"):
        return False, "no GPU visible."
    if precision == "int8":
        return False, "tf_trt int8 needs a calibration input function, not implemented yet."
    return True, "TF-TRT (TrtGraphConverterV2) on the SavedModel."


def tf_trt_convert(run_dir: Path, out_dir: Path, precision: str) -> Path:
    from tensorflow.python.compiler.tensorrt import trt_convert

    mode = {"fp32": trt_convert.TrtPrecisionMode.FP32, "fp16": trt_convert.TrtPrecisionMode.FP16}
    converter = trt_convert.TrtGraphConverterV2(
        input_saved_model_dir=str(latest_export(run_dir)), precision_mode=mode[precision]
    )
    converter.convert()
    target = out_dir / f"tf_trt_{precision}"
    converter.save(str(target))
    return target


def tf_trt_load(path: Path) -> Predict:
    return run_savedmodel(tf.saved_model.load(str(path)).signatures[SIGNATURE])


BACKEND_TABLE = {
    "onnx": Backend("onnx", onnx_available, onnx_convert, onnx_load),
    "tensorrt": Backend("tensorrt", tensorrt_available, _not_built, _no_load),
    "tf_trt": Backend("tf_trt", tf_trt_available, tf_trt_convert, tf_trt_load),
}


def _names(value: str | Sequence[str], allowed: Sequence[str], label: str) -> list[str]:
    names = [part.strip() for part in value.split(",")] if isinstance(value, str) else list(value)
    names = [name for name in names if name]
    bad = [name for name in names if name not in allowed]
    if bad or not names:
        raise OptimizeError(
            f"{label}={value!r} is not allowed: use a comma-separated list of {', '.join(allowed)}."
        )
    return list(dict.fromkeys(names))


def _sizes(value: str | Sequence[int]) -> list[int]:
    parts = value.split(",") if isinstance(value, str) else list(value)
    try:
        sizes = [int(str(part).strip()) for part in parts]
    except ValueError:
        sizes = []
    if not sizes or any(size < 1 for size in sizes) or 1 not in sizes:
        raise OptimizeError(
            f"batch_sizes={value!r} is not allowed: use whole numbers >= 1, including 1 "
            "(batch-1 latency is what the comparison is about)."
        )
    return sorted(set(sizes))


def _batch(images: np.ndarray, size: int) -> np.ndarray:
    repeats = -(-size // len(images))
    return np.ascontiguousarray(np.concatenate([images] * repeats)[:size])
