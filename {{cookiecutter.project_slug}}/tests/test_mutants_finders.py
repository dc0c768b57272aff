"""The finders' decisions a user cannot see go wrong: when the range test calls a loss diverged, and
when an earlier choice is reused instead of probed again.

The range-test curves are shaped so that only the documented rule stops them where they stop: the
smoothed loss more than diverge_factor times its best so far (not its first value, not the best
plus the factor). A choice found on other data must not be reused: the data's fingerprint is part
of the basis the choice holds for.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import pytest

from {{ cookiecutter.package_name }} import train
from {{ cookiecutter.package_name }}.find import lr as lr_finder
from {{ cookiecutter.package_name }}.find import probes
from {{ cookiecutter.package_name }}.train import Params, auto

STEPS = 60


def _curve(losses: list[float]):
    """step(lr) for the range test: the next loss of the list, whatever the rate."""
    remaining = iter(losses)
    return lambda rate: next(remaining)


def _falls_then_rises(low: float, rise: float) -> list[float]:
    """1.0 falling linearly to `low` over half the ramp, then rising by `rise` a step."""
    half = STEPS // 2
    fall = [1.0 - (1.0 - low) * i / (half - 1) for i in range(half)]
    return fall + [low + rise * (i + 1) for i in range(STEPS - half)]


def _diverged_at(smoothed: list[float], factor: float) -> int | None:
    """The first index whose smoothed loss exceeds factor times the best so far (the rule)."""
    best = float("inf")
    for i, value in enumerate(smoothed):
        best = min(best, value)
        if value > factor * best:
            return i
    return None


def test_divergence_is_measured_against_the_best_loss_not_the_first() -> None:
    """The loss falls tenfold, then climbs back to 1.6 times where it started: it passed 4 times
    its best long before, although it never reached 4 times its first value (or best + 4)."""
    losses = _falls_then_rises(0.1, 0.05)
    result = lr_finder.range_test(_curve(losses), steps=STEPS, beta=0.5, diverge_factor=4.0)
    assert result.stopped == "diverged", result.reason
    expected = _diverged_at(lr_finder.smooth(losses, 0.5), 4.0)
    assert expected is not None and expected < STEPS - 1
    assert len(result.losses) == expected + 1  # stopped at the first point over the rule, no later
    assert result.smoothed[-1] > 4.0 * min(result.smoothed)
    assert max(result.losses) < 4.0 * result.losses[0]  # the first value alone never diverges


def test_a_rise_below_the_factor_runs_the_whole_ramp() -> None:
    """The loss climbs to 3.6 times its best and stays: not diverged, all steps run."""
    losses = _falls_then_rises(0.25, 0.02)[:STEPS]
    losses = [min(loss, 0.9) for loss in losses]
    result = lr_finder.range_test(_curve(losses), steps=STEPS, beta=0.5, diverge_factor=4.0)
    assert result.stopped == "end" and len(result.losses) == STEPS


def test_the_factor_multiplies_the_best_loss() -> None:
    """With factor 2 the same curve stops earlier than with factor 4: the factor scales the best
    loss (best + 2 and best + 4 would both never be reached by a loss below 1.6)."""
    losses = _falls_then_rises(0.1, 0.05)
    two = lr_finder.range_test(_curve(losses), steps=STEPS, beta=0.5, diverge_factor=2.0)
    four = lr_finder.range_test(_curve(losses), steps=STEPS, beta=0.5, diverge_factor=4.0)
    assert two.stopped == four.stopped == "diverged"
    assert len(two.losses) == _diverged_at(lr_finder.smooth(losses, 0.5), 2.0) + 1
    assert len(two.losses) < len(four.losses)


def _record(folder: Path, name: str, values: dict) -> None:
    (folder / "metrics").mkdir(exist_ok=True)
    (folder / "metrics" / f"{name}.json").write_text(json.dumps(values), encoding="utf-8")


def test_a_choice_is_reused_only_on_the_basis_it_was_found_on(tmp_path: Path) -> None:
    params = Params(batch_size="auto", learning_rate="auto", seed=7)
    found_on = auto.basis(params, {"precision": "float32", "data": "A"}, 1, False)
    _record(tmp_path, "batch_finder", {"batch": 48, "basis": found_on})
    lr_basis = {**found_on, "batch_size": 48, "seed": 7}
    _record(tmp_path, "lr_finder", {"learning_rate": 0.01, "basis": lr_basis})
    values, sources = auto.reuse(tmp_path, params, found_on)
    assert (values.batch_size, values.learning_rate) == (48, 0.01)
    assert sources == {
        "batch_size": "batch-size finder (reused metrics/batch_finder.json)",
        "learning_rate": "range test (reused metrics/lr_finder.json)",
    }
    other_data = auto.basis(params, {"precision": "float32", "data": "B"}, 1, False)
    assert auto.reuse(tmp_path, params, other_data) == (params, {})
    # A rate found at another seed is not reused; the batch still is.
    values, sources = auto.reuse(tmp_path, dataclasses.replace(params, seed=8), found_on)
    assert (values.batch_size, values.learning_rate, list(sources)) == (48, "auto", ["batch_size"])
    # A given batch: the rate found at that batch is reused, at another batch it is not.
    at_48 = dataclasses.replace(params, batch_size=48)
    assert auto.reuse(tmp_path, at_48, found_on)[0].learning_rate == 0.01
    at_64 = dataclasses.replace(params, batch_size=64)
    assert auto.reuse(tmp_path, at_64, found_on) == (at_64, {})


@pytest.mark.parametrize(
    "change",
    [
        {"model": "another_model"},
        {"width": 16},
        {"dropout": 0.3},
        {"strategy": "mirrored"},
        {"precision": "mixed_float16"},
        {"data": "other data"},
        {"replicas": 2},
        {"jit": True},
    ],
)
def test_every_part_of_the_basis_counts(change: dict) -> None:
    params = Params(batch_size="auto")
    state = {"precision": "float32", "data": "A"}
    before = auto.basis(params, state, 1, False)
    fields = {k: v for k, v in change.items() if k in ("model", "width", "dropout", "strategy")}
    after = auto.basis(
        dataclasses.replace(params, **fields),
        {**state, **{k: v for k, v in change.items() if k in state}},
        change.get("replicas", 1),
        change.get("jit", False),
    )
    assert after != before


def test_the_basis_is_recorded_under_the_names_of_what_it_holds_for() -> None:
    """metrics/batch_finder.json shows the basis: each part under its own name."""
    params = Params(batch_size="auto", model="another_model", width=16, dropout=0.3)
    state = {"precision": "mixed_float16", "data": "sha256:abc"}
    assert auto.basis(params, state, 2, True) == {
        "model": "another_model",
        "width": 16,
        "dropout": 0.3,
        "precision": "mixed_float16",
        "strategy": params.strategy,
        "replicas": 2,
        "jit_compile": "True",
        "data": "sha256:abc",
    }


def test_a_learning_rate_given_is_never_replaced_by_a_found_one(tmp_path: Path) -> None:
    params = Params(batch_size=48, learning_rate=0.005, seed=7)
    found_on = auto.basis(params, {"precision": "float32", "data": "A"}, 1, False)
    lr_basis = {**found_on, "batch_size": 48, "seed": 7}
    _record(tmp_path, "lr_finder", {"learning_rate": 0.01, "basis": lr_basis})
    assert auto.reuse(tmp_path, params, found_on) == (params, {})


def test_no_record_or_a_record_of_no_basis_is_not_reused(tmp_path: Path) -> None:
    params = Params(batch_size="auto", learning_rate="auto")
    found_on = auto.basis(params, {"precision": "float32", "data": "A"}, 1, False)
    assert auto.reuse(tmp_path, params, found_on) == (params, {})
    _record(tmp_path, "batch_finder", {"batch": 48})
    assert auto.reuse(tmp_path, params, found_on) == (params, {})


@pytest.fixture(scope="module")
def batch_found(tmp_path_factory: pytest.TempPathFactory, digits_data: Path) -> Path:
    """A run folder where training chose its batch with the batch-size finder (a short search)."""
    run = tmp_path_factory.mktemp("batch-found") / "run"
    shutil.copytree(digits_data, run / "data")
    train.run(run, _auto_batch(epochs=1), verbose=False)
    assert (run / "metrics" / "batch_finder.json").is_file()
    return run


def _auto_batch(epochs: int) -> Params:
    return Params(batch_size="auto", learning_rate=0.001, epochs=epochs, finder_seconds=2)


class Probed(Exception):
    """The finder probed a batch again."""


def _no_probe(*_, **__):
    raise Probed


def test_a_batch_found_on_the_same_data_is_reused(batch_found: Path, tmp_path, monkeypatch):
    run = tmp_path / "run"
    shutil.copytree(batch_found, run)
    monkeypatch.setattr(probes, "batch_probe", _no_probe)
    again = train.run(run, _auto_batch(epochs=2), verbose=False)
    assert again["parameter_sources"]["batch_size"].startswith("batch-size finder (reused")


def test_a_batch_found_on_other_data_is_not_reused(batch_found: Path, tmp_path, monkeypatch):
    """01_data ran again (here: meta.json rewritten with the same values, so the fingerprint
    changes while the data reads the same): the finder must probe again, not reuse the choice."""
    run = tmp_path / "run"
    shutil.copytree(batch_found, run)
    meta = run / "data" / "meta.json"
    meta.write_text(json.dumps(json.loads(meta.read_text(encoding="utf-8"))), encoding="utf-8")
    monkeypatch.setattr(probes, "batch_probe", _no_probe)
    with pytest.raises(Probed):
        train.run(run, _auto_batch(epochs=2), verbose=False)
