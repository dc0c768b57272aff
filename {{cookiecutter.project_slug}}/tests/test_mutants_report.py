"""The report's headline speaks for this run: a step that failed is reported failed, even where an
earlier success left its metrics file in the run folder (a re-run into the same folder).

metrics/<step>.json is only replaced when a step succeeds, so after a failed re-run it still holds
the numbers of the earlier success: reading them for the headline would show the old model's
accuracy beside a run that failed.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from {{ cookiecutter.package_name }}.runner.numbers import key_numbers
from {{ cookiecutter.package_name }}.runner.report import write_report
from {{ cookiecutter.package_name }}.runner.summary import headline, read, step_of

TRAIN = {
    "val_accuracy": 0.9666,
    "epochs_completed": 2,
    "strategy": "DefaultDistributionStrategy",
    "replicas": 1,
    "precision": "float32",
    "global_batch_size": 64,
}


def _rerun(tmp_path: Path, status: str) -> tuple[Path, dict]:
    """A run folder holding an earlier success's metrics/train.json, and a record of a re-run
    of 03_train that ended with `status`."""
    run_dir = tmp_path / "run"
    (run_dir / "metrics").mkdir(parents=True)
    (run_dir / "metrics" / "train.json").write_text(json.dumps(TRAIN), encoding="utf-8")
    entry = {"name": "03_train", "status": status, "seconds": 3.0}
    if status == "failed":
        entry["error"] = {"cell": 4, "ename": "ValueError", "evalue": "loss became NaN"}
    record = {
        "profile": "smoke",
        "status": status,
        "started": "2026-12-03T05:00:00+00:00",
        "finished": "2026-12-03T05:01:00+00:00",
        "notebooks": [entry],
        "attempts": [],
    }
    return run_dir, record


def test_a_failed_step_is_headlined_failed_not_with_an_earlier_successes_numbers(
    tmp_path: Path,
) -> None:
    run_dir, record = _rerun(tmp_path, "failed")
    lines = headline(run_dir, record)
    assert lines[0] == "- **03_train**: **failed** in cell [4]: ValueError: loss became NaN"
    assert "0.9666" not in "\n".join(lines)
    report = write_report(run_dir, record).read_text(encoding="utf-8")
    assert "- **03_train**: **failed** in cell [4]" in report


def test_an_interrupted_step_is_headlined_interrupted(tmp_path: Path) -> None:
    run_dir, record = _rerun(tmp_path, "interrupted")
    lines = headline(run_dir, record)
    assert lines[0].startswith("- **03_train**: **interrupted**")
    assert "0.9666" not in "\n".join(lines)


def test_the_same_folder_after_a_success_headlines_its_numbers(tmp_path: Path) -> None:
    """The other side: the metrics file is read when the step succeeded in this run."""
    run_dir, record = _rerun(tmp_path, "ok")
    assert "val_accuracy **0.9666**" in headline(run_dir, record)[0]


# What each step's metrics file holds, as far as the headline and the key numbers read it.
METRICS = {
    "environment": {
        "gpu_available": False,
        "gpus": [],
        "matmul": [{"device": "CPU:0", "gflops": 53.4}, {"device": "CPU:1", "gflops": 12.0}],
        "recommended_policy": "float32",
        "verdict": "No GPU, running on CPU.",
        "tensorflow_version": "2.21.0",
    },
    "data": {
        "dataset": "digits",
        "train_count": 1438,
        "validation_count": 359,
        "speedup_vs_naive": 26.94,
        "speedup_basis": "steady state",
        "examples_per_sec": 495434.0,
        "naive_examples_per_sec": 18426.0,
    },
{%- if cookiecutter.include_tuning %}
    "tune": {
        "objective": "val_accuracy",
        "best_score": 0.77721,
        "trials_run": 2,
        "best_trial": 2,
        "algorithm": "random",
        "best_hparams": {"width": 64, "dropout": 0.15},
        "default_score": 0.70123,
        "trials_failed": 1,
    },
{%- endif %}
    "train": {
        "val_accuracy": 0.96661,
        "val_loss": 0.117,
        "epochs_completed": 2,
        "epochs": 3,
        "best_epoch": 2,
        "strategy": "MirroredStrategy",
        "replicas": 2,
        "precision": "mixed_bfloat16",
        "global_batch_size": 71,
        "learning_rate": 0.00257,
        "examples_per_sec": 10913.0,
        "parameter_sources": {"batch_size": "batch-size finder", "learning_rate": "range test"},
        "input_verdict": "not input-bound",
    },
    "export": {
        "version": 2,
        "parity_ok": True,
        "top1_agreement": 0.9972,
        "max_abs_diff": 0.00123,
        "examples": 359,
        "verdict": "Same top class on 358 of 359 images.",
        "precision": "float32",
    },
    "optimize": {
        "best_backend": "onnx (int8)",
        "best_vs_savedmodel_batch1": 23.34,
        "baselines": [{"name": "savedmodel", "p50_ms": 1.0, "p99_ms": 2.5}],
        "backends": [
            {"name": "onnx", "precision": "fp32", "status": "ran", "p50_ms": 0.04, "p99_ms": 0.05},
            {"name": "onnx", "precision": "fp16", "status": "skipped", "reason": "no GPU."},
            {"name": "engine", "precision": "fp16", "status": "skipped", "reason": "no GPU"},
            {"name": "onnx", "precision": "int8", "status": "skipped", "reason": "no GPU."},
            {"name": "graph", "precision": "fp32", "status": "failed"},
        ],
    },
}
NOTEBOOKS = {
    "00_environment": "environment",
    "01_data": "data",
{%- if cookiecutter.include_tuning %}
    "02_tune": "tune",
{%- endif %}
    "03_train": "train",
    "04_export": "export",
    "05_optimize": "optimize",
}


def _all_ok(tmp_path: Path, metrics: dict | None = None) -> tuple[Path, dict]:
    run_dir = tmp_path / "run"
    (run_dir / "metrics").mkdir(parents=True)
    for step, values in (metrics or METRICS).items():
        (run_dir / "metrics" / f"{step}.json").write_text(json.dumps(values), encoding="utf-8")
    entries = [{"name": name, "status": "ok", "seconds": 1.25} for name in NOTEBOOKS]
    return run_dir, {"status": "ok", "notebooks": entries}


def test_the_headline_says_each_steps_result_in_one_line(tmp_path: Path) -> None:
    run_dir, record = _all_ok(tmp_path)
    assert headline(run_dir, record) == [
        "- **00_environment**: no GPU, ran on the CPU; matmul 53 GFLOP/s on CPU:0; "
        "precision policy float32.",
        "- **01_data**: digits, 1,438 train / 359 validation examples; the tf.data pipeline "
        "runs 26.9× the naive one (495,434 examples/s).",
{%- if cookiecutter.include_tuning %}
        "- **02_tune**: best val_accuracy 0.7772 of 2 trial(s) (random search).",
{%- endif %}
        "- **03_train**: val_accuracy **0.9666** after 2 epoch(s) (MirroredStrategy, 2 "
        "replica(s), mixed_bfloat16, batch 71), 10,913 examples/s.",
        "- **04_export**: SavedModel version 2, parity **ok**: top-1 agreement 99.7%, largest "
        "difference 0.0012 over 359 examples.",
        "- **05_optimize**: best backend **onnx (int8)**, 23.3× the SavedModel at batch 1.",
        "- **Skipped**: onnx (fp16, int8): no GPU; engine (fp16): no GPU; graph (fp32): failed.",
        "- **Total**: {{ "7.5 s over 6" if cookiecutter.include_tuning else "6.2 s over 5" }} notebook(s), status **ok**.",
    ]


def test_the_headline_of_a_gpu_run_a_failed_parity_and_no_backend(tmp_path: Path) -> None:
    metrics = {
        "environment": {
            **METRICS["environment"],
            "gpu_available": True,
            "gpus": [{"name": "A100"}, {"name": "A100"}],
            "matmul": [{"device": "CPU:0", "gflops": 50.0}, {"device": "GPU:0", "gflops": 9e4}],
            "recommended_policy": "mixed_bfloat16",
        },
        "train": {**METRICS["train"], "examples_per_sec": None},
        "export": {**METRICS["export"], "parity_ok": False},
        "optimize": {"best_backend": None, "best_vs_savedmodel_batch1": None, "backends": []},
    }
    run_dir, record = _all_ok(tmp_path, metrics)
    record["notebooks"] = [e for e in record["notebooks"] if NOTEBOOKS[e["name"]] in metrics]
    lines = headline(run_dir, record)
    assert lines[0] == (
        "- **00_environment**: 2 GPU(s); matmul 90,000 GFLOP/s on GPU:0; "
        "precision policy mixed_bfloat16."
    )
    assert lines[1].endswith("mixed_bfloat16, batch 71).")  # no examples/s measured: not said
    assert lines[2] == (
        "- **04_export**: SavedModel version 2, parity **FAILED**: top-1 agreement 99.7%, "
        "largest difference 0.0012 over 359 examples."
    )
    assert lines[3] == "- **05_optimize**: no backend ran on this machine (see Skipped)."
    assert lines[4] == "- **Total**: 5.0 s over 4 notebook(s), status **ok**."


def test_an_environment_without_a_timing_says_no_rate(tmp_path: Path) -> None:
    metrics = {"environment": {**METRICS["environment"], "matmul": []}}
    run_dir, record = _all_ok(tmp_path, metrics)
    record["notebooks"] = record["notebooks"][:1]
    assert headline(run_dir, record)[0] == (
        "- **00_environment**: no GPU, ran on the CPU; precision policy float32."
    )


def test_a_metrics_file_lacking_keys_costs_a_pointer_not_the_report(tmp_path: Path) -> None:
    run_dir, record = _all_ok(tmp_path, {"data": {"dataset": "digits"}, "train": {"loss": 1}})
    record["notebooks"] = [
        {"name": "01_data", "status": "ok"},
        {"name": "03_train", "status": "ok", "seconds": None},
        {"name": "06_extra", "status": "ok", "seconds": 2.0},
        {"name": "02_other", "status": "not run"},
    ]
    lines = headline(run_dir, record)
    assert lines[:2] == [
        "- **01_data**: done; see metrics/data.json.",
        "- **03_train**: done; see metrics/train.json.",
    ]
    assert lines[2].startswith("- **06_extra**: ") and "no metrics" in lines[2]
    assert lines[3:] == [
        "- **02_other**: not run: no metrics written by this run.",
        "- **Total**: 2.0 s over 4 notebook(s), status **ok**.",
    ]
    assert step_of("03_train") == "train" and step_of("06_extra") == "06_extra"
    assert step_of("extra") == "extra"


def test_a_notebook_of_no_step_that_wrote_metrics_is_done(tmp_path: Path) -> None:
    run_dir, record = _all_ok(tmp_path, {"06_extra": {"anything": 1}})
    record["notebooks"] = [{"name": "06_extra", "status": "ok", "seconds": 1.0}]
    assert headline(run_dir, record)[0] == "- **06_extra**: done."


def test_a_long_error_is_cut_to_one_line_of_160_characters(tmp_path: Path) -> None:
    run_dir, record = _rerun(tmp_path, "failed")
    record["notebooks"][0]["error"] = {"ename": "RuntimeError", "evalue": "x" * 300 + "\nmore"}
    line = headline(run_dir, record)[0]
    said = line.removeprefix("- **03_train**: **failed**: ")
    assert len(said) == 160 and said.endswith("…") and "\n" not in line
    record["notebooks"][0]["error"] = {}
    assert headline(run_dir, record)[0] == "- **03_train**: **failed**."


def test_each_steps_key_numbers(tmp_path: Path) -> None:
    assert key_numbers("environment", METRICS["environment"]) == [
        ("GPU", "none found"),
        ("verdict", "No GPU, running on CPU."),
        ("matmul CPU:0", "53.4 GFLOP/s"),
        ("matmul CPU:1", "12.0 GFLOP/s"),
        ("TensorFlow", "2.21.0"),
    ]
    assert key_numbers("data", METRICS["data"]) == [
        ("examples (train / validation)", "1,438 / 359"),
        ("pipeline examples/s (steady state)", "495,434"),
        ("naive pipeline examples/s", "18,426"),
        ("speed-up", "26.9× (steady state)"),
    ]
    brief = key_numbers("data", {**METRICS["data"], "too_short": True})  # no steady state then
    assert brief[1] == ("pipeline examples/s (too briefly timed)", "495,434")
{%- if cookiecutter.include_tuning %}
    assert key_numbers("tune", METRICS["tune"]) == [
        ("best score", "0.7772 (val_accuracy, trial 2)"),
        ("defaults' score", "0.7012 (trial #1)"),
        ("trials run", "2, 1 failed"),
        ("best values", "width=64, dropout=0.15"),
        ("training takes them", "from tuning/best_hparams.json, for every value not given"),
    ]
{%- endif %}
    assert key_numbers("train", METRICS["train"]) == [
        ("val_accuracy / val_loss", "0.9666 / 0.1170"),
        ("epochs", "2 of 3 (best 2)"),
        ("batch size", "71 (batch-size finder)"),
        ("learning rate", "0.00257 (range test)"),
        ("strategy / precision", "MirroredStrategy, 2 replica(s) / mixed_bfloat16"),
        ("training examples/s", "10,913"),
        ("input", "not input-bound"),
    ]
    assert key_numbers("export", METRICS["export"]) == [
        ("export", "export/2/ (SavedModel, signature serving_default)"),
        ("parity", "Same top class on 358 of 359 images."),
        ("precision", "float32"),
    ]
    assert key_numbers("optimize", METRICS["optimize"]) == [
        ("savedmodel", "p50 1.000 ms, p99 2.500 ms at batch 1"),
        ("onnx (fp32)", "p50 0.040 ms, p99 0.050 ms at batch 1"),
        ("onnx (fp16)", "skipped: no GPU."),
        ("engine (fp16)", "skipped: no GPU"),
        ("onnx (int8)", "skipped: no GPU."),
        ("graph (fp32)", "failed: "),
    ]


def test_key_numbers_with_values_left_out(tmp_path: Path) -> None:
    env = {"gpu_available": True, "verdict": "1 GPU"}
    assert key_numbers("environment", env) == [
        ("GPU", "yes"),
        ("verdict", "1 GPU"),
        ("TensorFlow", "-"),
    ]
    train = {**METRICS["train"], "examples_per_sec": None, "input_verdict": None}
    del train["parameter_sources"]
    rows = dict(key_numbers("train", train))
    assert rows["batch size"] == "71 (-)" and rows["learning rate"] == "0.00257 (-)"
    assert rows["training examples/s"] == "-" and rows["input"] == "-"
    assert key_numbers("export", {"version": 1}) == [
        ("export", "export/1/ (SavedModel, signature serving_default)"),
        ("parity", "-"),
        ("precision", "-"),
    ]
    assert key_numbers("other", {"x": 1}) == []
    assert key_numbers("train", {"val_accuracy": 1.0}) == [
        ("numbers", "this metrics file lacks keys the report reads; see the JSON file")
    ]


@pytest.mark.parametrize(("length", "cut"), [(160, False), (161, True)])
def test_an_error_of_160_characters_is_shown_whole(tmp_path: Path, length: int, cut: bool) -> None:
    run_dir, record = _rerun(tmp_path, "failed")
    evalue = "x" * (length - len("ValueError: "))
    record["notebooks"][0]["error"] = {"ename": "ValueError", "evalue": evalue}
    said = headline(run_dir, record)[0].removeprefix("- **03_train**: **failed**: ")
    assert said == (f"ValueError: {evalue}"[:159] + "…" if cut else f"ValueError: {evalue}")


def test_optimize_numbers_with_only_baselines_or_only_backends() -> None:
    baseline = {"name": "savedmodel", "p50_ms": 1.0, "p99_ms": 2.0}
    backend = {"name": "onnx", "precision": "fp32", "status": "ran", "p50_ms": 0.5, "p99_ms": 0.7}
    assert key_numbers("optimize", {"baselines": [baseline]}) == [
        ("savedmodel", "p50 1.000 ms, p99 2.000 ms at batch 1")
    ]
    assert key_numbers("optimize", {"backends": [backend]}) == [
        ("onnx (fp32)", "p50 0.500 ms, p99 0.700 ms at batch 1")
    ]


def test_read_gives_a_metrics_dict_or_none(tmp_path: Path) -> None:
    (tmp_path / "metrics").mkdir()
    for step, text in (("a", "[1, 2]"), ("b", "{broken"), ("c", '"text"'), ("d", '{"x": 1}')):
        (tmp_path / "metrics" / f"{step}.json").write_text(text, encoding="utf-8")
    assert [read(tmp_path, step) for step in "abcde"] == [None, None, None, {"x": 1}, None]


def test_a_record_without_notebooks_and_metrics_without_backends(tmp_path: Path) -> None:
    run_dir, record = _all_ok(tmp_path, {"optimize": {"best_backend": "onnx (fp32)"}})
    assert headline(run_dir, {"status": "ok"}) == [
        "- **Total**: no times recorded (run by hand) for 0 notebook(s), status **ok**."
    ]
    record["notebooks"] = [{"name": "05_optimize", "status": "ok", "seconds": 1.0}]
    assert headline(run_dir, record) == [
        "- **05_optimize**: no backend ran on this machine (see Skipped).",
        "- **Total**: 1.0 s over 1 notebook(s), status **ok**.",
    ]


def test_the_headline_edge_cases_of_each_sentence(tmp_path: Path) -> None:
    metrics = {
        "environment": {
            **METRICS["environment"],
            # A timing below 1 GFLOP/s still beats a device without one.
            "matmul": [{"device": "CPU:0", "gflops": None}, {"device": "CPU:1", "gflops": 0.6}],
        },
{%- if cookiecutter.include_tuning %}
        "tune": {k: v for k, v in METRICS["tune"].items() if k != "objective"},
{%- endif %}
        "optimize": {
            "best_backend": None,
            "best_vs_savedmodel_batch1": 3.0,
            "backends": [
                {
                    "name": "graph",
                    "precision": "fp16",
                    "status": "skipped",
                    "reason": "not on OS X.",
                }
            ],
        },
    }
    run_dir, record = _all_ok(tmp_path, metrics)
    record["notebooks"] = [e for e in record["notebooks"] if NOTEBOOKS[e["name"]] in metrics]
    assert headline(run_dir, record)[:{{ 4 if cookiecutter.include_tuning else 3 }}] == [
        "- **00_environment**: no GPU, ran on the CPU; matmul 1 GFLOP/s on CPU:1; "
        "precision policy float32.",
{%- if cookiecutter.include_tuning %}
        "- **02_tune**: best score 0.7772 of 2 trial(s) (random search).",
{%- endif %}
        "- **05_optimize**: no backend ran on this machine (see Skipped).",
        "- **Skipped**: graph (fp16): not on OS X.",
    ]


def test_key_numbers_edge_cases() -> None:
    data = {k: v for k, v in METRICS["data"].items() if k != "speedup_basis"}
    assert dict(key_numbers("data", data))["speed-up"] == "26.9× ()"
{%- if cookiecutter.include_tuning %}
    tune = {**METRICS["tune"], "best_hparams": {"lr": 0.123456, "act": "relu", "width": 64}}
    del tune["objective"], tune["default_score"], tune["trials_failed"]  # hyperband, none failed
    assert key_numbers("tune", tune) == [
        ("best score", "0.7772 (, trial 2)"),
        ("trials run", "2"),
        ("best values", "lr=0.123, act=relu, width=64"),
        ("training takes them", "from tuning/best_hparams.json, for every value not given"),
    ]
{%- endif %}


def test_a_backend_slower_than_the_savedmodel_is_not_called_best(tmp_path: Path) -> None:
    """Issue 43 (found): an int8 ONNX was "best backend" while slower than the SavedModel."""
    optimized = {**METRICS["optimize"], "best_vs_savedmodel_batch1": 0.8}
    run_dir, record = _all_ok(tmp_path, {"optimize": optimized})
    record["notebooks"] = [{"name": "05_optimize", "status": "ok", "seconds": 1.0}]
    assert headline(run_dir, record)[0] == (
        "- **05_optimize**: fastest converted backend **onnx (int8)**, 0.8× the SavedModel at "
        "batch 1 (slower: serve the SavedModel)."
    )
