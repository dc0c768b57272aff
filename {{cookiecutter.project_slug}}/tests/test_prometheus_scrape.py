"""The real Prometheus scrapes a real training run, and every dashboard query finds its data.

Debian's `prometheus` package (what CI installs) is started on 127.0.0.1 with the project's alert
rules, scraping the training exporter every second; a short training runs with `metrics_port`
set; then every PromQL expression of the Grafana dashboard that does not need a GPU or TF Serving
is asked of Prometheus' HTTP API over the training's time range, and must return data. The alert
rules must load and evaluate without error against those series.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
import yaml
from helpers import dashboard_expressions, free_port

from {{ cookiecutter.package_name }} import train
from {{ cookiecutter.package_name }}.tasks.image import data_step
from {{ cookiecutter.package_name }}.train import Params

ROOT = Path(__file__).resolve().parents[1]
MONITORING = ROOT / "docker" / "monitoring"
DASHBOARD = MONITORING / "grafana" / "dashboards" / "training.json"
# Series that exist only on a GPU machine (NVML, TensorFlow's GPU allocator) or with TF Serving
# running: not asked here.
ELSEWHERE = re.compile(r"\b(?:tf_)?gpu_\w+|:tensorflow:serving:")
PROMETHEUS = shutil.which("prometheus")

pytestmark = [
    pytest.mark.skipif(
        PROMETHEUS is None,
        reason="prometheus is not installed: `sudo apt-get install prometheus` (Debian/Ubuntu) or "
        "a release from prometheus.io on PATH runs this test.",
    ),
    pytest.mark.slow,  # a real training scraped by the real Prometheus, about 35 s: make test-slow
]


def api(base: str, path: str, **params: str) -> dict:
    url = f"{base}/api/v1/{path}?{urllib.parse.urlencode(params)}"
    with urllib.request.urlopen(url, timeout=10) as response:
        answer = json.loads(response.read())
    assert answer["status"] == "success", answer
    return answer["data"]


@pytest.fixture(scope="module")
def scraped_training(tmp_path_factory: pytest.TempPathFactory):
    """(Prometheus URL, training start, training end) after a run it scraped every second."""
    folder = tmp_path_factory.mktemp("prometheus")
    exporter_port, prometheus_port = free_port(), free_port()
    config = {
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
        "rule_files": [str(MONITORING / "alerts.yml")],
        "scrape_configs": [
            {
                "job_name": "training",
                "static_configs": [{"targets": [f"127.0.0.1:{exporter_port}"]}],
            }
        ],
    }
    (folder / "prometheus.yml").write_text(yaml.safe_dump(config), encoding="utf-8")
    base = f"http://127.0.0.1:{prometheus_port}"
    server = subprocess.Popen(
        [
            PROMETHEUS,
            f"--config.file={folder / 'prometheus.yml'}",
            f"--storage.tsdb.path={folder / 'tsdb'}",
            f"--web.listen-address=127.0.0.1:{prometheus_port}",
        ],
        stdout=subprocess.DEVNULL,
        stderr=(folder / "prometheus.log").open("w"),
    )
    try:
        _wait_ready(base, server, folder / "prometheus.log")
        _wait_for_target(base)
        run = folder / "run"
        data_step.prepare(run, "digits")
        started = time.time()
        # About six seconds of steps: several scrapes, so rates have two samples or more.
        train.run(run, Params(epochs=40, patience=0, metrics_port=exporter_port), verbose=False)
        ended = time.time()
        time.sleep(1.5)  # one more rule evaluation
        yield base, started, ended
    finally:
        server.terminate()
        server.wait(timeout=30)


def _wait_ready(base: str, server: subprocess.Popen, log: Path) -> None:
    for _ in range(200):
        if server.poll() is not None:
            pytest.fail(f"prometheus exited: {log.read_text()[-2000:]}")
        try:
            with urllib.request.urlopen(f"{base}/-/ready", timeout=1):
                return
        except OSError:
            time.sleep(0.1)
    pytest.fail("prometheus did not become ready in 20 s")


def _wait_for_target(base: str) -> None:
    """Prometheus applies its targets a few seconds after it starts (its scrape manager reloads
    at most every 5 s): training that ran before would go unseen."""
    for _ in range(300):
        if api(base, "targets")["activeTargets"]:
            return
        time.sleep(0.1)
    pytest.fail("prometheus never listed the training target in 30 s")


def test_prometheus_scrapes_every_dashboard_query_of_a_training_run(scraped_training) -> None:
    base, started, ended = scraped_training
    asked = [(title, expr) for title, expr in dashboard_expressions(DASHBOARD)]
    here = [(title, expr) for title, expr in asked if not ELSEWHERE.search(expr)]
    assert len(here) >= 6, f"the dashboard asks too little without a GPU: {asked}"
    empty = []
    for title, expr in here:
        found = api(base, "query_range", query=expr, start=str(started), end=str(ended), step="1")
        if not any(series["values"] for series in found["result"]):
            empty.append(f"{title}: {expr}")
    assert not empty, "no data for:\n" + "\n".join(empty)


def test_prometheus_saw_the_run_and_task_labels(scraped_training) -> None:
    base, started, ended = scraped_training
    found = api(
        base, "query_range", query="train_steps_total", start=str(started), end=str(ended), step="1"
    )
    labels = [series["metric"] for series in found["result"]]
    assert labels and all(m["run"] == "run" and m["task"] == "chief/0" for m in labels)
    steps = max(float(value) for series in found["result"] for _, value in series["values"])
    assert steps > 100  # 40 epochs of the digits' steps, scraped while they ran


def test_prometheus_evaluates_the_alert_rules_without_error(scraped_training) -> None:
    base, _, _ = scraped_training
    groups = api(base, "rules")["groups"]
    rules = [rule for group in groups for rule in group["rules"]]
    assert {rule["name"] for rule in rules if rule["type"] == "alerting"} == {
        "GpuUnderutilized",
        "TrainingInputBound",
        "TrainingStalled",
        "GpuMemoryNearFull",
    }
    assert all(rule["health"] == "ok" for rule in rules), [
        (rule["name"], rule.get("lastError")) for rule in rules
    ]
