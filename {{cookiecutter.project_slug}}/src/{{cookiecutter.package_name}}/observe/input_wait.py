"""The input-bound verdict: how much of the training step time waits for the next batch.

Training times, inside its step function, the moment it asks the input pipeline for the next
batch until the batch is there (replica.py); the rest of the step is the model's work. The share
of waiting is the one number that says whether a faster accelerator would help: when it is large,
the GPU idles (the seed's rule of thumb: utilisation under 30 % means the input is the
bottleneck), and 01_data's pipeline knobs (parallel reads and maps, prefetch, cache, shards) are
where the time is won.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..inputbound import INPUT_BOUND_AT, is_input_bound


def input_wait_summary(history: Sequence[dict[str, Any]], *, skip_first: bool) -> dict[str, Any]:
    """`input_wait_fraction` over the epochs of `history` (the first left out when it traced and
    others ran), `input_wait_seconds`, `input_bound` and the `input_verdict` sentence."""
    epochs = [r for r in history if r.get("input_wait_seconds") is not None]
    measured = epochs[1:] if skip_first and len(epochs) > 1 else epochs
    seconds = sum(r["seconds"] for r in measured)
    waited = sum(r["input_wait_seconds"] for r in measured)
    fraction = waited / seconds if seconds > 0 else None
    return {
        "input_wait_fraction": fraction,
        "input_wait_seconds": round(waited, 4) if measured else None,
        "input_wait_epochs": len(measured),
        "input_bound": None if fraction is None else is_input_bound(fraction),
        "input_verdict": verdict(fraction),
    }


def verdict(fraction: float | None) -> str:
    """One sentence on a waiting share (None: no training step ran in this call)."""
    if fraction is None:
        return "No training step ran in this call, so there is no input-wait measurement."
    share = f"{fraction:.0%} of each training step waits for data"
    if is_input_bound(fraction):
        return (
            f"input-bound: {share} — see 01_data's pipeline knobs (parallel reads and maps, "
            "prefetch, cache, more shards) before buying a faster accelerator."
        )
    return f"not input-bound: {share} (input-bound from {INPUT_BOUND_AT:.0%})."
