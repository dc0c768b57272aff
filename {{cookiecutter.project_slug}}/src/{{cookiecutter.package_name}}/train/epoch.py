"""One epoch of the training loop (loop.py): its train steps, its validation, its record; and
whether to stop early after it.

The loop hands itself over as a Running (running.py), so this module imports nothing of loop.py.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import numpy as np
import tensorflow as tf

from ..progress import task
from . import phases, preempt
from .chunks import StepChunks

if TYPE_CHECKING:
    from .running import Running

# Whether the step function times its wait for input (off only to measure what the timer costs).
_TIMED = [True]


@contextlib.contextmanager
def input_wait_timer(on: bool) -> Iterator[None]:
    """Loops built inside time their input wait, or not: for the benchmark's overhead ratio."""
    _TIMED.append(on)
    try:
        yield
    finally:
        _TIMED.pop()


def run_epoch(
    run: Running, epoch: int, iterator, validation, timings: list
) -> dict[str, Any] | None:
    """One epoch, its steps shown as they run (a bar with the time left, or a line every few
    seconds): the epoch's own line follows from Loop.run()."""
    what = f"Epoch {epoch + 1}/{run.params.epochs}"
    shown = run.verbose and run.role.is_chief
    resumed = (run.partial or {}).get("step", 0)  # a resumed epoch counts from where it stopped
    # The first call of a step function never traced (a run's first epoch, a new phase's) traces
    # and compiles it: its count gets a line as soon as that call ends, and its time left is timed
    # from the steps after it.
    traced = getattr(run.train_steps, "experimental_get_tracing_count", lambda: 1)()
    with task(
        what,
        run.steps_per_epoch,
        "step",
        shown=shown,
        summary=False,
        start=resumed,
        compiles=traced == 0,
    ) as steps:
        return _run_epoch(run, epoch, iterator, validation, timings, steps)


def _run_epoch(
    run: Running, epoch: int, iterator, validation, timings: list, shown
) -> dict[str, Any] | None:
    """One epoch: fixed steps from the repeating train set, then the whole validation set.

    The steps run in one call of the step function, or, when watched live or shown
    (verbose, the same on every worker), in calls that StepChunks sizes (a few seconds each with
    one worker), each reported to the exporter and to `shown` (and cut at the profiler's
    window). An epoch resumed mid-way (run.partial) runs
    the steps left and counts the saved ones' sums; one cut short by a stop signal returns None
    and leaves its sums in run.partial."""
    watch, started = run.watch, time.perf_counter()
    carried, run.partial = run.partial or {}, None
    sums, waited = np.array(carried.get("sums", np.zeros(3))), carried.get("waited", 0.0)
    done, before = carried.get("step", 0), carried.get("seconds", 0.0)
    first = run.steps_done + 1
    chunked = watch.live or run.verbose
    left = run.steps_per_epoch - done
    chunks = StepChunks(
        left, first, watch.profiler.cuts(), chunked, same_everywhere=run.role.workers > 1
    )
    for steps in chunks:
        watch.profiler.before(run.steps_done + 1)
        begun = time.perf_counter()
        chunk, wait = run.train_steps(iterator, tf.constant(steps))
        chunk, wait = chunk.numpy(), float(wait)
        chunks.took(steps, time.perf_counter() - begun)
        ran = round(float(chunk[2])) // run.global_batch
        if ran < steps:  # a stop signal: these steps ran, the rest of the epoch did not
            run.steps_done, seconds = run.steps_done + ran, time.perf_counter() - started
            sums, waited, done = (sums + chunk).tolist(), waited + wait, done + ran
            run.partial = preempt.partial(epoch + 1, done, sums, waited, before + seconds)
            return None
        done += steps
        run.steps_done += steps
        watch.profiler.after(run.steps_done)
        sums, waited = sums + chunk, waited + wait
        running = (sums[0] / sums[2], sums[1] / sums[2])
        watch.exporter.report_steps(
            steps, time.perf_counter() - begun, wait, float(chunk[2]), running
        )
        shown.update(steps)
    shown.note("validation")
    loss, correct, count = (float(value) for value in sums)
    seconds = before + time.perf_counter() - started
    timings.append((int(count), seconds))
    started = time.perf_counter()
    val_sums = [run.eval_step(batch) for batch in validation]
    val_loss, val_correct, val_count = (float(v) for v in tf.add_n(val_sums).numpy())
    record = {
        "epoch": epoch + 1,
        "loss": loss / count,
        "accuracy": correct / count,
        "val_loss": val_loss / val_count,
        "val_accuracy": val_correct / val_count,
        "examples": int(count),
        "val_examples": int(val_count),
        "seconds": round(seconds, 4),
        "examples_per_sec": count / seconds,
        "input_wait_seconds": round(waited, 4) if _TIMED[-1] else None,
        "input_wait_fraction": waited / seconds if _TIMED[-1] else None,
        "val_seconds": round(time.perf_counter() - started, 4),
        "learning_rate": phases.rate_at_end_of(run, epoch),
        "phase": run.phase,
    }
    if run.loss_scaling:
        record["loss_scale"] = float(run.optimizer.dynamic_scale.numpy())
    return record


def early_stopping(
    history: list[dict[str, Any]], patience: int
) -> tuple[bool, dict[str, Any] | None]:
    """(stop now?, best epoch so far), replayed from the history so a resumed run agrees."""
    best, waited = None, 0
    for record in history:
        if best is None or record["val_loss"] < best["val_loss"]:
            best, waited = record, 0
        else:
            waited += 1
    return patience > 0 and waited >= patience, best
