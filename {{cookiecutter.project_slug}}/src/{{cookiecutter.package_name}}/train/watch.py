"""What watches one training run: the Prometheus exporter and the profiler, built from Params.

The loop reports to them after every call of its step function; both are off by default
(metrics_port=0, profile_steps=''), and then the loop runs each epoch in one call, as before.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import keras
import tensorflow as tf

from ..artifacts import LOGS_DIR
from ..observe import Exporter, Profiler, parse_profile_steps
from ..observe.exporter import NoExporter
from .devices import strategy_name
from .params import Cluster, Params


class Watch:
    """The exporter (or NoExporter) and the Profiler of one call of train.run."""

    def __init__(self, folder: Path, params: Params, role: Cluster) -> None:
        self.params = params
        window = parse_profile_steps(params.profile_steps)
        self.profiler = Profiler(window, folder / LOGS_DIR, enabled=role.is_chief)
        self.live = params.metrics_port > 0
        self.exporter: Exporter | NoExporter = NoExporter()
        if self.live:
            self.exporter = Exporter(
                params.metrics_port + role.rank,
                params.metrics_host,
                run=folder.name,
                task=role.task,
                chief=role.is_chief,
            )

    def start(
        self, strategy: tf.distribute.Strategy, initial_epoch: int, say: Callable[[str], None]
    ) -> None:
        """Open the endpoint and say where it is, and what the profiler will trace."""
        policy = keras.mixed_precision.dtype_policy()
        self.exporter.start(
            {
                "model": str(self.params.model),
                "strategy": strategy_name(strategy),
                "precision": policy.name,
            },
            epochs=self.params.epochs,
            epoch=initial_epoch,
        )
        if self.live:
            gpus = "with" if self.exporter.gpus else "no GPU seen by NVML, so without"
            say(f"Metrics for Prometheus at {self.exporter.url} ({gpus} GPU series).")
        if self.profiler.window:
            first, last = self.profiler.window
            where = self.profiler.logdir
            say(f"Profiling steps {first}-{last} into {where} (TensorBoard's Profile tab).")

    def closing(self) -> str | None:
        """What to say when training ends: where the profile is, or that none was written."""
        if self.profiler.window is None:
            return None
        first, last = self.profiler.window
        if self.profiler.traced:
            written = f"Profile of steps {first}-{last} written under {self.profiler.logdir}."
            return f"{written} {self.profiler.note}" if self.profiler.note else written
        if not self.profiler.enabled:
            return None
        return f"No profile was written: training ended before step {last}."

    def summary(self) -> dict[str, Any]:
        """What metrics/train.json says of the watching."""
        return {
            "metrics_endpoint": self.exporter.url,
            "gpu_metrics": self.exporter.gpus,
            "profile": self.profiler.summary(),
        }

    def close(self) -> None:
        self.profiler.close()
        self.exporter.close()
