"""batch_size=auto and learning_rate=auto: the batch fitted to the device, the rate to the batch.

The batch-size finder (find/batch.py) probes real training steps of this run's model, precision
and strategy: on GPUs the largest global batch that fits in memory (less a margin), on a CPU the
smallest batch within 5 % of the best throughput. The learning-rate range test (find/lr.py) ramps
the learning rate over one short run of a fresh copy of the model at that batch and suggests the
rate where the loss fell fastest. What they chose is kept as metrics/<finder>.json with a figure,
together with the basis it holds for (model, knobs, precision, strategy, replicas, the data's
fingerprint, and for the learning rate the batch): a later call on the same basis (a resumed run,
a re-run notebook) reuses the choice instead of probing again, so the checkpoints it resumes from
were made with the same values.

The range test's rate is the one the optimizer gets at the probed batch; it is stored in the
package's convention, at a global batch of REFERENCE_BATCH (the linear rule scales it back).
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .. import progress, seam
from ..artifacts import BATCH_FINDER, FIGURES_DIR, LR_FINDER, METRICS_DIR
from ..find import batch as batch_finder
from ..find import lr as lr_finder
from ..find import plots, probes
from ..tasks import current as task
from ..writes import write_json
from .devices import dtype_policy
from .params import AUTO, REFERENCE_BATCH, effective_learning_rate
from .value_sources import Resolved

LR_STEPS = 100  # the range test's ramp, fewer when the time budget is short
# An epoch keeps at least this many steps: a batch of a sizeable share of the training set leaves
# a handful of updates per epoch, and a fast step then buys nothing (1,438 digits: batch <= 71).
MIN_STEPS_PER_EPOCH = 20
LR_RANGE = (1e-6, 1.0)


def basis(params: Any, state: dict[str, Any], replicas: int, jit: Any) -> dict[str, Any]:
    """What a batch-size choice holds for; the learning-rate one adds the batch and the seed."""
    return {
        "model": params.model,
        "width": params.width,
        "dropout": params.dropout,
        "precision": state["precision"],
        "strategy": params.strategy,
        "replicas": replicas,
        "jit_compile": str(jit),
        "data": state["data"],
        **task().models.values(params),  # the model's own knobs (a batch fits its size)
    }


def reuse(folder: Path, params: Any, found_on: dict[str, Any]) -> tuple[Any, dict[str, str]]:
    """params with each `auto` that an earlier choice on the same basis answers filled in, and
    {name: "finder (reused …)"} for those."""
    sources = {}
    if params.batch_size == AUTO:
        record = read_choice(folder, BATCH_FINDER)
        if record and record.get("basis") == found_on:
            params = dataclasses.replace(params, batch_size=int(record["batch"]))
            sources["batch_size"] = f"batch-size finder (reused {METRICS_DIR}/{BATCH_FINDER}.json)"
    if params.learning_rate == AUTO and params.batch_size != AUTO:
        record = read_choice(folder, LR_FINDER)
        lr_basis = {**found_on, "batch_size": params.batch_size, "seed": params.seed}
        if record and record.get("basis") == lr_basis:
            params = dataclasses.replace(params, learning_rate=float(record["learning_rate"]))
            sources["learning_rate"] = f"range test (reused {METRICS_DIR}/{LR_FINDER}.json)"
    return params, sources


@probes.quiet_retracing()
def find(
    folder: Path,
    meta: dict[str, Any],
    resolved: Resolved,
    strategy: Any,
    found_on: dict[str, Any],
    *,
    loss_scaling: bool,
    jit: bool,
    say: Callable[[str], None],
    shown: bool = False,
) -> Resolved:
    """Run the finders for what is still `auto`; write their records and figures (chief).

    shown: each probe and range-test step moves a progress task (a bar, or a line every few
    seconds), and the choices are progress lines, so they reach the runner's terminal too."""
    say = progress.line if shown else say
    params, sources = resolved.params, dict(resolved.sources)
    replicas = resolved.placement.replicas
    train_count = int(meta["splits"]["train"]["count"])
    searched = max(replicas, train_count // MIN_STEPS_PER_EPOCH)  # the largest batch probed
    started = time.monotonic()
    step_seconds = None
    if params.batch_size == AUTO:
        probed = (folder, meta, params, strategy, replicas, searched)
        finder = "Batch-size finder"
        choice = _find_batch(finder, *probed, loss_scaling=loss_scaling, jit=jit, shown=shown)
        record = {
            **batch_finder.choice_record(choice),
            "basis": found_on,
            "train_count": train_count,
            "min_steps_per_epoch": MIN_STEPS_PER_EPOCH,
        }
        if probes.device_kind() == "gpu" and found_on["precision"] != "float32":
            record["float32"] = _float32_cap(choice.batch, *probed, jit=jit, shown=shown)
            say(record["float32"]["sentence"])
        _write(folder, BATCH_FINDER, record, plots.plot_batch)
        chosen = [p for p in choice.probes if p.batch == choice.batch and p.ok]
        if chosen and chosen[0].examples_per_sec:
            step_seconds = choice.batch / chosen[0].examples_per_sec
        params = dataclasses.replace(params, batch_size=choice.batch)
        sources["batch_size"] = "batch-size finder"
        say(
            f"batch_size=auto: {choice.batch}, {choice.reason} (The search stops at {searched}, "
            f"so that an epoch of the {train_count} training {seam.noun()} keeps "
            f"{MIN_STEPS_PER_EPOCH} steps at least.)"
        )
    if params.learning_rate == AUTO:
        left = max(1.0, params.finder_seconds - (time.monotonic() - started))
        steps = LR_STEPS if step_seconds is None else int(min(LR_STEPS, left / step_seconds))
        step = probes.lr_step(
            folder, meta, params, strategy, params.batch_size, loss_scaling=loss_scaling, jit=jit
        )
        steps = max(steps, 20)
        with progress.task("Learning-rate range test", steps, "step", shown=shown) as work:
            result = lr_finder.range_test(
                _counted(step, work, "rate"), min_lr=LR_RANGE[0], max_lr=LR_RANGE[1], steps=steps
            )
        rate = result.suggestion * REFERENCE_BATCH / params.batch_size
        lr_basis = {**found_on, "batch_size": params.batch_size, "seed": params.seed}
        record = {
            **lr_finder.lr_record(result),
            "batch_size": params.batch_size,
            "learning_rate": rate,
            "effective_learning_rate": effective_learning_rate(rate, params.batch_size),
            "basis": lr_basis,
        }
        _write(folder, LR_FINDER, record, plots.plot_lr)
        params = dataclasses.replace(params, learning_rate=rate)
        sources["learning_rate"] = "range test"
        say(
            f"learning_rate=auto: {result.suggestion:.3g} at global batch {params.batch_size} "
            f"({rate:.3g} at {REFERENCE_BATCH}, the package's convention), {result.reason}"
        )
    return dataclasses.replace(resolved, params=params, sources=sources)


def _counted(call: Callable[[Any], Any], work: Any, name: str) -> Callable[[Any], Any]:
    """call(value), noted and counted on the task `work`."""

    def counted(value: Any) -> Any:
        work.note(f"{name} {value:.3g}")
        result = call(value)
        work.update()
        return result

    return counted


def _find_batch(
    title: str, *probed: Any, loss_scaling: bool, jit: bool, shown: bool
) -> batch_finder.BatchChoice:
    """The finder's search for the largest (GPU) or fastest (CPU) batch, shown as task `title`:
    `probed` is (folder, meta, params, strategy, replicas, the largest batch probed)."""
    folder, meta, params, strategy, replicas, searched = probed
    probe = probes.batch_probe(folder, meta, params, strategy, loss_scaling=loss_scaling, jit=jit)
    device = probes.device_kind()
    budget = probes.host_budget_bytes() if device == "cpu" else None
    with progress.task(title, None, "probe", shown=shown) as work:
        return batch_finder.find_batch(
            _counted(probe, work, "batch"),
            device=device,
            replicas=replicas,
            train_count=searched,
            max_seconds=params.finder_seconds,
            host_budget_bytes=budget,
            bytes_per_example=probes.bytes_per_example(params.model, meta, params)
            if budget
            else None,
            device_bytes=probes.device_bytes() if device == "gpu" else None,
        )


def _float32_cap(mixed_batch: int, *probed: Any, jit: bool, shown: bool) -> dict[str, Any]:
    """The same search under float32: how much larger mixed precision lets the batch be."""
    with dtype_policy("float32"):
        title = "Batch-size finder, float32"
        choice = _find_batch(title, *probed, loss_scaling=False, jit=jit, shown=shown)
    ratio = mixed_batch / choice.batch
    return {
        "batch": choice.batch,
        "limited_by": choice.limited_by,
        "mixed_over_float32": ratio,
        "sentence": f"Under float32 the finder's batch is {choice.batch}: mixed precision lets "
        f"it be {ratio:.2f}x as large on this GPU ({choice.limited_by} limits float32).",
    }


def read_choice(folder: Path, name: str) -> dict[str, Any] | None:
    """metrics/<finder>.json as an earlier call wrote it; None when absent or unreadable."""
    path = folder / METRICS_DIR / f"{name}.json"
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _write(folder: Path, name: str, record: dict[str, Any], plot: Callable) -> None:
    write_json(folder / METRICS_DIR / f"{name}.json", record)
    figures = folder / FIGURES_DIR
    figures.mkdir(parents=True, exist_ok=True)
    plot(record, figures / f"{name}.png")
