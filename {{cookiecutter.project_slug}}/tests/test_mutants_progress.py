"""What a user is told while work runs (counts, time left, the clock's lines), how a backend is
timed within its budget, and whose pid a run folder's lock names: the `progress` group of
`make mutate`. In-process and fast; a clock is a fake one wherever a count depends on time."""

from __future__ import annotations

import fcntl
import io
import os
import re
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from tqdm.std import tqdm

from {{ cookiecutter.package_name }} import locks, progress
from {{ cookiecutter.package_name }}.data import timing as data_timing
from {{ cookiecutter.package_name }}.optimize import timing
from {{ cookiecutter.package_name }}.progress import MARK
from {{ cookiecutter.package_name }}.runner import live as live_module
from {{ cookiecutter.package_name }}.runner.live import SLOW_CELL, NotebookProgress


@pytest.fixture(autouse=True)
def own_tqdm_lock(monkeypatch: pytest.MonkeyPatch) -> None:
    """tqdm's default lock holds a multiprocessing semaphore, shared by every process forked
    from the one that made it, as mutmut's runs of one mutant after another are: one stopped
    while holding it hung every later one. Here each test has a thread lock of its own, and no
    monitor thread (which could hold the lock when a process is forked)."""
    monkeypatch.setattr(tqdm, "_lock", threading.RLock(), raising=False)
    monkeypatch.setattr(tqdm, "monitor_interval", 0)


class FakeClock:
    """perf_counter for optimize.timing: each predict call moves it by `step` seconds."""

    def __init__(self, step: float = 1.0) -> None:
        self.now, self.step = 0.0, step

    def perf_counter(self) -> float:
        return self.now


def fake_backend(clock: FakeClock, seen: list[int]):
    def predict(batch: np.ndarray) -> np.ndarray:
        seen.append(len(batch))
        clock.now += clock.step
        return batch

    return predict


# progress: the count, the time left, the clock's lines


def test_a_task_with_nothing_counted_yet_tells_its_count_and_time_but_no_time_left() -> None:
    """No item done: no speed, so no time left (and no division by zero in the clock)."""
    task = progress.Task("Epoch 1/4", 17, "step", shown=False)
    task.started = time.perf_counter() - 3.2
    assert task.status() == "Epoch 1/4: 0/17 step(s), 3 s"
    resumed = progress.Task("Epoch 2/4", 17, "step", shown=False, start=7)
    resumed.started = time.perf_counter() - 3.2
    assert resumed.status() == "Epoch 2/4: 7/17 step(s), 3 s"


def test_the_time_left_is_the_speed_so_far_times_what_is_left() -> None:
    """2 of 10 in 10 s: 5 s an item, 8 left, ~40 s; one item done is enough to tell it."""
    task = progress.Task("Shards", 10, "shard", shown=False)
    task.started = time.perf_counter() - 10.0
    task.update(2)
    task.note("shard 3")
    assert task.status() == "Shards: 2/10 shard(s), 10 s, ~40 s left (shard 3)"
    one = progress.Task("Shards", 4, "shard", shown=False)
    one.started = time.perf_counter() - 2.0
    one.update()
    assert one.status() == "Shards: 1/4 shard(s), 2 s, ~6 s left"


def test_a_finished_or_uncounted_task_tells_no_time_left() -> None:
    done = progress.Task("Shards", 4, "shard", shown=False)
    done.started = time.perf_counter() - 2.2
    done.update(4)
    assert done.status() == "Shards: 4/4 shard(s), 2 s"
    endless = progress.Task("Trials", None, "trial", shown=False)
    endless.started = time.perf_counter() - 2.2
    endless.update(3)
    assert endless.status() == "Trials: 3 trial(s), 2 s"
    timed = progress.Task("Loading TensorFlow", unit="", shown=False)
    timed.started = time.perf_counter() - 2.2
    assert timed.status() == "Loading TensorFlow: 2 s"


def test_the_clock_keeps_printing_while_nothing_is_counted(monkeypatch, capsys) -> None:
    """A first training chunk that runs long: its clock lines say 0/4 and come on (the clock
    thread must not die on the missing speed)."""
    monkeypatch.setenv(progress.PROGRESS_ENV, "lines")
    monkeypatch.setattr(progress, "LINE_EVERY", 0.05)
    with progress.task("Epoch 1/2", total=4, unit="step") as work:
        work.note("chunk 1")
        time.sleep(0.4)
        work.update(4)
    lines = capsys.readouterr().out.splitlines()
    clock = lines[:-1]
    assert len(clock) >= 2, lines
    said = re.escape(progress.MARK) + r"Epoch 1/2: 0/4 step\(s\), \d+ s \(chunk 1\)"
    assert all(re.fullmatch(said, text) for text in clock), clock
    assert lines[-1].startswith(f"{progress.MARK}Epoch 1/2: 4/4 step(s) in ")


def test_the_summary_line_says_the_count_the_time_and_what_was_done(monkeypatch, capsys) -> None:
    monkeypatch.setenv(progress.PROGRESS_ENV, "lines")
    with progress.task("Search", total=3, unit="trial") as work:
        work.update(2)
        work.done = "best 0.91"
    with progress.task("Export", unit="", summary=True):
        pass
    with progress.task("Quiet", total=2, summary=False) as work:
        work.update(2)
    with progress.task("Hidden", total=2, shown=False) as work:
        work.update(2)
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2, lines
    assert lines[0].startswith(f"{progress.MARK}Search: 2/3 trial(s) in 0.")
    assert lines[0].endswith(" s; best 0.91")
    assert lines[1].startswith(f"{progress.MARK}Export: done in 0.") and lines[1].endswith(" s")


def test_a_task_closed_twice_prints_its_summary_once(monkeypatch, capsys) -> None:
    monkeypatch.setenv(progress.PROGRESS_ENV, "lines")
    work = progress.task("Convert", total=1)
    work.update()
    work.close()
    work.close()
    assert len(capsys.readouterr().out.splitlines()) == 1


def test_a_line_over_a_bar_clears_it_first_and_the_bar_is_drawn_again(monkeypatch, capsys) -> None:
    monkeypatch.setenv(progress.PROGRESS_ENV, "bar")
    with progress.task("Shards", total=3, unit="shard") as work:
        work.update()
        capsys.readouterr()
        progress.line("a note")
        out = capsys.readouterr().out
        cleared = r"\r( +)\r" + re.escape(f"{progress.MARK}a note\n")
        assert re.match(cleared, out) and len(re.match(cleared, out)[1]) >= len("Shards: "), out
        assert "Shards" in out.split("\n", 1)[1]  # redrawn under the line
    assert progress._BARS == []
    capsys.readouterr()
    progress.line("plain")
    assert capsys.readouterr().out == f"{progress.MARK}plain\n"


@pytest.mark.parametrize(
    ("chosen", "tty", "expected"),
    [("lines", True, False), (" BAR ", False, True), ("", True, True), ("", False, False)],
)
def test_bars_follow_the_setting_then_the_terminal(monkeypatch, chosen, tty, expected) -> None:
    monkeypatch.setenv(progress.PROGRESS_ENV, chosen)
    out = io.StringIO()
    out.isatty = lambda: tty  # type: ignore[method-assign]
    monkeypatch.setattr(progress.sys, "stdout", out)
    assert progress.bars() is expected


def test_track_counts_what_it_can_and_not_what_it_cannot(monkeypatch, capsys) -> None:
    monkeypatch.setenv(progress.PROGRESS_ENV, "lines")
    assert list(progress.track(iter("ab"), what="Letters", unit="letter")) == ["a", "b"]
    assert list(progress.track("abc", total=5, what="Given", unit="letter")) == ["a", "b", "c"]
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith(f"{progress.MARK}Letters: 2 letter(s) in ")
    assert lines[1].startswith(f"{progress.MARK}Given: 3/5 letter(s) in ")
    assert progress._length([1, 2]) == 2 and progress._length(iter([])) is None


class Beats:
    """A task's stop event that is set after `beats` waits, recording each wait's seconds."""

    def __init__(self, beats: int) -> None:
        self.beats, self.waits = beats, []

    def wait(self, seconds: float) -> bool:
        self.waits.append(round(seconds, 6))
        return len(self.waits) > self.beats

    def is_set(self) -> bool:
        return True


class Redraws:
    drawn = 0

    def refresh(self) -> None:
        self.drawn += 1


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def perf_counter(self) -> float:
        return self.now


def test_the_clock_beats_on_a_fixed_grid_and_prints_a_line_each_beat(monkeypatch, capsys) -> None:
    """Line mode: a line at 9.5 s, 19 s, 28.5 s after the start, whatever the lines cost; a beat
    already past is printed at once. Bar mode: a redraw each second, no line."""
    monkeypatch.setattr(progress, "time", Clock(5.0))
    task = progress.Task("Epoch 1/2", 4, "step", shown=False)
    task.started, task._stop = 0.0, Beats(2)
    task._tick()
    assert task._stop.waits == [4.5, 14.0, 23.5]
    assert capsys.readouterr().out.splitlines() == [f"{MARK}Epoch 1/2: 0/4 step(s), 5 s"] * 2
    task._stop = Beats(1)
    task.started = -30.0  # two beats already past
    task._tick()
    assert task._stop.waits == [0.0, 0.0]
    assert capsys.readouterr().out == f"{MARK}Epoch 1/2: 0/4 step(s), 35 s\n"
    bar = progress.Task("Convert", 1, shown=False)
    bar.started, bar._stop, bar.bar = 0.0, Beats(3), Redraws()
    bar._tick()
    assert bar._stop.waits == [0.0, 0.0, 0.0, 0.0]  # 1 s beats, all past at 5 s
    assert bar.bar.drawn == 3 and capsys.readouterr().out == ""
    monkeypatch.setattr(progress, "time", Clock(0.0))
    bar.started, bar._stop = 0.0, Beats(2)
    bar._tick()
    assert bar._stop.waits == [1.0, 2.0, 3.0]
    monkeypatch.setattr(progress, "LINE_EVERY", 0.0)
    fast = progress.Task("Fast", shown=False)
    fast.started, fast._stop = 0.0, Beats(0)
    fast._tick()
    assert fast._stop.waits == [0.01]  # never a busy loop


def test_defaults_count_items_shown_with_a_summary(monkeypatch, capsys) -> None:
    monkeypatch.setenv(progress.PROGRESS_ENV, "lines")
    assert list(progress.track(["a", "b"])) == ["a", "b"]
    with progress.Task("Direct", 2) as work:
        work.update(2)
    with progress.task("Made", 3) as work:
        work.update()
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith(f"{progress.MARK}: 2/2 item(s) in ")
    assert lines[1].startswith(f"{progress.MARK}Direct: 2/2 item(s) in ")
    assert lines[2].startswith(f"{progress.MARK}Made: 1/3 item(s) in ")
    resumed = progress.task("Epoch 2/4", 17, "step", shown=False, start=7)
    assert resumed.count == resumed.start == 7


def test_a_task_ended_by_an_error_says_stopped_or_failed(monkeypatch, capsys) -> None:
    monkeypatch.setenv(progress.PROGRESS_ENV, "lines")
    with pytest.raises(KeyboardInterrupt), progress.task("Loading", unit=""):
        raise KeyboardInterrupt
    with pytest.raises(ValueError), progress.task("Loading", unit=""):
        raise ValueError("boom")
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith(f"{progress.MARK}Loading: stopped in ")
    assert lines[1].startswith(f"{progress.MARK}Loading: failed in ")


def test_a_bar_shows_the_count_of_its_total_or_only_the_time_and_what_runs(
    monkeypatch, capsys
) -> None:
    monkeypatch.setenv(progress.PROGRESS_ENV, "bar")
    with progress.task("Shards", total=3, unit="shard") as work:
        work.update()
        capsys.readouterr()
        work.note("shard 2 " + "x" * 70)
        assert work.bar.postfix == ("shard 2 " + "x" * 70)[:60]
        assert ("shard 2 " + "x" * 52) in capsys.readouterr().out  # drawn at once
        assert str(work.bar).startswith("Shards:  33%|") and " 1/3 [" in str(work.bar)
    with progress.task("Loading TensorFlow", unit="") as work:
        assert re.fullmatch(r"Loading TensorFlow: 00:0\d", str(work.bar)), str(work.bar)


# optimize.timing: calls, the time budget and its minimum, batches


def test_the_time_budget_never_ends_timing_before_min_calls(monkeypatch) -> None:
    """A backend slower than the whole budget still gets MIN_CALLS (3) timed calls."""
    clock, seen = FakeClock(), []
    monkeypatch.setattr(timing, "time", clock)
    times = timing.timed_calls(fake_backend(clock, seen), np.zeros((1, 2)), 500, 0.5)
    assert times == [1.0, 1.0, 1.0] and len(seen) == 3
    assert timing.MIN_CALLS == 3


def test_timing_ends_once_the_budget_is_spent_or_the_count_reached(monkeypatch) -> None:
    """1 s a call: a 5 s budget gives 5 calls (not a sixth after it is spent); 4 calls asked
    for give 4, whatever the budget; fewer than MIN_CALLS asked for give that many."""
    clock, seen = FakeClock(), []
    clock.now = 100.0  # the budget counts from when timing starts, not from 0
    monkeypatch.setattr(timing, "time", clock)
    predict = fake_backend(clock, seen)
    assert len(timing.timed_calls(predict, np.zeros((1, 2)), 500, 5.0)) == 5
    assert len(timing.timed_calls(predict, np.zeros((1, 2)), 4, float("inf"))) == 4
    assert len(timing.timed_calls(predict, np.zeros((1, 2)), 2, 0.0)) == 2


def test_a_batch_larger_than_the_images_is_timed_at_its_full_size(monkeypatch) -> None:
    """3 images, batch 5: every call predicts 5 images (the images repeated), so the throughput
    is 5 images over the median call, not 3 (a short batch would look up to twice as fast)."""
    clock, seen = FakeClock(0.5), []
    monkeypatch.setattr(timing, "time", clock)
    images = np.arange(3 * 2).reshape(3, 2)
    heard: list[str] = []
    timed = timing.benchmark(fake_backend(clock, seen), images, [1, 5, 2], 4, now=heard.append)
    assert heard == ["batch 1", "batch 5", "batch 2"]
    assert seen == [1] * 9 + [5] * 9 + [2] * 9  # WARMUP 5 untimed calls, then 4 timed
    assert timed["calls"] == {"1": 4, "5": 4, "2": 4}
    assert timed["throughput"] == {"1": 2.0, "5": 10.0, "2": 4.0}
    assert timed["timings_ms"]["5"] == [500.0] * 4
    assert timed["latency_ms"]["5"] == {"p50": 500.0, "p99": None}
    assert timed["p50_ms"] == 500.0 and timed["p99_ms"] is None
    np.testing.assert_array_equal(timing._batch(images, 5), images[[0, 1, 2, 0, 1]])
    np.testing.assert_array_equal(timing._batch(images, 3), images)
    assert timing._batch(images, 2).flags["C_CONTIGUOUS"]


def test_call_times_are_kept_in_ms_to_a_tenth_of_a_microsecond_and_p99_from_100(
    monkeypatch,
) -> None:
    clock = FakeClock(0.000123456789)
    monkeypatch.setattr(timing, "time", clock)
    timed = timing.benchmark(fake_backend(clock, []), np.zeros((2, 2)), [1], 100)
    assert set(timed["timings_ms"]["1"]) == {0.1235}
    assert timed["p99_ms"] == pytest.approx(0.123456789) and timed["calls"] == {"1": 100}


def test_without_batch_1_there_is_no_batch_1_latency(monkeypatch) -> None:
    clock = FakeClock(0.25)
    monkeypatch.setattr(timing, "time", clock)
    timed = timing.benchmark(fake_backend(clock, []), np.zeros((2, 2)), [2], 3)
    assert timed["p50_ms"] is None and timed["p99_ms"] is None
    assert timing.WARMUP == 5


def test_p50_and_p99_in_ms_and_p99_only_from_a_hundred_calls() -> None:
    calls = [0.001 * (i + 1) for i in range(100)]
    figures = timing.percentiles(calls)
    assert figures["p50"] == pytest.approx(50.5) and figures["p99"] == pytest.approx(99.01)
    assert timing.percentiles(calls[:99]) == {"p50": pytest.approx(50.0), "p99": None}


def test_latency_text_says_the_calls_and_why_there_is_no_p99() -> None:
    line = {
        "latency_ms": {"1": {"p50": 0.1234, "p99": 0.31}, "4": {"p50": 0.5, "p99": None}},
        "calls": {"1": 400, "4": 20},
    }
    assert timing.latency_text(line) == "p50 0.123 ms, p99 0.31 ms from 400 calls"
    assert timing.latency_text(line, "4") == "p50 0.5 ms from 20 calls (too few for a p99)"
    assert timing.latency_text(line, "8") == "-"
    old = {"p50_ms": 0.2, "p99_ms": 0.4}  # a line written before latency_ms and calls
    assert timing.latency_text(old) == "p50 0.2 ms, p99 0.4 ms"
    assert timing.latency_text(old, "4") == "-"
    assert timing.latency_text({"p50_ms": 0.2}) == "p50 0.2 ms (too few for a p99)"
    # batch 4 without a p99 of its own does not borrow batch 1's
    mixed = {"latency_ms": {"4": {"p50": 0.5}}, "p99_ms": 0.9}
    assert timing.latency_text(mixed, "4") == "p50 0.5 ms (too few for a p99)"


def test_best_ratios_pick_the_fastest_backend_with_parity() -> None:
    baselines = [{"name": timing.PREDICT, "p50_ms": 3.0}, {"name": "savedmodel", "p50_ms": 1.0}]
    entries = [
        {"name": "onnx", "precision": "fp32", "status": "ran", "parity_ok": True, "p50_ms": 0.5},
        {"name": "onnx", "precision": "int8", "status": "ran", "parity_ok": False, "p50_ms": 0.1},
        {"name": "trt", "precision": "fp16", "status": "failed", "parity_ok": True, "p50_ms": 0.2},
        {"name": "tfl", "precision": "fp16", "status": "ran", "parity_ok": True, "p50_ms": 0.8},
    ]
    assert timing.best_ratios(baselines, entries) == {
        "best_backend": "onnx (fp32)",
        "best_vs_savedmodel_batch1": 2.0,
        "predict_overhead_ms": 2.0,
    }
    assert timing.best_ratios(baselines[:1], entries[:1]) == {
        "best_backend": "onnx (fp32)",
        "best_vs_savedmodel_batch1": None,
        "predict_overhead_ms": None,
    }
    assert timing.best_ratios(baselines, entries[1:3]) == {
        "best_backend": None,
        "best_vs_savedmodel_batch1": None,
        "predict_overhead_ms": 2.0,
    }


def test_preprocess_sentence_says_what_tokenizing_in_the_export_costs() -> None:
    lines = [{"name": timing.RAW, "p50_ms": 1.5}, {"name": "savedmodel", "p50_ms": 0.25}]
    (sentence,) = timing.preprocess_sentences({"baselines": lines})
    assert sentence == (
        "serving_default on raw input takes p50 1.500 ms at batch 1, the model's own signature "
        "0.250 ms: the preprocessing inside the export (tokenization) costs about 1.250 ms a call. "
        "The compiled backends (ONNX and others) run the model's signature, so a server using "
        "them tokenizes in front of them and pays that cost there."
    )
    assert timing.preprocess_sentences({"baselines": lines[1:]}) == []
    assert timing.preprocess_sentences({"baselines": lines[:1]}) == []
    assert timing.preprocess_sentences({}) == []


# locks: one writer, and the pid a refused caller is told


def test_the_lock_file_names_the_holder_not_an_earlier_dead_pid(tmp_path: Path) -> None:
    """A lock file left by runs long gone (two pids in it) is rewritten, not appended to."""
    lock = tmp_path / "run" / ".run.lock"
    lock.parent.mkdir()
    lock.write_text("999999\n888888\n", encoding="utf-8")
    with locks.held(lock):
        assert lock.read_text(encoding="utf-8") == f"{os.getpid()}\n"
        assert locks.holder(lock) == os.getpid()
    fresh = tmp_path / "new" / "deeper" / ".run.lock"  # its folders are made
    with locks.held(fresh, wait=False):
        assert fresh.read_text(encoding="utf-8") == f"{os.getpid()}\n"


def test_a_held_lock_refuses_at_once_naming_the_holders_pid(tmp_path: Path) -> None:
    lock = tmp_path / ".run.lock"
    with open(lock, "a+", encoding="utf-8") as other:  # another holder (its own open file)
        fcntl.flock(other, fcntl.LOCK_EX)
        other.write("4242\n")
        other.flush()
        with pytest.raises(locks.Busy) as refused, locks.held(lock, wait=False):
            pass
        assert refused.value.pid == 4242 and refused.value.path == lock
        assert str(refused.value) == f"{lock} is held by pid 4242"
        other.truncate(0)
        with pytest.raises(locks.Busy) as unknown, locks.held(lock, wait=False):
            pass
        assert unknown.value.pid is None
        assert str(unknown.value) == f"{lock} is held by pid unknown"
        assert lock.read_text(encoding="utf-8") == ""  # a refused caller writes nothing


def test_a_lock_is_free_again_once_its_block_ends(tmp_path: Path) -> None:
    lock = tmp_path / ".run.lock"
    with locks.held(lock), open(lock, encoding="utf-8") as other, pytest.raises(BlockingIOError):
        fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
    with open(lock, encoding="utf-8") as other:
        fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)  # free: no error


@pytest.mark.parametrize("text", ["", "\n", "pid\n", None])
def test_an_unreadable_lock_file_names_no_pid(tmp_path: Path, text: str | None) -> None:
    lock = tmp_path / ".run.lock"
    if text is not None:
        lock.write_text(text, encoding="utf-8")
    assert locks.holder(lock) is None
    lock.write_text("  77 \n12\n", encoding="utf-8")
    assert locks.holder(lock) == 77


# data.timing: what the pipeline benchmark's rows say


class Epochs:
    """A dataset of `batches` batches of `size` labels; each batch moves `clock` by `per_batch`."""

    def __init__(self, batches: int, size: int, clock: FakeClock, end: float = 0.0) -> None:
        self.batches, self.size, self.clock, self.end = batches, size, clock, end

    def __iter__(self):
        for _ in range(self.batches):
            self.clock.now += 1.0
            yield None, np.zeros(self.size)
        self.clock.now += self.end  # the end of an epoch may cost time too


def test_a_pipeline_runs_epochs_until_its_share_is_used_and_says_the_last_was_cut() -> None:
    clock = FakeClock()
    passes = data_timing._time_epochs(Epochs(4, 8, clock), 10.0, clock.perf_counter)
    assert passes == ([32, 32, 16], [4.0, 4.0, 2.0], [4, 4, 2], True)
    clock = FakeClock()
    passes = data_timing._time_epochs(Epochs(4, 8, clock), 8.0, clock.perf_counter)
    assert passes == ([32, 32], [4.0, 4.0], [4, 4], True)  # used up on the last batch
    clock = FakeClock()
    clock.now = 100.0  # the share counts from the start of timing
    passes = data_timing._time_epochs(Epochs(4, 8, clock, end=1.0), 5.0, clock.perf_counter)
    assert passes == ([32], [5.0], [4], False)  # used up at the end of the epoch: not cut


def test_a_warm_up_stops_at_its_batches_and_an_empty_dataset_at_once() -> None:
    clock = FakeClock()
    passes = data_timing._time_epochs(Epochs(4, 8, clock), float("inf"), clock.perf_counter, 6)
    assert passes == ([32, 16], [4.0, 2.0], [4, 2], True)
    clock = FakeClock()
    passes = data_timing._time_epochs(Epochs(4, 8, clock), float("inf"), clock.perf_counter, 4)
    assert passes == ([32], [4.0], [4], True)
    clock = FakeClock()
    assert data_timing._time_epochs(Epochs(0, 8, clock), 5.0, clock.perf_counter) == (
        [0],
        [0.0],
        [0],
        False,
    )


def test_the_steady_rate_leaves_out_the_first_pass_and_a_last_one_cut_short() -> None:
    short = data_timing.MIN_BATCHES - 1
    assert data_timing._later(([8, 16, 4], [1.0, 2.0, 0.5], [1, 2, short], True)) == (
        [16],
        [2.0],
    )
    assert data_timing._later(([8, 16, 4], [1.0, 2.0, 0.5], [1, 2, short], False)) == (
        [16, 4],
        [2.0, 0.5],
    )
    full = data_timing.MIN_BATCHES
    assert data_timing._later(([8, 16, 4], [1.0, 2.0, 0.5], [1, 2, full], True)) == (
        [16, 4],
        [2.0, 0.5],
    )
    assert data_timing.MIN_BATCHES == 5


def test_a_row_gives_the_first_epoch_and_steady_rates_over_the_rounds() -> None:
    variant = data_timing.Variant("naive", "one record at a time", None)
    passes = [
        ([32, 64, 26, 16], [4.0, 2.0, 1.0, 1.23456], [4, 8, 3, 2], True),
        ([30], [5.0], [5], True),  # this round never left its first epoch
        ([45, 90], [5.0, 2.0], [5, 10], False),
    ]
    row = data_timing._row(variant, passes, lambda stages: "unused")
    assert row == {
        "name": "naive",
        "adds": "one record at a time",
        "pipeline": data_timing.NAIVE,
        "first_epoch_examples_per_sec": 8.0,  # median of 8, 6 and 9
        "examples_per_sec": 37.5,  # median of 90/3 and 90/2
        "steady_state": True,
        "steady_rounds": 2,
        "timed_examples": 303,
        "timed_seconds": 20.2346,
        "too_short": False,
        "epoch_seconds": [[4.0, 2.0, 1.0, 1.2346], [5.0], [5.0, 2.0]],
    }


def test_a_row_without_a_steady_round_or_with_too_few_batches_says_so() -> None:
    stages = data_timing.Stages(parallel=True, batch_parse=False)
    variant = data_timing.Variant("+ parallel map", "parallel calls", stages)
    row = data_timing._row(variant, [([12], [3.0], [4], True)], lambda seen: f"built {seen.cache}")
    assert row["pipeline"] == "built True"
    assert row["examples_per_sec"] == row["first_epoch_examples_per_sec"] == 4.0
    assert row["steady_state"] is False and row["steady_rounds"] == 0
    assert row["too_short"] is True  # 4 batches, fewer than MIN_BATCHES
    own = data_timing.Variant(data_timing.LIMIT, "decode only", None, lambda: None)
    row = data_timing._row(own, [([8], [0.0], [5], False)], lambda seen: "unused")
    assert row["pipeline"] == "decode only"
    assert row["first_epoch_examples_per_sec"] == pytest.approx(8e9)  # 0 s: no division by 0
    assert row["too_short"] is False
    quick = data_timing._row(own, [([8, 16], [1.0, 0.5], [5, 5], False)], lambda seen: "-")
    assert quick["examples_per_sec"] == 32.0  # under a second is timed, not rounded up to one


def test_the_variants_add_one_optimization_at_a_time() -> None:
    names = [variant.name for variant in data_timing.pipeline_variants(cache=True)]
    assert names == ["naive"] + [name for _, name, _ in data_timing.STEPS]
    variants = data_timing.pipeline_variants(cache=True)
    assert variants[0].stages is None
    assert variants[0].adds == "one record at a time: no parallel calls, cache or prefetch"
    assert [variant.adds for variant in variants[1:]] == [adds for *_, adds in data_timing.STEPS]
    assert variants[1].stages == data_timing.Stages(
        parallel=True, batch_parse=False, cache=False, shuffle=False, prefetch=False
    )
    assert variants[-1].stages == data_timing.Stages(
        parallel=True, batch_parse=True, cache=True, shuffle=True, prefetch=True
    )
    uncached = data_timing.pipeline_variants(cache=False)
    assert [variant.name for variant in uncached] == [
        "naive",
        "+ parallel map",
        "+ batch before parse",
        "+ shuffle",
        "+ prefetch",
    ]
    assert uncached[-1].stages.cache is False


def test_photos_measure_the_batched_regime_as_a_row_the_later_ones_do_not_build_on() -> None:
    variants = data_timing.pipeline_variants(cache=True, batched=False)
    assert [variant.name for variant in variants] == [
        "naive",
        "+ parallel map",
        data_timing.UNUSED,
        "+ cache",
        "+ shuffle",
        "+ prefetch",
    ]
    assert variants[2].adds == data_timing.ALTERNATIVE
    assert variants[2].stages == data_timing.Stages(
        parallel=True, batch_parse=True, cache=False, shuffle=False, prefetch=False
    )
    assert variants[-1].stages == data_timing.Stages(
        parallel=True, batch_parse=False, cache=True, shuffle=True, prefetch=True
    )


# runner.live: what the runner prints while a notebook runs


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


class Flushes(io.StringIO):
    flushed = 0

    def flush(self) -> None:
        self.flushed += 1
        super().flush()


def test_in_line_mode_a_slow_cell_gets_one_line_naming_its_first_line() -> None:
    out = io.StringIO()
    live = NotebookProgress(3, 7, "02_train", out)
    live.start(cells=4)
    source = "\n   \n" + "history = train.run(run_dir, params)  # " + "x" * 60 + "\nprint()"
    live.cell_start(source)
    assert live.running == source.splitlines()[2]
    live.cell_started -= SLOW_CELL
    live.cell_complete(source)
    live.cell_start("")
    live.cell_complete("")  # fast: no line
    live.finish("failed", 0.04)
    lines = out.getvalue().splitlines()
    assert lines[0] == "[3/7] 02_train …"
    assert re.fullmatch(r"    cell 1/4 \(2\.\d s\): history = train\.run\(.{50}", lines[1]), lines
    assert lines[1].endswith(source.splitlines()[2][:70])
    assert lines[2:] == ["[3/7] 02_train … failed (0.0 s)"]
    assert live.running == "" and live.current == 2


def test_progress_lines_are_forwarded_whole_and_other_output_is_not() -> None:
    out = Flushes()
    live = NotebookProgress(1, 1, "00_env", out)
    live.write(f"{MARK}one\n{MARK}tw")
    live.write(f"o\nnoise\r{MARK}three\n{MARK}part")
    live.flush()
    assert out.getvalue().splitlines() == [f"    {MARK}one", f"    {MARK}two", f"    {MARK}three"]
    assert live.partial == f"{MARK}part" and out.flushed >= 1


def test_on_a_terminal_a_bar_counts_the_cells_and_the_lines_print_above_it() -> None:
    out = Terminal()
    live = NotebookProgress(2, 3, "01_data", out)
    live.start(cells=2)
    assert live.bar is not None and live.bar.total == 2
    first = "import os  # " + "y" * 50
    live.cell_start(f"\n  \n{first}\n")
    assert live.clock is not None and live.clock.daemon  # never keeps the runner alive
    bar = f"[2/3] 01_data:   0%|          | 0/2 [00:00<?, ?cell/s, {first[:40]}]"
    assert out.getvalue().endswith(f"\r{bar}")  # drawn at once
    live.write(f"{MARK}TFRecords: 1/1 shard(s)\n")
    assert f"\r{MARK}" not in out.getvalue()
    assert re.search(
        r"\r +\r    " + re.escape(f"{MARK}TFRecords: 1/1 shard(s)\n\r{bar}"), out.getvalue()
    )
    live.cell_started -= SLOW_CELL  # slow, but the bar shows it: no cell line
    live.cell_complete("import os")
    assert live.bar.n == 1
    live.finish("ok", 2.0)
    assert live.bar is None
    assert "cell 1/2" not in out.getvalue()
    assert out.getvalue().startswith("[2/3] 01_data …\n")
    assert re.search(r"\r +\r\[2/3\] 01_data … ok \(2\.0 s\)\n\Z", out.getvalue())  # bar gone


def test_a_line_is_flushed_at_once_and_a_notebook_without_cells_finishes() -> None:
    out = Flushes()
    live = NotebookProgress(1, 2, "00_env", out)
    live._print("now")
    assert out.flushed == 1 and out.getvalue() == "now\n"
    live.finish("ok", 0.0)  # no cell started, no clock to stop
    assert out.getvalue().splitlines()[-1] == "[1/2] 00_env … ok (0.0 s)"
    live.write(f"bar\rmore\r{MARK}after two\n")
    assert out.getvalue().splitlines()[-1] == f"    {MARK}after two"


class Monotonic:
    def __init__(self, now: float, perf: float) -> None:
        self.now, self.perf = now, perf

    def monotonic(self) -> float:
        return self.now

    def perf_counter(self) -> float:
        return self.perf


def test_a_silent_cell_gets_its_line_after_exactly_silent_seconds(monkeypatch) -> None:
    """Line mode: checked every 0.1 s, a line once nothing printed for SILENT s (9.8 s), with
    how long the cell runs; on a terminal the bar is redrawn every second instead."""
    out = io.StringIO()
    live = NotebookProgress(1, 6, "00_environment", out)
    live.cells, live.current, live.cell_started = 2, 1, 20.0
    live.running = "import tensorflow as tf  # " + "z" * 60
    clock = Monotonic(live_module.SILENT, 50.0)
    monkeypatch.setattr(live_module, "time", clock)
    live.last, live.stop = 0.0, Beats(1)
    live._keep_moving()
    assert live.stop.waits == [0.1, 0.1]
    assert out.getvalue() == (f"    cell 1/2 still running (30 s): {live.running[:70]}\n")
    assert live.last == live_module.SILENT
    live.stop = Beats(3)
    live._keep_moving()  # just printed: silent for 0 s
    assert out.getvalue().count("\n") == 1
    assert live_module.SILENT == 9.8
    live.bar, live.stop = Redraws(), Beats(2)
    live._keep_moving()
    assert live.stop.waits == [1.0, 1.0, 1.0] and live.bar.drawn == 2
