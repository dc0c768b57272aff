"""The batch-size finder's probes so far, and where its search goes up next (find/batch.py decides
what to probe and which batch to keep; find/probes.py measures).

Where the GPU's memory is known, two probes that fit draw a line through their peak memory, and
the search goes straight to the batch where the line fills FILL of the GPU, then steps by twice
the resolution to find the edge, instead of doubling to it: on a large GPU each doubling is a
build and an XLA compile that the finder's time budget cannot spare (ResNet50 stopped on its
budget before it reached the edge).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

HOST_NOTE = "over the host-memory budget"
# Where the line through two probes' peak memory is aimed: CUDA's context, cuDNN's workspaces and
# other processes take part of a GPU, and an aim past the edge costs a bisection from far below.
FILL = 0.9


@dataclass(frozen=True)
class Probe:
    """One measured batch size; ok=False is out of memory or over the host budget (see note)."""

    batch: int
    ok: bool
    examples_per_sec: float | None
    peak_bytes: int | None
    seconds: float
    note: str = ""


def resolution_step(batch: float, resolution: float, replicas: int) -> int:
    """`resolution` of `batch`, rounded up to whole replicas and at least one batch per replica:
    how close the bisection gets, and how far the search steps near the edge."""
    return max(replicas, -(-int(batch * resolution) // replicas) * replicas)


class Search:
    """The probes so far; refuses a batch twice and, once the time is spent, to probe at all."""

    def __init__(self, probe: Callable[[int], Probe], clock: Callable[[], float], seconds: float):
        self.probe, self.clock, self.seconds = probe, clock, seconds
        self.started = clock()
        self.probes: list[Probe] = []
        self.out_of_time = False

    def measure(self, batch: int) -> Probe | None:
        """The probe of `batch`, or None when the time budget is spent (after the first probe)."""
        if any(probe.batch == batch for probe in self.probes):
            raise AssertionError(f"the finder probed batch {batch} twice")
        if self.probes and self.clock() - self.started > self.seconds:
            self.out_of_time = True
            return None
        self.probes.append(self.probe(batch))
        return self.probes[-1]

    def upward(self, batch: int, device_bytes: int | None, replicas: int, resolution: float) -> int:
        """The next batch up from `batch`, the largest that fit. Doubled, unless a line through
        the peak memory of the last two probes that fit says where it fills FILL of
        `device_bytes`: that batch when it is a step or more away (a jump past the doubling, or a
        nearer try), one step up when the line puts `batch` at the edge. A line the probes outran
        by over two steps is wrong about this model: doubled."""
        grown = sorted((p.batch, p.peak_bytes) for p in self.probes if p.ok and p.peak_bytes)
        if device_bytes is None or len(grown) < 2 or grown[-1][1] <= grown[-2][1]:
            return batch * 2
        (b1, m1), (b2, m2) = grown[-2:]
        room = device_bytes * FILL - m2
        aim = int(b2 + room * (b2 - b1) / (m2 - m1)) // replicas * replicas
        step = resolution_step(batch * 2, resolution, replicas)
        if aim >= batch + step:
            return aim
        return batch + step if aim >= batch - 2 * step else batch * 2

    def fits(self) -> bool:
        return any(probe.ok for probe in self.probes)

    def largest_ok(self) -> int:
        return max(probe.batch for probe in self.probes if probe.ok)

    def smallest_out_of_memory(self) -> int:
        return min(p.batch for p in self.probes if not p.ok and p.note != HOST_NOTE)

    def ran_out_of_memory(self) -> bool:
        return any(not p.ok and p.note != HOST_NOTE for p in self.probes)
