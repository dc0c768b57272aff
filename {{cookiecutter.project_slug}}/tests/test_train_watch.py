"""Training, watched: the input-wait measurement on every run, the live Prometheus endpoint while
it trains, and the profiler window. Everything trains on the 8x8 digits for two epochs.
"""

from __future__ import annotations

import json
import socket
import threading
import time
import urllib.request
from pathlib import Path

import pytest
from helpers import assert_one_sentence, free_port, slowed
from prometheus_client.parser import text_string_to_metric_families

from {{ cookiecutter.package_name }} import cli, tasks, train
from {{ cookiecutter.package_name }}.artifacts import StepError
from {{ cookiecutter.package_name }}.observe.input_wait import INPUT_BOUND_AT, verdict
from {{ cookiecutter.package_name }}.train import Params

SLOW_BATCH_SECONDS = 0.05  # what the slowed input pipeline adds to every batch


class Scraper(threading.Thread):
    """Reads the endpoint every 50 ms while training runs; keeps every value it saw."""

    def __init__(self, url: str) -> None:
        super().__init__(daemon=True)
        self.url, self.seen, self.done = url, {}, threading.Event()

    def run(self) -> None:
        while not self.done.is_set():
            try:
                text = urllib.request.urlopen(self.url, timeout=2).read().decode()
            except OSError:
                time.sleep(0.05)
                continue
            for family in text_string_to_metric_families(text):
                for sample in family.samples:
                    self.seen.setdefault(sample.name, []).append(sample)
            time.sleep(0.05)


def test_every_run_measures_its_input_wait_and_says_the_verdict(run_dir: Path, capsys) -> None:
    metrics = train.run(run_dir, Params(epochs=2))
    assert 0 <= metrics["input_wait_fraction"] < 1
    assert metrics["input_wait_epochs"] == 1  # the tracing epoch left out
    assert metrics["input_bound"] == (metrics["input_wait_fraction"] >= 0.3)
    for record in metrics["history"]:
        assert 0 <= record["input_wait_fraction"] < 1
        assert 0 <= record["input_wait_seconds"] <= record["seconds"]
    written = json.loads((run_dir / "metrics" / "train.json").read_text(encoding="utf-8"))
    assert written["input_wait_fraction"] == metrics["input_wait_fraction"]
    assert metrics["input_verdict"] in capsys.readouterr().out
    assert metrics["metrics_endpoint"] is None and metrics["profile"]["steps"] is None


def test_a_slow_input_pipelines_wait_is_counted_and_judged_by_the_rule(
    run_dir: Path, monkeypatch
) -> None:
    """Every batch made 50 ms late inside the iterator's own call (helpers.slowed: it cannot
    overlap the step): each step waits at least that long however busy the machine is, and the
    measurement counts it. How large a share of the step that is depends on how fast this
    machine computes the rest, so the share is not asserted: the verdict and input_bound are the
    rule applied to it (the rule's thresholds: test_observe, on fixed numbers)."""
    task = tasks.current()
    monkeypatch.setattr(task, "build_inputs", slowed(task.build_inputs, SLOW_BATCH_SECONDS))
    metrics = train.run(run_dir, Params(epochs=2), verbose=False)
    for record in metrics["history"]:
        steps = record["examples"] // metrics["global_batch_size"]
        assert record["input_wait_seconds"] >= steps * SLOW_BATCH_SECONDS, record
        share = record["input_wait_seconds"] / record["seconds"]  # both rounded to 0.1 ms
        assert record["input_wait_fraction"] == pytest.approx(share, rel=1e-3)
    fraction = metrics["input_wait_fraction"]
    assert metrics["input_verdict"] == verdict(fraction)
    assert metrics["input_bound"] is (fraction >= INPUT_BOUND_AT)


def test_the_endpoint_serves_live_numbers_while_training_and_closes(run_dir: Path) -> None:
    port = free_port()
    scraper = Scraper(f"http://127.0.0.1:{port}/metrics")
    scraper.start()
    try:
        metrics = train.run(run_dir, Params(epochs=3, metrics_port=port), verbose=False)
    finally:
        scraper.done.set()
        scraper.join()
    seen = scraper.seen
    assert metrics["metrics_endpoint"] == f"http://127.0.0.1:{port}/metrics"
    for name in (
        "train_examples_per_second",
        "train_step_seconds",
        "train_input_wait_ratio",
        "train_loss",
        "train_val_accuracy",
        "train_epoch",
        "train_seconds_since_checkpoint",
        "train_last_step_timestamp_seconds",
    ):
        assert name in seen, f"{name} never served; saw {sorted(seen)}"
    assert {sample.labels["run"] for sample in seen["train_loss"]} == {"run"}
    assert {sample.labels["task"] for sample in seen["train_loss"]} == {"chief/0"}
    assert max(sample.value for sample in seen["train_epoch"]) >= 1
    assert max(sample.value for sample in seen["train_steps_total"]) > 1
    assert all(0 <= sample.value <= 1 for sample in seen["train_input_wait_ratio"])
    with pytest.raises(OSError):  # closed when training returned
        urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2)


def test_profile_steps_write_a_trace_under_logs(run_dir: Path, capsys) -> None:
    metrics = train.run(run_dir, Params(epochs=2, profile_steps="2,4"))
    traces = list((run_dir / "logs" / "plugins" / "profile").glob("*/*.xplane.pb"))
    assert len(traces) == 1 and traces[0].stat().st_size > 0
    assert metrics["profile"] == {"steps": [2, 4], "logdir": str(run_dir / "logs"), "note": None}
    assert "Profile of steps 2-4 written" in capsys.readouterr().out


def test_a_profile_window_beyond_the_run_is_refused_before_training(run_dir: Path) -> None:
    with pytest.raises(StepError, match="profile_steps=2,500 is outside") as caught:
        train.run(run_dir, Params(epochs=2, profile_steps="2,500"), verbose=False)
    assert_one_sentence(str(caught.value))
    assert not (run_dir / "checkpoints").exists() and not (run_dir / "model.keras").exists()


@pytest.mark.parametrize(
    ("values", "named"),
    [
        (["metrics_port=80"], "metrics_port=80"),
        (["metrics_port=99999"], "metrics_port=99999"),
        (["profile_steps=5-8"], "profile_steps='5-8'"),
        (["metrics_port=9464", "metrics_host=no-such-host.invalid"], "metrics_host="),
    ],
)
def test_cli_refuses_bad_watch_values_with_exit_2(
    run_dir: Path, values: list[str], named: str, capsys
) -> None:
    argv = ["train", "--run-dir", str(run_dir)]
    for value in values:
        argv += ["-p", value]
    assert cli.main(argv) == 2
    error = capsys.readouterr().err
    assert named in error
    assert not (run_dir / "checkpoints").exists()


def test_cli_refuses_a_port_in_use(run_dir: Path, capsys) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        assert cli.main(["train", "--run-dir", str(run_dir), "-p", f"metrics_port={port}"]) == 2
    assert f"metrics_port={port} is in use" in capsys.readouterr().err
