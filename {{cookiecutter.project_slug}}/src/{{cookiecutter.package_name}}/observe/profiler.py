"""`profile_steps`: a TensorBoard profile trace of a window of training steps.

TensorFlow's profiler records what every op of those steps did on each device, and when; opened in
TensorBoard's Profile tab (`make tensorboard`, with the profile plugin the dev extra brings), its
trace viewer and input-pipeline analyser show whether the accelerator waited for data, for the
host or for an all-reduce. Profiling slows the steps it covers, so it covers a few, after the
first (which traces the graph). Steps are counted from 1 in each call of train.run, across its
epochs. The trace is written under the run's logs/ (plugins/profile/<time>/<host>.xplane.pb), by
the chief alone in a multi-worker job.

GPU kernels reach the trace through CUPTI, NVIDIA's profiling interface, which the driver by
default lets only root use: in a non-root container (one that runs as your uid) the
trace then holds host activity only. After tracing on a GPU machine the trace is read back, and
when it has no GPU kernel the summary says so and why (cupti_note).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import tensorflow as tf

from ..artifacts import StepError

# Training steps between live reports: about ten an epoch, but at least MIN_REPORT_STEPS (each call
# of the step function costs a host round trip, which would slow small, fast steps) and at most
# MAX_REPORT_STEPS (so a long epoch still reports every few seconds to minutes).
MIN_REPORT_STEPS = 50
MAX_REPORT_STEPS = 200
CUPTI_NOTE = (
    "The profile has no GPU kernels: TensorFlow's profiler could not use CUPTI, which the NVIDIA "
    "driver lets only root use by default (CUPTI_ERROR_INSUFFICIENT_PRIVILEGES), as in a "
    "non-root container; on the host set the nvidia module option "
    "NVreg_RestrictProfilingToAdminUsers=0 (and reload the driver), or give the container "
    "CAP_SYS_ADMIN, then profile again."
)


class ObserveError(StepError):
    """A metrics or profiler value was refused; nothing was trained."""


def parse_profile_steps(value: Any) -> tuple[int, int] | None:
    """ "5,8" → (5, 8); "5" or 5 → (5, 5); "" or None → None (off); anything else refused."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    text = str(value) if isinstance(value, int) and not isinstance(value, bool) else value
    parts = text.split(",") if isinstance(text, str) else []
    try:
        numbers = [int(part.strip()) for part in parts]
    except ValueError:
        numbers = []
    if len(numbers) == 1:
        numbers *= 2
    if len(numbers) != 2 or numbers[0] < 1 or numbers[1] < numbers[0]:
        raise ObserveError(
            f"profile_steps={value!r} is not allowed: use two step numbers 'first,last' with "
            "1 <= first <= last (e.g. '5,8'), one step ('5'), or '' for no profile."
        )
    return numbers[0], numbers[1]


def check_window(window: tuple[int, int] | None, steps: int, epochs: int) -> None:
    """Refuse a window beyond the steps this call will run."""
    if window is not None and window[1] > steps:
        raise ObserveError(
            f"profile_steps={window[0]},{window[1]} is outside this run's steps: it trains "
            f"{steps} step(s) ({epochs} epoch(s) left), counted from 1; choose a window within "
            f"1..{steps}, after the first step, which traces the graph."
        )


def report_chunks(steps_per_epoch: int, first_step: int, cuts: set[int], live: bool) -> list[int]:
    """Step counts of the step-function calls of one epoch whose first step is `first_step`.

    Without live reports, one call runs the whole epoch (Python's per-call cost paid once). With
    them, about ten calls, of MIN_REPORT_STEPS to MAX_REPORT_STEPS steps each. Calls always end at
    the steps in `cuts` (a profile's edges). The same on every worker, which must run the same
    calls (their all-reduces pair up in order).
    """
    tenth = math.ceil(steps_per_epoch / 10)
    size = min(MAX_REPORT_STEPS, max(MIN_REPORT_STEPS, tenth)) if live else steps_per_epoch
    size, chunks, done = max(1, size), [], 0
    while done < steps_per_epoch:
        count = min(size, steps_per_epoch - done)
        last = first_step + done + count - 1
        inside = [cut for cut in cuts if first_step + done <= cut < last]
        if inside:
            count = min(inside) - (first_step + done) + 1
        chunks.append(count)
        done += count
    return chunks


class Profiler:
    """Starts TensorFlow's profiler before step `first` and stops it after step `last`."""

    def __init__(self, window: tuple[int, int] | None, logdir: Path, *, enabled: bool) -> None:
        self.window, self.logdir, self.enabled = window, logdir, enabled
        self.active = False
        self.traced: tuple[int, int] | None = None
        self.note: str | None = None  # CUPTI_NOTE when a GPU's trace came back without kernels

    def cuts(self) -> set[int]:
        """The steps after which a step-function call must end: before and at the window."""
        return set() if self.window is None else {self.window[0] - 1, self.window[1]}

    def before(self, step: int) -> None:
        """Called before the call whose first step is `step`."""
        if self.enabled and self.window and step == self.window[0] and not self.active:
            tf.profiler.experimental.start(str(self.logdir))
            self.active = True

    def after(self, step: int) -> None:
        """Called after the call whose last step is `step`."""
        if self.active and self.window and step >= self.window[1]:
            self.close()
            self.traced = self.window
            if tf.config.list_logical_devices("GPU"):
                self.note = cupti_note(self.logdir)

    def close(self) -> None:
        if self.active:
            self.active = False
            tf.profiler.experimental.stop()

    def summary(self) -> dict[str, Any]:
        """What metrics/train.json says of the profile."""
        if self.window is None:
            return {"steps": None, "logdir": None, "note": None}
        return {
            "steps": list(self.traced) if self.traced else None,
            "logdir": str(self.logdir) if self.traced else None,
            "note": self.note,
        }


def cupti_note(logdir: Path) -> str | None:
    """CUPTI_NOTE (with the profiler's own errors) when the newest trace under logdir has no
    event on a GPU plane; None when it has kernels, or when there is no trace to read."""
    from tensorflow.tsl.profiler.protobuf import xplane_pb2

    traces = sorted((logdir / "plugins" / "profile").glob("*/*.xplane.pb"))
    if not traces:
        return None
    space = xplane_pb2.XSpace()
    space.ParseFromString(traces[-1].read_bytes())
    kernels = sum(
        len(line.events)
        for plane in space.planes
        if plane.name.startswith("/device:GPU:")
        for line in plane.lines
    )
    if kernels:
        return None
    errors = "; ".join(dict.fromkeys(error.strip() for error in space.errors if error.strip()))
    return CUPTI_NOTE + (f" The profiler said: {errors[:300]}." if errors else "")
