"""Step 3's entry: `check` and `run`, shared by notebook 03, `<package> train` and the runner.

check(inputs=False) looks at the values only (fast, no TensorFlow op, nothing read or written):
what the runner asks before any notebook starts. check(inputs=True) adds the run folder: the data
01_data wrote, the values an optional part offers, and checkpoints that this request could
resume. run checks the
same, then trains, writes model.keras, records its lineage and writes metrics/train.json (chief).
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import keras

from .. import env, figures, lineage
from ..artifacts import BATCH_FINDER, DATA_DIR, StepError, run_folder
from ..data.meta import check_batch
from ..observe import parse_profile_steps
from ..observe.profiler import check_window
from ..tasks import current as task
from ..tasks import read_meta
from ..writes import check_writable, write_metrics
from . import auto, chance, finetune, preempt, resume
from .devices import configure_devices, dtype_policy, make_strategy, resolve_jit, resolve_precision
from .loop import Loop
from .params import AUTO, Params, TrainError, check_values
from .value_sources import (
    RECIPE_RATE,
    Resolved,
    describe_sources,
    read_artifacts,
    resolve_params,
)


@dataclass(frozen=True)
class _Checked:
    """What check(inputs=True) found, which run goes on with."""

    folder: Path
    resolved: Resolved
    meta: dict[str, Any]
    state: dict[str, Any]  # what the checkpoints are made with (resume.STATE_KEYS + data)
    resume: resume.Resume
    gpus: list[dict[str, Any]]
    found_on: dict[str, Any]  # the basis a batch_size/learning_rate=auto choice holds for


def check(run_dir: str | os.PathLike[str], params: Params, *, inputs: bool = True) -> None:
    """Refuse bad values (and with inputs=True a run folder they cannot train on) in one
    sentence (TrainError, or MissingInputError naming 01_data); write nothing."""
    if not isinstance(params, Params):
        raise TrainError(f"params must be train.Params, not {type(params).__name__}.")
    if not inputs:
        check_values(params)
        return
    _check(run_dir, params)


def run(run_dir: str | os.PathLike[str], params: Params, *, verbose: bool = True) -> dict[str, Any]:
    """Train on run_dir/data/ and return what the chief writes to metrics/train.json.

    Model, learning_rate, width and dropout left at None come from an optional part's offer (the
    same model, the current data: train.value_sources), else from the defaults; where each value
    came from is said first and kept as parameter_sources. `batch_size` is the global batch; the
    learning rate follows LR_RULE. A run folder with checkpoints made with the same values on the
    same data resumes after their last epoch and stops at `epochs`; checkpoints made on other
    data are set aside and training starts from epoch 0 (`restarted_because` says so). Call
    this before anything else in the process runs a TensorFlow op when logical_cpus > 1.

    The metrics are report.metrics' numbers of the run (the values used and where each came
    from, the strategy and precision, the history, the scores, the checkpoint), with the recipe's
    (phases.summary), the test split's (evaluate) and these: restarted_because (None, or why old
    checkpoints were not resumed), interrupted (None, or where a stop signal ended the run:
    train.json is then written without lineage or figures, and run raises preempt.Interrupted),
    resumed_at_step (steps of the first epoch a mid-epoch checkpoint held), optimizer_steps (over
    every run of this folder) and lineage (what was read and written, with fingerprints).
    """
    check(run_dir, params, inputs=False)
    preempt.stop_signals()  # a bad <PACKAGE>_STOP_SIGNALS is refused before any heavy work
    checked = _check(run_folder(run_dir), params)  # resolved once: every call below gets it
    folder, resolved = checked.folder, checked.resolved
    check_writable(folder)
    chief = resolved.placement.cluster is None or resolved.placement.cluster.is_chief
    say = print if verbose and chief else _quiet
    restarted = None
    if checked.resume.other_data:
        moved = resume.set_aside(folder) if chief else None
        restarted = resume.other_data_sentence(moved)
        say(restarted)
    say(describe_sources(resolved))
    if resolved.sources["learning_rate"] == RECIPE_RATE:  # which rate the task's recipe set, why
        say(task().recipe.learning_rate(resolved.params)[1])

    devices = configure_devices(resolved.params.logical_cpus)
    distribution = make_strategy(resolved.params.strategy, resolved.params.logical_cpus)
    if distribution.num_replicas_in_sync != resolved.placement.replicas:  # devices surprised us
        check_values(resolved.params, replicas=distribution.num_replicas_in_sync)
    keras.utils.set_random_seed(resolved.params.seed)
    jit = resolve_jit(resolved.params.jit_compile, checked.gpus)
    state = checked.state
    with dtype_policy(checked.state["precision"]) as policy:
        loss_scaling = policy.name == "mixed_float16"
        if AUTO in (resolved.params.batch_size, resolved.params.learning_rate):
            resolved = auto.find(
                folder,
                checked.meta,
                resolved,
                distribution,
                checked.found_on,
                loss_scaling=loss_scaling,
                jit=jit,
                say=say,
                shown=verbose and chief,
            )
            found = resolved.params
            state = {**state, "batch_size": found.batch_size, "learning_rate": found.learning_rate}
            keras.utils.set_random_seed(resolved.params.seed)
        loop = Loop(
            folder,
            checked.meta,
            resolved,
            distribution,
            jit=jit,
            loss_scaling=loss_scaling,
            verbose=verbose,
        )
        metrics = loop.run(state, latest=checked.resume.latest, devices=devices)
    metrics["restarted_because"] = restarted
    if metrics["interrupted"]:  # a stop signal: the checkpoint holds the work, no new model
        if loop.role.is_chief:
            write_metrics(folder, "train", metrics)
        preempt.barrier(distribution)  # no worker exits while the chief writes
        interrupted = metrics["interrupted"]
        raise preempt.Interrupted(preempt.sentence(interrupted), interrupted["exit_status"])
    metrics["chance"] = chance.verdict(
        checked.meta, metrics.get("val_accuracy"), roc_auc=metrics.get("test_roc_auc")
    )
    if metrics["chance"]["sentence"]:
        say(metrics["chance"]["sentence"])
    if loop.role.is_chief:
        weights = metrics["weights"]
        origins = {"weights": weights} if weights["source"] != "none" else None
        inputs = {"data": checked.state[resume.DATA_KEY]}
        lineage.record(folder, "model", "train", inputs, origins=origins)
        reads = ["data", *read_artifacts(checked.resolved)]
        metrics["lineage"] = lineage.summary(folder, reads=reads, writes=["model"])
        drawers = task().scores.drawers.get("train")  # the task's own (tables: scores)
        metrics["figures"] = figures.save(folder, "train", metrics, drawers=drawers)
        write_metrics(folder, "train", metrics)
    # A normal end waits too: a worker that exits while the chief saves and evaluates
    # (tensorflow#58434) gets the chief killed mid-write under srun --kill-on-bad-exit.
    preempt.barrier(distribution)
    return metrics


def train(
    run_dir: str | os.PathLike[str], *, verbose: bool = True, **values: Any
) -> dict[str, Any]:
    """run(run_dir, Params(**values)), for callers with loose values (tests)."""
    names = [field.name for field in dataclasses.fields(Params)]
    unknown = sorted(set(values) - set(names))
    if unknown:
        raise TrainError(f"Unknown parameter {unknown[0]!r}: train takes {', '.join(names)}.")
    return run(run_dir, Params(**values), verbose=verbose)


def _check(run_dir: str | os.PathLike[str], params: Params) -> _Checked:
    """check(inputs=True), returning what it found."""
    folder = run_folder(run_dir)  # as it is, when run() resolved it
    resolved, _ = resolve_params(folder, params)
    meta = read_meta(folder)
    gpus = env.list_gpus()
    precision = resolve_precision(resolved.params.precision, gpus)
    fingerprint = lineage.fingerprint(folder, "data")
    found_on = auto.basis(
        resolved.params,
        {"precision": precision, "data": fingerprint},
        resolved.placement.replicas,
        resolve_jit(resolved.params.jit_compile, gpus),
    )
    values, reused = auto.reuse(folder, resolved.params, found_on)
    if reused:
        resolved = dataclasses.replace(
            resolved, params=values, sources={**resolved.sources, **reused}
        )
    num_classes = int(meta["num_classes"])
    try:
        task().models.check(
            values.model,
            meta,
            weights=finetune.pretrained(values.weights),
            width=values.width,
            dropout=values.dropout,
        )
        if values.batch_size != AUTO:
            check_batch(meta, values.batch_size, str(folder / DATA_DIR))
    except StepError as error:  # the task's ModelError, the data's DataError
        raise TrainError(str(error)) from None
    train_count, replicas = int(meta["splits"]["train"]["count"]), resolved.placement.replicas
    if values.batch_size == AUTO and replicas > train_count:
        raise TrainError(
            f"batch_size=auto needs a training example per replica at least: the {replicas} "
            f"replicas need {replicas}, and {folder / DATA_DIR} has {train_count}; use fewer "
            "replicas (logical_cpus, GPUs) or more data."
        )
    if values.batch_size != AUTO:
        steps = train_count // values.batch_size
        window = parse_profile_steps(values.profile_steps)
        check_window(window, values.epochs * steps, values.epochs)
    state = {
        "model": values.model,
        **task().models.state(meta),
        "num_classes": num_classes,
        "batch_size": values.batch_size,
        "learning_rate": values.learning_rate,
        "width": values.width,
        "dropout": values.dropout,
        "precision": precision,
        "seed": values.seed,
        **resume.recipe_state(values),
        resume.DATA_KEY: fingerprint,
    }
    decision = resume.check(
        folder, state, state[resume.DATA_KEY], _origins(folder, resolved, found_on)
    )
    if decision.latest is None:  # a resumed run has its weights in the checkpoint
        finetune.check_file(values.weights)
        finetune.check_source(values.weights, meta)  # text: the same vocabulary; tables: schema
    return _Checked(folder, resolved, meta, state, decision, gpus, found_on)


def _origins(folder: Path, resolved: Resolved, found_on: dict[str, Any]) -> dict[str, str]:
    """Where each value came from, as a refusal of other checkpoints names it: a part's file
    (values a part offers after training), "given", or why batch_size=auto is to be found anew."""
    files = {offer["source"]: offer["origin"] for offer in resolved.suggestions}
    origins = {key: f"from {files[src]}" for key, src in resolved.sources.items() if src in files}
    origins |= {key: "given" for key, src in resolved.sources.items() if src == "given"}
    if resolved.params.batch_size == AUTO:  # not reused: no choice, or one on another basis
        earlier = (auto.read_choice(folder, BATCH_FINDER) or {}).get("basis") or {}
        moved = [
            f"{key}={found_on[key]!r}" for key in found_on if earlier.get(key) != found_on[key]
        ]
        origins["batch_size"] = (
            f"to be found anew: the finder's earlier choice was for other settings; now "
            f"{', '.join(moved)}"
            if earlier
            else "to be found anew: no earlier choice is recorded"
        )
    return origins


def _quiet(*_: Any, **__: Any) -> None:
    pass
