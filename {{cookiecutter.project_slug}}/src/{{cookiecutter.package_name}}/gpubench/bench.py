"""`<package> gpu-bench`: plan the measurements, run each in its own process, judge, write.

The model and its synthetic data come from the task (tasks.current().bench.model, synthetic_meta,
synthetic_batch). Full (a GPU): images: Keras ResNet50 (no weights) on synthetic 224x224x3 images;
texts: the Transformer encoder on 128 random token ids; 128 examples per GPU (NVIDIA's A100
figures run 256 per 40 GB GPU, its V100 ones float32 at 128 and AMP at 256 per 16 GB GPU; 128
fits float32 ResNet50 on a 16 GB V100, and both precisions run the same batch), or the
batch-size finder's per-GPU batch when the run folder's own model and data are benchmarked
(--data run). --quick (any machine, seconds): the task's small model on small examples
(bench_model), two logical CPUs standing in for two GPUs: it proves the code path, not a GPU
claim.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from ..artifacts import BATCH_FINDER, METRICS_DIR, StepError
from ..parts.bench import GPU_BENCH_METRICS
from ..writes import write_json
from . import reference, verdicts
from .measure import RESULT

DEFAULT_BATCH = 128
STEPS = {"full": {"steps": 50, "warmup": 5}, "quick": {"steps": 3, "warmup": 1}}
QUICK_BATCH, QUICK_LOGICAL_CPUS = 16, 2
MAX_BATCH_CAP, MAX_BATCH_SECONDS = 8192, 480.0  # examples per GPU; the search's own budget


class GpuBenchError(StepError):
    """A gpu-bench flag was refused, in one sentence, before any measurement ran."""


def plan(
    *,
    quick: bool,
    gpus: list[dict[str, Any]],
    model: str | None,
    batch: int | None,
    data_dir: Path | None,
    finder_batch: int | None,
) -> tuple[dict[str, Any], list[tuple[str, dict[str, Any]]], dict[str, str]]:
    """The shared settings, the measurements (name, spec) to run, and why any is left out."""
    from ..tasks import current as task

    reference_model = task().bench.model(quick)
    if not gpus and not quick:
        raise GpuBenchError(
            f"No GPU found: the full benchmark ({reference_model['shown']}) would take hours on "
            "a CPU; add --quick to check the code path here, or run it on a GPU machine."
        )
    models = task().models.names
    if model is not None and model not in models:
        raise GpuBenchError(f"--model {model!r} is not allowed: use one of {', '.join(models)}.")
    if batch is not None and batch < 1:
        raise GpuBenchError(f"--batch {batch} is not allowed: use a whole number >= 1 per device.")
    base = {key: value for key, value in reference_model.items() if key != "shown"}
    base.update(STEPS["quick" if quick else "full"], model=model or base["model"])
    per_device = batch or (QUICK_BATCH if quick else finder_batch or DEFAULT_BATCH)
    base.update(batch=per_device, replicas=1, jit=False, precision="float32")
    if data_dir is not None:  # the run's own examples and classes, not synthetic ones
        base.update(data_dir=str(data_dir), size=None, num_classes=None)
    why: dict[str, str] = {}
    # The published AMP figures have XLA on both sides: mixed + XLA is judged against XLA alone;
    # without XLA the two are shown too (mixed_float16_vs_float32).
    runs = [
        ("float32", {}),
        ("mixed_float16", {"precision": "mixed_float16"}),
        ("xla", {"jit": True}),
        ("mixed_xla", {"precision": "mixed_float16", "jit": True}),
    ]
    if gpus and all(_capability(gpu) >= (8, 0) for gpu in gpus):
        runs.append(("mixed_bfloat16", {"precision": "mixed_bfloat16"}))
    else:
        why["mixed_bfloat16_vs_float32"] = (
            "not measured: needs GPUs of compute capability 8.0+ (Ampere and newer)"
        )
    if gpus:
        for name, precision in (("max_float32", "float32"), ("max_mixed_float16", "mixed_float16")):
            runs.append((name, {"kind": "max_batch", "precision": precision}))
    else:
        why["memory_saving"] = "no GPU memory to fill on a CPU"
    devices = len(gpus) or QUICK_LOGICAL_CPUS
    if len(gpus) == 1:
        why["scaling_efficiency"] = "one GPU: scaling needs two or more"
    else:
        # On GPUs with XLA, like the published weak scaling (and measured against "xla"); the
        # --quick stand-in on logical CPUs without, against "float32".
        extra = {"jit": True} if gpus else {"logical_cpus": QUICK_LOGICAL_CPUS}
        runs.append(("scaled", {"replicas": devices, "batch": per_device * devices, **extra}))
    specs = [(name, {"kind": "train", **base, **change}) for name, change in runs]
    for _, spec in specs:
        spec.setdefault("max_batch_cap", MAX_BATCH_CAP)
        spec.setdefault("max_seconds", MAX_BATCH_SECONDS)
    return base, specs, why


def run_one(spec: dict[str, Any], timeout: float) -> dict[str, Any]:
    """One measurement in a fresh Python process; {"error": sentence} when it failed or ran over."""
    command = [sys.executable, "-m", f"{__package__}.measure", json.dumps(spec)]
    try:
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=timeout, env=dict(os.environ)
        )
    except subprocess.TimeoutExpired:
        return {"error": f"ran past its {timeout:g} s limit"}
    lines = [line for line in done.stdout.splitlines() if line.startswith(RESULT)]
    if done.returncode or not lines:
        tail = (done.stderr.strip().splitlines() or ["no output"])[-1][:200]
        return {"error": f"exit {done.returncode}: {tail}"}
    return json.loads(lines[-1][len(RESULT) :])


def ratios(
    results: dict[str, dict[str, Any]], replicas: int, scaled_on: str = "float32"
) -> tuple[dict, dict]:
    """The measured figures from the runs' results, and why any is missing. Each ratio sets
    like against like: the same XLA setting on both sides; `scaled_on` names the one-device run
    the scaled run is measured against ("xla" when it ran with XLA)."""
    measured: dict[str, float | None] = {}
    why: dict[str, str] = {}
    rate = {name: examples_per_second(r) for name, r in results.items()}
    for key, name, against in (
        ("mixed_float16_vs_float32", "mixed_float16", "float32"),
        ("mixed_float16_xla_vs_float32_xla", "mixed_xla", "xla"),
        ("mixed_bfloat16_vs_float32", "mixed_bfloat16", "float32"),
        ("xla_vs_no_xla", "xla", "float32"),
    ):
        if name in results:
            ok = rate.get(against) and rate[name]
            measured[key] = rate[name] / rate[against] if ok else None
            if measured[key] is None:
                why[key] = _failed(results, name, against)
    if "scaled" in results:
        one, scaled = rate.get(scaled_on), rate["scaled"]
        ok = one and scaled
        measured["scaling_efficiency"] = (
            verdicts.scaling_efficiency(one, scaled, replicas) if ok else None
        )
        if not ok:
            why["scaling_efficiency"] = _failed(results, "scaled", scaled_on)
    if "max_float32" in results:
        small = results["max_float32"].get("max_batch")
        large = results["max_mixed_float16"].get("max_batch")
        bound = all(
            results[n].get("limited_by") == "memory" for n in ("max_float32", "max_mixed_float16")
        )
        measured["memory_saving"] = 1 - small / large if small and large and bound else None
        if measured["memory_saving"] is None:
            why["memory_saving"] = (
                "the largest batch was not found for both precisions ("
                + ", ".join(
                    f"{n}: {results[n].get('error') or results[n].get('limited_by')}"
                    for n in ("max_float32", "max_mixed_float16")
                )
                + ")"
            )
    return measured, why


def examples_per_second(result: dict[str, Any]) -> float | None:
    """A measurement's training rate, named for the task's examples (images_per_second,
    texts_per_second); None when it failed."""
    return next((v for k, v in result.items() if k.endswith("_per_second")), None)


def inference(run_dir: Path) -> tuple[dict[str, float | None], dict[str, str]]:
    """SavedModel vs the best optimized backend, from step 05's metrics/optimize.json."""
    keys = ("optimized_vs_savedmodel_throughput", "optimized_latency_cut_batch1")
    try:
        record = json.loads((run_dir / METRICS_DIR / "optimize.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        reason = f"no {METRICS_DIR}/optimize.json in the run folder: run step 05 (optimize) first"
        return dict.fromkeys(keys), dict.fromkeys(keys, reason)
    saved = next((b for b in record.get("baselines", []) if b["name"] == "savedmodel"), {})
    ran = [e for e in record.get("backends", []) if e.get("status") == "ran" and e.get("parity_ok")]
    if not ran or not saved.get("p50_ms"):
        reason = "step 05 ran no optimized backend with parity"
        return dict.fromkeys(keys), dict.fromkeys(keys, reason)
    size = str(max(int(s) for s in saved.get("throughput") or {"1": 0}))
    fastest = min(ran, key=lambda e: e["p50_ms"])
    best_rate = max(e.get("throughput", {}).get(size, 0.0) for e in ran)
    saved_rate = saved.get("throughput", {}).get(size)
    measured = {  # no rate on either side is not measured, not a ratio of 0
        keys[0]: best_rate / saved_rate if saved_rate and best_rate else None,
        keys[1]: 1 - fastest["p50_ms"] / saved["p50_ms"],
    }
    return measured, {k: "step 05 measured no throughput at its largest batch" for k in keys}


def finder_batch(run_dir: Path) -> int | None:
    """The batch-size finder's per-GPU batch in this run folder (train with batch_size=auto)."""
    try:
        record = json.loads((run_dir / METRICS_DIR / f"{BATCH_FINDER}.json").read_text("utf-8"))
    except (OSError, ValueError):
        return None
    return int(record["per_replica_batch"]) if record.get("device") == "gpu" else None


def write(run_dir: Path, record: dict[str, Any]) -> Path:
    path = run_dir / GPU_BENCH_METRICS
    write_json(path, record)
    return path


def _capability(gpu: dict[str, Any]) -> tuple[int, int]:
    from ..env.devices import parse_capability

    return parse_capability(gpu.get("compute_capability")) or (0, 0)


def _failed(results: dict[str, dict[str, Any]], *names: str) -> str:
    errors = [f"{n}: {results[n]['error']}" for n in names if results.get(n, {}).get("error")]
    return "a run failed (" + "; ".join(errors) + ")" if errors else "not measured"


def family_of(gpus: list[dict[str, Any]]) -> str | None:
    return reference.family(gpus[0].get("model") if gpus else None)
