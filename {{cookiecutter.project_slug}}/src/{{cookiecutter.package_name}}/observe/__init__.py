"""Watching a training run: where its step time goes, live metrics for Prometheus, profiles.

- input_wait: how much of each step waits for the next batch, and the verdict on it;
- exporter: the Prometheus endpoint training serves when `metrics_port` is set;
- gpu: per-GPU utilisation, memory, temperature and power through NVML, where there are GPUs;
- profiler: the `profile_steps` window, written as a TensorBoard profile under the run's logs/.
"""

from .exporter import Exporter, check_port
from .input_wait import INPUT_BOUND_AT, input_wait_summary, verdict
from .profiler import Profiler, parse_profile_steps

__all__ = [
    "INPUT_BOUND_AT",
    "Exporter",
    "Profiler",
    "check_port",
    "input_wait_summary",
    "parse_profile_steps",
    "verdict",
]
