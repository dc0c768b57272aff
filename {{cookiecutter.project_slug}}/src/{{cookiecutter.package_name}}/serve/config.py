"""The three files TF Serving is started with, built as its own messages and checked before use.

- models.config (ModelServerConfig): one model whose version policy serves exactly the labelled
  versions (stable, canary, and the previous stable kept loaded for an instant rollback), with
  `version_labels` naming them. TF Serving re-reads it every --model_config_file_poll_wait_seconds,
  so a rewrite changes what is served without a restart.
- batching.config (BatchingParameters): sized from 05_optimize's throughput curve of the
  SavedModel when it has run (size_batching), provisional until then.
- monitoring.config (MonitoringConfig): the Prometheus endpoint on the REST port.

Every file is rendered from a message, parsed back with TF Serving's message (protos.parse),
checked for what the parser cannot see (a label on a version that is not served, batch sizes out
of order), and only then renamed into place: a reader, the server included, sees the old file or
the new one, never half of one, and never a file the server would refuse.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .. import seam
from ..writes import replace_text
from . import protos
from .protos import ConfigError

MODELS_ROOT = "/models"  # where the serving container mounts the run's export/ (as <model name>)
PROMETHEUS_PATH = "/monitoring/prometheus/metrics"
LABELS = ("stable", "canary")
# Batching: the smallest measured batch that reaches KNEE of the best throughput is the largest
# batch worth waiting for; a bigger one adds latency and buys little.
KNEE = 0.9
PROVISIONAL_MAX_BATCH = 32
PROVISIONAL_TIMEOUT_MICROS = 2000
TIMEOUT_BOUNDS_MICROS = (100, 20_000)
VARIABLE_LENGTH = {"text"}  # the task folders whose served inputs vary in length within a batch


def models_config(model_name: str, served: list[int], labels: Mapping[str, int]) -> Any:
    """ModelServerConfig serving `served` versions of one model, with `labels` on them."""
    config = protos.model_server_config()()
    model = config.model_config_list.config.add(
        name=model_name, base_path=f"{MODELS_ROOT}/{model_name}", model_platform="tensorflow"
    )
    model.model_version_policy.specific.versions.extend(sorted(set(served)))
    for label, version in sorted(labels.items()):
        model.version_labels[label] = int(version)
    return config


def check_models_config(config: Any) -> dict[str, Any]:
    """One model, a specific version policy, labels (stable required, canary optional) only on
    served versions: what TF Serving needs for labels to answer. Returns name, served, labels."""
    models = list(config.model_config_list.config)
    if len(models) != 1:
        raise ConfigError(f"models.config names {len(models)} models: it must name exactly one.")
    (model,) = models
    if model.model_version_policy.WhichOneof("policy_choice") != "specific":
        raise ConfigError(
            "models.config's version policy is not `specific`: labels need the versions named."
        )
    served = list(model.model_version_policy.specific.versions)
    labels = dict(model.version_labels)
    if not served or any(version < 1 for version in served):
        raise ConfigError(f"models.config serves versions {served}: use whole numbers >= 1.")
    if "stable" not in labels or set(labels) - set(LABELS):
        raise ConfigError(
            f"models.config labels {sorted(labels)}: it must label `stable` and may label "
            "`canary`, nothing else."
        )
    unserved = {label: version for label, version in labels.items() if version not in served}
    if unserved:
        raise ConfigError(
            f"models.config labels versions it does not serve ({unserved}; served: {served})."
        )
    return {"name": model.name, "served": served, "labels": labels}


def batching_config(sizing: Mapping[str, Any]) -> Any:
    """BatchingParameters from size_batching's numbers."""
    params = protos.batching_parameters()()
    for name in ("max_batch_size", "batch_timeout_micros", "max_enqueued_batches"):
        getattr(params, name).value = int(sizing[name])
    params.num_batch_threads.value = int(sizing["num_batch_threads"])
    params.allowed_batch_sizes.extend(int(size) for size in sizing["allowed_batch_sizes"])
    # Text: the token-ids signature takes [batch, length], its length each request's own; TF
    # Serving concatenates the requests of a batch, which fails on unequal lengths unless it pads.
    params.pad_variable_length_inputs = seam.folder() in VARIABLE_LENGTH
    return params


def check_batching(params: Any) -> dict[str, Any]:
    """TF Serving's own rules: sizes and threads >= 1, allowed sizes increasing and ending at
    max_batch_size. Returns the numbers as a dict."""
    numbers = {
        name: getattr(params, name).value
        for name in ("max_batch_size", "batch_timeout_micros", "max_enqueued_batches")
    }
    numbers["num_batch_threads"] = params.num_batch_threads.value
    numbers["allowed_batch_sizes"] = list(params.allowed_batch_sizes)
    small = [name for name, value in numbers.items() if name != "allowed_batch_sizes" and value < 1]
    if small:
        raise ConfigError(f"batching.config sets {', '.join(small)} below 1.")
    allowed = numbers["allowed_batch_sizes"]
    if allowed and (allowed != sorted(set(allowed)) or allowed[-1] != numbers["max_batch_size"]):
        raise ConfigError(
            f"batching.config's allowed_batch_sizes {allowed} must increase and end at "
            f"max_batch_size {numbers['max_batch_size']}."
        )
    numbers["pad_variable_length_inputs"] = bool(params.pad_variable_length_inputs)
    return numbers


def monitoring_config() -> Any:
    """MonitoringConfig turning TF Serving's Prometheus endpoint on."""
    config = protos.monitoring_config()()
    config.prometheus_config.enable = True
    config.prometheus_config.path = PROMETHEUS_PATH
    return config


def check_monitoring(config: Any) -> dict[str, Any]:
    if not config.prometheus_config.enable or not config.prometheus_config.path.startswith("/"):
        raise ConfigError("monitoring.config must enable prometheus_config with a path.")
    return {"path": config.prometheus_config.path}


CHECKS = {
    "models.config": (protos.model_server_config, check_models_config),
    "batching.config": (protos.batching_parameters, check_batching),
    "monitoring.config": (protos.monitoring_config, check_monitoring),
}


def read_config(path: Path) -> dict[str, Any]:
    """A written config, parsed with TF Serving's message and checked (ConfigError if refused)."""
    message, check = CHECKS[path.name]
    return check(protos.parse(path.read_text(encoding="utf-8"), message(), path.name))


def write_config(path: Path, proto: Any, header: str) -> Path:
    """Check `proto` as read back from its text, then write it (with `header` as # comments)
    under a temporary name beside `path` and rename it into place."""
    message, check = CHECKS[path.name]
    text = protos.to_text(proto)
    check(protos.parse(text, message(), path.name))
    comments = "".join(f"# {line}".rstrip() + "\n" for line in header.strip().splitlines())
    replace_text(path, comments + text)
    return path


def size_batching(optimize: Mapping[str, Any] | None, cores: int | None = None) -> dict[str, Any]:
    """Batching numbers from 05_optimize's SavedModel throughput curve (metrics/optimize.json),
    or provisional ones when it has not run; `source` and `reason` say which and why.

    - max_batch_size: the smallest measured batch within KNEE of the best examples/s;
    - batch_timeout_micros: the time that batch takes, clamped to TIMEOUT_BOUNDS_MICROS, so a
      request waits at most about one batch's compute for companions;
    - num_batch_threads: the cores (TF Serving's batching guide for CPU serving);
    - max_enqueued_batches: as many as the threads, so an overload is refused, not queued;
    - allowed_batch_sizes: the measured sizes up to max_batch_size (batches pad up to them).
    """
    cores = max(1, int(cores or os.cpu_count() or 1))
    curve = _savedmodel_curve(optimize)
    sizing: dict[str, Any] = {"num_batch_threads": cores, "max_enqueued_batches": cores}
    if not curve:
        return {
            **sizing,
            "max_batch_size": PROVISIONAL_MAX_BATCH,
            "batch_timeout_micros": PROVISIONAL_TIMEOUT_MICROS,
            "allowed_batch_sizes": [],
            "source": "provisional",
            "reason": "05_optimize has not measured the SavedModel yet: provisional sizes.",
        }
    best, noun = max(curve.values()), seam.noun()
    chosen = min(size for size, rate in curve.items() if rate >= KNEE * best)
    low, high = TIMEOUT_BOUNDS_MICROS
    timeout = min(high, max(low, round(chosen / curve[chosen] * 1e6)))
    return {
        **sizing,
        "max_batch_size": chosen,
        "batch_timeout_micros": timeout,
        "allowed_batch_sizes": sorted(size for size in curve if size <= chosen),
        "source": "metrics/optimize.json",
        "reason": f"batch {chosen} reaches {curve[chosen]:.0f} {noun}/s, within {KNEE:.0%} of "
        f"the best measured ({best:.0f} {noun}/s); one batch of it takes {timeout} µs.",
    }


def _savedmodel_curve(optimize: Mapping[str, Any] | None) -> dict[int, float]:
    """{batch size: examples/s} of what TF Serving runs, serving_default, in
    metrics/optimize.json, if measured: `savedmodel_raw` where the raw input is preprocessed
    inside it (text: tokenization), else `savedmodel`."""
    baselines = {b.get("name"): b for b in (optimize or {}).get("baselines", [])}
    for name in ("savedmodel_raw", "savedmodel"):
        if name in baselines:
            rates = baselines[name].get("throughput") or {}
            return {int(size): float(rate) for size, rate in rates.items() if float(rate) > 0}
    return {}
