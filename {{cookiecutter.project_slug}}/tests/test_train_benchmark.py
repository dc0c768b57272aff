"""The training benchmark (`make bench`): it runs, measures all five runs, and reports three ratios.

Timings are measured, never asserted: these tests run it with the smallest sizes (2 epochs, one
round, the 8x8 digits) and check what a user reads from it, not how fast anything was.
"""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf
from helpers import assert_one_sentence

from {{ cookiecutter.package_name }} import lineage, tasks
from {{ cookiecutter.package_name }}.tasks.image import data_step, train_benchmark
from {{ cookiecutter.package_name }}.train import TrainError, benchmark_memory

PACKAGE = "{{ cookiecutter.package_name }}"
TINY = ["-p", "epochs=2", "-p", "rounds=1"]
PROCESS_TIMEOUT = 300


@pytest.fixture(scope="module")
def bench_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    """One tiny benchmark through `python -m <package>.tasks.image.train_benchmark` (what `make
    bench` runs), into a run folder holding a small synthetic data set."""
    run = tmp_path_factory.mktemp("bench") / "run"
    data_step.prepare(run, "synthetic", synthetic_shape=(8, 8, 1), synthetic_count=400, shards=2)
    module = f"{PACKAGE}.tasks.image.train_benchmark"
    command = [sys.executable, "-m", module, "--run-dir", str(run)]
    done = subprocess.run(
        [*command, *TINY, "--json"],
        capture_output=True,
        text=True,
        timeout=PROCESS_TIMEOUT,
        env={**os.environ, "CUDA_VISIBLE_DEVICES": "", "TF_CPP_MIN_LOG_LEVEL": "2"},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return run, json.loads(done.stdout)


@pytest.mark.slow  # trains five times (about 20 s): make test-slow
def test_benchmark_reports_positive_finite_rates_for_all_five_runs(bench_run) -> None:
    """The package's loop, the bare fit, the memory-fed loop, and the loop watched and not each
    get a measured rate."""
    _, result = bench_run
    assert set(result["runs"]) == {"package", "fit", "memory", "watched", "unwatched"}
    for name, run in result["runs"].items():
        assert len(run["rounds"]) == 1, name
        assert math.isfinite(run["examples_per_sec"]) and run["examples_per_sec"] > 0, name
        assert 0.0 <= run["val_accuracy"] <= 1.0, name


@pytest.mark.slow  # trains five times (about 20 s): make test-slow
def test_benchmark_reports_both_ratios_from_its_rates(bench_run) -> None:
    """loop_vs_fit and pipeline_vs_memory are the ratios of the measured rates, with their goal."""
    _, result = bench_run
    runs = result["runs"]
    assert result["loop_vs_fit"] == pytest.approx(
        runs["package"]["examples_per_sec"] / runs["fit"]["examples_per_sec"]
    )
    assert result["pipeline_vs_memory"] == pytest.approx(
        runs["package"]["examples_per_sec"] / runs["memory"]["examples_per_sec"]
    )
    assert result["goal"] == 0.95
    assert result["loop_vs_fit_meets_goal"] == (result["loop_vs_fit"] >= 0.95)
    assert result["watched_vs_unwatched"] == pytest.approx(
        runs["watched"]["examples_per_sec"] / runs["unwatched"]["examples_per_sec"]
    )
    assert result["watch_goal"] == 0.97
    assert result["watched_vs_unwatched_meets_goal"] == (result["watched_vs_unwatched"] >= 0.97)


@pytest.mark.slow  # trains five times (about 20 s): make test-slow
def test_benchmark_compares_like_with_like(bench_run) -> None:
    """All the runs trained with the same strategy, replicas, precision and XLA setting."""
    _, result = bench_run
    for key in ("strategy", "replicas", "precision", "jit_compile"):
        assert len({json.dumps(run[key]) for run in result["runs"].values()}) == 1, key


@pytest.mark.slow  # trains five times (about 20 s): make test-slow
def test_benchmark_trains_on_the_run_folders_data_and_writes_only_its_metrics(bench_run) -> None:
    """It uses run_dir/data/ and adds metrics/train_benchmark.json, no training output."""
    run, result = bench_run
    assert result["dataset"] == "synthetic" and result["data"] == str(run / "data")
    written = json.loads((run / "metrics" / "train_benchmark.json").read_text(encoding="utf-8"))
    assert written["loop_vs_fit"] == result["loop_vs_fit"]
    # lineage.json, when there, is the data step's record: the benchmark adds no model to it.
    assert {path.name for path in run.iterdir()} <= {"data", "metrics", "lineage.json"}
    assert "model" not in lineage.read(run)
    assert sorted(path.name for path in (run / "metrics").iterdir()) == ["train_benchmark.json"]


@pytest.mark.slow  # trains five times (about 20 s): make test-slow
def test_the_table_names_both_ratios_and_their_goal(bench_run) -> None:
    """The printed table shows the runs and each ratio against its goal."""
    _, result = bench_run
    table = train_benchmark.format_table(result)
    assert "bare model.fit" in table and "batches built in memory" in table
    assert re.search(r"loop_vs_fit: \d+\.\d\d .*goal >= 0\.95", table)
    assert re.search(r"pipeline_vs_memory: \d+\.\d\d .*goal >= 0\.95", table)
    assert re.search(r"watched_vs_unwatched: \d+\.\d\d .*goal >= 0\.97", table)


@pytest.mark.slow  # trains five times (about 20 s): make test-slow
def test_benchmark_compares_the_finders_accuracy_with_the_defaults(bench_run) -> None:
    """One run with batch_size and learning_rate found, against the defaults, same epochs."""
    _, result = bench_run
    finders = result["finders"]
    assert finders["default_val_accuracy"] == result["runs"]["package"]["val_accuracy"]
    assert 0 <= finders["val_accuracy"] <= 1 and finders["batch_size"] >= 1
    assert finders["at_least_default"] == (
        finders["val_accuracy"] >= finders["default_val_accuracy"]
    )
    assert finders["sentence"] in train_benchmark.format_table(result)


def test_memory_feed_gives_each_input_pipeline_its_share_in_per_replica_batches() -> None:
    """Memory-fed batches follow the input context: this pipeline's examples, per-replica size."""
    images = np.arange(40, dtype=np.uint8).reshape(40, 1, 1, 1)
    labels = np.arange(40, dtype=np.int32)
    context = tf.distribute.InputContext(
        num_input_pipelines=2, input_pipeline_id=1, num_replicas_in_sync=4
    )
    dataset = benchmark_memory.memory_dataset(
        images, labels, 8, seed=1, repeat=False, input_context=context
    )
    batches = [(x.numpy(), y.numpy()) for x, y in dataset]
    assert [y.shape for _, y in batches] == [(2,)] * 10
    seen = np.concatenate([y for _, y in batches])
    assert sorted(seen.tolist()) == list(range(1, 40, 2))
    assert all((x.reshape(-1) == y).all() for x, y in batches)


@pytest.mark.parametrize(
    ("params", "named"),
    [
        ({"epochs": 1}, "epochs=1"),
        ({"rounds": 0}, "rounds=0"),
        ({"strategy": "parallel"}, "strategy='parallel'"),
        ({"batch_size": 0}, "batch_size=0"),
    ],
)
def test_bad_benchmark_parameter_is_refused_in_one_sentence(params: dict, named: str) -> None:
    """A bad value is named, with what is allowed, before anything is trained."""
    with pytest.raises(TrainError) as error:
        train_benchmark.benchmark_training(None, verbose=False, **params)
    message = str(error.value)
    assert named in message
    assert_one_sentence(message)


def test_unknown_command_line_parameter_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    """A mistyped -p name stops the command with exit 2 and lists the parameters it takes."""
    assert train_benchmark.main(["-p", "epoch=2"]) == 2
    err = capsys.readouterr().err
    assert "'epoch'" in err and "rounds" in err


@pytest.mark.slow  # prepares the digits and trains (about 20 s): make test-slow
def test_without_data_it_trains_on_the_digits_and_restores_the_pipeline(tmp_path: Path) -> None:
    """A run folder without data/ gets the digits, prepared aside; the task's build_inputs,
    swapped for the memory-fed run, is the class's own again afterwards."""
    run = tmp_path / "empty"
    run.mkdir()
    result = train_benchmark.benchmark_training(run, epochs=2, rounds=1, verbose=False)
    assert result["dataset"] == "digits" and "prepared for the benchmark" in result["data"]
    assert (run / "metrics" / "train_benchmark.json").is_file()
    assert not (run / "data").exists()
    assert "build_inputs" not in vars(tasks.current())  # the class's own again


def test_augment_bench_times_augmentation_in_tf_data_and_on_the_device(run_dir: Path) -> None:
    """Both ways run the same steps and report examples/s and input wait; the ratio is theirs."""
    from {{ cookiecutter.package_name }}.tasks.image import augment_bench

    result = augment_bench.measure(run_dir, batch_size=32, steps=2, repeats=1)
    rates = [result[way]["examples_per_sec"] for way in ("tf_data", "device")]
    assert all(rate > 0 for rate in rates) and result["steps"] == 2
    assert result["device_vs_tf_data"] == pytest.approx(rates[1] / rates[0])
    assert "on the device trains at" in result["verdict"]
