"""Watching a run, in pieces: the input-wait verdict, the profile window, the live-report calls,
the Prometheus exporter and its GPU series (with a stand-in for NVML), and the endpoint checks.

Training with all of it switched on is in test_train_watch.py.
"""

from __future__ import annotations

import socket
import sys
import urllib.request
from types import SimpleNamespace

import pytest
from helpers import assert_one_sentence, free_port
from prometheus_client.parser import text_string_to_metric_families

from {{ cookiecutter.package_name }}.observe import (
    INPUT_BOUND_AT,
    Exporter,
    check_port,
    input_wait_summary,
    parse_profile_steps,
    verdict,
)
from {{ cookiecutter.package_name }}.observe import exporter as exporter_module
from {{ cookiecutter.package_name }}.observe import gpu as gpu_module
from {{ cookiecutter.package_name }}.observe.gpu import GpuCollector, visible_indices
from {{ cookiecutter.package_name }}.observe.profiler import (
    ObserveError,
    Profiler,
    check_window,
    report_chunks,
)

CHIEF_ONLY = {
    "train_loss",
    "train_accuracy",
    "train_val_loss",
    "train_val_accuracy",
    "train_epoch",
    "train_epochs",
    "train_seconds_since_checkpoint",
}


def scrape(url: str) -> dict[str, list]:
    """Metric name → its samples, as Prometheus would read the page."""
    text = urllib.request.urlopen(url, timeout=10).read().decode()
    samples: dict[str, list] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            samples.setdefault(sample.name, []).append(sample)
    return samples


def test_verdict_names_the_share_and_the_line() -> None:
    assert verdict(0.41).startswith("input-bound: 41% of each training step waits for data")
    assert "01_data" in verdict(0.41)
    assert verdict(0.12).startswith("not input-bound: 12%")
    assert verdict(INPUT_BOUND_AT).startswith("input-bound")
    assert "no input-wait measurement" in verdict(None)


def test_summary_leaves_the_tracing_epoch_out_when_others_ran() -> None:
    history = [
        {"seconds": 10.0, "input_wait_seconds": 9.0},  # tracing: left out
        {"seconds": 1.0, "input_wait_seconds": 0.5},
        {"seconds": 3.0, "input_wait_seconds": 0.5},
    ]
    summary = input_wait_summary(history, skip_first=True)
    assert summary["input_wait_fraction"] == pytest.approx(1.0 / 4.0)
    assert summary["input_wait_epochs"] == 2
    assert summary["input_bound"] is False
    one = input_wait_summary(history[:1], skip_first=True)
    assert one["input_wait_fraction"] == pytest.approx(0.9)
    assert one["input_bound"] is True
    none = input_wait_summary([], skip_first=True)
    assert none["input_wait_fraction"] is None and none["input_bound"] is None


@pytest.mark.parametrize(
    ("value", "window"),
    [("5,8", (5, 8)), (" 2 , 4 ", (2, 4)), ("5", (5, 5)), (3, (3, 3)), ("", None), (None, None)],
)
def test_profile_steps_are_read(value, window) -> None:
    assert parse_profile_steps(value) == window


@pytest.mark.parametrize("value", ["8,5", "0,3", "a,b", "1,2,3", "-1", True, 2.5, "5-8"])
def test_bad_profile_steps_are_refused_in_one_sentence(value) -> None:
    with pytest.raises(ObserveError, match="profile_steps=") as caught:
        parse_profile_steps(value)
    assert_one_sentence(str(caught.value))


def test_a_window_beyond_the_run_is_refused_naming_the_steps() -> None:
    check_window((2, 40), 40, 2)
    check_window(None, 0, 0)
    with pytest.raises(ObserveError, match=r"trains 40 step\(s\)") as caught:
        check_window((2, 41), 40, 2)
    assert_one_sentence(str(caught.value))


def test_one_call_per_epoch_unless_watched_live() -> None:
    assert report_chunks(22, 1, set(), live=False) == [22]
    assert report_chunks(22, 1, set(), live=True) == [22]  # small epochs: one report each
    assert report_chunks(120, 1, set(), live=True) == [50, 50, 20]
    assert report_chunks(1000, 1, set(), live=True) == [100] * 10  # about ten an epoch
    assert report_chunks(5000, 1, set(), live=True) == [200] * 25


def test_calls_end_at_the_profile_window_edges() -> None:
    # The window (2, 4) cuts after step 1 and after step 4, in the first epoch only.
    assert report_chunks(22, 1, {1, 4}, live=False) == [1, 3, 18]
    assert report_chunks(22, 23, {1, 4}, live=False) == [22]
    # A window in the second epoch (steps 30-31): cuts after 29 and 31.
    assert report_chunks(22, 23, {29, 31}, live=False) == [7, 2, 13]


def traced(monkeypatch, tmp_path, planes: dict[str, int], errors=()) -> Profiler:
    """A Profiler over steps 2-3 on a machine with a GPU, whose trace holds `planes` (name ->
    kernel events) and the profiler's `errors`, as tf.profiler would write it."""
    import tensorflow as tf
    from tensorflow.tsl.profiler.protobuf import xplane_pb2

    def stop() -> None:
        space = xplane_pb2.XSpace(errors=list(errors))
        for name, events in planes.items():
            plane = space.planes.add(name=name)
            plane.lines.add(name="stream").events.extend(
                [xplane_pb2.XEvent(metadata_id=1)] * events
            )
        folder = tmp_path / "plugins" / "profile" / "2026_12_03_10_00_00"
        folder.mkdir(parents=True)
        (folder / "host.xplane.pb").write_bytes(space.SerializeToString())

    monkeypatch.setattr(tf.profiler.experimental, "start", lambda logdir: None)
    monkeypatch.setattr(tf.profiler.experimental, "stop", stop)
    monkeypatch.setattr(tf.config, "list_logical_devices", lambda kind=None: ["GPU:0"])
    profiler = Profiler((2, 3), tmp_path, enabled=True)
    profiler.before(2)
    profiler.after(3)
    return profiler


def test_a_gpu_trace_without_kernels_says_cupti_was_refused(monkeypatch, tmp_path) -> None:
    """In the non-root container CUPTI needs a driver option: the summary says so and how."""
    refused = "cupti_error_insufficient_privileges"
    profiler = traced(monkeypatch, tmp_path, {"/host:CPU": 40}, errors=[refused])
    note = profiler.summary()["note"]
    assert note.startswith("The profile has no GPU kernels") and refused in note
    assert "NVreg_RestrictProfilingToAdminUsers=0" in note


def test_a_gpu_trace_with_kernels_needs_no_note(monkeypatch, tmp_path) -> None:
    profiler = traced(monkeypatch, tmp_path, {"/host:CPU": 40, "/device:GPU:0": 12})
    assert profiler.summary() == {"steps": [2, 3], "logdir": str(tmp_path), "note": None}


@pytest.mark.parametrize("port", [-1, 80, 1023, 65536, "9464", True, 1.5])
def test_a_port_out_of_range_is_refused_in_one_sentence(port) -> None:
    with pytest.raises(ObserveError, match="metrics_port=") as caught:
        check_port(port, "127.0.0.1")
    assert_one_sentence(str(caught.value))


def test_a_port_in_use_is_refused_before_training() -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        with pytest.raises(ObserveError, match=f"metrics_port={port} is in use") as caught:
            check_port(port, "127.0.0.1")
    assert_one_sentence(str(caught.value))
    check_port(port, "127.0.0.1")  # free again
    check_port(0, "127.0.0.1")  # off: nothing is probed


@pytest.mark.parametrize("host", ["", "no-such-host.invalid", 7])
def test_a_host_that_cannot_be_listened_on_is_refused(host) -> None:
    with pytest.raises(ObserveError, match="metrics_host=") as caught:
        check_port(9464 if host != "" else 0, host)
    assert_one_sentence(str(caught.value))


def test_the_endpoint_serves_the_contract_on_loopback(monkeypatch) -> None:
    monkeypatch.setattr(exporter_module, "load_nvml", lambda: None)
    exporter = Exporter(free_port(), "127.0.0.1", run="R", task="chief/0", chief=True)
    exporter.start(
        {"model": "some_model", "strategy": "S", "precision": "float32"}, epochs=3, epoch=0
    )
    try:
        assert exporter.url.startswith("http://127.0.0.1:")
        before = scrape(exporter.url)
        # No validation yet: absent, not a made-up 0.
        assert "train_val_loss" not in before and "train_examples_per_second" not in before
        assert before["train_epochs"][0].value == 3
        exporter.report_steps(4, 0.5, 0.125, 256.0, (1.5, 0.25))
        exporter.report_epoch(
            {"epoch": 1, "loss": 1.2, "accuracy": 0.5, "val_loss": 0.9, "val_accuracy": 0.7}
        )
        after = scrape(exporter.url)
    finally:
        exporter.close()
    value = {name: samples[0].value for name, samples in after.items()}
    assert value["train_examples_per_second"] == pytest.approx(512.0)
    assert value["train_step_seconds"] == pytest.approx(0.125)
    assert value["train_input_wait_ratio"] == pytest.approx(0.25)
    assert value["train_steps_total"] == 4
    assert value["train_val_accuracy"] == pytest.approx(0.7)
    assert value["train_epoch"] == 1
    assert 0 <= value["train_seconds_since_checkpoint"] < 60
    assert after["train_info"][0].labels["model"] == "some_model"
    for name in ("train_examples_per_second", "train_val_loss", "train_info"):
        assert after[name][0].labels["run"] == "R" and after[name][0].labels["task"] == "chief/0"
    assert not any(name.startswith("gpu_") for name in after)  # no GPU: no series, not zeros
    with pytest.raises(OSError):  # closed: the port is free for the next run
        urllib.request.urlopen(exporter.url, timeout=2)


def test_workers_serve_their_own_numbers_and_leave_epochs_to_the_chief(monkeypatch) -> None:
    monkeypatch.setattr(exporter_module, "load_nvml", lambda: None)
    worker = Exporter(free_port(), "127.0.0.1", run="R", task="worker/1", chief=False)
    worker.start({"model": "m", "strategy": "S", "precision": "p"}, epochs=3, epoch=0)
    try:
        worker.report_steps(2, 1.0, 0.1, 128.0, (1.0, 0.5))
        worker.report_epoch(
            {"epoch": 1, "loss": 1, "accuracy": 0, "val_loss": 1, "val_accuracy": 0}
        )
        names = set(scrape(worker.url))
    finally:
        worker.close()
    assert "train_examples_per_second" in names and "train_input_wait_ratio" in names
    assert not names & CHIEF_ONLY


class FakeNvml:
    """GPUs as pynvml describes them (two by default); the second cannot report its power.
    `lost` GPUs fell off the bus, `denied` ones belong to another job's cgroup; `count_error`
    makes even the count fail."""

    NVML_TEMPERATURE_GPU = 0

    class NVMLError(Exception):
        pass

    class NVMLError_GpuIsLost(NVMLError):  # noqa: N801 (pynvml's names)
        pass

    class NVMLError_NoPermission(NVMLError):  # noqa: N801
        pass

    def __init__(self, count=2, lost=(), denied=(), count_error=None) -> None:
        self.count, self.lost, self.denied, self.count_error = count, lost, denied, count_error
        self.bus_ids = [f"00000000:{0x19 + 0x20 * i:02X}:00.0" for i in range(count)]

    def nvmlDeviceGetCount(self) -> int:
        if self.count_error:
            raise self.count_error
        return self.count

    def nvmlDeviceGetHandleByIndex(self, index: int) -> int:
        if index in self.lost:
            raise self.NVMLError_GpuIsLost("GPU is lost")
        if index in self.denied:
            raise self.NVMLError_NoPermission("Insufficient Permissions")
        return index

    def nvmlDeviceGetHandleByPciBusId(self, bus_id: str) -> int:
        return self.nvmlDeviceGetHandleByIndex(self.bus_ids.index(bus_id))

    def nvmlDeviceGetHandleByUUID(self, uuid: str) -> int:
        return self.nvmlDeviceGetHandleByIndex(int(uuid.rsplit("-", 1)[1]))

    def nvmlDeviceGetUUID(self, handle: int) -> str:
        return f"GPU-8a7c-{handle}"

    def nvmlDeviceGetName(self, handle: int) -> bytes:
        return b"NVIDIA H200"

    def nvmlDeviceGetUtilizationRates(self, handle: int):
        return SimpleNamespace(gpu=[87, 12, 50, 33][handle], memory=40)

    def nvmlDeviceGetMemoryInfo(self, handle: int):
        return SimpleNamespace(used=[60, 10, 20, 30][handle] * 2**30, total=141 * 2**30)

    def nvmlDeviceGetTemperature(self, handle: int, sensor: int) -> int:
        return [71, 40, 50, 60][handle]

    def nvmlDeviceGetPowerUsage(self, handle: int) -> int:
        if handle == 1:
            raise self.NVMLError("Not Supported")
        return 550_000


def utilization(nvml: FakeNvml, bus_ids: list[str] | None = None) -> dict[str, float]:
    """gpu label -> gpu_utilization_ratio, as one scrape of the collector gives them."""
    collector = GpuCollector(nvml, {"run": "R"}, find_bus_ids=lambda: bus_ids)
    family = next(f for f in collector.collect() if f.name == "gpu_utilization_ratio")
    return {sample.labels["gpu"]: sample.value for sample in family.samples}


def test_gpu_series_come_from_nvml_per_gpu(monkeypatch) -> None:
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.setattr(gpu_module, "cuda_bus_ids", lambda: None)
    monkeypatch.setattr(exporter_module, "load_nvml", lambda: FakeNvml())
    exporter = Exporter(free_port(), "127.0.0.1", run="R", task="chief/0", chief=True)
    exporter.start({"model": "m", "strategy": "S", "precision": "p"}, epochs=1, epoch=0)
    try:
        samples = scrape(exporter.url)
    finally:
        exporter.close()
    by_gpu = {
        (name, sample.labels["gpu"]): sample.value
        for name, found in samples.items()
        if name.startswith("gpu_")
        for sample in found
    }
    assert by_gpu[("gpu_utilization_ratio", "0")] == pytest.approx(0.87)
    assert by_gpu[("gpu_utilization_ratio", "1")] == pytest.approx(0.12)
    assert by_gpu[("gpu_memory_used_bytes", "0")] == 60 * 2**30
    assert by_gpu[("gpu_memory_total_bytes", "1")] == 141 * 2**30
    assert by_gpu[("gpu_temperature_celsius", "0")] == 71
    assert by_gpu[("gpu_power_watts", "0")] == pytest.approx(550.0)
    assert ("gpu_power_watts", "1") not in by_gpu  # unsupported: left out, not 0
    sample = samples["gpu_utilization_ratio"][0]
    assert sample.labels["name"] == "NVIDIA H200" and sample.labels["run"] == "R"
    assert sample.labels["uuid"] == "GPU-8a7c-0"


def test_a_lost_gpu_leaves_the_others_and_the_training_series_served(monkeypatch) -> None:
    """NVMLError_GpuIsLost on one GPU (fallen off the bus), or on the count itself: the scrape
    still answers, without that GPU's series, instead of an HTTP 500 losing every series."""
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.setattr(gpu_module, "cuda_bus_ids", lambda: None)
    nvml = FakeNvml(count=3, lost=(1,))
    monkeypatch.setattr(exporter_module, "load_nvml", lambda: nvml)
    exporter = Exporter(free_port(), "127.0.0.1", run="R", task="chief/0", chief=True)
    exporter.start({"model": "m", "strategy": "S", "precision": "p"}, epochs=1, epoch=0)
    try:
        samples = scrape(exporter.url)
        assert {s.labels["gpu"] for s in samples["gpu_utilization_ratio"]} == {"0", "2"}
        nvml.count_error = nvml.NVMLError_GpuIsLost("GPU is lost")
        samples = scrape(exporter.url)
    finally:
        exporter.close()
    assert "gpu_utilization_ratio" not in samples and "train_steps_total" in samples


def test_gpus_of_another_cgroup_are_left_out(monkeypatch) -> None:
    """Under SLURM's cgroups NVML counts every GPU but may not open the others (NoPermission)."""
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    nvml = FakeNvml(count=4, denied=(0, 1))
    assert utilization(nvml) == {"2": 0.5, "3": pytest.approx(0.33)}
    assert utilization(nvml, bus_ids=[nvml.bus_ids[2], nvml.bus_ids[0]]) == {"0": 0.5}


def test_cuda_indices_are_mapped_to_nvml_devices_by_pci_bus_id(monkeypatch) -> None:
    """CUDA_VISIBLE_DEVICES=2,3 is CUDA's 0 and 1; with CUDA's fastest-first order its device
    0 may be NVML's 3. The series follow CUDA's PCI bus ids, labelled as TensorFlow's GPU:N."""
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2,3")
    nvml = FakeNvml(count=4)
    got = utilization(nvml, bus_ids=[nvml.bus_ids[3], nvml.bus_ids[2]])
    assert got == {"0": pytest.approx(0.33), "1": pytest.approx(0.50)}


def test_gpus_named_by_uuid_are_looked_up_by_uuid(monkeypatch) -> None:
    """Without the CUDA driver to ask, UUIDs in CUDA_VISIBLE_DEVICES are found by UUID."""
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "GPU-8a7c-3,GPU-8a7c-1")
    assert utilization(FakeNvml(count=4), bus_ids=None) == {
        "0": pytest.approx(0.33),
        "1": pytest.approx(0.12),
    }


def test_a_mig_instance_is_reported_as_itself_not_as_its_parent_gpu() -> None:
    """Issue 33: under MIG a CUDA device has its parent's PCI bus id, so by bus id the series
    described the whole GPU. It is looked up by its MIG UUID first; a whole GPU (no MIG entry,
    or a UUID NVML does not know as a MIG) still by bus id."""

    class MigNvml(FakeNvml):
        def nvmlDeviceGetHandleByUUID(self, uuid: str) -> int:
            if uuid == "MIG-5e1f":
                return 3  # the instance's own handle: its memory, no utilisation
            raise self.NVMLError("Not Found")

        def nvmlDeviceGetUtilizationRates(self, handle: int):
            if handle == 3:
                raise self.NVMLError("Not Supported")
            return super().nvmlDeviceGetUtilizationRates(handle)

    nvml = MigNvml(count=2)
    parent = nvml.bus_ids[0]  # both instances of GPU 0 share its bus id
    collector = GpuCollector(
        nvml,
        {"run": "R"},
        find_bus_ids=lambda: [parent, nvml.bus_ids[1]],
        find_mig_uuids=lambda: ["MIG-5e1f", "MIG-0000"],
    )
    families = {family.name: family for family in collector.collect()}
    memory = {s.labels["gpu"]: s.value for s in families["gpu_memory_used_bytes"].samples}
    assert memory == {"0": 30 * 2**30, "1": 10 * 2**30}  # the instance's 30, not GPU 0's 60
    busy = {s.labels["gpu"]: s.value for s in families["gpu_utilization_ratio"].samples}
    assert busy == {"1": pytest.approx(0.12)}  # an instance's utilisation is not the parent's
    uuids = {s.labels["gpu"]: s.labels["uuid"] for s in families["gpu_memory_used_bytes"].samples}
    assert uuids == {"0": "GPU-8a7c-3", "1": "GPU-8a7c-1"}


class FakeLibcuda:
    """The six libcuda calls the GPU series and the batch finder ask, for two devices; `status`
    is cuInit's answer."""

    def __init__(self, status: int = 0, uuids: bool = True) -> None:
        self.status = status
        if uuids:
            self.cuDeviceGetUuid_v2 = self._uuid

    def cuInit(self, flags: int) -> int:
        return self.status

    def cuDeviceGetCount(self, count) -> int:
        count._obj.value = 2
        return 0

    def cuDeviceGet(self, device, index: int) -> int:
        device._obj.value = index
        return 0

    def cuDeviceGetPCIBusId(self, text, size: int, device) -> int:
        text.value = f"00000000:{0x19 + 0x20 * device.value:02X}:00.0".encode()
        return 0

    def _uuid(self, raw, device) -> int:
        raw.raw = bytes([device.value + 1]) * 16
        return 0

    def cuDeviceTotalMem_v2(self, size, device) -> int:
        size._obj.value = (80 - 40 * device.value) * 2**30
        return 0


def test_cuda_devices_are_asked_in_cudas_order_through_one_walk(monkeypatch) -> None:
    """Bus ids and MIG names come from the same walk over CUDA's devices: in its order, none on a
    machine without a device, None where the driver lacks the call (an old driver: no MIG)."""
    monkeypatch.setattr(gpu_module.ctypes, "CDLL", lambda name: FakeLibcuda())
    assert gpu_module.cuda_bus_ids() == ["00000000:19:00.0", "00000000:39:00.0"]
    assert gpu_module.cuda_mig_uuids() == [
        "MIG-01010101-0101-0101-0101-010101010101",
        "MIG-02020202-0202-0202-0202-020202020202",
    ]
    assert gpu_module.cuda_memory_bytes() == [80 * 2**30, 40 * 2**30]
    monkeypatch.setattr(gpu_module.ctypes, "CDLL", lambda name: FakeLibcuda(status=100))
    assert gpu_module.cuda_bus_ids() == []
    assert gpu_module.cuda_memory_bytes() == []
    monkeypatch.setattr(gpu_module.ctypes, "CDLL", lambda name: FakeLibcuda(uuids=False))
    assert gpu_module.cuda_mig_uuids() is None


def test_only_the_gpus_this_process_may_use_are_reported() -> None:
    assert visible_indices(4, "2,0") == [2, 0]
    assert visible_indices(2, "0,5") == [0]
    assert visible_indices(2, "") == []
    assert visible_indices(3, "GPU-8a7c,GPU-11f2") == [0, 1, 2]
    collector = GpuCollector(FakeNvml(), {"run": "R", "task": "chief/0"}, lambda: None)
    assert collector.nvml.nvmlDeviceGetCount() == 2


class FakeAllocator:
    """TensorFlow's get_memory_info / reset_memory_stats for two GPUs; GPU:2 is gone."""

    def __init__(self) -> None:
        self.info = {
            "GPU:0": {"current": 30e9, "peak": 70e9},
            "GPU:1": {"current": 5e9, "peak": 9e9},
        }

    def memory_info(self, device: str) -> dict[str, float]:
        if device not in self.info:
            raise ValueError(f"No such device: {device}")
        return dict(self.info[device])

    def reset(self, device: str) -> None:
        self.info[device]["peak"] = self.info[device]["current"]


def test_tensorflows_own_memory_count_is_served_and_its_peak_resets_per_scrape(
    monkeypatch,
) -> None:
    """Issue 33: GpuMemoryNearFull read NVML's used memory, which memory growth never gives back,
    so it fired on every batch_size=auto run. The allocator's count is served per GPU: its peak
    since the last scrape, then the current count after the reset; a GPU that raises is left out."""
    allocator = FakeAllocator()
    monkeypatch.setattr(exporter_module, "load_nvml", lambda: None)
    monkeypatch.setattr(
        exporter_module,
        "tensorflow_memory",
        lambda labels: gpu_module.TensorFlowMemoryCollector(
            labels, ["GPU:0", "GPU:1", "GPU:2"], allocator.memory_info, allocator.reset
        ),
    )
    exporter = Exporter(free_port(), "127.0.0.1", run="R", task="chief/0", chief=True)
    exporter.start({"model": "m", "strategy": "S", "precision": "p"}, epochs=1, epoch=0)
    try:
        first, second = scrape(exporter.url), scrape(exporter.url)
    finally:
        exporter.close()

    def by_gpu(samples: dict, name: str) -> dict[str, float]:
        return {sample.labels["gpu"]: sample.value for sample in samples[name]}

    assert by_gpu(first, "tf_gpu_memory_peak_bytes") == {"0": 70e9, "1": 9e9}
    assert by_gpu(second, "tf_gpu_memory_peak_bytes") == {"0": 30e9, "1": 5e9}
    assert by_gpu(second, "tf_gpu_memory_in_use_bytes") == {"0": 30e9, "1": 5e9}
    assert first["tf_gpu_memory_peak_bytes"][0].labels["run"] == "R"


def test_tensorflow_memory_is_asked_only_of_a_loaded_tensorflow_with_gpus(monkeypatch) -> None:
    """Never imports TensorFlow (the exporter is built in processes that may not have it), and a
    CPU-only TensorFlow gives no series rather than zeros."""
    monkeypatch.delitem(sys.modules, "tensorflow", raising=False)
    assert gpu_module.tensorflow_memory({"run": "R"}) is None
    assert "tensorflow" not in sys.modules
    allocator = FakeAllocator()
    names = ["/job:localhost/replica:0/task:0/device:GPU:0", "/device:GPU:1"]
    fake = SimpleNamespace(
        config=SimpleNamespace(
            list_logical_devices=lambda kind: [SimpleNamespace(name=n) for n in names],
            experimental=SimpleNamespace(
                get_memory_info=allocator.memory_info, reset_memory_stats=allocator.reset
            ),
        )
    )
    monkeypatch.setitem(sys.modules, "tensorflow", fake)
    collector = gpu_module.tensorflow_memory({"run": "R"})
    assert collector is not None and collector.devices == ["GPU:0", "GPU:1"]
    fake.config.list_logical_devices = lambda kind: []
    assert gpu_module.tensorflow_memory({"run": "R"}) is None
