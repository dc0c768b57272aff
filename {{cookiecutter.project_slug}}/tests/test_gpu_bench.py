"""`gpu-bench`: every seed claim in the table, never confirmed without a GPU, ratios computed right.

Timings are measured, never asserted. One real measurement runs in its own process (the tiny
quick spec); the whole command runs with its measurement processes replaced by given rates, so
the table, the verdicts and the JSON are checked against numbers known in advance.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import tensorflow as tf
from helpers import assert_one_sentence

from {{ cookiecutter.package_name }} import cli
from {{ cookiecutter.package_name }}.gpubench import bench, reference, verdicts
from {{ cookiecutter.package_name }}.gpubench.command import describe

NO_GPU = not tf.config.list_physical_devices("GPU")
RATES = {"float32": 100.0, "mixed_float16": 250.0, "xla": 130.0, "scaled": 180.0}


def test_scaling_efficiency_from_given_rates() -> None:
    assert verdicts.scaling_efficiency(100.0, 180.0, 2) == pytest.approx(0.90)
    assert verdicts.scaling_efficiency(909.0, 909.0 * 8 * 0.93, 8) == pytest.approx(0.93)
    assert verdicts.scaling_efficiency(50.0, 50.0, 1) == 1.0
    with pytest.raises(ValueError):
        verdicts.scaling_efficiency(0.0, 10.0, 2)


@pytest.mark.parametrize("on_gpu", [False, True])
def test_table_has_every_claim_and_cpu_never_confirms(on_gpu: bool) -> None:
    """The same (claim-beating) figures: confirmed on a GPU, never on the CPU."""
    measured = {claim["key"]: claim["minimum"] * 2 for claim in reference.CLAIMS}
    rows = verdicts.judge(measured, {}, on_gpu=on_gpu, gpu_family="A100")
    assert [row["claim"] for row in rows] == [claim["claim"] for claim in reference.CLAIMS]
    if on_gpu:
        assert all(row["verdict"] == verdicts.CONFIRMED for row in rows)
    else:
        assert all(row["verdict"].startswith(verdicts.CANNOT + " (no GPU") for row in rows)
    record = {"claims": rows, "measured": measured, "why": {}, "on_gpu": on_gpu}
    table = verdicts.format_table({**record, "device": "test", "mode": "quick"})
    for claim in reference.CLAIMS:
        assert claim["claim"] in table and claim["says"] in table
    assert "2375" in table  # the published A100 AMP figure stands beside the measured one


def test_verdicts_on_a_gpu_say_by_how_much_or_why() -> None:
    amp, scaling = reference.CLAIMS[0], reference.CLAIMS[2]
    assert verdicts.verdict(amp, 1.6, on_gpu=True) == "not confirmed (1.60x, 1.25x short of 2x)"
    assert "5 points short of 90%" in verdicts.verdict(scaling, 0.85, on_gpu=True)
    assert verdicts.verdict(scaling, None, on_gpu=True, why="one GPU") == (
        "cannot be measured here (one GPU)"
    )


def test_inference_ratios_from_step_05(tmp_path: Path) -> None:
    record = {
        "baselines": [{"name": "savedmodel", "p50_ms": 10.0, "throughput": {"1": 90, "256": 1000}}],
        "backends": [
            {"status": "ran", "parity_ok": True, "p50_ms": 4.0, "throughput": {"256": 4000}},
            {"status": "ran", "parity_ok": False, "p50_ms": 1.0, "throughput": {"256": 9000}},
        ],
    }
    (tmp_path / "metrics").mkdir()
    (tmp_path / "metrics" / "optimize.json").write_text(json.dumps(record))
    measured, _ = bench.inference(tmp_path)
    assert measured["optimized_vs_savedmodel_throughput"] == pytest.approx(4.0)
    assert measured["optimized_latency_cut_batch1"] == pytest.approx(0.6)
    missing, why = bench.inference(tmp_path / "nothing")
    assert set(missing.values()) == {None} and "run step 05" in why["optimized_latency_cut_batch1"]


@pytest.mark.skipif(not NO_GPU, reason="checks the CPU run; this machine has a GPU")
def test_quick_writes_valid_json_and_full_table(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    """The command end to end, its measurement processes replaced by the given RATES."""
    specs = []

    def given(spec: dict, timeout: float) -> dict:
        specs.append(spec)
        name = {("float32", False, 1): "float32", ("mixed_float16", False, 1): "mixed_float16"}
        key = name.get((spec["precision"], spec["jit"], spec["replicas"]))
        key = key or ("xla" if spec["jit"] else "scaled")
        return {"images_per_second": RATES[key], "replicas": spec["replicas"]}

    monkeypatch.setattr(bench, "run_one", given)
    assert "gpu-bench --quick --run-dir" in describe(tmp_path)  # notebook 00: how to make it
    assert cli.main(["gpu-bench", "--quick", "--run-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    record = json.loads((tmp_path / "metrics" / "gpu_bench.json").read_text())
    assert record["on_gpu"] is False and record["mode"] == "quick"
    assert record["measured"]["scaling_efficiency"] == pytest.approx(0.90)
    assert record["measured"]["mixed_float16_vs_float32"] == pytest.approx(2.5)
    assert [s["replicas"] for s in specs] == [1, 1, 1, bench.QUICK_LOGICAL_CPUS]
    for row in record["claims"]:
        assert row["verdict"].startswith(verdicts.CANNOT), row
        assert row["claim"] in out
    assert "2.50x" in out and "90%" in out  # measured, shown, and still not confirmed
    assert describe(tmp_path) in out  # notebook 00 shows the same table


def test_one_quick_measurement_in_its_own_process() -> None:
    """A real measurement process: the quick float32 run trains and reports its rate."""
    _, specs, _ = bench.plan(
        quick=True, gpus=[], model=None, batch=None, data_dir=None, finder_batch=None
    )
    name, spec = specs[0]
    result = bench.run_one(spec, timeout=120)
    assert name == "float32" and result.get("images_per_second", 0) > 0, result


@pytest.mark.parametrize(
    ("flags", "named"),
    [
        (["--quick", "--model", "nope"], "--model 'nope'"),
        (["--quick", "--batch", "0"], "--batch 0"),
        (["--quick", "--timeout", "-1"], "--timeout -1"),
        (["--quick", "--data", "run"], "--data run"),
        pytest.param([], "No GPU found", marks=pytest.mark.skipif(not NO_GPU, reason="has a GPU")),
    ],
)
def test_bad_flags_refused_in_one_sentence(
    tmp_path: Path, flags: list[str], named: str, capsys: pytest.CaptureFixture
) -> None:
    assert cli.main(["gpu-bench", "--run-dir", str(tmp_path), *flags]) == 2
    error = capsys.readouterr().err.strip().removeprefix(f"{cli.PROG}: ")
    assert named in error
    assert_one_sentence(error)
    assert not (tmp_path / "metrics").exists()
