"""docker/monitoring/: the Prometheus config, alert rules and Grafana dashboard hold together.

The real `promtool` checks the config, the rules and the dashboard's queries, and runs the rules'
unit tests (docker/monitoring/alerts.test.yml); without it those tests skip with the install
command. The rest reads the files as data: every query names only metrics the training exporter
(or TF Serving) serves, and nothing listens beyond 127.0.0.1.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from helpers import DASHBOARD_VARIABLES, dashboard_expressions

DOCKER = Path(__file__).resolve().parents[1] / "docker"
MONITORING = DOCKER / "monitoring"
DASHBOARD = MONITORING / "grafana" / "dashboards" / "training.json"

# What the training exporter serves (`metrics_port`); TF Serving's own names start with a colon.
TRAINING_METRICS = {
    "train_examples_per_second",
    "train_step_seconds",
    "train_input_wait_ratio",
    "train_steps_total",
    "train_last_step_timestamp_seconds",
    "train_loss",
    "train_accuracy",
    "train_val_loss",
    "train_val_accuracy",
    "train_epoch",
    "train_epochs",
    "train_seconds_since_checkpoint",
    "train_info",
    "gpu_utilization_ratio",
    "gpu_memory_used_bytes",
    "gpu_memory_total_bytes",
    "gpu_temperature_celsius",
    "gpu_power_watts",
    "tf_gpu_memory_in_use_bytes",
    "tf_gpu_memory_peak_bytes",
}
OTHER_PREFIXES = ({% if cookiecutter.include_serving %}":tensorflow:serving:",{% endif %})  # TF Serving's
ALERTS = {"GpuUnderutilized", "TrainingInputBound", "TrainingStalled", "GpuMemoryNearFull"}

PROMQL_WORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "bool", "offset"}
PROMQL_WORDS |= {"and", "or", "unless", "inf", "nan"}

needs_promtool = pytest.mark.skipif(
    shutil.which("promtool") is None,
    reason="promtool is not installed: `sudo apt-get install prometheus` (Debian/Ubuntu) or a "
    "release from https://prometheus.io/download/ puts it on PATH.",
)


def promtool(*args: str, cwd: Path = MONITORING) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["promtool", *args], cwd=cwd, capture_output=True, text=True, timeout=120, check=False
    )


def metric_names(expr: str) -> set[str]:
    """The metric names a PromQL expression selects (not its functions, labels or keywords)."""
    text = re.sub(r'"(?:[^"\\]|\\.)*"', "", expr)  # label values, regexes
    text = re.sub(r"\{[^}]*\}|\[[^\]]*\]", "", text)  # matchers, range windows
    text = re.sub(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", "", text)
    names = re.findall(r"(?<![\w:.])([a-zA-Z_:][\w:]*)(?![\w:])(?!\s*\()", text)
    return {name for name in names if name.lower() not in PROMQL_WORDS}


def unknown_metrics(expr: str) -> set[str]:
    return {
        name
        for name in metric_names(expr)
        if name not in TRAINING_METRICS and not name.startswith(OTHER_PREFIXES)
    }


def alert_rules() -> list[dict]:
    groups = yaml.safe_load((MONITORING / "alerts.yml").read_text(encoding="utf-8"))["groups"]
    return [rule for group in groups for rule in group["rules"]]


def dashboard_panels() -> list[dict]:
    dashboard = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    return [panel for panel in dashboard["panels"] if panel["type"] != "row"]


# ----------------------------------------------------------------------------- with promtool


@needs_promtool
def test_promtool_accepts_the_prometheus_config():
    """`promtool check config` reads prometheus.yml and the rule file it names beside it."""
    result = promtool("check", "config", "prometheus.yml")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS: 4 rules found" in result.stdout + result.stderr, result.stdout


@needs_promtool
def test_promtool_accepts_the_alert_rules():
    """`promtool check rules` parses every alert of alerts.yml."""
    result = promtool("check", "rules", "alerts.yml")
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"SUCCESS: {len(ALERTS)} rules found" in result.stdout, result.stdout


@needs_promtool
def test_alert_rules_pass_their_unit_tests():
    """`promtool test rules`: each alert fires on its synthetic run and stays quiet on the other."""
    result = promtool("test", "rules", "alerts.test.yml")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout, result.stdout


@needs_promtool
def test_every_dashboard_query_is_valid_promql(tmp_path):
    """Each panel query, its variables substituted, parses as PromQL (as a recording rule)."""
    expressions = dashboard_expressions(DASHBOARD)
    rules = [
        {"record": f"dashboard:query_{i}", "expr": expr} for i, (_, expr) in enumerate(expressions)
    ]
    path = tmp_path / "dashboard_rules.yml"
    path.write_text(yaml.safe_dump({"groups": [{"name": "dashboard", "rules": rules}]}))
    result = promtool("check", "rules", str(path), cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr


# ----------------------------------------------------------------------------- the files as data


def test_every_alert_has_a_firing_and_a_quiet_unit_test():
    """alerts.test.yml holds, for each alert, a case where it fires and another case (other
    series) where it never does."""
    tests = yaml.safe_load((MONITORING / "alerts.test.yml").read_text(encoding="utf-8"))["tests"]
    fires, quiet = set(), set()
    for test in tests:
        checks = test.get("alert_rule_test", [])
        firing = {check["alertname"] for check in checks if check.get("exp_alerts")}
        fires |= firing
        quiet |= {check["alertname"] for check in checks} - firing
    assert {rule["alert"] for rule in alert_rules()} == ALERTS
    assert fires == ALERTS, f"no firing case for {ALERTS - fires}"
    assert quiet == ALERTS, f"no quiet case for {ALERTS - quiet}"


def test_alerts_name_run_task_and_severity_and_only_known_metrics():
    """Each alert has a severity, a summary and description naming run and task, and reads only
    metrics the exporter serves."""
    for rule in alert_rules():
        name, annotations = rule["alert"], rule["annotations"]
        assert rule["labels"]["severity"] in ("info", "warning", "critical"), name
        for key in ("summary", "description"):
            assert "$labels.run" in annotations[key] and "$labels.task" in annotations[key], name
        assert not unknown_metrics(rule["expr"]), f"{name}: {unknown_metrics(rule['expr'])}"
    input_bound = next(rule for rule in alert_rules() if rule["alert"] == "TrainingInputBound")
    assert "01_data" in input_bound["annotations"]["description"]


def test_dashboard_queries_prometheus_for_known_metrics_only():
    """Every panel and query uses the provisioned data source (uid `prometheus`) and names only
    metrics the exporter or TF Serving serves; the run and task variables come from train_info."""
    panels = dashboard_panels()
    assert panels, "the dashboard has no panels"
    for panel in panels:
        assert panel["datasource"]["uid"] == "prometheus", panel["title"]
        assert panel["targets"], f"{panel['title']}: no query"
        for target in panel["targets"]:
            assert target.get("datasource", panel["datasource"])["uid"] == "prometheus"
    expressions = dashboard_expressions(DASHBOARD)
    assert len(expressions) == sum(len(panel["targets"]) for panel in panels)
    for title, expr in expressions:
        assert "$" not in expr, f"{title}: a variable is left in {expr}"
        assert metric_names(expr), f"{title}: no metric in {expr}"
        assert not unknown_metrics(expr), f"{title}: unknown metrics {unknown_metrics(expr)}"
    named = set().union(*(metric_names(expr) for _, expr in expressions))
    shown = {"train_examples_per_second", "train_step_seconds", "train_input_wait_ratio"}
    shown |= {"train_loss", "gpu_utilization_ratio", "gpu_memory_used_bytes"}
    shown |= {"gpu_temperature_celsius", "gpu_power_watts"}
    assert shown <= named, f"not on the dashboard: {shown - named}"
    variables = json.loads(DASHBOARD.read_text(encoding="utf-8"))["templating"]["list"]
    assert {v["name"] for v in variables} == {"run", "task"}
    assert {"run", "task", "__rate_interval"} == set(DASHBOARD_VARIABLES)
    assert all(v["datasource"]["uid"] == "prometheus" for v in variables)


def test_grafana_provisions_the_prometheus_it_is_given():
    """The data source has uid `prometheus` and points at the address Prometheus listens on."""
    provisioning = MONITORING / "grafana" / "provisioning"
    sources = yaml.safe_load((provisioning / "datasources" / "prometheus.yml").read_text())
    (source,) = sources["datasources"]
    assert (source["uid"], source["type"]) == ("prometheus", "prometheus")
    command = compose_services()["prometheus"]["command"]
    listen = next(arg.split("=", 1)[1] for arg in command if arg.startswith("--web.listen-address"))
    assert source["url"] == f"http://{listen}"
    providers = yaml.safe_load((provisioning / "dashboards" / "dashboards.yml").read_text())
    (provider,) = providers["providers"]
    grafana = compose_services()["grafana"]
    mounts = dict(volume.split(":")[1::-1] for volume in grafana["volumes"] if ":" in volume)
    assert mounts[provider["options"]["path"]] == "./monitoring/grafana/dashboards"


def compose_services() -> dict:
    return yaml.safe_load((DOCKER / "compose.monitoring.yml").read_text())["services"]


def test_monitoring_stack_listens_on_loopback_only_with_pinned_images():
    """Prometheus and Grafana are reachable on 127.0.0.1 only, and their images carry a version."""
    services = compose_services()
    assert set(services) == {"prometheus", "grafana"}
    for name, service in services.items():
        image, _, tag = service["image"].rpartition(":")
        assert image and re.fullmatch(r"v?\d+\.\d+\.\d+", tag), f"{name}: {service['image']}"
        for port in service.get("ports", []):
            host_ip = port.get("host_ip") if isinstance(port, dict) else str(port).split(":")[0]
            assert host_ip == "127.0.0.1", f"{name}: port {port} is reachable from other machines"
    listen = [arg for arg in services["prometheus"]["command"] if "--web.listen-address" in arg]
    assert listen and listen[0].startswith("--web.listen-address=127.0.0.1:"), listen
    assert services["grafana"]["environment"]["GF_SERVER_HTTP_ADDR"] == "127.0.0.1"


def test_the_images_are_supported_releases():
    """Prometheus on its long-term-support line (3.5 reached end of life in July 2026), Grafana
    from grafana/grafana (grafana-oss stopped at 12.4, so its bumps would name missing tags)
    {%- if cookiecutter.ci == "github" %},
    and Dependabot watching the compose files with those lines kept{% endif %}."""
    services = compose_services()
    image, tag = services["prometheus"]["image"].split(":")
    assert image == "prom/prometheus" and tag.startswith("v3.13."), tag  # the LTS after 3.5
    assert services["grafana"]["image"].split(":")[0] == "grafana/grafana"
{%- if cookiecutter.ci == "github" %}
    dependabot = DOCKER.parent / ".github" / "dependabot.yml"
    updates = yaml.safe_load(dependabot.read_text(encoding="utf-8"))["updates"]
    (compose,) = [u for u in updates if u["package-ecosystem"] == "docker-compose"]
    assert compose["directory"] == "/docker"
    kept = {rule["dependency-name"]: rule["update-types"] for rule in compose["ignore"]}
    assert "version-update:semver-minor" in kept["prom/prometheus"]
    assert "version-update:semver-patch" not in kept["prom/prometheus"]
    assert set(kept) == {"prom/prometheus", "grafana/grafana", "tensorflow/serving"}
{%- endif %}


def test_prometheus_scrapes_training_on_its_ports():
    """Training on metrics_port 9464 and the next ports (one per worker on a host)."""
    config = yaml.safe_load((MONITORING / "prometheus.yml").read_text(encoding="utf-8"))
    assert config["rule_files"] == ["alerts.yml"]
    jobs = {job["job_name"]: job for job in config["scrape_configs"]}
    (training,) = jobs["training"]["static_configs"]
    assert "127.0.0.1:9464" in training["targets"]
