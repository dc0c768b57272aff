"""The training parameters: each bad value is refused in one sentence before any work starts.

A multi-worker job that fails on a typo only after every worker has started, connected and built
its model wastes a cluster allocation, so everything that can be checked from the parameters, the
environment (TF_CONFIG) and the device list is checked here, without initializing TensorFlow.

Where a value comes from: one given by the caller wins; else, for the TUNABLE parameters, the one
step 2 (02_tune) wrote to run_dir/tuning/best_hparams.json; else DEFAULTS (resolve_params).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import tensorflow as tf

from ..artifacts import StepError, resolve_run_dir
from ..models import APPLICATIONS, MODELS, OWN_MODELS, ModelError, check_knobs

STRATEGIES = ("auto", "one_device", "mirrored", "multi_worker")
PRECISIONS = ("auto", "mixed_float16", "mixed_bfloat16", "float32")
JIT_COMPILE = ("auto", "true", "false")
DEFAULTS: dict[str, Any] = {
    "model": "small_cnn",
    "epochs": 5,
    "batch_size": 64,
    "learning_rate": 1e-3,
    "width": None,  # the model's own default (models.DEFAULT_WIDTH); a tuned value if there is one
    "dropout": None,  # the model's own default (models.DEFAULT_DROPOUT); a tuned value likewise
    "strategy": "auto",
    "logical_cpus": 0,
    "precision": "auto",
    "jit_compile": "auto",
    "seed": 42,
    "patience": 3,
    "verbose": True,
}
# The linear scaling rule (Goyal et al. 2017): the learning rate grows with the global batch, so
# adding replicas (and with them a larger global batch) keeps the same progress per example.
REFERENCE_BATCH = 64
LR_RULE = f"linear: learning_rate * global_batch_size / {REFERENCE_BATCH}"
# Task types of TF_CONFIG that train; MultiWorkerMirroredStrategy has no parameter servers.
TRAINING_TASKS = ("chief", "worker")
# What step 2 writes into the run folder, and the parameters training takes from it when not given.
TUNED_FILE = "tuning/best_hparams.json"
TUNABLE = ("model", "learning_rate", "width", "dropout")


class TrainError(StepError):
    """A training parameter or the run folder was refused; nothing was trained or written."""


@dataclass(frozen=True)
class Cluster:
    """The part of TF_CONFIG that training needs: how many workers, and which one this is."""

    workers: int
    task_type: str
    task_index: int
    has_chief: bool = False

    @property
    def is_chief(self) -> bool:
        """The chief writes the run folder: task "chief", or worker 0 when no chief is named."""
        if self.task_type == "chief":
            return True
        return self.task_type == "worker" and self.task_index == 0 and not self.has_chief


def check_params(
    *,
    model: str = DEFAULTS["model"],
    epochs: int = DEFAULTS["epochs"],
    batch_size: int = DEFAULTS["batch_size"],
    learning_rate: float = DEFAULTS["learning_rate"],
    width: int | None = DEFAULTS["width"],
    dropout: float | None = DEFAULTS["dropout"],
    strategy: str = DEFAULTS["strategy"],
    logical_cpus: int = DEFAULTS["logical_cpus"],
    precision: str = DEFAULTS["precision"],
    jit_compile: str | bool = DEFAULTS["jit_compile"],
    seed: int = DEFAULTS["seed"],
    patience: int = DEFAULTS["patience"],
    verbose: bool = DEFAULTS["verbose"],
    replicas: int | None = None,
) -> dict[str, Any]:
    """Check every parameter; return them normalized, with the resolved strategy and replicas.

    `replicas` defaults to what the strategy will have on this machine (see expected_replicas);
    `jit_compile` comes back as "auto", True or False. Raises TrainError naming the first bad value.
    """
    _check_tunable(model, learning_rate, width, dropout)
    _whole("epochs", epochs, 1)
    _whole("batch_size", batch_size, 1)
    _choice("strategy", strategy, STRATEGIES)
    _whole("logical_cpus", logical_cpus, 0)
    _choice("precision", precision, PRECISIONS)
    jit = parse_jit(jit_compile)
    _whole("seed", seed, 0)
    _whole("patience", patience, 0, note=" (0 turns early stopping off)")
    if not isinstance(verbose, bool):
        raise TrainError(f"verbose={verbose!r} is not allowed: use true or false.")
    cluster = read_tf_config()
    if strategy == "multi_worker" and cluster is None:
        raise TrainError(
            "strategy='multi_worker' needs TF_CONFIG in the environment (the cluster's workers and "
            "this process's task, as deploy/ sets it): set it, or use strategy='auto'."
        )
    gpus = len(tf.config.list_physical_devices("GPU"))
    resolved = resolve_strategy(strategy, logical_cpus, gpus=gpus, cluster=cluster)
    if replicas is None:
        replicas = expected_replicas(resolved, logical_cpus, gpus=gpus, cluster=cluster)
    if batch_size % replicas:
        raise TrainError(
            f"batch_size={batch_size} is not divisible by the {replicas} replicas of "
            f"strategy={strategy!r} ({resolved}): use a multiple of {replicas}, e.g. "
            f"{max(1, round(batch_size / replicas)) * replicas} (it is the global batch, split "
            "evenly across the replicas)."
        )
    return {
        "model": model,
        "epochs": int(epochs),
        "batch_size": int(batch_size),
        "learning_rate": float(learning_rate),
        "width": None if width is None else int(width),
        "dropout": None if dropout is None else float(dropout),
        "strategy": strategy,
        "logical_cpus": int(logical_cpus),
        "precision": precision,
        "jit_compile": jit,
        "seed": int(seed),
        "patience": int(patience),
        "verbose": verbose,
        "resolved_strategy": resolved,
        "replicas": int(replicas),
        "cluster": cluster,
    }


def resolve_params(
    run_dir: str | os.PathLike[str], given: Mapping[str, Any] | None = None
) -> tuple[dict[str, Any], dict[str, str]]:
    """The checked parameters of a training run, and where each came from.

    `given` holds what the caller chose; None there means "not given". A given value wins; else a
    TUNABLE parameter takes the value in run_dir/tuning/best_hparams.json, when step 2 wrote one
    and tuned the same model; else DEFAULTS. Returns (check_params' dict with "tuning": the file's
    content or None, {name: "given" | "tuned" | "default"}).
    """
    given = {key: value for key, value in (given or {}).items() if value is not None}
    unknown = sorted(set(given) - set(DEFAULTS))
    if unknown:
        raise TrainError(f"Unknown parameter {unknown[0]!r}: train takes {', '.join(DEFAULTS)}.")
    tuning = read_tuning(run_dir)
    tuned = dict(tuning["hparams"]) if tuning else {}
    if given.get("model", tuned.get("model")) != tuned.get("model"):
        tuned = {}  # tuned for another model: its values say nothing about this one
    sources = {
        key: "given" if key in given else "tuned" if key in tuned else "default" for key in DEFAULTS
    }
    params = check_params(**{**DEFAULTS, **tuned, **given})
    params["tuning"] = tuning
    return params, sources


def read_tuning(run_dir: str | os.PathLike[str]) -> dict[str, Any] | None:
    """run_dir/tuning/best_hparams.json (see tune.py), checked; None when there is none."""
    path = resolve_run_dir(run_dir, create=False) / TUNED_FILE
    if not path.is_file():
        return None
    try:
        content = json.loads(path.read_text(encoding="utf-8"))
        hparams = content["hparams"]
        extra = sorted(set(hparams) - set(TUNABLE))
        if extra or "model" not in hparams:
            raise ValueError(f"hparams must hold model and only {', '.join(TUNABLE)}")
        _check_tunable(
            hparams["model"],
            hparams.get("learning_rate", DEFAULTS["learning_rate"]),
            hparams.get("width"),
            hparams.get("dropout"),
        )
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as error:
        reason = " ".join(str(error).split()).rstrip(".")
        if not isinstance(error, TrainError):
            reason = f"{type(error).__name__}: {reason}"
        raise TrainError(
            f"{path} cannot be used ({reason}): run 02_tune again, or delete it to train with "
            "the given and default values."
        ) from None
    return content


def describe_sources(params: dict[str, Any], sources: dict[str, str]) -> str:
    """One sentence on where the values came from, e.g. "Using learning_rate=0.0031 from …"."""
    tuning = params.get("tuning")
    tuned = [key for key in DEFAULTS if sources.get(key) == "tuned"]
    given = [key for key in DEFAULTS if sources.get(key) == "given" and key != "verbose"]
    parts = []
    if tuned:
        score = tuning.get("score")
        shown = f"{score:.4f}" if isinstance(score, int | float) else "?"
        found = f"{tuning.get('objective', 'score')} {shown}"
        parts.append(
            f"using {_listed(params, tuned)} from {TUNED_FILE} ({found}, trial "
            f"#{tuning.get('trial', '?')})"
        )
    elif tuning is None:
        parts.append(f"no {TUNED_FILE} in the run folder")
    elif params["model"] != tuning["hparams"]["model"]:
        parts.append(
            f"{TUNED_FILE} was tuned for {tuning['hparams']['model']}, not {params['model']}: "
            "none of its values is used"
        )
    else:
        parts.append(f"every value of {TUNED_FILE} is overridden by a given one")
    if tuning is not None and params["model"] == tuning["hparams"]["model"]:
        parts += [
            f"given {_listed(params, [key])} wins over the tuned {_shown(value)}"
            for key, value in tuning["hparams"].items()
            if sources.get(key) == "given" and value != params[key]
        ]
    if given:
        parts.append(f"given: {_listed(params, given)}")
    rest = [key for key in DEFAULTS if sources.get(key) == "default" and key != "verbose"]
    if rest:
        parts.append(f"defaults: {', '.join(rest)}")
    sentence = "; ".join(parts)
    return sentence[:1].upper() + sentence[1:] + "."


def sources_table(params: dict[str, Any], sources: dict[str, str]) -> str:
    """A markdown table: each parameter, its value, and where it came from."""
    rows = ["| parameter | value | from |", "|---|---|---|"]
    for key in DEFAULTS:
        value = "the model's default" if params[key] is None else _shown(params[key])
        source = f"{sources[key]} ({TUNED_FILE})" if sources[key] == "tuned" else sources[key]
        rows.append(f"| {key} | {value} | {source} |")
    return "\n".join(rows)


def resolve_strategy(
    name: str, logical_cpus: int = 0, *, gpus: int = 0, cluster: Cluster | None = None
) -> str:
    """What `auto` means here: "multi_worker", "mirrored", "one_device" or "default".

    MultiWorker when TF_CONFIG names more than one worker; Mirrored over several GPUs, or over
    logical CPUs when logical_cpus > 1 was asked on a machine without GPUs; OneDevice on one GPU;
    otherwise TensorFlow's default strategy (no distribution, on the CPU).
    """
    if name != "auto":
        return name
    if cluster is not None and cluster.workers > 1:
        return "multi_worker"
    if gpus > 1 or (gpus == 0 and logical_cpus > 1):
        return "mirrored"
    return "one_device" if gpus == 1 else "default"


def expected_replicas(
    resolved: str, logical_cpus: int = 0, *, gpus: int = 0, cluster: Cluster | None = None
) -> int:
    """Replicas in sync the resolved strategy will have, counted without initializing TensorFlow."""
    if resolved == "multi_worker":
        return (cluster.workers if cluster else 1) * (gpus or 1)
    if resolved == "mirrored":
        return gpus or max(1, logical_cpus)
    return 1


def read_tf_config(value: str | None = None) -> Cluster | None:
    """The cluster TF_CONFIG describes (default: the environment's), or None when it is unset."""
    text = os.environ.get("TF_CONFIG") if value is None else value
    if not text or not text.strip():
        return None
    try:
        config = json.loads(text)
        cluster, task = config.get("cluster") or {}, config.get("task") or {}
        workers = sum(len(cluster.get(kind) or []) for kind in TRAINING_TASKS)
        task_type, task_index = task["type"], int(task["index"])
    except (ValueError, TypeError, KeyError, AttributeError) as error:
        raise TrainError(
            f"TF_CONFIG is not valid ({type(error).__name__}: {error}): it must be JSON like "
            '{"cluster": {"worker": ["host1:port", "host2:port"]}, '
            '"task": {"type": "worker", "index": 0}}.'
        ) from None
    if task_type not in TRAINING_TASKS or not 0 <= task_index < len(cluster.get(task_type) or []):
        raise TrainError(
            f"TF_CONFIG names task {task_type!r} {task_index}, which is not one of its "
            f"{'/'.join(TRAINING_TASKS)} addresses: MultiWorkerMirroredStrategy trains on "
            "chief and worker tasks only."
        )
    return Cluster(
        workers=workers,
        task_type=task_type,
        task_index=task_index,
        has_chief=bool(cluster.get("chief")),
    )


def parse_jit(value: str | bool) -> str | bool:
    """jit_compile as "auto", True or False; "true"/"false" in any case are accepted too."""
    if isinstance(value, bool):
        return value
    text = value.strip().lower() if isinstance(value, str) else None
    if text not in JIT_COMPILE:
        raise TrainError(f"jit_compile={value!r} is not allowed: use auto, true or false.")
    return "auto" if text == "auto" else text == "true"


def effective_learning_rate(learning_rate: float, global_batch_size: int) -> float:
    """The learning rate the optimizer gets, by LR_RULE."""
    return float(learning_rate) * global_batch_size / REFERENCE_BATCH


def _check_tunable(model: Any, learning_rate: Any, width: Any, dropout: Any) -> None:
    """The parameters step 2 may set: the model's name, its learning rate and its knobs."""
    if not isinstance(model, str) or model not in MODELS:
        raise TrainError(
            f"model={model!r} is not allowed: use {' or '.join(OWN_MODELS)}, or a "
            "keras.applications model by name (MobileNetV2, ResNet50, EfficientNetB0, … "
            f"{len(APPLICATIONS)} in all, listed in models.APPLICATIONS)."
        )
    if (
        isinstance(learning_rate, bool)
        or not isinstance(learning_rate, int | float)
        or not math.isfinite(learning_rate)
        or learning_rate <= 0
    ):
        raise TrainError(
            f"learning_rate={learning_rate!r} is not allowed: use a number > 0, e.g. 0.001."
        )
    try:
        check_knobs(model, width=width, dropout=dropout)
    except ModelError as error:
        raise TrainError(str(error)) from None


def _listed(params: dict[str, Any], keys: list[str]) -> str:
    return ", ".join(f"{key}={_shown(params[key])}" for key in keys)


def _shown(value: Any) -> str:
    return f"{value:.3g}" if isinstance(value, float) else str(value)


def _whole(name: str, value: Any, minimum: int, note: str = "") -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise TrainError(f"{name}={value!r} is not allowed: use a whole number >= {minimum}{note}.")


def _choice(name: str, value: Any, allowed: tuple[str, ...]) -> None:
    if not isinstance(value, str) or value not in allowed:
        raise TrainError(f"{name}={value!r} is not allowed: use {', '.join(allowed)}.")
