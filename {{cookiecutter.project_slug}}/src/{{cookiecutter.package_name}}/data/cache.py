"""cache="auto": keep the decoded images in memory only when they fit, and say why in one sentence.

Caching decoded images makes every epoch after the first one fast, but decoded photos are big:
224×224×3 is 150 kB an image, so a million photos are 150 GB, and a cache that does not fit
ends a training run in the out-of-memory killer, not in a slower epoch. "auto" caches when the
decoded split takes at most CACHE_SHARE of the memory available now (the rest is the shuffle
buffer's, the model's and everyone else's); otherwise every epoch reads and decodes the shards,
and the cold-epoch rate the benchmark reports is the rate training gets.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from typing import Any

from .base import DataError

CACHE_SHARE = 0.25  # of the available memory that an in-memory cache may take
CACHE_VALUES = ("auto", True, False)


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


def available_memory() -> int | None:
    """Bytes of memory available to new allocations now (Linux MemAvailable), or None."""
    try:
        with open("/proc/meminfo", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def _size(count: int) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if count >= scale:
            return f"{count / scale:,.1f} {unit}"
    return f"{count} bytes"
