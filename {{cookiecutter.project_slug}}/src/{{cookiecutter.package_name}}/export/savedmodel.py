"""The SavedModel: the task's raw input in; probabilities, class ids and class names out.

The model already rescales its uint8 input inside itself, so the serving graph is the model called
in inference mode plus an argmax and a lookup of the class names in a constant: no preprocessing
left for a client to get wrong. Keras' ExportArchive writes it with `serving_default` as the one
endpoint TF Serving calls. The version folder appears whole or not at all: it is written under a
hidden temporary name in export/ (TF Serving only loads folders named by a number) and renamed.
The name holds the host and process id that write it, so the next export of that version can tell
a folder a killed export left (its process is gone) from one still being written, and removes it.
Once it is in place, the lineage ledger records the model.keras and data it was made from, so
05_optimize can refuse an export that a newer model.keras has made stale.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import keras
import tensorflow as tf

from .. import lineage
from ..artifacts import MODEL_FILE, StepError, resolve_run_dir
from ..tasks import current as task
from ..tasks import read_meta
from ..writes import writing
from .files import (
    SIGNATURE,
    load_model,
    remove_stale_temporaries,
    temporary_prefix,
)
from .params import ExportError, Params, check, check_version, export_target

MODEL_NAME = (__package__ or "model").split(".")[0]  # the model's name under TF Serving
CLI_TIMEOUT = 300


def export_savedmodel(
    run_dir: str | os.PathLike[str],
    version: int = 1,
    overwrite: bool = False,
    replace_served: bool = False,
) -> dict[str, Any]:
    """Export run_dir/model.keras to run_dir/export/<version>/ and describe what was written.

    Refuses what export.check refuses (an existing version unless `overwrite=True`, a served one
    unless also `replace_served=True`, a model.keras that cannot be read or was trained on
    replaced data). Records export/<version> in the lineage ledger. Returns version, export_dir,
    model_path, model_name, precision, image_shape, classes and signature (describe_signature).
    """
    folder = resolve_run_dir(run_dir, create=False)
    removed = remove_stale_temporaries(export_target(folder, check_version(version)))
    check(run_dir, Params(version=version, overwrite=overwrite, replace_served=replace_served))
    target, model_path = export_target(folder, version), folder / MODEL_FILE
    meta = read_meta(folder)
    made_from = {name: lineage.fingerprint(folder, name) for name in ("model", "data")}
    model = load_model(folder, ExportError)
    try:
        task().models.check_trained(model, meta, model_path)
    except StepError as error:
        raise ExportError(str(error)) from None
    archive = task().export.build_archive(model, meta, folder)
    with writing(target, "run 04_export again"):  # a full disk: one sentence, nothing left
        _write_whole(archive, target)
    lineage.record(folder, f"export/{int(version)}", "export", made_from)
    return {
        "version": int(version),
        "export_dir": str(target),
        "model_path": str(model_path),
        "model_name": MODEL_NAME,
        "precision": model_precision(model),
        **task().models.state(meta),
        "classes": list(meta["classes"]),
        "signature": describe_signature(target),
        "removed": [str(path) for path in removed],
    }


def describe_signature(export_dir: str | os.PathLike[str]) -> dict[str, Any]:
    """serving_default's inputs and outputs as {name: {"dtype", "shape"}}, None for any size."""
    loaded = tf.saved_model.load(str(export_dir))
    function = loaded.signatures[SIGNATURE]
    return {
        "name": SIGNATURE,
        "inputs": _specs(function.structured_input_signature[1]),
        "outputs": _specs(function.structured_outputs),
    }


def signature_text(export_dir: str | os.PathLike[str], show_all: bool = False) -> str:
    """What `saved_model_cli show` prints for serving_default (or, with show_all, `--all`).

    The real tool, run in a child process with this interpreter, so the text is the one a user
    gets in a shell, not a re-creation of it.
    """
    command = saved_model_cli_command(export_dir, show_all)
    tool = [sys.executable, "-m", "tensorflow.python.tools.saved_model_cli", *command[1:]]
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}
    done = subprocess.run(
        tool, capture_output=True, text=True, env=env, timeout=CLI_TIMEOUT, check=False
    )
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise ExportError(f"saved_model_cli failed on {export_dir} ({last}).")
    return done.stdout.strip()


def saved_model_cli_command(
    export_dir: str | os.PathLike[str], show_all: bool = False
) -> list[str]:
    """The shell command that prints the signature, as a list of arguments."""
    selection = ["--all"] if show_all else ["--tag_set", "serve", "--signature_def", SIGNATURE]
    return ["saved_model_cli", "show", "--dir", str(export_dir), *selection]


def graph_ops(show_all_text: str) -> list[str]:
    """The op types of the serving graph, read from `saved_model_cli show --all`.

    Dropout in training mode leaves random ops (StatelessRandomUniformV2) in the graph; an
    inference-mode export has none.
    """
    found = re.search(r"contains the following ops: \{(.*?)\}", show_all_text)
    if found is None:
        return []
    return sorted(name.strip().strip("'\"") for name in found.group(1).split(","))


def signature_block(show_all_text: str, name: str = SIGNATURE) -> str:
    """One signature's part of `saved_model_cli show --all`, as `show --signature_def` prints it.

    The tool takes seconds to start, so a notebook runs it once, with --all, and shows both.
    """
    found = re.search(
        rf"^signature_def\['{re.escape(name)}'\]:\n(.*?^  Method name is:[^\n]*)",
        show_all_text,
        flags=re.DOTALL | re.MULTILINE,
    )
    if found is None:
        return ""
    return "\n".join(line.removeprefix("  ") for line in found.group(1).splitlines())


def model_precision(model: keras.Model) -> str:
    """The mixed-precision policy the model computes in, or float32."""
    for layer in model.layers:
        policy = layer.dtype_policy
        if policy.compute_dtype in ("float16", "bfloat16"):
            return policy.name
    return "float32"


def _write_whole(archive: keras.export.ExportArchive, target: Path) -> None:
    """Write into a hidden temporary folder beside the target, then rename it into place."""
    target.parent.mkdir(parents=True, exist_ok=True)
    prefix = temporary_prefix(target)
    temporary = Path(tempfile.mkdtemp(prefix=prefix, dir=target.parent))
    old = None
    try:
        temporary.chmod(0o755)  # mkdtemp's 0700 would hide the export from a serving container
        archive.write_out(str(temporary), verbose=False)
        if target.exists():  # overwrite=True: the old version stays until the new one is whole
            old = target.with_name(f"{temporary.name}.old")
            os.replace(target, old)
        os.replace(temporary, target)
    except BaseException:
        if old is not None and not target.exists():
            os.replace(old, target)
            old = None
        shutil.rmtree(temporary, ignore_errors=True)
        raise
    finally:
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)


def _specs(structure: dict[str, tf.TensorSpec]) -> dict[str, dict[str, Any]]:
    return {
        name: {"dtype": spec.dtype.name, "shape": spec.shape.as_list()}
        for name, spec in sorted(structure.items())
    }
