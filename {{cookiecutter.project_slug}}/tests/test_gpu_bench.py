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

from {{ cookiecutter.package_name }} import cli, seam, tasks
from {{ cookiecutter.package_name }}.gpubench import bench, reference, verdicts
from {{ cookiecutter.package_name }}.gpubench.command import describe
from {{ cookiecutter.package_name }}.train.benchmark_memory import fed_from_memory

NO_GPU = not tf.config.list_physical_devices("GPU")
RATES = {
    "float32": 100.0,
    "mixed_float16": 250.0,
    "xla": 130.0,
    "mixed_xla": 390.0,
    "scaled": 180.0,
}


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
    # the published A100 figure (or why there is none for this task) beside the measured one
    assert reference.published_figure("amp_speedup", "A100") in table


{% if cookiecutter.task == "image_classification" -%}
def test_published_figures_are_quoted_as_the_source_gives_them() -> None:
    """DeepLearningExamples' ResNet-50 v1.5 (TF) README: DGX A100 40GB, TF32 + XLA at 256 against
    AMP + XLA at 256; V100 FP32 + XLA at 128 against AMP + XLA at 256; 8-GPU weak scaling."""
    from {{ cookiecutter.package_name }}.tasks.image import gpu_reference

    pub = gpu_reference.PUBLISHED
    # reference.py reaches the image task's figures through the seam, not a fallback
    assert reference.SOURCE == gpu_reference.SOURCE
    assert reference.family("NVIDIA A100-SXM4-80GB") == "A100"
    assert reference.family("Tesla T4") is None
    a100, v100 = pub["A100"], pub["V100"]
    assert "DGX A100 40GB" in reference.SOURCE and "80GB" not in reference.SOURCE
    assert "averaged over a training epoch" in reference.SOURCE
    assert (a100["fp32_name"], a100["fp32_batch"], a100["amp_batch"]) == ("TF32 + XLA", 256, 256)
    assert (v100["fp32_name"], v100["fp32_batch"], v100["amp_batch"]) == ("FP32 + XLA", 128, 256)
    assert a100["scaling_8gpu"] == {"float32": 7.70, "mixed": 7.32}
    assert v100["scaling_8gpu"] == {"float32": 7.69, "mixed": 7.48}
    scaling = {family: reference.published_figure("multi_gpu_scaling", family) for family in pub}
    assert scaling["A100"].startswith("A100: 8 GPUs 92%-96% (7.70x TF32 + XLA, 7.32x AMP + XLA)")
    assert scaling["V100"].startswith("V100: 8 GPUs 94%-96% (7.69x FP32 + XLA, 7.48x AMP + XLA)")
    amp = reference.published_figure("amp_speedup", "V100")
    assert "FP32 + XLA 412 img/s at 128/GPU -> AMP + XLA 1270 at 256/GPU" in amp


{% else -%}
def test_no_published_figure_is_shown_for_this_tasks_models() -> None:
    """NVIDIA's figures are ResNet-50's on images: only an image project holds them, so here
    every row and the source say there is none for this task's models."""
    rows = verdicts.judge({}, {}, on_gpu=True, gpu_family=reference.family("NVIDIA A100-SXM4"))
    assert {row["published"] for row in rows} == {
        "none published for this task's model (NVIDIA's are ResNet-50's, on images)"
    }
    assert reference.SOURCE.startswith("none for this task's models")
    assert "2375" not in verdicts.format_table(
        {"claims": rows, "measured": {}, "why": {}, "on_gpu": True, "device": "d", "mode": "m"}
    )


{% endif -%}
def test_mixed_precision_is_judged_like_against_like() -> None:
    """The published speed-up has XLA on both sides: the claim's figure is mixed + XLA over
    float32 + XLA, and on GPUs the scaled run (with XLA) is set against XLA on one GPU."""
    amp = next(claim for claim in reference.CLAIMS if claim["claim"] == "amp_speedup")
    assert amp["key"] == "mixed_float16_xla_vs_float32_xla"
    results = {name: {"images_per_second": rate} for name, rate in RATES.items()}
    results["scaled"] = {"images_per_second": 234.0}
    measured, why = bench.ratios(results, 2, "xla")
    assert measured["mixed_float16_xla_vs_float32_xla"] == pytest.approx(3.0)
    assert measured["mixed_float16_vs_float32"] == pytest.approx(2.5)
    assert measured["scaling_efficiency"] == pytest.approx(0.90)  # 234 / (2 x 130)
    gpus = [{"model": "NVIDIA A100-SXM4-40GB", "compute_capability": "8.0"}] * 2
    _, specs, _ = bench.plan(
        quick=False, gpus=gpus, model=None, batch=None, data_dir=None, finder_batch=None
    )
    named = dict(specs)
    assert (named["mixed_xla"]["precision"], named["mixed_xla"]["jit"]) == ("mixed_float16", True)
    assert named["scaled"]["jit"] and named["scaled"]["replicas"] == 2


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
        name = {
            ("float32", False, 1): "float32",
            ("mixed_float16", False, 1): "mixed_float16",
            ("mixed_float16", True, 1): "mixed_xla",
        }
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
    assert record["measured"]["mixed_float16_xla_vs_float32_xla"] == pytest.approx(3.0)
    assert [s["replicas"] for s in specs] == [1, 1, 1, 1, bench.QUICK_LOGICAL_CPUS]
    for row in record["claims"]:
        assert row["verdict"].startswith(verdicts.CANNOT), row
        assert row["claim"] in out
    assert "3.00x" in out and "2.50x" in out and "90%" in out  # shown, still not confirmed
    assert describe(tmp_path) in out  # notebook 00 shows the same table


{% if cookiecutter.task == "image_classification" -%}
@pytest.mark.slow  # a real measurement process, about 15 s: the image bake's make test-slow
{% endif -%}
def test_one_quick_measurement_in_its_own_process() -> None:
    """A real measurement process: the quick float32 run trains and reports its rate."""
    _, specs, _ = bench.plan(
        quick=True, gpus=[], model=None, batch=None, data_dir=None, finder_batch=None
    )
    name, spec = specs[0]
    result = bench.run_one(spec, timeout=120)
    assert name == "float32" and result.get(f"{seam.noun()}_per_second", 0) > 0, result


def test_memory_feed_is_the_tasks_training_input_for_one_call_only() -> None:
    """Inside fed_from_memory the task's training batches are the given ones (gpu-bench's and the
    training benchmark's input); afterwards, also after an error, the task reads its own again."""
    task = tasks.current()
    meta = task.bench.synthetic_meta(4, 3)
    inputs, labels = task.bench.synthetic_batch(meta, 8, seed=0)
    with fed_from_memory(inputs, labels):
        batches = list(task.build_inputs("no-run-folder", "train", 4))
    assert len(batches) == 2
    assert sorted(int(y) for _, batch in batches for y in batch) == sorted(labels.tolist())
    assert "build_inputs" not in vars(task)  # the class's own again
    with pytest.raises(RuntimeError), fed_from_memory(inputs, labels):
        raise RuntimeError("a failed measurement")
    assert "build_inputs" not in vars(task)


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
