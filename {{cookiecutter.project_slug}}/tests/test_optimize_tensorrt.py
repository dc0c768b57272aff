"""The TensorRT backends: what runs on any machine, the sentences when they cannot run, and the
real engine build where a GPU and the trt extra are present.

The ONNX that TensorRT is given (float32 input; Q/DQ int8 with symmetric scales) is checked on CPU
with ONNX Runtime, so a wrong graph is caught before a GPU ever sees it.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import onnx
import pytest
import tensorflow as tf

from {{ cookiecutter.package_name }} import optimize
from {{ cookiecutter.package_name }}.export.parity import validation_images
from {{ cookiecutter.package_name }}.optimize import core, onnx_backend, registry
from {{ cookiecutter.package_name }}.optimize.onnx_backend import onnx_load, provider_options
from {{ cookiecutter.package_name }}.optimize.tensorrt_engine import batch_profile, builder_flags, engine_source

HAS_ORT = importlib.util.find_spec("onnxruntime") is not None
HAS_TRT = all(importlib.util.find_spec(name) for name in ("tensorrt", "polygraphy"))
HAS_GPU = bool(tf.config.list_physical_devices("GPU"))
TRT_BUILD = bool(tf.sysconfig.get_build_info().get("is_tensorrt_build", False))
needs_ort = pytest.mark.skipif(
    not HAS_ORT, reason="onnxruntime is not installed (pip install '.[onnx]')"
)


def test_batch_profile_serves_batch_one_to_the_largest_batch() -> None:
    """min and opt are batch 1 (latency); max covers the benchmark's and parity's batches."""
    shape = (8, 8, 1)
    small = batch_profile(optimize.Job(Path("."), "fp32", (1, 32)), shape)
    assert small == {"min": (1, 8, 8, 1), "opt": (1, 8, 8, 1), "max": (256, 8, 8, 1)}
    large = batch_profile(optimize.Job(Path("."), "fp32", (1, 32, 1024)), shape)
    assert large["max"] == (1024, 8, 8, 1)


@pytest.mark.parametrize(
    ("precision", "flags"),
    [
        ("fp32", {"fp16": False, "int8": False}),
        ("fp16", {"fp16": True, "int8": False}),
        ("int8", {"fp16": False, "int8": True}),
    ],
)
def test_builder_flags_follow_the_precision(precision: str, flags: dict[str, bool]) -> None:
    assert builder_flags(precision) == flags


@needs_ort
@pytest.mark.parametrize("precision", ["fp32", "int8"])
def test_engine_source_computes_what_the_savedmodel_does(
    exported_run: Path, precision: str
) -> None:
    """The ONNX the engine is built from takes float32 and agrees with the SavedModel."""
    source = engine_source(optimize.Job(exported_run, precision))
    graph = onnx.load(str(source)).graph
    assert graph.input[0].type.tensor_type.elem_type == onnx.TensorProto.FLOAT
    images = validation_images(exported_run, 64)
    expected = onnx_load(
        exported_run / "optimized" / "model_fp32.onnx", optimize.Job(exported_run, "fp32")
    )(images)
    got = onnx_load(source, optimize.Job(exported_run, "fp32"))(images.astype(np.float32))
    tolerance = optimize.PRECISION_TOLERANCE[precision]
    assert float(np.abs(got - expected).max()) <= tolerance


@needs_ort
def test_int8_engine_source_is_symmetric_signed(exported_run: Path) -> None:
    """TensorRT takes only symmetric int8 Q/DQ: every zero point is an int8 zero."""
    zeros = zero_points(engine_source(optimize.Job(exported_run, "int8")))
    assert zeros and all(zero.dtype == np.int8 and not zero.any() for zero in zeros)


@needs_ort
def test_int8_engine_source_dequantizes_only_8_bit_values(exported_run: Path) -> None:
    """TensorRT's ONNX parser takes DequantizeLinear only on 8-bit (or narrower) inputs: biases
    stay float32, not the quantizer's default int32 (onnx-tensorrt operator support)."""
    job = optimize.Job(exported_run, "int8", calibration_examples=64)
    model = onnx.load(str(engine_source(job)))
    types = {init.name: init.data_type for init in model.graph.initializer}
    for node in model.graph.node:
        if node.op_type == "QuantizeLinear":
            types[node.output[0]] = types[node.input[2]]
    dequantize = [node for node in model.graph.node if node.op_type == "DequantizeLinear"]
    inputs = [types.get(node.input[0]) for node in dequantize]
    assert inputs and set(inputs) <= {onnx.TensorProto.INT8, onnx.TensorProto.UINT8}, inputs


def zero_points(path: Path) -> list[np.ndarray]:
    """The zero points of every QuantizeLinear node of an ONNX graph."""
    model = onnx.load(str(path))
    weights = {init.name: init for init in model.graph.initializer}
    return [
        onnx.numpy_helper.to_array(weights[node.input[2]])
        for node in model.graph.node
        if node.op_type == "QuantizeLinear" and len(node.input) > 2
    ]


@needs_ort
@pytest.mark.parametrize("precision", ["fp32", "fp16", "int8"])
def test_onnx_runtime_tensorrt_provider_is_told_the_precision(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, precision: str
) -> None:
    """Where onnxruntime-gpu has TensorRT, its provider gets the precision and an engine cache."""
    providers = ["TensorrtExecutionProvider", "CUDAExecutionProvider", "CPUExecutionProvider"]
    monkeypatch.setattr(onnx_backend, "onnx_providers", lambda: providers)
    job = optimize.Job(tmp_path, precision)
    job.out_dir.mkdir()
    (job.out_dir / f"model_{precision}.onnx").write_bytes(b"weights")
    chosen = provider_options(job)
    assert chosen[1:] == providers[1:]
    name, options = chosen[0]
    assert name == "TensorrtExecutionProvider"
    assert options["trt_fp16_enable"] == (precision == "fp16")
    assert options["trt_int8_enable"] == (precision == "int8")
    cache = Path(str(options["trt_engine_cache_path"]))
    assert cache.parent == tmp_path / "optimized" / "ort_trt_cache"


@needs_ort
def test_tensorrt_engine_cache_follows_the_weights(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A retrained model keeps its file name; its engines must not be the old model's."""
    monkeypatch.setattr(onnx_backend, "onnx_providers", lambda: ["TensorrtExecutionProvider"])
    job = optimize.Job(tmp_path, "fp32")
    job.out_dir.mkdir()
    model = job.out_dir / "model_fp32.onnx"

    def cache_for(weights: bytes) -> object:
        model.write_bytes(weights)
        return provider_options(job, model)[0][1]["trt_engine_cache_path"]

    first = cache_for(b"weights before retraining")
    assert cache_for(b"weights after retraining") != first
    assert cache_for(b"weights before retraining") == first


@needs_ort
def test_a_provider_that_fell_back_is_reported_not_claimed(
    exported_run: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The entry names session.get_providers(), and a provider asked for that did not load."""
    asked = ["CUDAExecutionProvider", "CPUExecutionProvider"]  # CUDA cannot load on this CPU
    monkeypatch.setattr(onnx_backend, "onnx_providers", lambda: asked)
    images = validation_images(exported_run, 8)
    job = optimize.Job(exported_run, "fp32")
    expected = onnx_load(onnx_backend.export_onnx(exported_run, job.out_dir), job)(images)
    entry = core.run_backend(optimize.BACKEND_TABLE["onnx"], job, images, expected, 1e-6)
    assert entry["status"] == "ran"
    assert entry["reason"] == (
        "ONNX Runtime on CPUExecutionProvider; CUDAExecutionProvider was asked for but did not "
        "load, so ONNX Runtime fell back (its log says why)."
    )


@needs_ort
def test_onnx_int8_is_symmetric_when_tensorrt_runs_it(
    exported_run: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ONNX Runtime's CPU provider gets unsigned activations; its TensorRT provider signed ones."""
    job = optimize.Job(exported_run, "int8", calibration_examples=64)
    cpu = zero_points(onnx_backend.onnx_convert(job))
    assert any(zero.dtype == np.uint8 for zero in cpu)
    monkeypatch.setattr(onnx_backend, "onnx_providers", lambda: ["TensorrtExecutionProvider"])
    trt = zero_points(onnx_backend.onnx_convert(job))
    assert trt and all(zero.dtype == np.int8 and not zero.any() for zero in trt)


@pytest.mark.skipif(HAS_TRT and HAS_GPU, reason="TensorRT and a GPU are here: the engine builds")
def test_tensorrt_skips_with_one_sentence() -> None:
    """Without the trt extra or a GPU the tensorrt backend is skipped, saying which."""
    ok, reason = optimize.BACKEND_TABLE["tensorrt"].available("fp32")
    assert not ok
    if not HAS_TRT:
        assert reason.endswith("is not installed (pip install '.[trt]').")
    else:
        assert reason == "no GPU visible."


@pytest.mark.skipif(TRT_BUILD, reason="this TensorFlow is a TensorRT build")
@pytest.mark.parametrize("precision", ["fp32", "int8"])
def test_tf_trt_skips_without_a_tensorrt_build(precision: str) -> None:
    """pip TensorFlow >= 2.18 has no TensorRT: tf_trt says exactly that."""
    ok, reason = optimize.BACKEND_TABLE["tf_trt"].available(precision)
    assert (ok, reason) == (False, "this TensorFlow was built without TensorRT.")


def test_both_tensorrt_backends_are_offered() -> None:
    """Baked with TensorRT, the package has both modules, so both backends are offered."""
    assert {"tensorrt_engine", "tf_trt"} <= set(registry.backend_modules())
    assert set(registry.backend_table()) == set(optimize.BACKENDS) == {"onnx", "tensorrt", "tf_trt"}
    assert optimize.Params().backends == "onnx,tensorrt,tf_trt"  # the notebook's default


@pytest.mark.gpu
@pytest.mark.skipif(not HAS_TRT, reason="the trt extra is not installed (pip install '.[trt]')")
def test_tensorrt_engine_builds_runs_and_agrees(exported_run: Path) -> None:
    """On a GPU with the trt extra: fp32, fp16 and int8 engines build, serialize and agree."""
    params = optimize.Params("tensorrt", "fp32,fp16,int8", "1,4", iterations=5)
    result = optimize.optimize(exported_run, params)
    for line in result["backends"]:
        assert line["status"] == "ran", line["reason"]
        engine = exported_run / "optimized" / f"model_{line['precision']}.engine"
        assert Path(line["artifact"]) == engine and engine.stat().st_size > 0
        assert line["parity_ok"], line["verdict"]


@pytest.mark.gpu
@pytest.mark.skipif(not TRT_BUILD, reason="this TensorFlow was built without TensorRT")
def test_tf_trt_converts_and_agrees(exported_run: Path) -> None:
    """On a TensorRT build of TensorFlow with a GPU: TF-TRT fp32, fp16 and int8 agree."""
    params = optimize.Params("tf_trt", "fp32,fp16,int8", "1,4", iterations=5)
    result = optimize.optimize(exported_run, params)
    for line in result["backends"]:
        assert line["status"] == "ran" and line["parity_ok"], line["reason"]
