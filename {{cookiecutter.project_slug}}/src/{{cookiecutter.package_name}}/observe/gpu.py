"""Per-GPU utilisation, memory, temperature and power for Prometheus, read through NVML.

NVIDIA's own bindings (`nvidia-ml-py`, module `pynvml`, in the project's `gpu` extra) ask the
driver at every scrape, so the numbers are the device's, whoever uses it. Where NVML is missing or
sees no GPU (a laptop CPU, CI), no GPU series exists at all: a dashboard then shows "no data"
rather than a utilisation of 0 that would read as an idle GPU. A GPU that answers one query but
not another (power on some boards) leaves out that one series.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from types import ModuleType
from typing import Any

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

METRICS = {
    "gpu_utilization_ratio": "Share of the last sample period a kernel ran on the GPU (0-1)",
    "gpu_memory_used_bytes": "GPU memory in use, all processes",
    "gpu_memory_total_bytes": "GPU memory in all",
    "gpu_temperature_celsius": "GPU core temperature",
    "gpu_power_watts": "GPU power draw",
}


def load_nvml() -> ModuleType | None:
    """pynvml, initialised, when it imports and sees at least one GPU; else None."""
    try:
        import pynvml

        pynvml.nvmlInit()
        if pynvml.nvmlDeviceGetCount() < 1:
            return None
    except Exception:  # ImportError, or NVMLError: no driver, no library, no device
        return None
    return pynvml


def visible_indices(count: int, value: str | None = None) -> list[int]:
    """The NVML indices this process may use: CUDA_VISIBLE_DEVICES when it lists numbers."""
    text = os.environ.get("CUDA_VISIBLE_DEVICES") if value is None else value
    if text is None or not text.strip():
        return list(range(count)) if text is None else []
    try:
        chosen = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:  # GPU UUIDs or MIG names: report every GPU
        return list(range(count))
    return [index for index in chosen if 0 <= index < count]


class GpuCollector(Collector):
    """Collects METRICS for every visible GPU, labelled with the run's labels, gpu and name."""

    def __init__(self, nvml: ModuleType, labels: dict[str, str]) -> None:
        self.nvml, self.labels = nvml, labels

    def collect(self) -> Iterator[GaugeMetricFamily]:
        names = [*self.labels, "gpu", "name"]
        families = {key: GaugeMetricFamily(key, doc, labels=names) for key, doc in METRICS.items()}
        for index in visible_indices(self.nvml.nvmlDeviceGetCount()):
            handle = self.nvml.nvmlDeviceGetHandleByIndex(index)
            name = _decode(self._ask(self.nvml.nvmlDeviceGetName, handle)) or "unknown"
            values = [*self.labels.values(), str(index), name]
            for key, value in self._read(handle).items():
                if value is not None:
                    families[key].add_metric(values, float(value))
        yield from families.values()

    def _read(self, handle: Any) -> dict[str, float | None]:
        nvml = self.nvml
        rates = self._ask(nvml.nvmlDeviceGetUtilizationRates, handle)
        memory = self._ask(nvml.nvmlDeviceGetMemoryInfo, handle)
        temperature = self._ask(nvml.nvmlDeviceGetTemperature, handle, nvml.NVML_TEMPERATURE_GPU)
        milliwatts = self._ask(nvml.nvmlDeviceGetPowerUsage, handle)
        return {
            "gpu_utilization_ratio": None if rates is None else rates.gpu / 100,
            "gpu_memory_used_bytes": None if memory is None else memory.used,
            "gpu_memory_total_bytes": None if memory is None else memory.total,
            "gpu_temperature_celsius": temperature,
            "gpu_power_watts": None if milliwatts is None else milliwatts / 1000,
        }

    def _ask(self, query: Any, *args: Any) -> Any:
        try:
            return query(*args)
        except self.nvml.NVMLError:
            return None


def _decode(value: Any) -> str | None:
    return value.decode() if isinstance(value, bytes) else value
