"""The alert rules fire exactly when their descriptions say: after 5 minutes, not 4, not 6.

alerts.test.yml checks each alert well before and well after its wait (4 m and 10 m), so any `for:`
from 5 to 9 minutes passes it. Here promtool runs the same firing cases at the boundary: each
`for: 5m` alert is pending (not firing) one evaluation before 5 minutes and firing at 5 minutes;
TrainingStalled, which has no wait, fires at the first evaluation past 10 minutes without a step;
a value exactly at a threshold ("over 30 %") keeps its alert quiet.
The boundary is written here, not read from alerts.yml, because it is what the alerts promise.
"""

from __future__ import annotations

import copy
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

MONITORING = Path(__file__).resolve().parents[1] / "docker" / "monitoring"
WAIT_MINUTES = {"GpuUnderutilized": 5, "TrainingInputBound": 5, "GpuMemoryNearFull": 5}
# TrainingStalled: the last step at 5m, so "no step for over 10 minutes" holds from 15m on.
STALLED_QUIET, STALLED_FIRES = "15m", "16m"

pytestmark = pytest.mark.skipif(
    shutil.which("promtool") is None,
    reason="promtool is not installed: `sudo apt-get install prometheus` (Debian/Ubuntu) or a "
    "release from prometheus.io puts it on PATH.",
)


def _firing_cases() -> dict[str, tuple[dict, list]]:
    """{alert: (its firing test case, its expected alerts)} from alerts.test.yml."""
    tests = yaml.safe_load((MONITORING / "alerts.test.yml").read_text(encoding="utf-8"))["tests"]
    found = {}
    for case in tests:
        for check in case.get("alert_rule_test", []):
            if check.get("exp_alerts") and check["alertname"] not in found:
                found[check["alertname"]] = (case, check["exp_alerts"])
    return found


def _boundary_tests() -> list[dict]:
    cases = []
    for alert, (case, expected) in _firing_cases().items():
        boundary = copy.deepcopy(case)
        if alert in WAIT_MINUTES:
            wait = WAIT_MINUTES[alert]
            checks = [(f"{wait - 1}m", []), (f"{wait}m", expected)]
            boundary["name"] = f"{alert} waits exactly {wait} minutes"
        else:
            assert alert == "TrainingStalled", f"{alert} has no boundary in this test"
            checks = [(STALLED_QUIET, []), (STALLED_FIRES, expected)]
            boundary["name"] = f"{alert} fires at the first evaluation past 10 minutes"
        boundary["alert_rule_test"] = [
            {"eval_time": at, "alertname": alert, "exp_alerts": alerts} for at, alerts in checks
        ]
        cases.append(boundary)
    return cases


# Each threshold alert's firing case with its value set exactly at the threshold ("over 30 %",
# "over 95 %" in the descriptions: at the threshold itself they stay quiet).
AT_THRESHOLD = {
    "GpuUnderutilized": {"gpu_utilization_ratio": "0.3x20"},
    "TrainingInputBound": {"train_input_wait_ratio": "0.3x20"},
    "GpuMemoryNearFull": {"tf_gpu_memory_peak_bytes": "76e9x20"},  # of 80e9: 0.95 exactly
}


def _threshold_tests() -> list[dict]:
    cases = []
    for alert, (case, _) in _firing_cases().items():
        if alert not in AT_THRESHOLD:
            continue
        quiet = copy.deepcopy(case)
        quiet["name"] = f"{alert} at its threshold exactly stays quiet"
        for series in quiet["input_series"]:
            name = series["series"].split("{")[0]
            series["values"] = AT_THRESHOLD[alert].get(name, series["values"])
        quiet["alert_rule_test"] = [{"eval_time": "10m", "alertname": alert, "exp_alerts": []}]
        cases.append(quiet)
    return cases


def test_every_alert_has_a_boundary_case() -> None:
    assert set(_firing_cases()) == {*WAIT_MINUTES, "TrainingStalled"}


def test_alerts_fire_at_the_boundary_their_descriptions_give(tmp_path: Path) -> None:
    shutil.copy(MONITORING / "alerts.yml", tmp_path / "alerts.yml")
    suite = {
        "rule_files": ["alerts.yml"],
        "evaluation_interval": "1m",
        "tests": _boundary_tests() + _threshold_tests(),
    }
    (tmp_path / "boundary.test.yml").write_text(yaml.safe_dump(suite), encoding="utf-8")
    result = subprocess.run(
        ["promtool", "test", "rules", "boundary.test.yml"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout, result.stdout
