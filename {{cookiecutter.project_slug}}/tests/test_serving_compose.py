"""TF Serving's compose file and its scrape job: the serving part's Docker files hold together.

Only in projects with both TF Serving and Docker; no container runs here.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from {{ cookiecutter.package_name }}.export import MODEL_NAME
from {{ cookiecutter.package_name }}.serve import config

PACKAGE = "{{ cookiecutter.package_name }}"
DOCKER = Path(__file__).resolve().parents[1] / "docker"
COMPOSE = DOCKER / "compose.serving.yml"
MONITORING = DOCKER / "monitoring"


def compose_errors(document: dict) -> list[str]:
    """Where `document` breaks the compose-spec schema that check-jsonschema vendors."""
    from importlib.resources import files

    import jsonschema

    vendored = files("check_jsonschema") / "builtin_schemas" / "vendor" / "compose-spec.json"
    schema = json.loads(vendored.read_text(encoding="utf-8"))
    validator = jsonschema.validators.validator_for(schema)(schema)
    return [error.message for error in validator.iter_errors(document)]


def test_serving_compose_passes_the_compose_schema_and_a_broken_one_fails():
    """compose.serving.yml is valid under the compose-spec schema; the same file with a
    misspelt key is not (so the check can fail)."""
    pytest.importorskip("check_jsonschema", reason="check-jsonschema (dev extra) is missing.")
    document = yaml.safe_load(COMPOSE.read_text(encoding="utf-8"))
    assert compose_errors(document) == []
    document["services"]["serving"]["volume"] = document["services"]["serving"].pop("volumes")
    assert any("volume" in error for error in compose_errors(document))


def test_serving_compose_passes_the_written_configs_and_loopback_ports():
    """TF Serving gets models.config with a poll interval, batching on with batching.config,
    and monitoring.config, all from the run's serving/ folder, mounted whole (a rename on the
    host is seen); export/ is mounted where models.config's base_path points; loopback ports."""
    service = yaml.safe_load(COMPOSE.read_text(encoding="utf-8"))["services"]["serving"]
    flags = dict(arg.removeprefix("--").split("=", 1) for arg in service["command"])
    mounts = {volume["target"]: volume for volume in service["volumes"]}
    assert flags["enable_batching"] == "true"
    assert int(flags["model_config_file_poll_wait_seconds"]) > 0
    for flag, name in (
        ("model_config_file", "models.config"),
        ("batching_parameters_file", "batching.config"),
        ("monitoring_config_file", "monitoring.config"),
    ):
        folder, file_name = flags[flag].rsplit("/", 1)
        assert file_name == name and mounts[folder]["source"].endswith("/serving"), flag
    assert all(volume["read_only"] for volume in service["volumes"])
    assert mounts[f"{config.MODELS_ROOT}/{PACKAGE}"]["source"].endswith("/export")
    assert {port.split(":")[0] for port in service["ports"]} == {"127.0.0.1"}


def test_the_serving_compose_file_serves_the_export_on_loopback_only() -> None:
    """compose.serving.yml: the model name predict_rest uses, the export read-only, 127.0.0.1."""
    service = yaml.safe_load(COMPOSE.read_text(encoding="utf-8"))["services"]["serving"]
    assert service["image"].startswith("tensorflow/serving:")
    assert all(port.startswith("127.0.0.1:") for port in service["ports"]), service["ports"]
    assert {port.split(":")[1] for port in service["ports"]} == {"8500", "8501"}
    assert service["environment"]["MODEL_NAME"] == MODEL_NAME
    volumes = {volume["target"]: volume for volume in service["volumes"]}  # export/, serving/
    models = volumes[f"/models/{MODEL_NAME}"]
    assert models["read_only"] is True and models["source"].startswith("${RUN_DIR")
    assert all(volume["read_only"] is True for volume in volumes.values())
    assert any(arg.startswith("--monitoring_config_file=") for arg in service["command"])


def test_prometheus_scrapes_serving_where_its_config_says():
    """TF Serving at the path its monitoring config names, which its compose file passes to it."""
    prometheus = yaml.safe_load((MONITORING / "prometheus.yml").read_text(encoding="utf-8"))
    jobs = {job["job_name"]: job for job in prometheus["scrape_configs"]}
    assert set(jobs) == {"training", "serving"}
    monitoring = config.monitoring_config().prometheus_config
    assert monitoring.enable and jobs["serving"]["metrics_path"] == monitoring.path
    serving = yaml.safe_load(COMPOSE.read_text())["services"]["serving"]
    (flag,) = [arg for arg in serving["command"] if arg.startswith("--monitoring_config_file=")]
    targets = {volume["target"]: volume["source"] for volume in serving["volumes"]}
    folder, name = flag.split("=", 1)[1].rsplit("/", 1)
    assert (targets[folder].endswith("/serving"), name) == (True, "monitoring.config")


def test_the_gpu_serving_service_leaves_gpu_memory_to_others():
    """serving-gpu (profile gpu) is the same server in the -gpu image, given the GPUs, growing
    its memory on demand up to a fraction of each GPU instead of reserving nearly all of it."""
    services = yaml.safe_load(COMPOSE.read_text(encoding="utf-8"))["services"]
    cpu, gpu = services["serving"], services["serving-gpu"]
    assert gpu["profiles"] == ["gpu"] and "profiles" not in cpu  # `up` alone starts the CPU one
    assert gpu["image"] == cpu["image"] + "-gpu"
    flags = dict(arg.removeprefix("--").split("=", 1) for arg in gpu["command"])
    fraction = flags.pop("per_process_gpu_memory_fraction")
    assert fraction == "${SERVING_GPU_MEMORY_FRACTION:-0.3}"
    assert 0 < float(fraction.split(":-")[1].rstrip("}")) < 1
    assert gpu["command"][:-1] == cpu["command"]
    assert gpu["environment"]["TF_FORCE_GPU_ALLOW_GROWTH"] == "true"
    assert (gpu["ports"], gpu["volumes"]) == (cpu["ports"], cpu["volumes"])
    (device,) = gpu["deploy"]["resources"]["reservations"]["devices"]
    assert device["driver"] == "nvidia" and device["capabilities"] == ["gpu"]
