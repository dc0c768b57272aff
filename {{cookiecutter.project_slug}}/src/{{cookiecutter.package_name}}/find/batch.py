"""The batch-size finder's decisions: which global batches to probe, and which one to keep.

The caller measures (find/probes.py runs real training steps); this module only decides, so its
rules are tested on synthetic probes. Every probed batch is a multiple of the replicas and no
larger than the training set. On a GPU memory caps the batch: double from `start` while the step
fits, bisect between the last batch that fit and the first that did not until they are within
`resolution` of the batch (3 %, at least one batch per replica), then keep a margin below the
largest that fit, as a batch at the edge of memory fails on the next fragmented allocation.
Bisecting to the last image would cost 13-17 probes, each building and tracing the model (XLA
compiles each anew), for a precision the 10 % margin throws away. Where the GPU's memory is
known (`device_bytes`), the search aims at the edge instead of doubling to it (find/search.py;
tests/test_find.py counts the probes saved). On a CPU throughput saturates first: the choice is
the smallest batch within `knee_tolerance` of the best examples/s, as a larger one makes fewer
updates per epoch for no gain in speed (the throughput knee). A time budget ends the search;
what ran decides.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..artifacts import StepError
from .search import HOST_NOTE, Probe, Search, resolution_step

__all__ = ["BatchChoice", "FindError", "Probe", "choice_record", "find_batch"]


class FindError(StepError):
    """A finder cannot decide from its input: one sentence, before or instead of a choice."""


@dataclass(frozen=True)
class BatchChoice:
    """The chosen global batch, every probe in the order it ran, and why this one."""

    batch: int
    probes: tuple[Probe, ...]
    device: str
    reason: str
    limited_by: str  # "memory", "throughput_knee", "training_set", "time" or "host_memory"
    replicas: int = 1
    settings: tuple[tuple[str, Any], ...] = ()  # the finder's arguments, for the record


def find_batch(
    probe: Callable[[int], Probe],
    *,
    device: str,
    replicas: int,
    train_count: int,
    start: int = 32,
    max_seconds: float = 60.0,
    host_budget_bytes: int | None = None,
    bytes_per_example: int | None = None,
    device_bytes: int | None = None,
    knee_tolerance: float = 0.05,
    memory_margin: float = 0.10,
    resolution: float = 0.03,
    clock: Callable[[], float] = time.monotonic,
) -> BatchChoice:
    """Probe batches and choose one (see the module's docstring for the rules).

    probe(batch) returns a Probe, ok=False when the step ran out of memory; any exception it
    raises is a bug and propagates. No batch is probed twice; at least one is always probed.
    """
    settings = {name: value for name, value in locals().items() if name not in ("probe", "clock")}
    problem = _problem(**settings)
    if problem:
        raise FindError(problem)
    cap = train_count // replicas * replicas
    host_cap = cap * 2  # no host budget: never binds
    if host_budget_bytes is not None and bytes_per_example is not None:
        host_cap = host_budget_bytes // bytes_per_example // replicas * replicas
    search = Search(probe, clock, max_seconds)
    batch = min(-(-start // replicas) * replicas, cap, host_cap)
    stop = ""  # what ended the doubling: "memory", "training_set", "host_memory" or "time"
    while not stop:
        result = search.measure(batch)
        if result is None:
            stop = "time"
        elif not result.ok:
            stop = "memory"
        elif batch >= cap:
            stop = "training_set"
        else:
            following = batch * 2
            if device == "gpu":
                following = search.upward(batch, device_bytes, replicas, resolution)
            following = min(following, cap)
            if following > host_cap:
                search.probes.append(Probe(following, False, None, None, 0.0, HOST_NOTE))
                stop = "host_memory"
            batch = following
    if stop == "memory" and not search.fits():  # even the first batch did not fit: halve down
        while batch > replicas and not search.fits() and not search.out_of_time:
            batch = max(replicas, batch // 2 // replicas * replicas)
            search.measure(batch)
        if not search.fits():
            smallest = min(probe.batch for probe in search.probes)
            budget = f" before the {max_seconds:g} s budget ran out" if search.out_of_time else ""
            raise FindError(
                f"Not even a global batch of {smallest} ({smallest // replicas} per replica) fits "
                f"in {device.upper()} memory, the smallest the finder tried{budget}."
            )
    if stop == "memory":  # bisect between the largest batch that fit and the smallest that did not
        while not search.out_of_time:
            low, high = search.largest_ok(), search.smallest_out_of_memory()
            if high - low <= resolution_step(low, resolution, replicas):
                break
            search.measure(low + (high - low) // replicas // 2 * replicas)
        if search.out_of_time:
            stop = "time"
    if device == "gpu":
        batch, reason, limited_by = _choose_gpu(search, stop, replicas, memory_margin)
    else:
        batch, reason, limited_by = _choose_cpu(search, stop, knee_tolerance)
    if stop == "time":
        reason = reason[:-1] + f"; the {max_seconds:g} s budget ended the search."
        limited_by = "time"
    return BatchChoice(
        batch, tuple(search.probes), device, reason, limited_by, replicas, tuple(settings.items())
    )


def choice_record(choice: BatchChoice) -> dict[str, Any]:
    """metrics/batch_finder.json: the choice, why, and every probe in the order it ran."""
    return {
        "batch": choice.batch,
        "device": choice.device,
        "replicas": choice.replicas,
        "per_replica_batch": choice.batch // choice.replicas,
        "reason": choice.reason,
        "limited_by": choice.limited_by,
        "probes": [dataclasses.asdict(probe) for probe in choice.probes],
        "probe_seconds": sum(probe.seconds for probe in choice.probes),
        "settings": dict(choice.settings),
    }


def _choose_gpu(search: Search, stop: str, replicas: int, margin: float) -> tuple[int, str, str]:
    """The largest batch that fit, less the margin once memory was seen to run out."""
    largest = search.largest_ok()
    if not search.ran_out_of_memory():
        return largest, f"the largest batch probed, {largest}, fit in memory{_why(stop)}.", stop
    batch = max(replicas, int(largest * (1 - margin)) // replicas * replicas)
    reason = f"the largest batch that fit, {largest}"
    if margin:
        reason += f", less a {_percent(margin)} memory margin"
    if replicas > 1:
        reason += f", rounded down to a multiple of {replicas} replicas"
    return batch, reason + ".", "memory"


def _choose_cpu(search: Search, stop: str, tolerance: float) -> tuple[int, str, str]:
    """The smallest batch whose examples/s is within `tolerance` of the best probed."""
    rates = {p.batch: p.examples_per_sec or 0.0 for p in search.probes if p.ok}
    best = max(rates, key=lambda batch: (rates[batch], -batch))
    batch = min(b for b, rate in rates.items() if rate >= (1 - tolerance) * rates[best])
    reason = (
        f"the smallest batch within {_percent(tolerance)} of the best rate "
        f"({batch}: {rates[batch]:,.0f} examples/s"
    )
    reason += f" against {rates[best]:,.0f} at {best})" if batch != best else ")"
    if batch < max(rates):
        return batch, reason + ".", "throughput_knee"
    return batch, reason + _why(stop) + ".", stop


def _why(stop: str) -> str:
    """Why the search went no larger, as a clause."""
    return {
        "training_set": ", and the training set caps the batch",
        "host_memory": ", and the next candidate is over the host-memory budget",
        "memory": ", and the next candidate ran out of memory",
    }.get(stop, "")


def _percent(share: float) -> str:
    return f"{share * 100:g} %"


def _problem(
    device: str,
    replicas: int,
    train_count: int,
    start: int,
    max_seconds: float,
    host_budget_bytes: int | None,
    bytes_per_example: int | None,
    device_bytes: int | None,
    knee_tolerance: float,
    memory_margin: float,
    resolution: float,
) -> str | None:
    """The first of find_batch's arguments that cannot work, as one sentence; None if all can."""
    budget, size = host_budget_bytes, bytes_per_example
    if device not in ("gpu", "cpu"):
        return f'The batch-size finder knows devices "gpu" and "cpu", not {device!r}.'
    if replicas < 1 or start < 1:
        return f"replicas and start must be at least 1, not {replicas} and {start}."
    if train_count < replicas:
        return (
            f"batch_size=auto needs at least one training example per replica, but the "
            f"training set has {train_count} for {replicas} replicas."
        )
    if not max_seconds > 0:
        return f"The finder's time budget must be positive, not {max_seconds} s."
    if not (0 < knee_tolerance < 1 and 0 <= memory_margin < 1):
        return (
            f"knee_tolerance must be in (0, 1) and memory_margin in [0, 1), not "
            f"{knee_tolerance} and {memory_margin}."
        )
    if not 0 <= resolution < 1:
        return f"The bisection's resolution must be in [0, 1), not {resolution}."
    if device_bytes is not None and device_bytes < 1:
        return f"The GPU's memory must be a positive number of bytes, not {device_bytes}."
    if (budget is not None and budget < 1) or (size is not None and size < 1):
        return f"The host budget and bytes per example must be positive, not {budget} and {size}."
    if budget and size and budget // size < replicas:
        return (
            f"The host-memory budget of {budget} bytes holds {budget // size} examples of {size} "
            f"bytes, fewer than one for each of the {replicas} replicas."
        )
    return None
