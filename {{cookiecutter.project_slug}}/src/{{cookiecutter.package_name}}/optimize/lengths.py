"""Batches of token ids cut to their length bucket, for an engine built per bucket.

A text model is fed ids padded to max_tokens (parity and the benchmark use one shape), but its
input length is open and its layers mask the padding, so the same ids cut after the batch's
longest row give the same probabilities (the text task's chain test checks it on ONNX Runtime).
An engine is built for a range of shapes and runs fastest at the shape it was built for: it gets
one range per length bucket, the buckets the training pipeline pads to (8, 16, 32 … max_tokens
tokens), and each batch runs at the shortest bucket that holds it, so a 12-token query pays for
16 positions, not max_tokens. Tasks whose input has one shape (images, tables) have no buckets.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

Ranges = tuple[tuple[int, int], ...]


def length_ranges(run_dir: Path) -> Ranges | None:
    """(fewest, most) tokens of each length bucket of this run's data, shortest first; None
    where the task's input has one shape."""
    from ..data.meta import read_meta
    from ..tasks import current

    ranges = current().export.length_ranges
    return ranges(read_meta(run_dir)) if ranges is not None else None


def cut(batch: np.ndarray, ranges: Ranges) -> tuple[np.ndarray, int]:
    """`batch` (ids, padding 0 at the end of each row) cut or padded to the longest length of
    the shortest bucket that holds its longest row, and that bucket's index."""
    used = np.flatnonzero(np.asarray(batch).any(axis=0))
    longest = int(used[-1]) + 1 if used.size else 1
    index = next((i for i, (_, most) in enumerate(ranges) if most >= longest), len(ranges) - 1)
    width = ranges[index][1]
    if batch.shape[1] < width:  # padded to less than its bucket: pad on
        batch = np.pad(batch, ((0, 0), (0, width - batch.shape[1])))
    return np.ascontiguousarray(batch[:, :width]), index


def engines_sentence(
    who: str, sizes: tuple[int, ...], ranges: Ranges, precisions: list[str]
) -> str:
    """What an engine provider with a profile per batch size and length bucket will build, said
    before the step starts: the count per precision and why (one line)."""
    count = len(sizes) * len(ranges)
    return (
        f"{who} will build {count} engines per precision ({', '.join(precisions)}): one per "
        f"batch size ({', '.join(map(str, sizes))}) times length bucket (up to "
        f"{', '.join(str(most) for _, most in ranges)} tokens), each in a session of its own, "
        "because a session's execution context stays on its first profile; the first run "
        "builds them (minutes each on a large model), later runs load them from the cache."
    )
