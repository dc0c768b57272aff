"""The training count moves inside an epoch: calls of the step function sized by the clock with
one worker (StepChunks), fixed with several, and a resumed epoch counted from where it stopped.
The clock is controlled here (took() is told the seconds), never the machine's speed."""

from __future__ import annotations

import contextlib
import re
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from helpers import slowed

from {{ cookiecutter.package_name }} import progress, tasks, train
from {{ cookiecutter.package_name }}.observe.profiler import report_chunks
from {{ cookiecutter.package_name }}.train import chunks
from {{ cookiecutter.package_name }}.train.chunks import TARGET_SECONDS, StepChunks


def sizes(plan: StepChunks, seconds_per_step: float) -> list[int]:
    """The calls of an epoch whose steps each take seconds_per_step (a controlled clock)."""
    taken = []
    for count in plan:
        taken.append(count)
        plan.took(count, count * seconds_per_step)
    return taken


def test_the_first_call_runs_one_step_then_calls_fill_the_target_time() -> None:
    """35 steps of 10 s each (a busy CPU): one step a call, so the count moves every 10 s."""
    assert sizes(StepChunks(35, 1, set(), True, same_everywhere=False), 10.0) == [1] * 35
    # 0.1 s a step: 1, then 20 a call (2 s each), the rest at the end.
    assert sizes(StepChunks(50, 1, set(), True, same_everywhere=False), 0.1) == [1, 20, 20, 9]
    # 1 ms a step: 2,000 a call, so a fast step still pays Python's per-call cost rarely.
    fast = StepChunks(5000, 1, set(), True, same_everywhere=False)
    assert sizes(fast, 0.001) == [1, 2000, 2000, 999]
    assert int(TARGET_SECONDS / 0.001) == 2000


def test_the_sizes_follow_a_machine_that_slows_down() -> None:
    """Each call is sized from the speed the last one measured."""
    plan = StepChunks(100, 1, set(), True, same_everywhere=False)
    seen, per_step = [], [0.5, 0.01, 1.0, 1.0, 0.02]
    for count, seconds in zip(plan, per_step, strict=False):
        seen.append(count)
        plan.took(count, count * seconds)
    assert seen == [1, 4, 95]  # 0.5 s: 4 fit in 2 s; then 0.01 s: 200 fit, 95 are left


def test_calls_end_at_the_profilers_cuts() -> None:
    plan = StepChunks(50, 1, {3, 10}, True, same_everywhere=False)
    assert sizes(plan, 0.01) == [1, 2, 7, 40]


def test_several_workers_and_unshown_epochs_keep_the_fixed_split() -> None:
    """All workers must run the same calls, so no clock decides them; unshown: one call."""
    plan = StepChunks(120, 1, set(), True, same_everywhere=True)
    assert sizes(plan, 10.0) == report_chunks(120, 1, set(), True)
    assert sizes(StepChunks(35, 1, set(), False, same_everywhere=False), 10.0) == [35]


def test_a_resumed_epoch_counts_from_its_step_and_times_only_what_runs() -> None:
    """7 of 17 steps ran before the stop: the count starts at 7, the time left is from the
    speed of the steps run now."""
    task = progress.Task("Epoch 2/4", 17, "step", shown=False, start=7)
    task.started = time.perf_counter() - 10.0  # 10 s, in which 5 steps ran
    task.update(5)
    assert task.status().startswith("Epoch 2/4: 12/17 step(s), 10 s, ~10 s left")


def test_a_resumed_epoch_gives_its_count_the_step_the_stop_saved(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The epoch's count is told the step a stop signal saved (run.partial): 7 of 17 steps ran,
    so the resumed epoch starts at 7/17, not 0/17; an epoch not resumed starts at 0."""
    from {{ cookiecutter.package_name }}.train import epoch

    told: dict = {}

    def task(what: str, total: int, unit: str, **options: object) -> contextlib.nullcontext:
        told.update(options, what=what, total=total)
        return contextlib.nullcontext()

    monkeypatch.setattr(epoch, "task", task)
    monkeypatch.setattr(epoch, "_run_epoch", lambda *args: {"epoch": 2})
    run = SimpleNamespace(
        params=SimpleNamespace(epochs=4),
        verbose=True,
        role=SimpleNamespace(is_chief=True),
        steps_per_epoch=17,
        partial={"step": 7},
        train_steps=Traced(1),
    )
    assert epoch.run_epoch(run, 1, None, None, []) == {"epoch": 2}
    assert (told["what"], told["total"], told["start"]) == ("Epoch 2/4", 17, 7)
    assert told["compiles"] is False  # traced by an earlier epoch: nothing to compile
    run.partial, run.train_steps = None, Traced(0)
    epoch.run_epoch(run, 1, None, None, [])
    assert told["start"] == 0 and told["compiles"] is True  # a new phase's step function


class Traced:
    """A step function traced `count` times so far (tf.function's tracing count)."""

    def __init__(self, count: int) -> None:
        self.count = count

    def experimental_get_tracing_count(self) -> int:
        return self.count


def test_a_short_epoch_in_line_mode_still_shows_a_count_inside_it(
    run_dir: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 33's acceptance: `train -p epochs=1 -p batch_size=2` on the digits, lines as in CI,
    the real clock (lines 9.5 s apart) and an epoch of about 2 s: the first call's line shows a
    count strictly inside the epoch (none did when lines came only from the clock)."""
    monkeypatch.setenv(progress.PROGRESS_ENV, "lines")
    metrics = train.run(run_dir, train.Params(epochs=1, batch_size=2), verbose=True)
    total = metrics["history"][0]["examples"] // metrics["global_batch_size"]
    said = capsys.readouterr().out
    counts = {int(n) for n in re.findall(rf"Epoch 1/1: (\d+)/{total} step\(s\)", said)}
    assert any(0 < n < total for n in counts), said[-2000:]


def test_training_in_line_mode_prints_counts_inside_the_epoch(
    run_dir: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Lines every 0.05 s and calls of ~0.1 s, on batches each made 20 ms late: the lines show
    several counts strictly between 0 and the epoch's steps (one call per epoch showed none)."""
    monkeypatch.setenv(progress.PROGRESS_ENV, "lines")
    monkeypatch.setattr(progress, "LINE_EVERY", 0.05)
    monkeypatch.setattr(chunks, "TARGET_SECONDS", 0.1)
    task = tasks.current()
    monkeypatch.setattr(task, "build_inputs", slowed(task.build_inputs, 0.02))
    metrics = train.run(run_dir, train.Params(epochs=1), verbose=True)
    total = metrics["history"][0]["examples"] // metrics["global_batch_size"]
    said = capsys.readouterr().out
    counts = {int(n) for n in re.findall(rf"Epoch 1/1: (\d+)/{total} step\(s\)", said)}
    inside = sorted(n for n in counts if 0 < n < total)
    assert len(inside) >= 3, said[-2000:]


def test_a_step_command_says_it_is_loading_tensorflow(tmp_path: Path) -> None:
    """A step command is not silent while TensorFlow loads (minutes on a busy machine): a moving
    line and its time, as the runner's; help and JSON output stay as they were."""
    import subprocess
    import sys

    command = [sys.executable, "-m", "{{ cookiecutter.package_name }}", "optimize"]
    done = subprocess.run(
        [*command, "--run-dir", str(tmp_path / "run")], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 2, done.stderr  # nothing to optimize: refused in one sentence
    assert re.search(r"Loading TensorFlow: done in \d+\.\d s", done.stdout), done.stdout
    shown = subprocess.run([*command, "--help"], capture_output=True, text=True, timeout=300)
    assert shown.returncode == 0 and "Loading TensorFlow" not in shown.stdout, shown.stdout
