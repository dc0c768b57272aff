"""Optimize: ONNX conversion, parity against the SavedModel, the benchmark, skips and refusals.

One untrained small model on a tiny synthetic data set is exported once for the whole file, as
04_export leaves it; the ONNX backend runs on CPU. TensorRT and TF-TRT cannot run on a machine
without a GPU or a TensorRT build of TensorFlow: there the tests check the sentence that says so.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from typing import Any

import keras
import numpy as np
import pytest
import tensorflow as tf

from {{ cookiecutter.package_name }} import data, export, models, optimize
from {{ cookiecutter.package_name }}.artifacts import MissingInputError, read_metrics, write_metrics

SHAPE = (8, 8, 1)
CLASSES = 3
HAS_ORT = importlib.util.find_spec("onnxruntime") is not None
needs_ort = pytest.mark.skipif(
    not HAS_ORT, reason="onnxruntime is not installed (pip install '.[onnx]')"
)
HAS_GPU = bool(tf.config.list_physical_devices("GPU"))
TRT_BUILD = bool(tf.sysconfig.get_build_info().get("is_tensorrt_build", False))


def assert_one_sentence(message: str) -> None:
    """Bad input is answered with one sentence: one line, one final full stop."""
    assert "\n" not in message.strip() and message.strip().endswith("."), message
    assert not re.search(r"[.!?]\s+[A-Z]", message), f"more than one sentence: {message}"


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run folder as 04_export leaves it: data/, model.keras and export/1/."""
    folder = tmp_path_factory.mktemp("optimize-run")
    data.prepare(
        folder,
        "synthetic",
        shards=1,
        synthetic_shape=SHAPE,
        synthetic_classes=CLASSES,
        synthetic_count=60,
    )
    keras.utils.set_random_seed(0)
    models.build_model("small_cnn", SHAPE, CLASSES, width=8).save(folder / "model.keras")
    export.export_savedmodel(folder, version=1)
    return folder


@pytest.fixture(scope="module")
def metrics(run: Path) -> dict[str, Any]:
    if not HAS_ORT:
        pytest.skip("onnxruntime is not installed (pip install '.[onnx]')")
    return optimize.optimize(run, "onnx,tensorrt,tf_trt", "fp32", "1,4", iterations=5)


def by_name(metrics: dict[str, Any], name: str) -> dict[str, Any]:
    return next(entry for entry in metrics["backends"] if entry["name"] == name)


@needs_ort
def test_onnx_runs_with_parity_and_writes_its_file(metrics: dict[str, Any], run: Path) -> None:
    """The ONNX model lands in optimized/ and predicts what the SavedModel predicts."""
    onnx = by_name(metrics, "onnx")
    assert onnx["status"] == "ran", onnx["reason"]
    assert Path(onnx["artifact"]).parent == run / "optimized"
    assert Path(onnx["artifact"]).is_file()
    assert onnx["parity_ok"] and onnx["max_abs_diff"] <= onnx["tolerance"]
    assert onnx["top1_agreement"] == 1.0


@needs_ort
def test_benchmark_figures_for_baselines_and_backend(metrics: dict[str, Any]) -> None:
    """Both baselines and the ONNX backend get p50 <= p99 and a throughput per batch size."""
    timed = [*metrics["baselines"], by_name(metrics, "onnx")]
    assert [line["name"] for line in metrics["baselines"]] == ["model.predict", "savedmodel"]
    for line in timed:
        assert 0 < line["p50_ms"] <= line["p99_ms"], line
        assert set(line["throughput"]) == {"1", "4"} and min(line["throughput"].values()) > 0
    best = by_name(metrics, "onnx")["p50_ms"]
    assert metrics["best_backend"] == "onnx (fp32)"
    assert metrics["best_vs_savedmodel_batch1"] == pytest.approx(timed[1]["p50_ms"] / best)
    assert metrics["best_vs_predict_batch1"] == pytest.approx(timed[0]["p50_ms"] / best)


@needs_ort
def test_metrics_round_trip_through_optimize_json(metrics: dict[str, Any], run: Path) -> None:
    """metrics/optimize.json holds every backend, skipped ones with their reason."""
    write_metrics(run, "optimize", metrics)
    saved = read_metrics(run, "optimize")
    assert [entry["name"] for entry in saved["backends"]] == ["onnx", "tensorrt", "tf_trt"]
    assert all(entry["status"] in {"ran", "skipped", "failed"} for entry in saved["backends"])
    assert all(entry["reason"] for entry in saved["backends"])


@pytest.mark.skipif(HAS_GPU, reason="a GPU is visible: the no-GPU sentence does not apply")
def test_tensorrt_skips_with_one_sentence_without_gpu() -> None:
    """Without a GPU (or the tensorrt package) the tensorrt backend is skipped, saying why."""
    ok, reason = optimize.BACKEND_TABLE["tensorrt"].available("fp32")
    assert not ok
    missing = "the tensorrt package is not installed (pip install '.[trt]')."
    assert reason in {"no GPU visible.", missing}


@pytest.mark.skipif(TRT_BUILD, reason="this TensorFlow is a TensorRT build")
def test_tf_trt_skips_without_a_tensorrt_build() -> None:
    """pip TensorFlow >= 2.18 has no TensorRT: tf_trt says exactly that."""
    ok, reason = optimize.BACKEND_TABLE["tf_trt"].available("fp32")
    assert (ok, reason) == (False, "this TensorFlow was built without TensorRT.")
    assert_one_sentence(reason)


@needs_ort
def test_backend_with_different_outputs_fails_and_never_wins(
    run: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A backend whose probabilities drift beyond tolerance is failed and not the best."""
    real_load = optimize.onnx_load

    def noisy_load(path: Path) -> optimize.Predict:
        predict = real_load(path)
        return lambda batch: predict(batch) + np.float32(0.05)

    monkeypatch.setattr(optimize.BACKEND_TABLE["onnx"], "load", noisy_load)
    result = optimize.optimize(run, "onnx", "fp32", "1", iterations=3)
    onnx = by_name(result, "onnx")
    assert onnx["status"] == "failed" and onnx["parity_ok"] is False
    assert onnx["max_abs_diff"] == pytest.approx(0.05, abs=1e-3)
    assert onnx.get("p50_ms") is None
    assert result["best_backend"] is None and result["best_vs_savedmodel_batch1"] is None


@pytest.mark.parametrize(
    ("arguments", "named"),
    [
        ({"backends": "onnx,openvino"}, "backends="),
        ({"precisions": "fp8"}, "precisions="),
        ({"batch_sizes": "32,64"}, "batch_sizes="),
        ({"batch_sizes": "1,x"}, "batch_sizes="),
        ({"iterations": 0}, "iterations="),
    ],
)
def test_bad_parameters_are_refused_in_one_sentence(
    run: Path, arguments: dict[str, Any], named: str
) -> None:
    """An unknown backend or precision, sizes without 1, or iterations < 1: one sentence."""
    request = {"backends": "onnx", "precisions": "fp32", "batch_sizes": "1", "iterations": 5}
    with pytest.raises(optimize.OptimizeError) as caught:
        optimize.check_optimize(run, **{**request, **arguments})
    assert named in str(caught.value)
    assert_one_sentence(str(caught.value))


def test_missing_export_names_04_export(tmp_path: Path) -> None:
    """A run folder without export/<version>/ points at 04_export, in one sentence."""
    (tmp_path / "model.keras").write_bytes(b"")
    with pytest.raises(MissingInputError) as caught:
        optimize.check_optimize(tmp_path, "onnx", "fp32", "1", 5)
    assert "04_export" in str(caught.value)
    assert_one_sentence(str(caught.value))
