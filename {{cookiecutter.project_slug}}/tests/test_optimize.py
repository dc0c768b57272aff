"""Optimize on the image task: int8 calibrated on the task's own training images, in order, and
the quantized graph keeping the float graph's answers on its validation images; the engine
provider asked for only with the part that holds it. What every task shares (precisions, parity,
the benchmark, refusals of broken or stale inputs) is in test_optimize_shared.py, on the fake task.

The run folder of `exported_run` (conftest) is shared by the whole file.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from {{ cookiecutter.package_name }} import optimize
from {{ cookiecutter.package_name }}.optimize.calibration import (
    calibration_batches,
    calibration_inputs,
    int8_format,
    quantize_int8,
)
from {{ cookiecutter.package_name }}.optimize.onnx_backend import export_onnx, onnx_load
from {{ cookiecutter.package_name }}.tasks.image import data_step
from {{ cookiecutter.package_name }}.tasks.image.pipeline import first_examples

HAS_ORT = importlib.util.find_spec("onnxruntime") is not None
pytestmark = pytest.mark.skipif(
    not HAS_ORT, reason="onnxruntime is not installed (pip install '.[onnx]')"
)


def test_the_int8_graph_keeps_the_answers_of_the_float_one(
    exported_run: Path, tmp_path: Path
) -> None:
    """The quantized graph itself, computed node by node in float (Q/DQ not fused into integer
    kernels, so the same on every CPU), gives the float graph's top class on every validation
    image of the fixed model: calibration and the format lose no answers."""
    import onnxruntime

    source = export_onnx(exported_run, exported_run / "optimized")
    images = calibration_inputs(exported_run, 64)
    target = quantize_int8(source, tmp_path / "int8.onnx", images, int8_format())
    options = onnxruntime.SessionOptions()
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = onnxruntime.InferenceSession(str(target), options, ["CPUExecutionProvider"])
    validation, _ = first_examples(exported_run, "validation", 256)
    name = session.get_inputs()[0].name
    got = session.run(None, {name: validation})[0]
    reference = onnx_load(source, optimize.Job(exported_run, "fp32"))(validation)
    assert np.mean(got.argmax(-1) == reference.argmax(-1)) == 1.0
    assert float(np.abs(got - reference).max()) <= optimize.PRECISION_TOLERANCE["int8"]


def test_calibration_reads_training_images_in_order(exported_run: Path) -> None:
    """int8 calibrates on the first training images, never on the validation ones."""
    images = calibration_inputs(exported_run, 40)
    train = np.concatenate(
        [
            batch.numpy()
            for batch, _ in data_step.make_dataset(exported_run, "train", 16, training=False)
        ]
    )
    assert images.dtype == np.uint8 and images.shape == (40, 8, 8, 1)
    np.testing.assert_array_equal(images, train[:40])
    batches = list(calibration_batches(images, 16, dtype="float32"))
    assert [len(batch) for batch in batches] == [16, 16, 8]
    assert batches[0].dtype == np.float32


def test_int8_depends_on_its_calibration_data(exported_run: Path, tmp_path: Path) -> None:
    """Calibrated on black images the activation ranges are wrong, and parity catches it."""
    source = export_onnx(exported_run, exported_run / "optimized")
    images = calibration_inputs(exported_run, 64)
    job = optimize.Job(exported_run, "int8")
    chosen = int8_format()
    good = onnx_load(quantize_int8(source, tmp_path / "good.onnx", images, chosen), job)
    black = np.zeros_like(images)
    bad = onnx_load(quantize_int8(source, tmp_path / "bad.onnx", black, chosen), job)
    reference = onnx_load(source, optimize.Job(exported_run, "fp32"))(images)
    good_diff = float(np.abs(good(images) - reference).max())
    bad_diff = float(np.abs(bad(images) - reference).max())
    assert good_diff <= optimize.PRECISION_TOLERANCE["int8"] < bad_diff, (good_diff, bad_diff)


def test_the_engine_provider_is_asked_for_only_with_the_part_that_holds_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """ONNX Runtime's engine provider (the first offered) belongs to the optional engine part: a
    project that declined the part never prefers it, even where onnxruntime-gpu offers it, and
    its code names no such provider (onnx_backend asks the part's module, engine())."""
    import onnxruntime

    from {{ cookiecutter.package_name }}.optimize import onnx_backend

    part = onnx_backend.engine()
    assert (part is not None) is {{ cookiecutter.include_tensorrt }}
    first = part.PROVIDER if part is not None else "AnEngineExecutionProvider"
    offered = [first, "CUDAExecutionProvider", "CPUExecutionProvider"]
    monkeypatch.setattr(onnxruntime, "get_available_providers", lambda: offered)
    assert onnx_backend.onnx_providers() == (offered if part is not None else offered[1:])
    monkeypatch.setattr(onnx_backend, "engine", lambda: None)
    assert onnx_backend.onnx_providers() == offered[1:]
    assert onnx_backend.provider_options(SimpleNamespace(precision="fp32"), Path("m.onnx")) == [
        ("CUDAExecutionProvider", {"use_tf32": 0}),
        "CPUExecutionProvider",
    ]
