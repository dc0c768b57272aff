"""The batch-size finder's sentences and record, word for word, at the edges of its rules.

test_find.py checks which batch is chosen; what the user reads (metrics/batch_finder.json, the
reason 03_train prints) is pinned here: a wrong clause or a record field under another name is a
choice explained wrongly.
"""

from __future__ import annotations

import json

import pytest
from test_find import FakeDevice, find

from tf_gpu_project.find import choice_record


def test_the_record_holds_the_choice_why_and_every_probe() -> None:
    choice = find(FakeDevice(fits=100, seconds=0.5), replicas=2)
    record = json.loads(json.dumps(choice_record(choice)))
    probes = [
        {
            "batch": p.batch,
            "ok": p.ok,
            "examples_per_sec": p.examples_per_sec,
            "peak_bytes": p.peak_bytes,
            "seconds": p.seconds,
            "note": p.note,
        }
        for p in choice.probes
    ]
    assert record == {
        "batch": choice.batch,
        "device": "gpu",
        "replicas": 2,
        "per_replica_batch": choice.batch // 2,
        "reason": choice.reason,
        "limited_by": "memory",
        "probes": probes,
        "probe_seconds": 0.5 * len(probes),
        "settings": dict(choice.settings),
    }
    assert isinstance(record["per_replica_batch"], int)


def test_an_odd_batch_over_replicas_is_recorded_per_replica_rounded_down() -> None:
    choice = find(FakeDevice(), kind="cpu", replicas=2, train_count=101)
    record = choice_record(choice)
    assert (record["batch"], record["per_replica_batch"]) == (100, 50)


@pytest.mark.parametrize(
    ("options", "reason", "limited_by"),
    [
        (
            {"train_count": 100},
            "the largest batch probed, 100, fit in memory, and the training set caps the batch.",
            "training_set",
        ),
        (
            {"host_budget_bytes": 100 * 1000, "bytes_per_example": 1000},
            "the largest batch probed, 64, fit in memory, and the next candidate is over the "
            "host-memory budget.",
            "host_memory",
        ),
    ],
)
def test_a_gpu_batch_that_never_ran_out_of_memory_says_what_stopped_it(
    options: dict, reason: str, limited_by: str
) -> None:
    choice = find(FakeDevice(), **options)
    assert (choice.reason, choice.limited_by) == (reason, limited_by)


@pytest.mark.parametrize(
    ("replicas", "reason"),
    [
        (1, "the largest batch that fit, 100, less a 10 % memory margin."),
        (
            2,
            "the largest batch that fit, 100, less a 10 % memory margin, rounded down to a "
            "multiple of 2 replicas.",
        ),
    ],
)
def test_rounding_to_replicas_is_said_only_for_several(replicas: int, reason: str) -> None:
    choice = find(FakeDevice(fits=100), replicas=replicas)
    assert choice.reason == reason


def _cpu(rates: dict[int, float | None], **options):
    return find(FakeDevice(rate=rates.__getitem__), "cpu", train_count=max(rates), **options)


def test_a_cpu_batch_that_is_the_fastest_and_largest_says_what_stopped_it() -> None:
    choice = _cpu({32: 1000.0, 64: 2000.0, 128: 4000.0})
    assert choice.reason == (
        "the smallest batch within 5 % of the best rate (128: 4,000 examples/s), and the "
        "training set caps the batch."
    )
    choice = find(FakeDevice(fits=100, rate=lambda batch: batch**3), "cpu")  # RAM ran out
    assert choice.reason == (
        "the smallest batch within 5 % of the best rate (100: 1,000,000 examples/s), and the "
        "next candidate ran out of memory."
    )


def test_the_fastest_batch_is_the_rate_peak_not_the_largest_batch() -> None:
    choice = _cpu({32: 1000.0, 64: 2000.0, 128: 4000.0, 256: 2000.0})
    assert choice.batch == 128
    assert (
        choice.reason == "the smallest batch within 5 % of the best rate (128: 4,000 examples/s)."
    )
    assert choice.limited_by == "throughput_knee"


def test_of_two_equally_fast_batches_the_smaller_is_the_best() -> None:
    choice = _cpu({32: 1000.0, 64: 3000.0, 128: 3000.0})
    assert choice.reason == "the smallest batch within 5 % of the best rate (64: 3,000 examples/s)."


def test_a_rate_exactly_at_the_tolerance_is_within_it() -> None:
    assert _cpu({32: 1000.0, 64: 2000.0}, knee_tolerance=0.5).batch == 32


def test_a_probe_without_a_rate_counts_as_no_rate() -> None:
    """A slow model (under 1 example/s): a probe that fit but measured no rate is never the best."""
    choice = _cpu({32: None, 64: 0.5, 128: 0.6})
    assert choice.batch == 128


def test_a_gpu_search_cut_by_the_time_budget_says_only_that() -> None:
    choice = find(FakeDevice(seconds=10.0), max_seconds=25)
    assert choice.reason == (
        "the largest batch probed, 128, fit in memory; the 25 s budget ended the search."
    )
