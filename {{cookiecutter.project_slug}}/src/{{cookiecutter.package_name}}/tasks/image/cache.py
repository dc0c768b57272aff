"""cache="auto": keep the decoded images in memory only when they fit, and say why in one sentence.

Caching decoded images makes every epoch after the first one fast, but decoded photos are big:
224×224×3 is 150 kB an image, so a million photos are 150 GB, and a cache that does not fit
ends a training run in the out-of-memory killer, not in a slower epoch. "auto" caches when the
decoded split takes at most CACHE_SHARE of the memory available now (the rest is the shuffle
buffer's, the model's and everyone else's); otherwise every epoch reads and decodes the shards,
and the cold-epoch rate the benchmark reports is the rate training gets.

"Available" is the smaller of the machine's (/proc/meminfo's MemAvailable) and the room left under
the job's own memory limit: a Slurm job, a Kubernetes pod or a limited container runs in a
cgroup whose limit /proc/meminfo does not show, and the kernel kills the job at that limit however
much memory the machine has free.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .image_source import DataError

CACHE_SHARE = 0.25  # of the available memory that an in-memory cache may take
CACHE_VALUES = ("auto", True, False)
PROC, CGROUP = Path("/proc"), Path("/sys/fs/cgroup")
UNLIMITED = 2**60  # cgroup v1 writes "no limit" as a number near 2**63
# (limit file, usage file, the memory.stat key of file pages the kernel may reclaim), per version
V2 = ("memory.max", "memory.current", "inactive_file")
V1 = ("memory.limit_in_bytes", "memory.usage_in_bytes", "total_inactive_file")


def check_cache(cache: Any) -> None:
    """Refuse anything but "auto", True or False in one sentence."""
    if not (cache == "auto" and isinstance(cache, str)) and not isinstance(cache, bool):
        raise DataError(
            f"cache={cache!r} is not allowed: use 'auto' (in memory when the decoded images fit "
            f"{CACHE_SHARE:.0%} of the available memory), True (always) or False (never)."
        )


def decide(cache: Any, count: int, image_shape: Sequence[int]) -> dict[str, Any]:
    """Whether to cache `count` decoded images of `image_shape`, the budget, and why, as a dict:
    cache (bool), cache_setting, cache_bytes, cache_budget_bytes, cache_reason."""
    check_cache(cache)
    needed = int(count) * math.prod(int(side) for side in image_shape)
    available = available_memory()
    budget = None if available is None else int(available * CACHE_SHARE)
    size = _size(needed)
    if cache is not True and cache is not False:
        if budget is None:
            chosen, why = False, f"the available memory is unknown here, so {size} is not cached"
        elif needed <= budget:
            chosen = True
            why = f"the decoded images ({size}) fit {CACHE_SHARE:.0%} of the available memory"
        else:
            chosen = False
            why = (
                f"the decoded images ({size}) exceed {CACHE_SHARE:.0%} of the available memory "
                f"({_size(budget)}), so every epoch reads and decodes the shards"
            )
    else:
        chosen = bool(cache)
        why = f"cache={cache} was asked for ({size} decoded)"
    reason = f"{'Caching' if chosen else 'Not caching'} in memory: {why}."
    return {
        "cache": chosen,
        "cache_setting": cache,
        "cache_bytes": needed,
        "cache_budget_bytes": budget,
        "cache_reason": reason,
    }


def available_memory(proc: Path | None = None, cgroup: Path | None = None) -> int | None:
    """Bytes this process may still allocate: the smaller of the machine's MemAvailable and the
    room left under its cgroup's memory limit; None when neither is known. `proc` and `cgroup`
    are where /proc and /sys/fs/cgroup are (PROC and CGROUP unless given)."""
    proc, cgroup = proc or PROC, cgroup or CGROUP
    machine = meminfo_available(_text(proc / "meminfo"))
    if machine is None and proc == Path("/proc"):
        try:
            machine = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        except (ValueError, OSError, AttributeError):
            machine = None
    known = [value for value in (machine, cgroup_room(proc, cgroup)) if value is not None]
    return min(known) if known else None


def meminfo_available(text: str | None) -> int | None:
    """MemAvailable of a /proc/meminfo text, in bytes (the file counts in kB, 1024 bytes)."""
    for line in (text or "").splitlines():
        fields = line.split()
        if fields[:1] == ["MemAvailable:"] and len(fields) >= 2 and fields[1].isdigit():
            return int(fields[1]) * 1024
    return None


def cgroup_room(proc: Path, cgroup: Path) -> int | None:
    """Bytes left under the tightest memory limit of this process's cgroup and of every cgroup
    above it (v2 memory.max, v1 memory.limit_in_bytes), None when none is set. Used is what the
    kernel cannot take back: usage less inactive file pages (the working set, as the kubelet
    counts it), so the page cache of the shards just read does not hide the room."""
    rooms = []
    for line in (_text(proc / "self" / "cgroup") or "").splitlines():
        number, controllers, path = (line.split(":", 2) + ["", ""])[:3]
        if number == "0" and not controllers:
            base, files = cgroup, V2
        elif "memory" in controllers.split(","):
            base, files = cgroup / "memory", V1
        else:
            continue
        folder = base / path.strip().lstrip("/")
        while True:  # a container sees its own cgroup at the root: the walk up ends there
            room = _room(folder, *files)
            rooms += [] if room is None else [room]
            if folder == base or base not in folder.parents:
                break
            folder = folder.parent
    return min(rooms) if rooms else None


def _room(folder: Path, limit_file: str, usage_file: str, reclaimable: str) -> int | None:
    limit = _number(_text(folder / limit_file))
    if limit is None or limit >= UNLIMITED:
        return None
    used = _number(_text(folder / usage_file)) or 0
    stat = dict(
        line.split(None, 1)
        for line in (_text(folder / "memory.stat") or "").splitlines()
        if " " in line
    )
    free_again = _number(stat.get(reclaimable)) or 0
    return max(0, limit - max(0, used - free_again))


def _text(path: Path) -> str | None:
    try:
        return path.read_text(encoding="ascii")
    except (OSError, ValueError):
        return None


def _number(text: str | None) -> int | None:
    """A whole number of bytes, or None for "max" (no limit), an empty or a missing file."""
    text = (text or "").strip()
    return int(text) if text.isdigit() else None


def _size(count: int) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if count >= scale:
            return f"{count / scale:,.1f} {unit}"
    return f"{count} bytes"
