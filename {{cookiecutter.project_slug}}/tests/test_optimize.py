"""Optimize: ONNX in three precisions, parity against the SavedModel, the benchmark, refusals.

The run folder of `exported_run` (conftest) is shared by the whole file; the ONNX backend runs on
CPU in fp32, fp16 and int8. Backends that need a GPU have their own file.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest

from {{ cookiecutter.package_name }} import data, optimize
from {{ cookiecutter.package_name }}.artifacts import MissingInputError, read_metrics, write_metrics
from {{ cookiecutter.package_name }}.optimize import core
from {{ cookiecutter.package_name }}.optimize.calibration import calibration_batches, calibration_images
from {{ cookiecutter.package_name }}.optimize.onnx_backend import export_onnx, onnx_load, quantize_int8

HAS_ORT = importlib.util.find_spec("onnxruntime") is not None
pytestmark = pytest.mark.skipif(
    not HAS_ORT, reason="onnxruntime is not installed (pip install '.[onnx]')"
)


def assert_one_sentence(message: str) -> None:
    """Bad input is answered with one sentence: one line, one final full stop."""
    assert "\n" not in message.strip() and message.strip().endswith("."), message
    assert not re.search(r"[.!?]\s+[A-Z]", message), f"more than one sentence: {message}"


@pytest.fixture(scope="module")
def metrics(exported_run: Path) -> dict[str, Any]:
    backends = ",".join(optimize.BACKENDS)
    return optimize.optimize(exported_run, backends, "fp32,fp16,int8", "1,4", iterations=5)


def entry(metrics: dict[str, Any], name: str, precision: str = "fp32") -> dict[str, Any]:
    return next(
        line
        for line in metrics["backends"]
        if line["name"] == name and line["precision"] == precision
    )


@pytest.mark.parametrize("precision", ["fp32", "fp16", "int8"])
def test_onnx_runs_each_precision_with_parity(
    metrics: dict[str, Any], exported_run: Path, precision: str
) -> None:
    """Each precision has its own ONNX file in optimized/ and agrees with the SavedModel."""
    onnx_entry = entry(metrics, "onnx", precision)
    assert onnx_entry["status"] == "ran", onnx_entry["reason"]
    artifact = Path(onnx_entry["artifact"])
    assert artifact == exported_run / "optimized" / f"model_{precision}.onnx"
    assert artifact.is_file()
    assert onnx_entry["tolerance"] == optimize.PRECISION_TOLERANCE[precision]
    assert onnx_entry["parity_ok"] and onnx_entry["max_abs_diff"] <= onnx_entry["tolerance"]
    assert onnx_entry["top1_agreement"] >= 0.95


def test_precisions_really_differ(metrics: dict[str, Any], exported_run: Path) -> None:
    """fp16 stores float16 weights, int8 holds Q/DQ nodes, and only fp32 matches exactly."""
    folder = exported_run / "optimized"
    fp16 = onnx.load(str(folder / "model_fp16.onnx"))
    assert onnx.TensorProto.FLOAT16 in {init.data_type for init in fp16.graph.initializer}
    int8 = onnx.load(str(folder / "model_int8.onnx"))
    assert {"QuantizeLinear", "DequantizeLinear"} <= {node.op_type for node in int8.graph.node}
    assert entry(metrics, "onnx", "fp32")["max_abs_diff"] < 1e-5
    assert entry(metrics, "onnx", "int8")["max_abs_diff"] > 1e-5


def test_benchmark_figures_for_baselines_and_backends(metrics: dict[str, Any]) -> None:
    """Baselines and every ONNX precision get p50 <= p99 and a throughput per batch size."""
    ran = [line for line in metrics["backends"] if line["status"] == "ran"]
    assert [line["name"] for line in metrics["baselines"]] == ["model.predict", "savedmodel"]
    for line in [*metrics["baselines"], *ran]:
        assert 0 < line["p50_ms"] <= line["p99_ms"], line
        assert set(line["throughput"]) == {"1", "4"} and min(line["throughput"].values()) > 0
    best = min(ran, key=lambda line: line["p50_ms"])
    assert metrics["best_backend"] == f"{best['name']} ({best['precision']})"
    savedmodel, predict = metrics["baselines"][1]["p50_ms"], metrics["baselines"][0]["p50_ms"]
    assert metrics["best_vs_savedmodel_batch1"] == pytest.approx(savedmodel / best["p50_ms"])
    assert metrics["best_vs_predict_batch1"] == pytest.approx(predict / best["p50_ms"])


def test_metrics_round_trip_through_optimize_json(
    metrics: dict[str, Any], exported_run: Path
) -> None:
    """metrics/optimize.json holds every backend and precision, each with its reason."""
    write_metrics(exported_run, "optimize", metrics)
    saved = read_metrics(exported_run, "optimize")
    pairs = [(line["name"], line["precision"]) for line in saved["backends"]]
    assert pairs == [(b, p) for b in optimize.BACKENDS for p in ("fp32", "fp16", "int8")]
    assert all(line["status"] in {"ran", "skipped", "failed"} for line in saved["backends"])
    assert all(line["reason"] for line in saved["backends"])
    assert saved["calibration_examples"] == optimize.CALIBRATION_EXAMPLES


def test_results_table_has_a_row_per_run_and_a_dash_for_what_was_not_measured(
    metrics: dict[str, Any],
) -> None:
    """The notebook's table: baselines first, then every backend and precision, same width."""
    lines = optimize.results_table(metrics).splitlines()
    head, rows = lines[0], lines[2:]
    assert head.startswith("| run by | status | parity |") and head.endswith("| img/s @4 |")
    assert len(rows) == 2 + len(metrics["backends"])
    assert rows[0].startswith("| model.predict | reference | - | - | - |")
    assert rows[2].startswith("| onnx (fp32) | ran | True |")
    assert {row.count("|") for row in lines} == {head.count("|")}
    for row, line in zip(rows[2:], metrics["backends"], strict=True):
        if line["status"] == "skipped":
            assert row.endswith("| skipped | - | - | - | - | - | - |"), row


def test_calibration_reads_training_images_in_order(exported_run: Path) -> None:
    """int8 calibrates on the first training images, never on the validation ones."""
    images = calibration_images(exported_run, 40)
    train = np.concatenate(
        [batch.numpy() for batch, _ in data.make_dataset(exported_run, "train", 16, training=False)]
    )
    assert images.dtype == np.uint8 and images.shape == (40, 8, 8, 1)
    np.testing.assert_array_equal(images, train[:40])
    batches = list(calibration_batches(images, 16, dtype="float32"))
    assert [len(batch) for batch in batches] == [16, 16, 8]
    assert batches[0].dtype == np.float32


def test_int8_depends_on_its_calibration_data(exported_run: Path, tmp_path: Path) -> None:
    """Calibrated on black images the activation ranges are wrong, and parity catches it."""
    source = export_onnx(exported_run, exported_run / "optimized")
    images = calibration_images(exported_run, 64)
    job = optimize.Job(exported_run, "int8")
    good = onnx_load(quantize_int8(source, tmp_path / "good.onnx", images, False), job)
    black = np.zeros_like(images)
    bad = onnx_load(quantize_int8(source, tmp_path / "bad.onnx", black, False), job)
    reference = onnx_load(source, optimize.Job(exported_run, "fp32"))(images)
    good_diff = float(np.abs(good(images) - reference).max())
    bad_diff = float(np.abs(bad(images) - reference).max())
    assert good_diff <= optimize.PRECISION_TOLERANCE["int8"] < bad_diff, (good_diff, bad_diff)


def test_backend_with_different_outputs_fails_and_never_wins(
    exported_run: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A backend whose probabilities drift beyond tolerance is failed and not the best."""

    def noisy_load(path: Path, job: optimize.Job) -> optimize.Predict:
        predict = onnx_load(path, job)
        return lambda batch: predict(batch) + np.float32(0.05)

    monkeypatch.setattr(optimize.BACKEND_TABLE["onnx"], "load", noisy_load)
    result = optimize.optimize(exported_run, "onnx", "fp32", "1", iterations=3)
    onnx_entry = entry(result, "onnx")
    assert onnx_entry["status"] == "failed" and onnx_entry["parity_ok"] is False
    assert onnx_entry["max_abs_diff"] == pytest.approx(0.05, abs=1e-3)
    assert onnx_entry.get("p50_ms") is None
    assert result["best_backend"] is None and result["best_vs_savedmodel_batch1"] is None


def test_conversion_that_breaks_is_failed_with_its_error(
    exported_run: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An exception in convert is a failed entry with the error, not a crash of the step."""

    def broken(job: optimize.Job) -> Path:
        raise RuntimeError("the converter ran out of disk")

    monkeypatch.setattr(optimize.BACKEND_TABLE["onnx"], "convert", broken)
    result = optimize.optimize(exported_run, "onnx", "fp32", "1", iterations=3)
    assert entry(result, "onnx")["status"] == "failed"
    assert entry(result, "onnx")["reason"] == "onnx failed: the converter ran out of disk"


def test_backend_modules_missing_from_the_package_are_left_out(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A backend whose module the bake removed is not offered (and so refused by name)."""
    monkeypatch.setitem(core.BACKEND_MODULES, "openvino", "openvino_backend")
    assert "openvino" not in core._backend_table()
    assert "onnx" in core._backend_table()


@pytest.mark.parametrize(
    ("arguments", "named"),
    [
        ({"backends": "onnx,openvino"}, "backends="),
        ({"precisions": "fp8"}, "precisions="),
        ({"batch_sizes": "32,64"}, "batch_sizes="),
        ({"batch_sizes": "1,x"}, "batch_sizes="),
        ({"iterations": 0}, "iterations="),
        ({"calibration_examples": 0}, "calibration_examples="),
    ],
)
def test_bad_parameters_are_refused_in_one_sentence(
    exported_run: Path, arguments: dict[str, Any], named: str
) -> None:
    """An unknown backend or precision, sizes without 1, counts below 1: one sentence."""
    request = {"backends": "onnx", "precisions": "fp32", "batch_sizes": "1", "iterations": 5}
    with pytest.raises(optimize.OptimizeError) as caught:
        optimize.check_optimize(exported_run, **{**request, **arguments})
    assert named in str(caught.value)
    assert_one_sentence(str(caught.value))


def test_missing_export_names_04_export(tmp_path: Path) -> None:
    """A run folder without export/<version>/ points at 04_export, in one sentence."""
    (tmp_path / "model.keras").write_bytes(b"")
    with pytest.raises(MissingInputError) as caught:
        optimize.check_optimize(tmp_path, "onnx", "fp32", "1", 5)
    assert "04_export" in str(caught.value)
    assert_one_sentence(str(caught.value))
