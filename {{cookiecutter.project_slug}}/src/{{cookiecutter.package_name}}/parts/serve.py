"""The TF Serving part (the `serve` package) as the rest of the package sees it.

Step 4 records each export's parity here and writes TF Serving's configs beside export/; step 5
sizes its batching from the throughput it measured; export asks before it replaces a version a
server may be serving; the command line gets `serve` and `serve-bench`. All of it is imported
only when called, so reading this module costs no TensorFlow and no TF Serving protos.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from . import Hook

SERVING_DIR = "serving"  # 04 and `serve`: TF Serving's models, batching and monitoring configs
SERVING_STATE = "serving/versions.json"  # 04 and `serve`: parity per version, labels, history
SERVING_MODELS = "serving/models.config"  # --model_config_file: versions and their labels
SERVING_BATCHING = "serving/batching.config"  # --batching_parameters_file: sized by 05 once run
SERVING_MONITORING = "serving/monitoring.config"  # --monitoring_config_file: Prometheus endpoint
SERVE_METRICS = "metrics/serve.json"  # `serve-bench`: QPS, latency percentiles, errors, labels

COMMANDS = ("serve.commands",)  # modules with add_parsers(commands) for the command line

_record_export = Hook("serve.versions", "record_export")
_resize_batching = Hook("serve.versions", "resize_batching")
_role = Hook("serve.versions", "role")
_check_recordable = Hook("serve.versions", "check_recordable")


def after_export(folder: Path, metrics: dict[str, Any]) -> str:
    """Step 4's hook: record the export's parity and write the configs; a sentence says what."""
    return _record_export(folder, metrics)


def after_optimize(folder: Path, metrics: dict[str, Any]) -> str | None:
    """Step 5's hook: size batching.config from the throughput measured (when 04 wrote one)."""
    if not (folder / SERVING_STATE).is_file():
        return None
    return _resize_batching(folder, metrics)


def before_export(folder: Path) -> None:
    """Step 4 asks before it writes a version: versions.json readable, serving/ writable (one
    sentence if not), so no export is left without its parity record."""
    _check_recordable(folder)


def served_as(folder: Path, version: int) -> str | None:
    """What versions.json records export/<version>/ as (export asks before replacing it)."""
    return _role(folder, version)
