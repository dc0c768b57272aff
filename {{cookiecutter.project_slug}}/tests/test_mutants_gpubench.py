"""gpu-bench's verdicts at the edges: a figure exactly at a claim's minimum confirms it, and the
memory saving of mixed precision is computed the right way up from the largest batches found.

The largest-batch search only runs on a GPU, so its results are given here as numbers (what the
two measurement processes report), and the ratio and verdict are checked against them.
"""

from __future__ import annotations

import pytest

from {{ cookiecutter.package_name }}.gpubench import bench, reference, verdicts


@pytest.mark.parametrize("claim", reference.CLAIMS, ids=lambda claim: claim["claim"])
def test_a_figure_exactly_at_the_minimum_confirms_the_claim(claim: dict) -> None:
    """`minimum` is documented as "the claim holds when measured >= minimum"."""
    assert verdicts.verdict(claim, claim["minimum"], on_gpu=True) == verdicts.CONFIRMED
    below = claim["minimum"] * (1 - 1e-9)
    assert verdicts.verdict(claim, below, on_gpu=True).startswith(verdicts.NOT_CONFIRMED)


def _max_batches(float32: int | None, mixed: int | None, limited_by=("memory", "memory")) -> dict:
    return {
        "max_float32": {"max_batch": float32, "limited_by": limited_by[0]},
        "max_mixed_float16": {"max_batch": mixed, "limited_by": limited_by[1]},
    }


def test_memory_saving_is_the_share_of_memory_mixed_precision_saves() -> None:
    """float32 fits 600 images, mixed_float16 1000: each image takes 40 % less memory."""
    measured, why = bench.ratios(_max_batches(600, 1000), replicas=1)
    assert measured["memory_saving"] == pytest.approx(0.40)
    assert "memory_saving" not in why
    claim = next(c for c in reference.CLAIMS if c["key"] == "memory_saving")
    assert verdicts.verdict(claim, measured["memory_saving"], on_gpu=True) == verdicts.CONFIRMED


def test_no_memory_saving_when_mixed_precision_fits_no_more() -> None:
    measured, _ = bench.ratios(_max_batches(800, 800), replicas=1)
    assert measured["memory_saving"] == pytest.approx(0.0)
    measured, _ = bench.ratios(_max_batches(900, 1000), replicas=1)
    assert measured["memory_saving"] == pytest.approx(0.10)
    claim = next(c for c in reference.CLAIMS if c["key"] == "memory_saving")
    said = verdicts.verdict(claim, measured["memory_saving"], on_gpu=True)
    assert said == "not confirmed (10%, 25 points short of 35%)"


@pytest.mark.parametrize(
    ("float32", "mixed", "limited_by"),
    [
        (600, 1000, ("memory", "time")),  # the search ran out of time: not the largest batch
        (600, 1000, ("training_set", "memory")),
        (None, 1000, ("memory", "memory")),  # a failed search
    ],
)
def test_a_search_not_stopped_by_memory_gives_no_saving_and_says_why(
    float32, mixed, limited_by
) -> None:
    results = _max_batches(float32, mixed, limited_by)
    measured, why = bench.ratios(results, replicas=1)
    assert measured["memory_saving"] is None
    assert why["memory_saving"].startswith("the largest batch was not found for both precisions")
