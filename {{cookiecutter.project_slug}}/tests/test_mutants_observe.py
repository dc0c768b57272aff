"""Watching a run, at the edges of each rule and word for word where a user reads it: the
input-wait summary and verdict, the profile window (when the profiler starts, what the summary
says), the live-report calls' edges, and the metrics endpoint's refusals.

test_observe.py checks each piece on typical values; these sit on the limits.
"""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from helpers import free_port
from test_observe import FakeNvml

from {{ cookiecutter.package_name }}.observe import (
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
    CUPTI_NOTE,
    ObserveError,
    Profiler,
    check_window,
    cupti_note,
    report_chunks,
)

NO_STEP = "No training step ran in this call, so there is no input-wait measurement."


def test_the_summary_holds_each_number_under_its_name() -> None:
    history = [{"seconds": 0.5, "input_wait_seconds": 0.123456}]
    assert input_wait_summary(history, skip_first=False) == {
        "input_wait_fraction": pytest.approx(0.246912),
        "input_wait_seconds": 0.1235,
        "input_wait_epochs": 1,
        "input_bound": False,
        "input_verdict": "not input-bound: 25% of each training step waits for data "
        "(input-bound from 30%).",
    }
    assert input_wait_summary([], skip_first=True) == {
        "input_wait_fraction": None,
        "input_wait_seconds": None,
        "input_wait_epochs": 0,
        "input_bound": None,
        "input_verdict": NO_STEP,
    }


def test_of_two_epochs_the_tracing_one_is_left_out() -> None:
    history = [
        {"seconds": 10.0, "input_wait_seconds": 9.0},
        {"seconds": 1.0, "input_wait_seconds": 0.1},
        {"seconds": 1.0, "input_wait_seconds": None},  # not measured: not an epoch here
    ]
    summary = input_wait_summary(history, skip_first=True)
    assert (summary["input_wait_fraction"], summary["input_wait_epochs"]) == (
        pytest.approx(0.1),
        1,
    )


def test_a_share_exactly_at_the_line_is_input_bound() -> None:
    summary = input_wait_summary([{"seconds": 1.0, "input_wait_seconds": 0.3}], skip_first=False)
    assert summary["input_bound"] is True
    assert summary["input_verdict"] == (
        "input-bound: 30% of each training step waits for data — see 01_data's pipeline knobs "
        "(parallel reads and maps, prefetch, cache, more shards) before buying a faster "
        "accelerator."
    )


def test_no_step_is_said_so() -> None:
    assert verdict(None) == NO_STEP


@pytest.mark.parametrize(("value", "window"), [("1,3", (1, 3)), ("1", (1, 1)), (1, (1, 1))])
def test_a_window_from_the_first_step_is_allowed(value, window) -> None:
    assert parse_profile_steps(value) == window


def test_a_bad_window_is_refused_saying_what_is_allowed() -> None:
    with pytest.raises(ObserveError) as error:
        parse_profile_steps("0,3")
    assert str(error.value) == (
        "profile_steps='0,3' is not allowed: use two step numbers 'first,last' with "
        "1 <= first <= last (e.g. '5,8'), one step ('5'), or '' for no profile."
    )


def test_a_window_beyond_the_run_names_both_its_ends() -> None:
    with pytest.raises(ObserveError) as error:
        check_window((2, 41), 40, 2)
    assert str(error.value) == (
        "profile_steps=2,41 is outside this run's steps: it trains 40 step(s) (2 epoch(s) left), "
        "counted from 1; choose a window within 1..40, after the first step, which traces the "
        "graph."
    )


def test_without_live_reports_a_long_epoch_is_one_call() -> None:
    assert report_chunks(120, 1, set(), live=False) == [120]


@pytest.mark.parametrize(
    ("cuts", "chunks"),
    [
        ({21}, [21, 1]),  # a cut one step before the epoch's last
        ({22}, [22]),  # a cut at the last step: the call ends there anyway
        ({23}, [22]),  # a cut in the next epoch never stretches this one
    ],
)
def test_a_cut_near_the_end_of_a_call(cuts: set[int], chunks: list[int]) -> None:
    assert report_chunks(22, 1, cuts, live=False) == chunks


@pytest.fixture
def profiled(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list:
    """tf.profiler's start and stop recorded (stop writes a trace without a GPU plane under
    tmp_path), on a machine whose only devices are GPUs."""
    import tensorflow as tf
    from tensorflow.tsl.profiler.protobuf import xplane_pb2

    calls: list = []

    def stop() -> None:
        calls.append("stop")
        folder = tmp_path / "plugins" / "profile" / "2026_12_03_10_00_00"
        folder.mkdir(parents=True)
        (folder / "host.xplane.pb").write_bytes(xplane_pb2.XSpace().SerializeToString())

    monkeypatch.setattr(tf.profiler.experimental, "start", lambda logdir: calls.append(logdir))
    monkeypatch.setattr(tf.profiler.experimental, "stop", stop)
    monkeypatch.setattr(
        tf.config, "list_logical_devices", lambda kind=None: ["GPU:0"] if kind == "GPU" else []
    )
    return calls


def test_the_calls_are_cut_before_and_at_the_window(tmp_path: Path) -> None:
    assert Profiler((2, 4), tmp_path, enabled=True).cuts() == {1, 4}
    assert Profiler(None, tmp_path, enabled=True).cuts() == set()


def test_the_profiler_starts_at_the_windows_first_step_only(profiled: list, tmp_path) -> None:
    profiler = Profiler((2, 3), tmp_path, enabled=True)
    profiler.before(1)
    assert profiled == []
    profiler.before(2)
    profiler.before(2)  # running already
    assert profiled == [str(tmp_path)]
    Profiler((2, 3), tmp_path, enabled=False).before(2)  # not the chief
    Profiler(None, tmp_path, enabled=True).before(2)  # no window
    assert profiled == [str(tmp_path)]


def test_a_window_never_started_is_never_traced(profiled: list, tmp_path) -> None:
    profiler = Profiler((2, 3), tmp_path, enabled=False)
    profiler.after(3)
    assert profiled == []
    assert profiler.summary() == {"steps": None, "logdir": None, "note": None}
    assert Profiler(None, tmp_path, enabled=True).summary() == {
        "steps": None,
        "logdir": None,
        "note": None,
    }


def test_a_gpu_trace_is_read_back_for_its_kernels(profiled: list, tmp_path: Path) -> None:
    """A machine with a GPU (asked for by that name): the trace, which has no GPU kernel, is
    read back and the summary says why."""
    profiler = Profiler((2, 3), tmp_path, enabled=True)
    profiler.before(2)
    profiler.after(3)
    profiler.after(4)  # stopped already
    assert profiled == [str(tmp_path), "stop"]
    summary = profiler.summary()
    assert (summary["steps"], summary["logdir"]) == ([2, 3], str(tmp_path))
    assert summary["note"] == CUPTI_NOTE


@pytest.mark.parametrize("port", [1024, 65535])
def test_the_ends_of_the_port_range_are_allowed(port: int) -> None:
    try:
        check_port(port, "127.0.0.1")
    except ObserveError as error:
        if "is in use" not in str(error):
            raise
        pytest.skip(f"port {port} is taken on this machine")


def test_an_empty_host_is_refused_saying_what_to_use() -> None:
    with pytest.raises(ObserveError) as error:
        check_port(9464, " ")
    assert str(error.value) == (
        "metrics_host=' ' is not allowed: use an address to listen on, e.g. 127.0.0.1 "
        "(this machine only) or 0.0.0.0 (every interface)."
    )


def test_a_host_that_cannot_be_resolved_is_said_in_the_resolvers_words() -> None:
    with pytest.raises(ObserveError) as error:
        check_port(9464, "no-such-host.invalid")
    message = str(error.value)
    assert message.startswith("metrics_host='no-such-host.invalid' with metrics_port=9464 cannot")
    assert "Errno" not in message  # the reason's words, not the exception's repr


@pytest.fixture
def exporter(monkeypatch: pytest.MonkeyPatch):
    """A chief's exporter, not serving: its registry read directly."""
    monkeypatch.setattr(exporter_module, "load_nvml", lambda: None)
    return Exporter(9464, "127.0.0.1", run="R", task="chief/0", chief=True)


def _value(exporter, name: str) -> float | None:
    return exporter.registry.get_sample_value(name, {"run": "R", "task": "chief/0"})


@pytest.mark.parametrize(("steps", "seconds"), [(0, 1.0), (4, 0.0), (-1, 1.0), (4, -1.0)])
def test_a_call_without_steps_or_time_reports_nothing(exporter, steps: int, seconds: float):
    exporter.report_steps(steps, seconds, 0.1, 64.0, (1.0, 0.5))
    assert _value(exporter, "train_steps_total") == 0
    assert _value(exporter, "train_step_seconds") is None


def test_one_step_is_reported_and_the_wait_share_is_at_most_1(exporter) -> None:
    exporter.report_steps(1, 1.0, 1.5, 64.0, (1.25, 0.5))
    assert _value(exporter, "train_steps_total") == 1
    assert _value(exporter, "train_input_wait_ratio") == 1.0
    assert (_value(exporter, "train_loss"), _value(exporter, "train_accuracy")) == (1.25, 0.5)


def test_the_visible_gpus_are_read_from_the_environment(monkeypatch) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")
    assert visible_indices(4) == [1]
    assert visible_indices(2, "0,2") == [0]  # 2 is not a GPU of two


class _Named(FakeNvml):
    """GPUs whose names differ; GPU 1 will not say its name or UUID."""

    def nvmlDeviceGetName(self, handle: int) -> bytes:
        if handle == 1:
            raise self.NVMLError("Not Supported")
        return f"GPU model {handle}".encode()

    def nvmlDeviceGetUUID(self, handle: int) -> str:
        if handle == 1:
            raise self.NVMLError("Not Supported")
        return super().nvmlDeviceGetUUID(handle)


def _labels(nvml, monkeypatch, visible: str | None) -> list[tuple[str, str, str]]:
    if visible is None:
        monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    else:
        monkeypatch.setenv("CUDA_VISIBLE_DEVICES", visible)
    collector = GpuCollector(nvml, {"run": "R"}, find_bus_ids=lambda: None)
    family = next(f for f in collector.collect() if f.name == "gpu_utilization_ratio")
    return [(s.labels["gpu"], s.labels["name"], s.labels["uuid"]) for s in family.samples]


def test_each_gpu_is_named_by_its_own_answer_or_unknown(monkeypatch) -> None:
    assert _labels(_Named(), monkeypatch, None) == [
        ("0", "GPU model 0", "GPU-8a7c-0"),
        ("1", "unknown", ""),
    ]


def test_a_listed_gpu_is_labelled_by_its_place_in_the_list(monkeypatch) -> None:
    """CUDA_VISIBLE_DEVICES=1: TensorFlow calls it GPU:0, so its series say gpu="0"."""
    assert _labels(_Named(count=2), monkeypatch, "1") == [("0", "unknown", "")]
    assert [gpu for gpu, _, _ in _labels(FakeNvml(count=3), monkeypatch, "2,0")] == ["0", "1"]


class _Partial(FakeNvml):
    """One GPU that will not give its utilisation or memory, and reads its core temperature only
    when asked for that sensor."""

    def nvmlDeviceGetUtilizationRates(self, handle: int):
        raise self.NVMLError("Not Supported")

    def nvmlDeviceGetMemoryInfo(self, handle: int):
        raise self.NVMLError("Not Supported")

    def nvmlDeviceGetTemperature(self, handle: int, sensor: int) -> int:
        if sensor != self.NVML_TEMPERATURE_GPU:
            raise self.NVMLError("Invalid Argument")
        return 66


def test_a_gpu_that_answers_some_queries_serves_those_series_only() -> None:
    collector = GpuCollector(_Partial(count=1), {"run": "R"}, find_bus_ids=lambda: None)
    served = {f.name: [s.value for s in f.samples] for f in collector.collect()}
    assert served == {
        "gpu_utilization_ratio": [],
        "gpu_memory_used_bytes": [],
        "gpu_memory_total_bytes": [],
        "gpu_temperature_celsius": [66.0],
        "gpu_power_watts": [550.0],
    }


HELP = {
    "train_examples_per_second": "Training examples/s",
    "train_step_seconds": "Mean seconds per training step",
    "train_input_wait_ratio": "Share of step time waiting for data",
    "train_last_step_timestamp_seconds": "Unix time of the last step",
    "train_steps": "Training steps run",
    "train": "What trains",
    "train_loss": "Training loss, running mean of the epoch",
    "train_accuracy": "Training accuracy, running, this epoch",
    "train_val_loss": "Validation loss of the last epoch",
    "train_val_accuracy": "Validation accuracy, last epoch",
    "train_epoch": "Epochs completed",
    "train_epochs": "Epochs planned",
    "train_seconds_since_checkpoint": "Seconds since the last checkpoint",
}


def test_each_series_has_the_name_and_help_the_dashboards_and_alerts_read(exporter) -> None:
    families = {family.name: family.documentation for family in exporter.registry.collect()}
    assert families == HELP
    assert exporter.gpus is False


def test_an_exporter_with_gpus_serves_their_series(monkeypatch) -> None:
    monkeypatch.setattr(exporter_module, "load_nvml", lambda: FakeNvml(count=1))
    monkeypatch.setattr(gpu_module, "cuda_bus_ids", lambda: None)
    exporter = Exporter(9464, "127.0.0.1", run="R", task="worker/0", chief=False)
    assert exporter.gpus is True
    assert "gpu_utilization_ratio" in {family.name for family in exporter.registry.collect()}


def test_the_endpoint_listens_on_the_host_it_was_given_and_closes_once(monkeypatch) -> None:
    monkeypatch.setattr(exporter_module, "load_nvml", lambda: None)
    exporter = Exporter(free_port(), "127.0.0.1", run="R", task="chief/0", chief=True)
    exporter.start({"model": "m"}, epochs=1, epoch=0)
    try:
        assert exporter._server.server_address[0] == "127.0.0.1"  # not every interface
    finally:
        exporter.close()
    exporter.close()  # again: nothing left to close


def test_a_port_taken_after_the_check_is_refused_in_one_sentence(monkeypatch) -> None:
    monkeypatch.setattr(exporter_module, "load_nvml", lambda: None)
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        exporter = Exporter(port, "127.0.0.1", run="R", task="chief/0", chief=True)
        with pytest.raises(ObserveError) as error:
            exporter.start({"model": "m"}, epochs=1, epoch=0)
    assert str(error.value) == (
        f"metrics_port={port} on 127.0.0.1 could not be listened on (Address already in use): "
        "choose another port."
    )


@pytest.mark.parametrize(
    ("errors", "said"),
    [
        ([], ""),
        (["a", " b ", "a", ""], " The profiler said: a; b."),
        (["x" * 400], f" The profiler said: {'x' * 300}."),
    ],
)
def test_the_cupti_note_adds_what_the_profiler_said(tmp_path: Path, errors, said) -> None:
    from tensorflow.tsl.profiler.protobuf import xplane_pb2

    folder = tmp_path / "plugins" / "profile" / "2026_12_03_10_00_00"
    folder.mkdir(parents=True)
    space = xplane_pb2.XSpace(errors=errors)
    (folder / "host.xplane.pb").write_bytes(space.SerializeToString())
    assert cupti_note(tmp_path) == CUPTI_NOTE + said
