"""The batch-size finder's sentences and record, word for word, at the edges of its rules.

test_find.py checks which batch is chosen; what the user reads (metrics/batch_finder.json, the
reason 03_train prints) is pinned here: a wrong clause or a record field under another name is a
choice explained wrongly.
"""

from __future__ import annotations

import json

import pytest
from test_find import FakeDevice, find

from {{ cookiecutter.package_name }}.find import FindError, choice_record, search
from {{ cookiecutter.package_name }}.find.search import Probe, Search


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


def test_the_defaults_are_recorded_as_used() -> None:
    choice = find(FakeDevice(fits=100))
    assert dict(choice.settings) == {
        "device": "gpu",
        "replicas": 1,
        "train_count": 60_000,
        "start": 32,
        "max_seconds": 60.0,
        "host_budget_bytes": None,
        "bytes_per_example": None,
        "device_bytes": None,
        "knee_tolerance": 0.05,
        "memory_margin": 0.1,
        "resolution": 0.03,
    }


def _whole(device: FakeDevice, choice) -> None:
    """Every batch probed and chosen is a whole number (a float batch is no batch)."""
    assert all(type(batch) is int for batch in device.calls), device.calls
    assert all(type(probe.batch) is int for probe in choice.probes)
    assert type(choice.batch) is int


@pytest.mark.parametrize(
    ("options", "calls"),
    [
        ({"train_count": 20}, [20]),  # the training set is smaller than the start
        ({"host_budget_bytes": 21_000, "bytes_per_example": 1000, "replicas": 2}, [20]),
        ({"host_budget_bytes": 64_000, "bytes_per_example": 1000}, [32, 64]),  # 64 fits exactly
        ({"host_budget_bytes": 300_000, "bytes_per_example": 1000, "replicas": 2}, [32, 64, 128]),
    ],
)
def test_the_first_batch_and_the_host_cap_are_whole_batches_within_the_caps(
    options: dict, calls: list[int]
) -> None:
    device = FakeDevice()
    choice = find(device, "cpu", **options)
    assert device.calls[: len(calls)] == calls
    _whole(device, choice)
    if "host_budget_bytes" in options:
        cap = options["host_budget_bytes"] // 1000 // options.get("replicas", 1)
        assert max(device.calls) <= cap * options.get("replicas", 1)
        assert choice.probes[-1].note == "over the host-memory budget"


def test_a_budget_without_bytes_per_example_caps_nothing() -> None:
    device = FakeDevice()
    choice = find(device, "cpu", train_count=256, host_budget_bytes=1000)
    assert device.calls == [32, 64, 128, 256] and choice.limited_by == "training_set"


def test_halving_and_bisecting_probe_whole_multiples_of_the_replicas() -> None:
    device = FakeDevice(fits=10)
    _whole(device, find(device))
    assert device.calls == [32, 16, 8, 12, 10, 11]
    device = FakeDevice(fits=104)
    _whole(device, find(device, replicas=2))
    # 104 fits, 108 not: 4 apart, within 3 % of 104 rounded up to the 2 replicas (4): done
    assert device.calls == [32, 64, 128, 96, 112, 104, 108]


@pytest.mark.parametrize(
    ("seconds", "max_seconds", "message"),
    [
        (
            1.0,
            60,
            "Not even a global batch of 2 (1 per replica) fits in GPU memory, the smallest "
            "the finder tried.",
        ),
        (
            10.0,
            15,
            "Not even a global batch of 16 (8 per replica) fits in GPU memory, the "
            "smallest the finder tried before the 15 s budget ran out.",
        ),
    ],
)
def test_nothing_fits_says_the_smallest_batch_and_whether_time_ran_out(
    seconds: float, max_seconds: float, message: str
) -> None:
    with pytest.raises(FindError) as error:
        find(FakeDevice(fits=1, seconds=seconds), replicas=2, max_seconds=max_seconds)
    assert str(error.value) == message


def test_a_search_exactly_at_its_budget_may_probe_once_more() -> None:
    device = FakeDevice(seconds=10.0)
    find(device, "cpu", max_seconds=30)
    assert device.calls == [32, 64, 128, 256]  # 30 s spent is not over 30 s; 40 s is


def test_a_batch_probed_twice_is_a_bug_said_by_its_number() -> None:
    search = Search(FakeDevice().probe, lambda: 0.0, 60.0)
    search.measure(32)
    with pytest.raises(AssertionError) as error:
        search.measure(32)
    assert str(error.value) == "the finder probed batch 32 twice"


@pytest.mark.parametrize(
    "options",
    [
        {"start": 1},
        {"replicas": 4, "train_count": 4},
        {"memory_margin": 0.0},
        {"resolution": 0.0},
        {"host_budget_bytes": 1, "bytes_per_example": 1},
        {"host_budget_bytes": 2000, "bytes_per_example": 1000, "replicas": 2},
        {"device_bytes": 1},
    ],
)
def test_the_edges_of_the_allowed_values_are_allowed(options: dict) -> None:
    find(FakeDevice(), **{"train_count": 64, **options})


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (
            {"knee_tolerance": 1.0},
            "knee_tolerance must be in (0, 1) and memory_margin in [0, 1), not 1.0 and 0.1.",
        ),
        ({"resolution": 1.0}, "The bisection's resolution must be in [0, 1), not 1.0."),
        (
            {"host_budget_bytes": 0, "bytes_per_example": 1000},
            "The host budget and bytes per example must be positive, not 0 and 1000.",
        ),
        (
            {"host_budget_bytes": 1000, "bytes_per_example": 0},
            "The host budget and bytes per example must be positive, not 1000 and 0.",
        ),
        (
            {"device_bytes": 0},
            "The GPU's memory must be a positive number of bytes, not 0.",
        ),
        (
            {"host_budget_bytes": 3, "bytes_per_example": 2, "replicas": 2},
            "The host-memory budget "
            "of 3 bytes holds 1 examples of 2 bytes, fewer than one for each of the 2 replicas.",
        ),
    ],
)
def test_values_just_past_the_edges_are_refused_naming_them(options: dict, message: str) -> None:
    device = FakeDevice()
    with pytest.raises(FindError) as error:
        find(device, **options)
    assert str(error.value) == message and device.calls == []


def searched(*probes: tuple[int, bool, int | None]) -> Search:
    """A search whose probes so far are (batch, ok, peak bytes)."""
    done = Search(FakeDevice().probe, lambda: 0.0, 60.0)
    done.probes = [Probe(batch, ok, 1.0 if ok else None, peak, 1.0) for batch, ok, peak in probes]
    return done


@pytest.mark.parametrize(
    ("device_bytes", "following"),
    [
        (224_000, 112),  # aim 112 = 100 + 2 steps: the aim itself
        (212_000, 106),  # aim 106 = 100 + 1 step: the aim, one step up
        (200_000, 106),  # aim 100, at the edge: one step up
        (176_000, 106),  # aim 88 = 100 - 2 steps: still one step up
        (174_000, 200),  # aim 87, past two steps below: the line is wrong here, doubled
    ],
)
def test_the_aimed_step_at_its_boundaries(monkeypatch, device_bytes, following) -> None:
    """1,000 bytes an example (50 fit at 50,000, 100 at 100,000), FILL 1/2 so the sums are exact:
    the aim is 100 + (device_bytes / 2 - 100,000) / 1,000, and a step 6 % of 100 (twice the 3 %
    resolution). The aim is taken when a step or more above the largest fit, one step up when
    it is within two steps below it, a doubling when it is further below."""
    monkeypatch.setattr(search, "FILL", 0.5)
    done = searched((50, True, 50_000), (100, True, 100_000))
    assert done.upward(100, device_bytes, 1, 0.03) == following


def test_only_probes_that_fit_and_report_their_peak_are_on_the_line(monkeypatch) -> None:
    """An out-of-memory probe's peak (were one recorded) is not a point of what fits, and a
    probe that fit without a peak reading has none to give: with those left out, one point is
    left, no line, so the search doubles."""
    monkeypatch.setattr(search, "FILL", 0.5)
    oom = searched((50, True, 50_000), (80, False, 300_000))
    assert oom.upward(50, 400_000, 1, 0.03) == 100
    unread = searched((50, True, 50_000), (100, True, None))
    assert unread.upward(100, 400_000, 1, 0.03) == 200
