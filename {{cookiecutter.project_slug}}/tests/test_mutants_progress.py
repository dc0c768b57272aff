"""What a user is told while work runs (counts, time left, the clock's lines, the runner's
lines of a notebook) and whose pid a run folder's lock names: the `progress` group of
`make mutate` (with test_mutants_timing.py and test_mutants_plan.py). In-process and fast; a
clock is a fake one wherever what is printed depends on time."""

from __future__ import annotations

import fcntl
import io
import os
import re
import threading
import time
from pathlib import Path

import pytest
from tqdm.std import tqdm

from {{ cookiecutter.package_name }} import locks, progress
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
    said = re.escape(progress.MARK) + r"Epoch 1/2: ([04])/4 step\(s\), \d+ s \(chunk 1\)"
    counts = [re.fullmatch(said, text) for text in clock]
    assert all(counts), clock
    # A tick may land between update(4) and the close: it says 4/4, and only after the 0/4 lines.
    counts = [int(found.group(1)) for found in counts]
    assert counts == sorted(counts) and counts[:2] == [0, 0], clock
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


def test_a_compiling_task_says_its_first_item_at_once_and_times_the_rest_after_it(
    monkeypatch, capsys
) -> None:
    """An epoch whose first call traces the step function: a line the moment that call ends
    (a short epoch shows a count inside it), no time left before it, and the time left from the
    speed after it: 1 step with its compile in 30 s, then 10 steps in 5 s, 89 left: ~44 s, not
    the ~292 s the compile would make of it. A task that compiles nothing says nothing early."""
    monkeypatch.setenv(progress.PROGRESS_ENV, "lines")
    clock = Clock(30.0)
    monkeypatch.setattr(progress, "time", clock)
    epoch = progress.Task("Epoch 1/2", 100, "step", shown=False, compiles=True)
    epoch.started, epoch.shown = 0.0, True
    assert epoch.status() == "Epoch 1/2: 0/100 step(s), 30 s"
    epoch.update(0)  # nothing counted: not the first item's end
    assert epoch.compiled is None and capsys.readouterr().out == ""
    epoch.update(1)
    assert epoch.compiled == (30.0, 1)
    said = "Epoch 1/2: 1/100 step(s), 30 s; "
    said += "the first call and its compile done, the time left follows"
    assert capsys.readouterr().out == f"{MARK}{said}\n"
    clock.now = 35.0
    epoch.update(10)
    assert capsys.readouterr().out == ""  # once only
    assert epoch.status() == "Epoch 1/2: 11/100 step(s), 35 s, ~44 s left"
    plain = progress.Task("Epoch 1/2", 100, "step", shown=False)
    plain.started, plain.shown = 0.0, True
    plain.update(11)
    assert capsys.readouterr().out == "" and plain.compiled is None
    assert plain.status() == "Epoch 1/2: 11/100 step(s), 35 s, ~283 s left"
    resumed = progress.Task("Epoch 2/2", 17, "step", shown=False, start=7, compiles=True)
    resumed.started = 20.0
    resumed.update(1)  # hidden: counted, never printed
    clock.now = 39.0
    resumed.update(4)
    assert resumed.status() == "Epoch 2/2: 12/17 step(s), 19 s, ~5 s left"
    assert capsys.readouterr().out == ""
    bar = progress.Task("Epoch 1/2", 100, "step", shown=False, compiles=True)
    bar.shown, bar.bar = True, SimpleBar()
    bar.update(1)
    assert bar.bar.counted == 1 and capsys.readouterr().out == ""  # the bar shows it already


class SimpleBar:
    counted = 0

    def update(self, count: int) -> None:
        self.counted += count


def test_the_first_items_line_starts_the_clocks_grid_again(monkeypatch, capsys) -> None:
    """The first call ended at 3 s and was printed: the clock's next line is at 12.5 s, 9.5 s
    after it, not at 9.5 s (two lines 6.5 s apart); a bar keeps its one-second grid."""
    clock = Clock(3.0)
    monkeypatch.setattr(progress, "time", clock)
    task = progress.Task("Epoch 1/2", 4, "step", shown=False, compiles=True)
    task.started, task._stop, task.compiled = 0.0, Beats(2), (3.0, 1)
    task.count = 1
    task._tick()
    assert task._stop.waits == [6.5, 9.5, 19.0]
    lines = capsys.readouterr().out.splitlines()
    assert lines == [f"{MARK}Epoch 1/2: 1/4 step(s), 3 s"]
    bar = progress.Task("Convert", 1, shown=False, compiles=True)
    bar.started, bar._stop, bar.bar, bar.compiled = 0.0, Beats(2), Redraws(), (3.0, 1)
    bar._tick()
    assert bar._stop.waits == [0.0, 0.0, 0.0] and bar.bar.drawn == 2


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


def test_a_bar_starts_at_what_was_counted_before_and_is_gone_once_closed(
    monkeypatch, capsys
) -> None:
    """A resumed epoch's bar starts at its step; a closed bar leaves only the summary line."""
    monkeypatch.setenv(progress.PROGRESS_ENV, "bar")
    with progress.task("Epoch 2/4", 17, "step", start=7) as work:
        assert work.bar.n == 7 and " 7/17 [" in str(work.bar)
        work.update(10)
    shown = [text.rsplit("\r", 1)[-1] for text in capsys.readouterr().out.split("\n")]
    assert [text for text in shown if text.strip()] == [shown[0]], shown
    assert shown[0].startswith(f"{progress.MARK}Epoch 2/4: 17/17 step(s) in ")


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
        assert str(work.bar).endswith("shard/s, shard 2 " + "x" * 52 + "]")
        assert work._clock.name == "progress: Shards" and work._clock.daemon
    with progress.task("Loading TensorFlow", unit="") as work:
        assert re.fullmatch(r"Loading TensorFlow: 00:0\d", str(work.bar)), str(work.bar)


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


# runner.live: what the runner prints while a notebook runs


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


class Flushes(io.StringIO):
    flushed = 0

    def flush(self) -> None:
        self.flushed += 1
        super().flush()


def test_a_cell_of_exactly_slow_cell_seconds_gets_its_line_even_an_empty_one(monkeypatch) -> None:
    clock = Monotonic(0.0, 10.0)
    monkeypatch.setattr(live_module, "time", clock)
    out = io.StringIO()
    live = NotebookProgress(1, 2, "00_env", out)
    live.start(cells=3)
    live.cell_start("\n")
    clock.perf += SLOW_CELL
    live.cell_complete("\n")
    assert out.getvalue().splitlines()[1:] == ["    cell 1/3 (2.0 s): "]
    assert SLOW_CELL == 2.0


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
    live.cell_start("\n")
    assert live.bar.postfix == ""
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
