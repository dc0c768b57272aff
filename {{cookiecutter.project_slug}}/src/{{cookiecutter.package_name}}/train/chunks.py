"""How many steps each call of the step function runs, so a shown count moves every few seconds.

One call per epoch is the cheapest (Python's per-call cost paid once), but a bar or a log line
then says `0/35` until the epoch ends: on a busy laptop that was 33 minutes without a sign of life.
With one worker the calls follow the clock: the first runs one step, each next one as many as fit
in TARGET_SECONDS at the speed the last call measured, so the count moves every few seconds on a
fast GPU and a busy CPU alike, and a fast step still runs thousands to a call. Several workers must
run the same calls (their all-reduces pair up in order) and cannot each follow their own clock:
they take report_chunks' fixed split. Calls end at the profiler's cuts either way.
"""

from __future__ import annotations

from collections.abc import Iterator

from ..observe.profiler import report_chunks

TARGET_SECONDS = 2.0  # the time one call aims at, well under the progress lines' 9.5 s


class StepChunks:
    """The step counts of one epoch's calls: iterate, and report each call's time to took()."""

    def __init__(
        self, steps: int, first_step: int, cuts: set[int], shown: bool, *, same_everywhere: bool
    ) -> None:
        self.steps, self.first, self.cuts = steps, first_step, cuts
        self.shown, self.fixed = shown, same_everywhere or not shown
        self.per_step: float | None = None

    def took(self, steps: int, seconds: float) -> None:
        """The last call ran `steps` steps in `seconds`: the next call is sized from it."""
        if steps > 0:
            self.per_step = max(seconds, 0.0) / steps

    def __iter__(self) -> Iterator[int]:
        if self.fixed:
            yield from report_chunks(self.steps, self.first, self.cuts, self.shown)
            return
        done = 0
        while done < self.steps:
            start = self.first + done
            count = min(self.next_size(), self.steps - done)
            inside = [cut for cut in self.cuts if start <= cut < start + count - 1]
            if inside:
                count = min(inside) - start + 1
            yield count
            done += count

    def next_size(self) -> int:
        """One step before anything was measured; then as many as fit in TARGET_SECONDS."""
        if self.per_step is None:
            return 1
        if self.per_step <= 0:
            return self.steps
        return max(1, int(TARGET_SECONDS / self.per_step))
