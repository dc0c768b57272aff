"""gpu-bench's verdicts at the edges: a figure exactly at a claim's minimum confirms it, and the
memory saving of mixed precision is computed the right way up from the largest batches found.

The largest-batch search only runs on a GPU, so its results are given here as numbers (what the
two measurement processes report), and the ratio and verdict are checked against them.
"""

from __future__ import annotations

import json
from pathlib import Path

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


MEASURED = {
    "mixed_float16_xla_vs_float32_xla": 2.5,  # the claim: like against like, both with XLA
    "mixed_float16_vs_float32": 2.4,  # shown, not judged: both without XLA
    "memory_saving": 0.30,
    "scaling_efficiency": None,
    "optimized_vs_savedmodel_throughput": 3.0,
    "optimized_latency_cut_batch1": None,
    "xla_vs_no_xla": 1.3,
    "mixed_bfloat16_vs_float32": None,
}
WHY = {
    "scaling_efficiency": "one GPU: scaling needs two or more",
    "mixed_bfloat16_vs_float32": "not measured: needs compute capability 8.0+",
}


def test_each_row_says_the_claim_the_figures_and_the_verdict() -> None:
    rows = verdicts.judge(MEASURED, WHY, on_gpu=True, gpu_family="A100")
    for row, claim in zip(rows, reference.CLAIMS, strict=True):
        assert row["claim"] == claim["claim"] and row["says"] == claim["says"]
        assert row["published"] == reference.published_figure(claim["claim"], "A100")
        assert row["measured"] == MEASURED[claim["key"]]
    shown = {
        claim["key"]: (row["measured_shown"], row["verdict"])
        for row, claim in zip(rows, reference.CLAIMS, strict=True)
    }
    assert shown == {
        "mixed_float16_xla_vs_float32_xla": ("2.50x", verdicts.CONFIRMED),
        "memory_saving": ("30%", "not confirmed (30%, 5 points short of 35%)"),
        "scaling_efficiency": ("-", "cannot be measured here (one GPU: scaling needs two or more)"),
        "optimized_vs_savedmodel_throughput": ("3.00x", verdicts.CONFIRMED),
        "optimized_latency_cut_batch1": ("-", "cannot be measured here (not measured)"),
    }


@pytest.mark.parametrize("on_gpu", [True, False])
def test_the_table_is_the_rows_in_aligned_columns(on_gpu: bool) -> None:
    rows = verdicts.judge(MEASURED, WHY, on_gpu=on_gpu, gpu_family="A100")
    record = {"claims": rows, "measured": MEASURED, "why": WHY, "on_gpu": on_gpu}
    lines = verdicts.format_table({**record, "device": "1x NVIDIA A100", "mode": "full"}).split(
        "\n"
    )
    assert lines[:2] == ["GPU claims, measured on 1x NVIDIA A100 (full):", ""]
    head, rule, *table = lines[2 : 4 + len(rows)]
    cells = [["claim", "the seed says", "published", "measured here", "verdict"]] + [
        [row["claim"], row["says"], row["published"], row["measured_shown"], row["verdict"]]
        for row in rows
    ]
    widths = [max(len(line[i]) for line in cells) for i in range(5)]
    assert rule == "  ".join("-" * width for width in widths)
    for line, expected in zip([head, *table], cells, strict=True):
        starts = [sum(widths[:i]) + 2 * i for i in range(5)]
        assert [line[s : s + w].rstrip() for s, w in zip(starts, widths, strict=True)] == expected
        assert line == line.rstrip()
    rest = lines[4 + len(rows) :]
    assert rest[0] == ""
    assert rest[1] == f"{reference.MEASURED_ONLY['mixed_float16_vs_float32']}: 2.40x"
    assert rest[2] == f"{reference.MEASURED_ONLY['xla_vs_no_xla']}: 1.30x"
    bf16 = "mixed_bfloat16_vs_float32"
    assert rest[3] == f"{reference.MEASURED_ONLY[bf16]}: {WHY[bf16]}"
    every = f"Every GPU claim: {verdicts.CANNOT} - {verdicts.NO_GPU}."
    assert rest[4:] == ([] if on_gpu else [every]) + [f"Published figures: {reference.SOURCE}"]


def test_a_measured_only_ratio_without_a_reason_says_not_measured() -> None:
    record = {"claims": [], "measured": {}, "why": {}, "on_gpu": True, "device": "d", "mode": "m"}
    text = verdicts.format_table(record)
    assert f"{reference.MEASURED_ONLY['xla_vs_no_xla']}: not measured" in text.split("\n")


def test_scaling_efficiency_refuses_no_replicas_or_no_rate() -> None:
    assert verdicts.scaling_efficiency(100.0, 150.0, 1) == pytest.approx(1.5)
    assert verdicts.scaling_efficiency(0.5, 1.0, 1) == pytest.approx(2.0)  # any positive rate
    for one, replicas in ((100.0, 0), (0.0, 2), (-1.0, 2)):
        with pytest.raises(ValueError, match="scaling needs replicas >= 1 and a positive"):
            verdicts.scaling_efficiency(one, 100.0, replicas)


def test_shortfalls_of_a_ratio_and_of_a_share() -> None:
    amp = next(c for c in reference.CLAIMS if c["key"] == "mixed_float16_xla_vs_float32_xla")
    share = next(c for c in reference.CLAIMS if c["key"] == "scaling_efficiency")
    assert verdicts.verdict(amp, 1.0, on_gpu=True) == "not confirmed (1.00x, 2.00x short of 2x)"
    assert (
        verdicts.verdict(share, 0.5, on_gpu=True) == "not confirmed (50%, 40 points short of 90%)"
    )
    zero = verdicts.verdict(share, 0.0, on_gpu=True)
    assert zero == "not confirmed (0%, 90 points short of 90%)"
    assert verdicts.verdict(share, None, on_gpu=True) == "cannot be measured here (not measured)"
    off = verdicts.verdict(share, 0.99, on_gpu=False, why="x")
    assert off == f"{verdicts.CANNOT} ({verdicts.NO_GPU})"


def _optimize(tmp_path, record) -> Path:
    (tmp_path / "metrics").mkdir(exist_ok=True)
    (tmp_path / "metrics" / "optimize.json").write_text(json.dumps(record), encoding="utf-8")
    return tmp_path


KEYS = ("optimized_vs_savedmodel_throughput", "optimized_latency_cut_batch1")


def test_inference_compares_the_best_backend_at_the_largest_batch(tmp_path) -> None:
    """The largest batch by number (1024, not "32" as text), the best rate of the backends that
    ran with parity there, and the fastest of them at batch 1."""
    saved = {"name": "savedmodel", "p50_ms": 10.0, "throughput": {"32": 50.0, "1024": 100.0}}
    record = {
        "baselines": [{"name": "onnx", "p50_ms": 1.0}, saved],
        "backends": [
            {"status": "ran", "parity_ok": True, "p50_ms": 5.0, "throughput": {"1024": 300.0}},
            {"status": "ran", "parity_ok": True, "p50_ms": 2.0, "throughput": {"1024": 200.0}},
            {"status": "ran", "parity_ok": False, "p50_ms": 0.1, "throughput": {"1024": 9e9}},
            {"status": "skipped", "parity_ok": True, "p50_ms": 0.1, "throughput": {"1024": 9e9}},
            {"status": "ran", "parity_ok": True, "p50_ms": 3.0, "throughput": {"32": 9e9}},
        ],
    }
    measured, _ = bench.inference(_optimize(tmp_path, record))
    assert measured == {KEYS[0]: pytest.approx(3.0), KEYS[1]: pytest.approx(0.8)}


@pytest.mark.parametrize(
    "record",
    [
        {"baselines": [{"name": "savedmodel", "p50_ms": 10.0}], "backends": []},
        {"baselines": [], "backends": [{"status": "ran", "parity_ok": True, "p50_ms": 1.0}]},
        {"backends": [{"status": "ran", "parity_ok": True, "p50_ms": 1.0}]},
        {"baselines": [{"name": "savedmodel", "p50_ms": 10.0}]},
        {
            "baselines": [{"name": "savedmodel", "p50_ms": 0.0}],
            "backends": [{"status": "ran", "parity_ok": True, "p50_ms": 1.0}],
        },
    ],
)
def test_inference_without_a_backend_with_parity_says_so(tmp_path, record) -> None:
    measured, why = bench.inference(_optimize(tmp_path, record))
    assert measured == dict.fromkeys(KEYS)
    assert why == dict.fromkeys(KEYS, "step 05 ran no optimized backend with parity")


def test_inference_without_a_throughput_at_the_largest_batch(tmp_path) -> None:
    record = {
        "baselines": [{"name": "savedmodel", "p50_ms": 10.0, "throughput": {"64": 0.0}}],
        "backends": [{"status": "ran", "parity_ok": True, "p50_ms": 4.0}],
    }
    measured, why = bench.inference(_optimize(tmp_path, record))
    assert measured == {KEYS[0]: None, KEYS[1]: pytest.approx(0.6)}
    assert why == dict.fromkeys(KEYS, "step 05 measured no throughput at its largest batch")


@pytest.mark.parametrize(
    ("saved", "backend"),
    [
        ({}, {"1": 50.0}),  # step 05 measured no throughput of the SavedModel
        ({"throughput": {}}, {"1": 50.0}),
        ({"throughput": {"1": 40.0, "256": 100.0}}, {"1": 50.0}),  # none at 256 optimized
    ],
)
def test_no_throughput_on_either_side_is_not_measured_not_zero(tmp_path, saved, backend) -> None:
    """Not a "0.00x, not confirmed" verdict, and no crash: the ratio is not measured."""
    record = {
        "baselines": [{"name": "savedmodel", "p50_ms": 10.0, **saved}],
        "backends": [{"status": "ran", "parity_ok": True, "p50_ms": 4.0, "throughput": backend}],
    }
    measured, why = bench.inference(_optimize(tmp_path, record))
    assert measured == {KEYS[0]: None, KEYS[1]: pytest.approx(0.6)}
    assert why[KEYS[0]] == "step 05 measured no throughput at its largest batch"


@pytest.mark.parametrize("text", [None, "{broken", ""])
def test_inference_without_step_05s_metrics_names_the_step(tmp_path, text) -> None:
    if text is not None:
        (tmp_path / "metrics").mkdir()
        (tmp_path / "metrics" / "optimize.json").write_text(text, encoding="utf-8")
    measured, why = bench.inference(tmp_path)
    assert measured == dict.fromkeys(KEYS)
    reason = "no metrics/optimize.json in the run folder: run step 05 (optimize) first"
    assert why == dict.fromkeys(KEYS, reason)


def test_ratios_of_the_rates_and_why_one_is_missing() -> None:
    results = {
        "float32": {"images_per_second": 100.0},
        "mixed_float16": {"images_per_second": 250.0},
        "mixed_bfloat16": {"images_per_second": 0.0},
        "xla": {"error": "exit 1: XLA failed"},
        "scaled": {"images_per_second": 360.0},
    }
    measured, why = bench.ratios(results, replicas=4)
    assert measured == {
        "mixed_float16_vs_float32": pytest.approx(2.5),
        "mixed_bfloat16_vs_float32": None,
        "xla_vs_no_xla": None,
        "scaling_efficiency": pytest.approx(0.9),
    }
    assert why == {
        "mixed_bfloat16_vs_float32": "not measured",
        "xla_vs_no_xla": "a run failed (xla: exit 1: XLA failed)",
    }


def test_ratios_when_the_float32_run_failed() -> None:
    results = {
        "float32": {"error": "exit 1: out of memory"},
        "mixed_float16": {"images_per_second": 250.0},
        "scaled": {"error": "ran past its 600 s limit"},
    }
    measured, why = bench.ratios(results, replicas=2)
    assert measured == {"mixed_float16_vs_float32": None, "scaling_efficiency": None}
    assert why == {
        "mixed_float16_vs_float32": "a run failed (float32: exit 1: out of memory)",
        "scaling_efficiency": (
            "a run failed (scaled: ran past its 600 s limit; float32: exit 1: out of memory)"
        ),
    }
    results = {"float32": {"images_per_second": 100.0}, "scaled": {"error": "exit 1: NCCL"}}
    measured, why = bench.ratios(results, replicas=2)
    assert measured == {"scaling_efficiency": None}
    assert why == {"scaling_efficiency": "a run failed (scaled: exit 1: NCCL)"}
    measured, _ = bench.ratios({}, replicas=1)
    assert measured == {}


def test_why_no_memory_saving_names_each_search() -> None:
    results = _max_batches(600, None, ("memory", None))
    results["max_mixed_float16"]["error"] = "exit 1: boom"
    _, why = bench.ratios(results, replicas=1)
    assert why["memory_saving"] == (
        "the largest batch was not found for both precisions (max_float32: memory, "
        "max_mixed_float16: exit 1: boom)"
    )
