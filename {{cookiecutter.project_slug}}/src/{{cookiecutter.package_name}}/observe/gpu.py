"""Per-GPU utilisation, memory, temperature and power for Prometheus, read through NVML.

NVIDIA's own bindings (`nvidia-ml-py`, module `pynvml`, in the project's `gpu` extra) ask the
driver at every scrape, so the numbers are the device's, whoever uses it. Where NVML is missing or
sees no GPU (a laptop CPU, CI), no GPU series exists at all: a dashboard then shows "no data"
rather than a utilisation of 0 that would read as an idle GPU. A GPU that answers one query but
not another (power on some boards) leaves out that one series, and a GPU that does not answer at
all (fallen off the bus: GpuIsLost; not this process's under SLURM's cgroups: NoPermission) is
left out while the others are served: one bad GPU never turns the scrape into an HTTP 500.

Which GPUs: the ones this process's CUDA sees. NVML counts every GPU of the machine in its own
order; CUDA renumbers what CUDA_VISIBLE_DEVICES lists, in its order (fastest first unless
CUDA_DEVICE_ORDER=PCI_BUS_ID), so a CUDA index is not an NVML index. The CUDA driver gives each
visible device's PCI bus id and NVML is asked by that id (NVIDIA's advice: look devices up by
PCI id or UUID). Where the CUDA driver cannot be asked, CUDA_VISIBLE_DEVICES is read: UUIDs are
looked up by UUID, numbers taken as NVML indices (right where CUDA orders by PCI bus, as on
machines of one GPU model). Series are labelled gpu (the index TensorFlow's GPU:N uses) and uuid.
Under MIG a CUDA device is an instance of a GPU, with its parent's PCI bus id: it is looked up by
its own UUID (cuDeviceGetUuid_v2) first, so its series are the instance's (its memory; NVML does
not report utilisation, temperature or power of an instance, so those are left out), not the
parent GPU's. Never run on a MIG GPU here: the tests give NVML and the driver as fakes.
"""

from __future__ import annotations

import ctypes
import os
import sys
from collections.abc import Callable, Iterator
from types import ModuleType
from typing import Any
from uuid import UUID

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

METRICS = {
    "gpu_utilization_ratio": "Share of the last sample period a kernel ran on the GPU (0-1)",
    "gpu_memory_used_bytes": "GPU memory in use, all processes",
    "gpu_memory_total_bytes": "GPU memory in all",
    "gpu_temperature_celsius": "GPU core temperature",
    "gpu_power_watts": "GPU power draw",
}


# TensorFlow's own count, beside NVML's: what its tensors hold, not what the process reserved.
TF_METRICS = {
    "tf_gpu_memory_in_use_bytes": "GPU memory TensorFlow's tensors hold now (allocator count)",
    "tf_gpu_memory_peak_bytes": "Most GPU memory TensorFlow's tensors held since the last scrape",
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
    """The NVML indices CUDA_VISIBLE_DEVICES lists when it lists numbers (all when unset)."""
    text = os.environ.get("CUDA_VISIBLE_DEVICES") if value is None else value
    if text is None or not text.strip():
        return list(range(count)) if text is None else []
    try:
        chosen = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:  # GPU UUIDs or MIG names: report every GPU
        return list(range(count))
    return [index for index in chosen if 0 <= index < count]


def cuda_bus_ids() -> list[str] | None:
    """The PCI bus ids of the GPUs this process's CUDA sees, in CUDA's order (libcuda's
    cuDeviceGetPCIBusId); None where the driver cannot be asked."""

    def bus_id(cuda: Any, device: ctypes.c_int) -> str | None:
        text = ctypes.create_string_buffer(64)
        ok = cuda.cuDeviceGetPCIBusId(text, len(text), device) == 0
        return text.value.decode() if ok else None

    return each_cuda_device(bus_id)


def cuda_mig_uuids() -> list[str] | None:
    """The name "MIG-<uuid>" of each device this process's CUDA sees, in CUDA's order: libcuda's
    cuDeviceGetUuid_v2 gives a MIG instance its own UUID, which NVML finds under that name; a
    whole GPU's UUID is not found under MIG-, so it is then looked up by bus id. None where the
    driver cannot be asked (no libcuda, or one older than cuDeviceGetUuid_v2)."""

    def mig_name(cuda: Any, device: ctypes.c_int) -> str | None:
        raw = ctypes.create_string_buffer(16)
        return f"MIG-{UUID(bytes=raw.raw)}" if cuda.cuDeviceGetUuid_v2(raw, device) == 0 else None

    return each_cuda_device(mig_name)


def cuda_memory_bytes() -> list[int] | None:
    """The memory of each device this process's CUDA sees, in bytes and CUDA's order (libcuda's
    cuDeviceTotalMem_v2; a MIG instance's own share); None where the driver cannot be asked."""

    def total(cuda: Any, device: ctypes.c_int) -> int | None:
        size = ctypes.c_size_t()
        return size.value if cuda.cuDeviceTotalMem_v2(ctypes.byref(size), device) == 0 else None

    return each_cuda_device(total)


def each_cuda_device(ask: Callable[[Any, ctypes.c_int], Any]) -> list[Any] | None:
    """ask(libcuda, device) for every device CUDA sees, in its order ([] with no device); None if
    the driver or any answer fails.

    Written with ctypes: a few calls of the driver's stable C API, where NVIDIA's Python bindings
    (cuda-bindings) would be one more package whose major version must match the driver's.
    """
    try:
        cuda = ctypes.CDLL("libcuda.so.1")
        status = cuda.cuInit(0)
        if status != 0:
            return [] if status == 100 else None  # 100: CUDA_ERROR_NO_DEVICE
        count = ctypes.c_int()
        if cuda.cuDeviceGetCount(ctypes.byref(count)) != 0:
            return None
        answers = []
        for index in range(count.value):
            device = ctypes.c_int()
            if cuda.cuDeviceGet(ctypes.byref(device), index) != 0:
                return None
            answer = ask(cuda, device)
            if answer is None:
                return None
            answers.append(answer)
        return answers
    except (OSError, AttributeError):  # no driver library (a CPU machine), or not this API
        return None


class GpuCollector(Collector):
    """Collects METRICS for every visible GPU, labelled with the run's labels, gpu, uuid, name."""

    def __init__(
        self,
        nvml: ModuleType,
        labels: dict[str, str],
        find_bus_ids: Callable[[], list[str] | None] = cuda_bus_ids,
        find_mig_uuids: Callable[[], list[str] | None] = cuda_mig_uuids,
    ) -> None:
        self.nvml, self.labels = nvml, labels
        self.bus_ids = find_bus_ids()  # once: CUDA's devices do not change during a run
        self.mig_uuids = find_mig_uuids() if self.bus_ids else None

    def collect(self) -> Iterator[GaugeMetricFamily]:
        names = [*self.labels, "gpu", "uuid", "name"]
        families = {key: GaugeMetricFamily(key, doc, labels=names) for key, doc in METRICS.items()}
        for label, handle in self.devices():
            name = _decode(self._ask(self.nvml.nvmlDeviceGetName, handle)) or "unknown"
            uuid = _decode(self._ask(self.nvml.nvmlDeviceGetUUID, handle)) or ""
            values = [*self.labels.values(), label, uuid, name]
            for key, value in self._read(handle).items():
                if value is not None:
                    families[key].add_metric(values, float(value))
        yield from families.values()

    def devices(self) -> list[tuple[str, Any]]:
        """(gpu label, NVML handle) of each visible GPU that answers; the others are left out."""
        nvml, found = self.nvml, []
        if self.bus_ids is not None:  # CUDA's own list: index i is TensorFlow's GPU:i
            migs = self.mig_uuids or []
            for index, bus_id in enumerate(self.bus_ids):
                # A MIG instance shares its parent's PCI bus id: by bus id the series would
                # describe the whole GPU (its memory, all instances' use), not this process's part.
                mig = migs[index] if index < len(migs) else None
                handle = self._ask(nvml.nvmlDeviceGetHandleByUUID, mig) if mig else None
                if handle is None:
                    handle = self._ask(nvml.nvmlDeviceGetHandleByPciBusId, bus_id)
                if handle is not None:
                    found.append((str(index), handle))
            return found
        text = os.environ.get("CUDA_VISIBLE_DEVICES")
        if text is not None and text.strip() and not text.strip()[0].isdigit():
            entries = [part.strip() for part in text.split(",") if part.strip()]
            for index, uuid in enumerate(entries):
                handle = self._ask(nvml.nvmlDeviceGetHandleByUUID, uuid)
                if handle is not None:
                    found.append((str(index), handle))
            return found
        count = self._ask(nvml.nvmlDeviceGetCount)
        listed = visible_indices(count or 0)
        for position, index in enumerate(listed):
            handle = self._ask(nvml.nvmlDeviceGetHandleByIndex, index)
            if handle is not None:
                found.append((str(position if text is not None else index), handle))
        return found

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
        """query(*args), or None when NVML refuses (GpuIsLost, NoPermission, NotSupported...)."""
        try:
            return query(*args)
        except self.nvml.NVMLError:
            return None


def _decode(value: Any) -> str | None:
    return value.decode() if isinstance(value, bytes) else value


class TensorFlowMemoryCollector(Collector):
    """TF_METRICS for each GPU TensorFlow uses (GPU:N, labelled gpu="N" as GpuCollector's).

    NVML counts what the process reserved. With memory growth TensorFlow keeps every block it
    once took, so after batch_size=auto's probes (the largest batch that fit) NVML reads the GPU
    as full for the rest of the run, and an alert on it fired on every such run. The allocator's
    count says what the model and batch use; its peak, reset at each scrape, the most they used
    between two scrapes (so with two Prometheus servers scraping, each sees a shorter window).
    """

    def __init__(
        self,
        labels: dict[str, str],
        devices: list[str],
        memory_info: Callable[[str], dict[str, int]],
        reset: Callable[[str], None],
    ) -> None:
        self.labels, self.devices = labels, devices
        self.memory_info, self.reset = memory_info, reset

    def collect(self) -> Iterator[GaugeMetricFamily]:
        names = [*self.labels, "gpu"]
        families = {
            key: GaugeMetricFamily(key, doc, labels=names) for key, doc in TF_METRICS.items()
        }
        for device in self.devices:
            try:
                info = self.memory_info(device)
                self.reset(device)
            except (ValueError, RuntimeError):  # a device TensorFlow no longer answers for
                continue
            values = [*self.labels.values(), device.rsplit(":", 1)[-1]]
            families["tf_gpu_memory_in_use_bytes"].add_metric(values, float(info["current"]))
            families["tf_gpu_memory_peak_bytes"].add_metric(values, float(info["peak"]))
        yield from families.values()


def tensorflow_memory(labels: dict[str, str]) -> TensorFlowMemoryCollector | None:
    """The collector for the GPUs of the TensorFlow this process has loaded; None without one
    (not loaded: this never imports it, or no GPU)."""
    tf = sys.modules.get("tensorflow")
    if tf is None:
        return None
    devices = [device.name.split("device:")[-1] for device in tf.config.list_logical_devices("GPU")]
    if not devices:
        return None
    memory = tf.config.experimental
    return TensorFlowMemoryCollector(
        labels, devices, memory.get_memory_info, memory.reset_memory_stats
    )
