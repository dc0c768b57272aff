"""The finders' decision rules on synthetic probes and loss curves (no TensorFlow).

Batch size: a fake GPU that runs out of memory above a batch, a fake CPU with known rates, the
training-set and host-memory caps, a fake clock for the time budget. Learning rate: the ramp,
the smoothing, a synthetic loss curve whose steepest descent is known, NaN and flat curves.
The real probes, on the fake task, are in test_find_shared.py.
"""

from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pytest
from helpers import assert_one_sentence

from {{ cookiecutter.package_name }}.find import (
    FindError,
    Probe,
    choice_record,
    find_batch,
    lr_record,
    lr_schedule,
    range_test,
    smooth,
    suggest,
)
from {{ cookiecutter.package_name }}.find.lr import centered


class FakeDevice:
    """probe(batch): out of memory above `fits`, else `rate(batch)` examples/s; every call kept.
    Each probe advances the fake clock by `seconds`."""

    def __init__(self, fits: float = math.inf, rate=lambda batch: 100.0 * batch, seconds=1.0):
        self.fits, self.rate, self.seconds = fits, rate, seconds
        self.calls: list[int] = []
        self.now = 0.0

    def probe(self, batch: int) -> Probe:
        self.calls.append(batch)
        self.now += self.seconds
        if batch > self.fits:
            return Probe(batch, False, None, None, self.seconds, "out of memory")
        return Probe(batch, True, self.rate(batch), batch * 1000, self.seconds)

    def clock(self) -> float:
        return self.now


def find(device: FakeDevice, kind: str = "gpu", **options):
    options = {"replicas": 1, "train_count": 60_000, **options}
    return find_batch(device.probe, device=kind, clock=device.clock, **options)


# Bisection narrows the largest batch that fits to within 3 % (at least one batch per replica);
# the choice keeps a 10 % margin below it, rounded down to a multiple of the replicas:
# (fits above N, replicas, largest fit found, chosen).
@pytest.mark.parametrize(
    ("fits", "replicas", "largest", "chosen"),
    [
        (100, 1, 100, 90),
        (1000, 8, 992, 888),
        (20, 3, 18, 15),
        (2500, 4, 2496, 2244),
        (37, 2, 36, 32),
    ],
)
def test_gpu_finds_the_largest_batch_that_fits_and_keeps_a_margin(fits, replicas, largest, chosen):
    device = FakeDevice(fits=fits)
    choice = find(device, replicas=replicas)
    assert len(device.calls) == len(set(device.calls)), f"a batch probed twice: {device.calls}"
    assert all(batch % replicas == 0 and batch >= replicas for batch in device.calls)
    assert max(p.batch for p in choice.probes if p.ok) == largest
    assert largest >= min(fits * 0.97, fits - replicas + 1) - replicas
    assert choice.batch == chosen <= fits and choice.batch % replicas == 0
    assert choice.limited_by == "memory" and choice.device == "gpu"
    assert "10 % memory margin" in choice.reason and str(largest) in choice.reason
    assert_one_sentence(choice.reason[0].upper() + choice.reason[1:])
    assert [p.batch for p in choice.probes] == device.calls


class LinearGpu(FakeDevice):
    """A GPU of `size` bytes whose step takes `fixed` bytes plus `per` for each example (the
    model, its optimizer and workspaces, then the activations): a batch fits while that sum does;
    each probe reports it as its peak."""

    def __init__(self, size: int, fixed: int, per: int):
        super().__init__(fits=(size - fixed) // per)
        self.fixed, self.per = fixed, per

    def probe(self, batch: int) -> Probe:
        probed = super().probe(batch)
        return dataclasses.replace(probed, peak_bytes=self.fixed + self.per * batch)


# (GPU bytes, fixed bytes, bytes per example, replicas): the largest batch that fits, found by
# doubling from 32, and by the line through the peaks when the GPU's size is given.
GIB = 2**30
LINES = [
    (80 * GIB, 3 * GIB, 70 * 2**20, 1),  # an 80 GB GPU, ResNet50-like: fits 1126
    (80 * GIB, 3 * GIB, 70 * 2**20, 8),
    (8 * GIB, 1 * GIB, 9 * 2**20, 1),  # a laptop GPU: fits 796
    (24 * GIB, 2 * GIB, 3 * 2**20, 2),  # a small model on a 24 GB GPU: fits 7509
]


@pytest.mark.parametrize(("size", "fixed", "per", "replicas"), LINES)
def test_a_gpus_size_sends_the_search_near_the_edge_in_fewer_probes(size, fixed, per, replicas):
    """The same largest fit, to the same resolution, in fewer probes (each one a compile)."""
    doubled, lined = LinearGpu(size, fixed, per), LinearGpu(size, fixed, per)
    by_doubling = find(doubled, replicas=replicas)
    by_line = find(lined, replicas=replicas, device_bytes=size)
    largest = [max(p.batch for p in choice.probes if p.ok) for choice in (by_doubling, by_line)]
    fits = lined.fits
    assert all(fits >= batch >= fits * 0.97 - replicas for batch in largest), (largest, fits)
    assert len(lined.calls) <= len(doubled.calls) - 4, (lined.calls, doubled.calls)
    assert lined.calls[:2] == doubled.calls[:2]  # the line needs two probes that fit
    assert lined.calls[2] > 2 * lined.calls[1]  # then jumps past the doubling
    assert len(lined.calls) == len(set(lined.calls))
    assert all(batch % replicas == 0 for batch in lined.calls)
    assert by_line.batch == max(replicas, int(largest[1] * 0.9) // replicas * replicas)


def test_a_line_that_aims_past_the_edge_is_bisected_back():
    """A model whose memory grows faster than its first two probes say (a bigger workspace at a
    larger batch): the aim runs out of memory, and the bisection finds the edge below it."""
    device = LinearGpu(16 * GIB, GIB, 2**20)

    def probe(batch: int) -> Probe:
        probed = device.probe(batch)
        if batch > 64:  # out of memory from 3,000 on, though the line says 14,745 fit
            ok = batch <= 3000
            return dataclasses.replace(probed, ok=ok, peak_bytes=None if not ok else 1)
        return probed

    choice = find_batch(probe, device="gpu", replicas=1, train_count=60_000, clock=device.clock,
                        device_bytes=16 * GIB)  # fmt: skip
    assert device.calls[2] == int((16 * GIB * 0.9 - GIB) / 2**20)
    assert 3000 >= max(p.batch for p in choice.probes if p.ok) >= 2910


def test_a_gpu_larger_than_the_line_says_resumes_doubling():
    """A size that understates the GPU (another process's share was counted): two steps past the
    line's edge the search doubles again, and finds the edge in no more probes than doubling."""
    device, plain = LinearGpu(16 * GIB, GIB, 2**20), LinearGpu(16 * GIB, GIB, 2**20)
    choice = find(device, device_bytes=2 * GIB)
    find(plain)
    largest = max(p.batch for p in choice.probes if p.ok)
    assert device.fits >= largest >= device.fits * 0.97
    assert device.calls[2:6] == [819, 868, 920, 975]  # the line's edge, then steps past it
    assert device.calls[6] == 2 * 975 and len(device.calls) <= len(plain.calls)


def test_without_growing_peaks_the_search_doubles():
    """Peaks that do not grow with the batch (a device that reports none) draw no line."""
    device = FakeDevice(fits=1000)
    flat = find_batch(
        lambda b: dataclasses.replace(device.probe(b), peak_bytes=5),
        device="gpu", replicas=1, train_count=60_000, device_bytes=GIB, clock=device.clock,
    )  # fmt: skip
    assert device.calls[:6] == [32, 64, 128, 256, 512, 1024]
    assert max(p.batch for p in flat.probes if p.ok) >= 970


def test_a_cpu_search_ignores_a_gpus_size():
    device, other = FakeDevice(), FakeDevice()
    find(device, "cpu", device_bytes=GIB)
    find(other, "cpu")
    assert device.calls == other.calls


def test_a_slow_model_finds_its_memory_limit_within_the_budget() -> None:
    """ResNet50 with XLA: ~25 s a probe (build, trace, compile), the gpu profile's 300 s. The
    bisection stops within 3 %, so memory, not the clock, ends the search: 11 probes, not 16."""
    device = FakeDevice(fits=1000, seconds=25.0)
    choice = find(device, max_seconds=300)
    assert choice.limited_by == "memory" and device.now <= 300
    assert device.calls == [32, 64, 128, 256, 512, 1024, 768, 896, 960, 992, 1008]
    assert choice.batch == 892  # 992 less the 10 % margin


def test_a_start_that_does_not_fit_is_halved_until_one_fits_then_bisected() -> None:
    device = FakeDevice(fits=5)
    choice = find(device, start=32)
    assert device.calls == [32, 16, 8, 4, 6, 5]
    assert choice.batch == 4 and choice.limited_by == "memory"


@pytest.mark.parametrize(("replicas", "smallest"), [(1, 1), (4, 4), (3, 3)])
def test_nothing_fits_is_one_sentence_naming_the_smallest_batch_tried(replicas, smallest) -> None:
    device = FakeDevice(fits=0)
    with pytest.raises(FindError) as error:
        find(device, replicas=replicas)
    assert min(device.calls) == smallest and device.calls[-1] == smallest
    assert f"global batch of {smallest} " in str(error.value)
    assert_one_sentence(str(error.value))


def test_cpu_chooses_the_smallest_batch_within_5_percent_of_the_best_rate() -> None:
    rates = {32: 1000.0, 64: 1900.0, 128: 3000.0, 256: 3050.0, 512: 3080.0}
    device = FakeDevice(rate=rates.__getitem__)
    choice = find(device, "cpu", train_count=512)
    # 5 % below the best, 3080, is 2926: 128 (3000) is the smallest batch at or above it.
    assert device.calls == [32, 64, 128, 256, 512]
    assert choice.batch == 128 and choice.limited_by == "throughput_knee"
    assert "128: 3,000 examples/s against 3,080 at 512" in choice.reason
    # Within 1 % (3049.2): 256 (3050).
    assert (
        find(FakeDevice(rate=rates.__getitem__), "cpu", train_count=512, knee_tolerance=0.01).batch
        == 256
    )


def test_the_training_set_caps_the_batch_and_is_itself_a_candidate() -> None:
    device = FakeDevice()  # rate 100 x batch: larger is always faster
    choice = find(device, "cpu", replicas=3, train_count=1000)
    assert device.calls == [33, 66, 132, 264, 528, 999]
    assert choice.batch == 999 and choice.limited_by == "training_set"
    gpu = FakeDevice()
    choice = find(gpu, "gpu", replicas=2, train_count=301, start=64)
    assert gpu.calls == [64, 128, 256, 300]
    assert choice.batch == 300 and choice.limited_by == "training_set"  # no margin: never ran out


def test_a_batch_over_the_host_budget_is_recorded_and_not_probed() -> None:
    device = FakeDevice()
    choice = find(device, "cpu", host_budget_bytes=300_000, bytes_per_example=1000)
    assert device.calls == [32, 64, 128, 256]
    assert choice.probes[-1] == Probe(512, False, None, None, 0.0, "over the host-memory budget")
    assert choice.batch == 256 and choice.limited_by == "host_memory"
    assert "host-memory budget" in choice.reason


def test_the_time_budget_ends_the_search_and_the_choice_says_so() -> None:
    device = FakeDevice(seconds=10.0)
    choice = find(device, "cpu", max_seconds=25)
    assert device.calls == [32, 64, 128]  # after 30 s, over 25 s: no fourth probe
    assert choice.batch == 128 and choice.limited_by == "time" and "25 s budget" in choice.reason
    assert find(FakeDevice(seconds=10.0), "cpu", max_seconds=1).batch == 32  # one probe always
    gpu = FakeDevice(fits=100, seconds=10.0)
    choice = find(gpu, "gpu", max_seconds=45)
    assert gpu.calls == [32, 64, 128, 96, 112]  # the bisection was cut at 50 s
    assert choice.batch == 86 and choice.limited_by == "time" and "margin" in choice.reason


def test_a_probe_that_raises_anything_but_out_of_memory_propagates() -> None:
    def buggy(batch: int) -> Probe:
        if batch > 64:
            raise KeyError("a bug in the probe")
        return Probe(batch, True, 1.0, None, 0.1)

    with pytest.raises(KeyError):
        find_batch(buggy, device="gpu", replicas=1, train_count=1000)


@pytest.mark.parametrize(
    "options",
    [
        {"replicas": 8, "train_count": 5},
        {"device": "tpu"},
        {"replicas": 0},
        {"max_seconds": 0},
        {"memory_margin": 1.0},
        {"knee_tolerance": 0},
        {"host_budget_bytes": 1000, "bytes_per_example": 600, "replicas": 2},
    ],
)
def test_bad_batch_finder_input_is_one_sentence_before_any_probe(options) -> None:
    device = FakeDevice()
    options = {"device": "gpu", "replicas": 1, "train_count": 1000, **options}
    with pytest.raises(FindError) as error:
        find_batch(device.probe, **options)
    assert device.calls == []
    assert_one_sentence(str(error.value))


def test_the_batch_record_is_json_with_every_probe() -> None:
    choice = find(FakeDevice(fits=100), replicas=2)
    record = json.loads(json.dumps(choice_record(choice)))
    assert record["batch"] == choice.batch and record["replicas"] == 2
    assert record["limited_by"] == "memory" and record["reason"] == choice.reason
    assert [p["batch"] for p in record["probes"]] == [p.batch for p in choice.probes]
    assert {"ok", "examples_per_sec", "peak_bytes", "seconds", "note"} <= set(record["probes"][0])
    assert record["settings"]["memory_margin"] == 0.1


def test_the_schedule_ramps_exponentially_from_min_to_max() -> None:
    rates = lr_schedule(1e-6, 1.0, 100)
    assert len(rates) == 100 and rates[0] == 1e-6 and rates[-1] == 1.0
    ratios = np.array(rates[1:]) / np.array(rates[:-1])
    assert np.allclose(ratios, 10 ** (6 / 99), rtol=1e-9)


def test_smoothing_is_bias_corrected() -> None:
    assert smooth([2.5] * 50) == pytest.approx([2.5] * 50, rel=1e-12)
    # By hand, beta 0.5: 0.5 / 0.5 = 1, then (0.25 + 1.5) / 0.75 = 7/3.
    assert smooth([1.0, 3.0], beta=0.5) == pytest.approx([1.0, 7 / 3])


def synthetic_loss(lr: float) -> float:
    """Falls from 2 to 1 around lr = 1e-2 (steepest there against log lr), explodes above 0.3."""
    return 1.5 - 0.5 * math.tanh(math.log(lr / 1e-2)) + max(0.0, 20 * (lr / 0.3 - 1))


@pytest.mark.parametrize("steps", [30, 100, 300])
@pytest.mark.parametrize("noise", [0.0, 0.02])
def test_the_suggestion_is_near_the_steepest_descent_and_divergence_stops(steps, noise) -> None:
    rng = np.random.default_rng(0)
    result = range_test(lambda lr: synthetic_loss(lr) * (1 + noise * rng.normal()), steps=steps)
    assert 1e-2 / 3 <= result.suggestion <= 1e-2 * 3, result.reason
    assert result.stopped == "diverged" and len(result.losses) < steps
    assert result.learning_rates[result.index] == result.suggestion
    assert (
        result.reason.startswith("steepest descent") and f"{result.suggestion:.2e}" in result.reason
    )
    assert_one_sentence(result.reason[0].upper() + result.reason[1:])


@pytest.mark.parametrize("steps", [30, 52, 100, 300])
@pytest.mark.parametrize("noise", [0.0, 0.02])
def test_the_suggestion_is_not_delayed_past_the_steepest_rate(steps, noise) -> None:
    """The moving average lags the loss, so its steepest fall sat 1.4-2.7 times above the curve's
    own at 1e-2 (digits on two replicas: 0.0296, and epoch 1 diverged to chance; issue 42 §1.2).
    Read from the loss smoothed both ways, the suggestion is at or a little below 1e-2."""
    rng = np.random.default_rng(0)
    result = range_test(lambda lr: synthetic_loss(lr) * (1 + noise * rng.normal()), steps=steps)
    assert 1e-2 / 2 <= result.suggestion <= 1e-2 * 1.2, result.reason


def test_the_centered_smoothing_keeps_a_step_where_it_is_and_stops_at_the_first_nan() -> None:
    step = [2.0] * 10 + [1.0] * 10
    both = centered(step, 0.8)
    assert both[9] > 1.5 > both[10]  # the fall stays between steps 9 and 10: no delay
    assert smooth(step, 0.8)[10] > 1.5  # the one-way average is still above the midpoint there
    assert (
        centered([1.0, 2.0, math.nan, 3.0], 0.5)[2:] == [pytest.approx(math.nan, nan_ok=True)] * 2
    )
    assert centered([math.nan], 0.5)[0] != centered([math.nan], 0.5)[0]


def test_a_non_finite_loss_stops_the_test_and_is_kept() -> None:
    result = range_test(lambda lr: synthetic_loss(lr) if lr < 0.05 else math.nan)
    assert result.stopped == "non_finite" and math.isnan(result.losses[-1])
    assert result.learning_rates[-1] >= 0.05 > result.learning_rates[-2]
    assert 1e-2 / 3 <= result.suggestion < 0.05
    json.dumps(lr_record(result))  # NaN is written as Python's json writes it


def test_a_flat_curve_takes_the_fallback_and_says_so() -> None:
    result = range_test(lambda lr: 1.5, min_lr=1e-5, max_lr=1e-1, steps=50)
    assert result.stopped == "end" and len(result.losses) == 50
    assert result.suggestion == 1e-5 and result.index == 0  # a tenth of 1e-5, no lower than 1e-5
    assert "fallback" in result.reason
    assert_one_sentence(result.reason[0].upper() + result.reason[1:])
    rising = suggest(lr_schedule(1e-4, 1.0, 20), list(np.linspace(1.0, 2.0, 20)))
    assert rising[0] == 1e-4 and "fallback" in rising[2]
    # Falling by 0.4 % is not a descent: a tenth of the rate at the lowest loss (1.0), index 14.
    rate, index, reason = suggest(lr_schedule(1e-4, 1.0, 20), list(np.linspace(1.0, 0.996, 20)))
    assert rate == pytest.approx(0.1) and index == 14 and "fallback" in reason


def test_too_few_finite_losses_cannot_suggest() -> None:
    calls = []

    def step(lr: float) -> float:
        calls.append(lr)
        return 1.0 if len(calls) < 5 else math.inf

    with pytest.raises(FindError) as error:
        range_test(step)
    assert len(calls) == 5
    assert_one_sentence(str(error.value))


@pytest.mark.parametrize(
    "options",
    [
        {"min_lr": 0.0},
        {"min_lr": 1.0, "max_lr": 0.1},
        {"steps": 9},
        {"beta": 1.0},
        {"beta": 0.0},
        {"diverge_factor": 1.0},
    ],
)
def test_bad_range_test_input_is_one_sentence_before_any_step(options) -> None:
    calls = []
    with pytest.raises(FindError) as error:
        range_test(lambda lr: calls.append(lr) or 1.0, **options)
    assert calls == []
    assert_one_sentence(str(error.value))


def test_the_lr_record_is_json_with_every_point() -> None:
    result = range_test(synthetic_loss, steps=50)
    record = json.loads(json.dumps(lr_record(result)))
    assert record["suggestion"] == result.suggestion and record["stopped"] == "diverged"
    assert len(record["learning_rates"]) == len(record["losses"]) == len(record["smoothed"])
    assert record["settings"]["beta"] == pytest.approx(0.8)  # 1 - 10/50
