"""Optimize on the fake task (tests/fake_task.py), in every bake: ONNX in three precisions, parity
against the SavedModel, the benchmark and its table, refusals of bad values and of broken or stale
inputs. The image task's calibration on its own images is tested in test_optimize.py; the
backends that need a GPU have their own files.

One fake model, fitted for a few epochs (confident answers, real activation ranges for int8) and
exported, is shared by the whole file; a test that breaks model.keras or the export works on a
copy (run_copy).
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import logging
import os
import shutil
import time
from pathlib import Path
from typing import Any

import fake_task
import keras
import numpy as np
import onnx
import pytest
import tensorflow as tf
from helpers import assert_one_sentence

from {{ cookiecutter.package_name }} import data, export, lineage, optimize
from {{ cookiecutter.package_name }}.artifacts import MissingInputError, StaleInputError, read_metrics
from {{ cookiecutter.package_name }}.optimize import core, registry
from {{ cookiecutter.package_name }}.optimize.calibration import int8_format, quantize_dynamic_int8
from {{ cookiecutter.package_name }}.optimize.onnx_backend import export_onnx, onnx_load

HAS_ORT = importlib.util.find_spec("onnxruntime") is not None
pytestmark = [
    pytest.mark.skipif(not HAS_ORT, reason="onnxruntime is not installed (pip install '.[onnx]')"),
    pytest.mark.usefixtures("fake_module"),
]
QUICK = optimize.Params(backends="onnx", batch_sizes="1", iterations=3)


@pytest.fixture(scope="module")
def exported_run(tmp_path_factory: pytest.TempPathFactory, fake_module) -> Path:
    """A run folder as 04_export leaves it, on the fake task: data/, a fitted model.keras with its
    lineage, and export/1/."""
    folder = fake_task.write_model(tmp_path_factory.mktemp("fake-optimize") / "run", epochs=20)
    export.export_savedmodel(folder, version=1)
    return folder


def retrained(folder: Path, seed: int = 1) -> keras.Model:
    """Another fake model (other weights) for the data in folder."""
    keras.utils.set_random_seed(seed)
    return fake_task.build_model(fake_task.MODEL, data.read_meta(folder))


@pytest.fixture(scope="module")
def metrics(exported_run: Path) -> dict[str, Any]:
    """The step as the notebook runs it, every backend in three precisions; writes the metrics."""
    backends = ",".join(optimize.BACKENDS)
    # 5 calls each whatever the load (a busy machine's model.predict ran out the default budget)
    precisions, sizes = "fp32,fp16,int8", "1,4"
    params = optimize.Params(backends, precisions, sizes, iterations=5, benchmark_seconds=600)
    return optimize.run(exported_run, params, verbose=False)


@pytest.fixture
def run_copy(exported_run: Path, tmp_path: Path) -> Path:
    """A copy of the exported run folder, for a test that breaks or replaces something in it."""
    return Path(shutil.copytree(exported_run, tmp_path / "run"))


def entry(metrics: dict[str, Any], name: str, precision: str = "fp32") -> dict[str, Any]:
    return next(
        line
        for line in metrics["backends"]
        if line["name"] == name and line["precision"] == precision
    )


@pytest.mark.parametrize("precision", ["fp32", "fp16"])
def test_onnx_runs_each_precision_with_parity(
    metrics: dict[str, Any], exported_run: Path, precision: str
) -> None:
    """Each float precision has its own ONNX file in optimized/ and agrees with the SavedModel."""
    onnx_entry = entry(metrics, "onnx", precision)
    assert onnx_entry["status"] == "ran", onnx_entry["reason"]
    artifact = Path(onnx_entry["artifact"])
    assert artifact == exported_run / "optimized" / f"model_{precision}.onnx"
    assert artifact.is_file()
    assert onnx_entry["tolerance"] == optimize.PRECISION_TOLERANCE[precision]
    assert onnx_entry["parity_ok"] and onnx_entry["max_abs_diff"] <= onnx_entry["tolerance"]
    assert onnx_entry["top1_agreement"] >= 0.95


def test_int8_is_calibrated_measured_and_judged_by_the_stated_rule(
    metrics: dict[str, Any], exported_run: Path
) -> None:
    """int8 runs or fails on this CPU, but either way its format, agreement, accuracy drop and
    verdict are recorded, and the verdict is the rule applied to those numbers."""
    line = entry(metrics, "onnx", "int8")
    assert line["status"] in {"ran", "failed"}, line
    assert Path(line["artifact"]) == exported_run / "optimized" / "model_int8.onnx"
    assert line["int8_format"] == int8_format().as_dict()
    assert metrics["int8_rule"] == optimize.INT8_RULE
    rule = optimize.INT8_RULE
    within = (
        line["top1_agreement"] >= rule["min_top1_agreement"]
        and line["accuracy_drop"] <= rule["max_accuracy_drop"]
    )
    assert line["parity_ok"] is within and (line["status"] == "ran") is within, line
    assert f"top-1 agreement {line['top1_agreement']:.1%}" in line["verdict"]


@pytest.mark.parametrize(
    ("flags", "machine", "reduce_range", "says"),
    [
        ({"avx2", "fma"}, "x86_64", True, "has no VNNI"),
        ({"avx2", "avx512f", "avx512_vnni"}, "x86_64", False, "has VNNI (avx512_vnni)"),
        ({"avx2", "avx_vnni"}, "x86_64", False, "has VNNI (avx_vnni)"),
        (set(), "x86_64", True, "could not be read"),
        ({"asimd"}, "aarch64", False, "aarch64 CPU's int8 dot products add in 32 bits"),
    ],
)
def test_the_int8_format_follows_the_cpu(
    flags: set[str], machine: str, reduce_range: bool, says: str
) -> None:
    """7-bit weights where uint8 x int8 products could saturate (x86 without VNNI), full range
    where they add in 32 bits; uint8 activations and int8 weights on the CPU either way."""
    chosen = int8_format(flags=flags, machine=machine)
    assert (chosen.activations, chosen.weights) == ("uint8", "int8")
    assert chosen.reduce_range is reduce_range and says in chosen.reason


def test_symmetric_int8_is_signed_at_full_range_on_any_cpu() -> None:
    chosen = int8_format(symmetric=True, flags={"avx2"}, machine="x86_64")
    assert (chosen.activations, chosen.reduce_range) == ("int8", False)


def test_cpu_flags_are_read_from_cpuinfo(tmp_path: Path) -> None:
    """The flags line of /proc/cpuinfo (x86) or its Features line (ARM); None if unreadable."""
    from {{ cookiecutter.package_name }}.optimize.calibration import cpu_flags

    x86 = tmp_path / "x86"
    x86.write_text("processor\t: 0\nflags\t\t: fpu avx2 avx512_vnni\n", encoding="utf-8")
    arm = tmp_path / "arm"
    arm.write_text("processor\t: 0\nFeatures\t: fp asimd asimddp\n", encoding="utf-8")
    assert cpu_flags(x86) == {"fpu", "avx2", "avx512_vnni"}
    assert cpu_flags(arm) == {"fp", "asimd", "asimddp"}
    assert cpu_flags(tmp_path / "missing") is None


@pytest.mark.parametrize(
    ("got_top", "passes", "says"),
    [
        ([0, 1, 2, 3] * 25, True, "Same answers: top-1 agreement 100.0%"),
        ([0, 1, 2, 3] * 24 + [0, 1, 2, 0], True, "accuracy drop 1.00 points"),
        ([0, 1, 2, 3] * 24 + [0, 1, 0, 0], False, "Not the same answers: top-1 agreement 98.0%"),
    ],
)
def test_the_int8_rule_judges_answers_not_probabilities(
    got_top: list[int], passes: bool, says: str
) -> None:
    """Fixed probabilities: one changed answer in 100 (a 1-point drop) passes, two do not, and a
    probability moved by 0.3 with the same answer is reported but does not fail int8."""
    labels = np.array([0, 1, 2, 3] * 25)
    expected = np.eye(4, dtype=np.float32)[labels] * 0.9 + 0.025
    got = np.eye(4, dtype=np.float32)[np.array(got_top)] * 0.6 + 0.1
    judged = optimize.parity(expected, got, 0.05, labels, optimize.INT8_RULE)
    assert judged["parity_ok"] is passes and says in judged["verdict"], judged["verdict"]
    same = got_top == labels.tolist()
    assert judged["max_abs_diff"] == pytest.approx(0.225 if same else 0.825)


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
    """Baselines and every ONNX precision: the number of timed calls per batch size, a p50, no
    p99 from 5 calls, and throughput from the median call (what the plot draws)."""
    ran = [line for line in metrics["backends"] if line["status"] == "ran"]
    assert [line["name"] for line in metrics["baselines"]] == ["model.predict", "savedmodel"]
    for line in [*metrics["baselines"], *ran]:
        assert line["calls"] == {"1": 5, "4": 5}, line
        assert line["p50_ms"] > 0 and line["p99_ms"] is None, line
        for size, times in line["timings_ms"].items():
            median = float(np.median(times)) / 1e3
            assert line["throughput"][size] == pytest.approx(int(size) / median, rel=1e-2)
    best = min(ran, key=lambda line: line["p50_ms"])
    assert metrics["best_backend"] == f"{best['name']} ({best['precision']})"
    savedmodel, predict = metrics["baselines"][1]["p50_ms"], metrics["baselines"][0]["p50_ms"]
    assert metrics["best_vs_savedmodel_batch1"] == pytest.approx(savedmodel / best["p50_ms"])
    assert metrics["predict_overhead_ms"] == pytest.approx(predict - savedmodel)
    # The throughput plot at batch 1 ranks as the headline does: the same ratio, not a mean's.
    saved_rate, best_rate = metrics["baselines"][1]["throughput"]["1"], best["throughput"]["1"]
    ratio = metrics["best_vs_savedmodel_batch1"]
    assert best_rate / saved_rate == pytest.approx(ratio, rel=2e-2)
    assert "best_vs_predict_batch1" not in metrics  # Keras' overhead is no speed-up


def test_p99_only_from_a_hundred_calls_and_throughput_from_the_median() -> None:
    """99 calls give no p99 (it would be the slowest call); 100 do. One slow outlier moves the
    mean, not the throughput, so the plot ranks backends as the table's p50 does."""
    assert optimize.timing.percentiles([0.001] * 99)["p99"] is None
    assert optimize.timing.percentiles([0.001] * 100)["p99"] == pytest.approx(1.0)
    costs = iter([0.0] * optimize.timing.WARMUP + [0.05] + [0.0] * 200)

    def predict(batch: np.ndarray) -> np.ndarray:
        time.sleep(next(costs))
        return batch

    timed = optimize.benchmark(predict, np.zeros((4, 2, 2, 1)), [1], iterations=150)
    assert timed["calls"] == {"1": 150} and timed["p99_ms"] is not None
    median_ms = float(np.median(timed["timings_ms"]["1"]))
    assert timed["throughput"]["1"] == pytest.approx(1e3 / median_ms, rel=0.05)
    assert timed["throughput"]["1"] > 150 / (sum(timed["timings_ms"]["1"]) / 1e3)


def test_a_slow_backend_stops_at_the_time_budget() -> None:
    """model.predict at ~170 ms a call would take minutes for 500 calls: the budget ends it,
    but never before MIN_CALLS (3) timed calls, even where one call outlasts the budget."""

    def slow(batch: np.ndarray) -> np.ndarray:
        time.sleep(0.02)
        return batch

    timed = optimize.benchmark(slow, np.zeros((4, 2, 2, 1)), [1, 4], iterations=500, seconds=0.1)
    assert all(3 <= count < 20 for count in timed["calls"].values()), timed["calls"]
    assert timed["p99_ms"] is None
    # 20 ms a call, 5 ms of budget: spent after the first call, yet 3 calls are timed.
    timed = optimize.benchmark(slow, np.zeros((4, 2, 2, 1)), [1, 4], iterations=500, seconds=0.005)
    assert timed["calls"] == {"1": 3, "4": 3}, timed["calls"]


def test_run_writes_optimize_json_with_its_lineage(
    metrics: dict[str, Any], exported_run: Path
) -> None:
    """metrics/optimize.json is what run returned: every backend and precision with its reason,
    and the fingerprints of the data, model.keras and export it measured."""
    saved = read_metrics(exported_run, "optimize")
    assert saved == json.loads(json.dumps(metrics))
    reads = {name: lineage.fingerprint(exported_run, name) for name in ("data", "model")}
    reads["export/1"] = lineage.read(exported_run)["export/1"]["fingerprint"]
    assert all(reads.values())
    assert saved["lineage"] == {"reads": reads, "writes": {}}
    pairs = [(line["name"], line["precision"]) for line in saved["backends"]]
    assert pairs == [(b, p) for b in optimize.BACKENDS for p in ("fp32", "fp16", "int8")]
    assert all(line["status"] in {"ran", "skipped", "failed"} for line in saved["backends"])
    assert all(line["reason"] for line in saved["backends"])
    assert saved["calibration_examples"] == optimize.CALIBRATION_EXAMPLES


@pytest.mark.parametrize("noun", ["texts", "rows"])
def test_the_results_table_counts_the_tasks_own_examples_per_second(
    metrics: dict[str, Any], monkeypatch: pytest.MonkeyPatch, noun: str
) -> None:
    """05's table said "img/s" for texts and rows (issue 42 §3.6): the column names the task's."""
    monkeypatch.setattr(core.seam, "noun", lambda: noun)
    head = optimize.results_table(metrics).splitlines()[0]
    assert head.endswith(f"| {noun}/s @4 |") and "img" not in head


def test_results_table_has_a_row_per_run_and_a_dash_for_what_was_not_measured(
    metrics: dict[str, Any],
) -> None:
    """The notebook's table: baselines first, then every backend and precision, same width; each
    row says how many batch-1 calls its latency comes from, and no p99 from 5 calls."""
    lines = optimize.results_table(metrics).splitlines()
    head, rows = lines[0], lines[2:]
    assert head.startswith("| run by | status | parity |")
    assert head.endswith(f"| {fake_task.NOUN}/s @4 |")
    assert len(rows) == 2 + len(metrics["backends"])
    assert rows[0].startswith("| model.predict (per-call overhead) | reference | - | - | - | - |")
    assert "| top-1 agreement | accuracy drop |" in head
    assert rows[2].startswith("| onnx (fp32) | ran | True |")
    assert {row.count("|") for row in lines} == {head.count("|")}
    assert "| batch-1 p50 ms | batch-1 p99 ms | batch-1 calls |" in head
    assert "| - | 5 |" in rows[1]  # the SavedModel: p99 absent, 5 calls
    for row, line in zip(rows[2:], metrics["backends"], strict=True):
        if line["status"] == "skipped":
            assert row.endswith("| skipped | - | - | - | - | - | - | - | - |"), row


def test_onnx_follows_a_replaced_model_whatever_its_file_time(run_copy: Path) -> None:
    """A model.keras copied in with an older file time still gets an ONNX export of its own."""
    out = run_copy / "optimized"
    first = export_onnx(run_copy, out).read_bytes()
    assert export_onnx(run_copy, out).read_bytes() == first
    retrained(run_copy).save(run_copy / "model.keras")
    os.utime(run_copy / "model.keras", ns=(0, 0))
    assert export_onnx(run_copy, out).read_bytes() != first


def test_dynamic_int8_keeps_a_matmul_of_stacked_weights_float(tmp_path: Path) -> None:
    """A MatMul by weights [features, in, out] (a table's per-feature embeddings) made ONNX
    Runtime fail at run time ("b zero point is not valid"): it stays float, the matrix one is
    quantized, and the graph runs with the float one's answers."""
    import onnxruntime
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    stacked = numpy_helper.from_array(rng.normal(size=(3, 4, 5)).astype(np.float32), "stacked")
    matrix = numpy_helper.from_array(rng.normal(size=(5, 2)).astype(np.float32), "matrix")
    graph = helper.make_graph(
        [
            helper.make_node("MatMul", ["x", "stacked"], ["embedded"], name="per_feature"),
            helper.make_node("MatMul", ["embedded", "matrix"], ["y"], name="head"),
        ],
        "stacked",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, None, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, None, 2])],
        [stacked, matrix],
    )
    source = tmp_path / "float.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), source)
    target = quantize_dynamic_int8(source, tmp_path / "int8.onnx", int8_format())
    quantized = {
        node.name
        for node in onnx.load(str(target)).graph.node
        if "Integer" in node.op_type or "Quant" in node.op_type
    }
    assert quantized and not any(name.startswith("per_feature") for name in quantized), quantized
    x = rng.normal(size=(3, 8, 4)).astype(np.float32)
    run = {"x": x}
    got = onnxruntime.InferenceSession(str(target), providers=["CPUExecutionProvider"]).run(
        None, run
    )
    want = onnxruntime.InferenceSession(str(source), providers=["CPUExecutionProvider"]).run(
        None, run
    )
    assert np.abs(got[0] - want[0]).max() < 0.1 * np.abs(want[0]).max()


def test_dynamic_int8_is_pre_processed_so_onnx_runtime_logs_no_advice(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without quant_pre_process, quantize_dynamic logs "Please consider to run pre-processing
    before quantization" to the root logger: a warning box in 05's output, pointing at an image
    example. The graph is pre-processed (as for static int8); only the int8 file is left, also
    when the quantizer fails."""
    from onnx import TensorProto, helper, numpy_helper

    weights = np.random.default_rng(0).normal(size=(4, 2)).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"], name="head")],
        "plain",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, 2])],
        [numpy_helper.from_array(weights, "w")],
    )
    source = tmp_path / "float.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), source)
    with caplog.at_level(logging.WARNING):
        target = quantize_dynamic_int8(source, tmp_path / "int8.onnx", int8_format())
    assert not [r.getMessage() for r in caplog.records if "pre-processing" in r.getMessage()]
    assert sorted(path.name for path in tmp_path.iterdir()) == ["float.onnx", "int8.onnx"]
    assert "MatMulInteger" in {node.op_type for node in onnx.load(str(target)).graph.node}
    import onnxruntime.quantization

    def fails(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("quantizer failed")

    monkeypatch.setattr(onnxruntime.quantization, "quantize_dynamic", fails)
    with pytest.raises(RuntimeError, match="quantizer failed"):
        quantize_dynamic_int8(source, tmp_path / "again.onnx", int8_format())
    assert sorted(path.name for path in tmp_path.iterdir()) == ["float.onnx", "int8.onnx"]


def test_backend_with_different_outputs_fails_and_never_wins(
    exported_run: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A backend whose probabilities drift beyond tolerance is failed and not the best."""

    def noisy_load(path: Path, job: optimize.Job) -> optimize.Predict:
        predict = onnx_load(path, job)
        return lambda batch: predict(batch) + np.float32(0.05)

    monkeypatch.setattr(optimize.BACKEND_TABLE["onnx"], "load", noisy_load)
    result = optimize.optimize(exported_run, QUICK)
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
    result = optimize.optimize(exported_run, QUICK)
    assert entry(result, "onnx")["status"] == "failed"
    assert entry(result, "onnx")["reason"] == "onnx failed: the converter ran out of disk"


def test_backend_modules_missing_from_the_package_are_left_out() -> None:
    """The table holds the backend modules present, named by their functions: a module the bake
    removed is not offered (and so refused by name), and the step's own modules are no backend."""
    assert "openvino" not in registry.backend_table(["onnx_backend", "openvino_backend"])
    assert list(registry.backend_table(["onnx_backend", "openvino_backend"])) == ["onnx"]
    modules = registry.backend_modules()
    assert "onnx_backend" in modules and not set(modules) & registry.CORE_MODULES
    assert list(registry.backend_table())[0] == "onnx" and "onnx" in registry.BACKENDS


@pytest.mark.parametrize(
    ("arguments", "named"),
    [
        ({"backends": "onnx,openvino"}, "backends="),
        ({"precisions": "fp8"}, "precisions="),
        ({"batch_sizes": "32,64"}, "batch_sizes="),
        ({"batch_sizes": "1,x"}, "batch_sizes="),
        ({"iterations": 0}, "iterations="),
        ({"benchmark_seconds": 0}, "benchmark_seconds="),
        ({"calibration_examples": 0}, "calibration_examples="),
    ],
)
def test_bad_parameters_are_refused_in_one_sentence(
    tmp_path: Path, arguments: dict[str, Any], named: str
) -> None:
    """An unknown backend or precision, sizes without 1, counts below 1: one sentence, from the
    values alone (the runner's pre-flight check, before any input exists)."""
    optimize.check(tmp_path, optimize.Params(), inputs=False)
    with pytest.raises(optimize.OptimizeError) as caught:
        optimize.check(tmp_path, optimize.Params(**arguments), inputs=False)
    assert named in str(caught.value)
    assert_one_sentence(str(caught.value))


def test_missing_export_names_04_export(run_copy: Path) -> None:
    """A run folder without export/<version>/ points at 04_export, in one sentence."""
    shutil.rmtree(run_copy / "export")
    with pytest.raises(MissingInputError) as caught:
        optimize.check(run_copy, QUICK)
    assert "run 04_export first" in str(caught.value)
    assert_one_sentence(str(caught.value))


def test_an_export_of_an_older_model_is_refused_naming_04_export(run_copy: Path) -> None:
    """03_train ran again after 04_export: export/1 is not the model there now, so nothing is
    measured until 04_export has exported the new one."""
    optimize.check(run_copy, QUICK)  # as exported: accepted
    retrained(run_copy).save(run_copy / "model.keras")
    lineage.record(run_copy, "model", "train", {"data": lineage.fingerprint(run_copy, "data")})
    with pytest.raises(StaleInputError) as refused:
        optimize.check(run_copy, QUICK)
    message = str(refused.value)
    assert_one_sentence(message)
    assert message.startswith(f"export/1 in {run_copy} was made from an older model.keras")
    assert message.endswith(
        "re-run 04_export (a new version, or overwrite=true) before 05_optimize."
    )
    export.export_savedmodel(run_copy, version=2)
    optimize.check(run_copy, QUICK)  # the newest export is of this model: accepted
    assert optimize.plan(run_copy, QUICK)["export_dir"] == run_copy / "export" / "2"


def test_a_model_trained_on_replaced_data_is_refused_naming_03_train(run_copy: Path) -> None:
    """model.keras recorded as made from other data than data/ holds now: retrain first."""
    lineage.record(run_copy, "model", "train", {"data": "0" * 64})
    with pytest.raises(StaleInputError, match="re-run 03_train before 05_optimize") as refused:
        optimize.check(run_copy, QUICK)
    assert_one_sentence(str(refused.value))


def test_a_model_file_cut_short_is_refused_naming_03_train(run_copy: Path) -> None:
    """The first 100 bytes of a real model.keras: one sentence, not Keras' "File not found"."""
    path = run_copy / "model.keras"
    path.write_bytes(path.read_bytes()[:100])
    with pytest.raises(optimize.OptimizeError) as refused:
        optimize.check(run_copy, QUICK)
    message = str(refused.value)
    assert_one_sentence(message)
    assert message.startswith(f"model.keras in {run_copy} cannot be read (")
    assert message.endswith("): re-run 03_train.") and "File not found" not in message


def test_a_savedmodel_cut_short_is_refused_naming_04_export(run_copy: Path) -> None:
    """A saved_model.pb that does not parse is found by check, before any model is loaded."""
    graph = run_copy / "export" / "1" / "saved_model.pb"
    graph.write_bytes(graph.read_bytes()[:100])
    with pytest.raises(optimize.OptimizeError) as refused:
        optimize.check(run_copy, QUICK)
    message = str(refused.value)
    assert_one_sentence(message)
    assert message.startswith(f"export/1 in {run_copy} cannot be read (saved_model.pb does not")
    assert message.endswith("re-run 04_export (a new version, or overwrite=true).")


def test_savedmodel_variables_cut_short_are_one_sentence_at_load(run_copy: Path) -> None:
    """Variables cut short pass the cheap check; loading the reference says the same sentence."""
    variables = next((run_copy / "export" / "1" / "variables").glob("variables.data-*"))
    variables.write_bytes(variables.read_bytes()[:50])
    optimize.check(run_copy, QUICK)
    with pytest.raises(optimize.OptimizeError, match="re-run 04_export") as refused:
        optimize.optimize(run_copy, QUICK)
    assert_one_sentence(str(refused.value))
    assert str(refused.value).startswith(f"export/1 in {run_copy} cannot be read (")


def test_export_and_optimize_turn_on_memory_growth_when_imported(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Steps 4 and 5 share the GPU with other runtimes: memory growth is on before any op runs."""
    gpu = tf.config.PhysicalDevice(name="/physical_device:GPU:0", device_type="GPU")
    grown: list[tuple[str, bool]] = []
    monkeypatch.setattr(
        tf.config, "list_physical_devices", lambda kind=None: [gpu] if kind == "GPU" else []
    )
    monkeypatch.setattr(
        tf.config.experimental, "set_memory_growth", lambda d, on: grown.append((d.name, on))
    )
    monkeypatch.setattr(tf.config.experimental, "get_memory_growth", lambda device: True)
    # A reload under the fake task rebinds names read from the task (export.INPUT_NAME): put the
    # modules' own objects back, or later files of the session meet the fake task's names.
    saved = {step: dict(vars(step)) for step in (export, optimize)}
    try:
        for step in (export, optimize):
            importlib.reload(step)
    finally:
        for step, names in saved.items():
            vars(step).update(names)
    assert grown == [(gpu.name, True)] * 2


def test_the_parity_reference_is_computed_with_tf32_off() -> None:
    """fp32 engines and ORT's CUDA provider compute in float32; the SavedModel reference must
    too, or TF32's rounding (Ampere and newer) fails fp32 parity at its 1e-5 tolerance."""
    seen: list[bool] = []

    def reference(batch: np.ndarray) -> np.ndarray:
        seen.append(tf.config.experimental.tensor_float_32_execution_enabled())
        return np.zeros((len(batch), 2), np.float32)

    before = tf.config.experimental.tensor_float_32_execution_enabled()
    got = core.reference_probabilities(reference, np.zeros((300, 4, 4, 1), np.uint8))
    assert got.shape == (300, 2) and seen == [False, False]
    assert tf.config.experimental.tensor_float_32_execution_enabled() == before
