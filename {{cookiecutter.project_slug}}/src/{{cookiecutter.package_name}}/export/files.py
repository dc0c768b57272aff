"""The two files step 4 sits between: model.keras in, the SavedModel out.

A file cut short (a full disk, a copy interrupted, a crash while saving) must stop a step with one
sentence that names the step to re-run, not with Keras' "File not found" or a protobuf traceback.
So each has a cheap check that reads no model (model.keras is a zip archive: its CRCs and parts;
saved_model.pb a protobuf: it parses and has serving_default), run before any work, and a load
that turns whatever the loader raises into the same sentence. A version folder is written under a
hidden name holding its host and process (temporary_prefix); what a killed export left under such a
name is removed by the next export of that version (remove_stale_temporaries).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import zipfile
import zlib
from pathlib import Path
from typing import Any

from .. import lineage
from ..artifacts import MODEL_FILE, StepError, require, resolve_run_dir
from ..tasks import current, read_meta
from ..tasks.outputs import OUTPUTS, SIGNATURE  # noqa: F401  (export's names for both)

KERAS_PARTS = ("config.json", "model.weights.h5")  # what Keras 3 writes into a .keras archive
# export/.<version>.tmp-<host>-<pid>-<random>[.old]: a version being written (or being replaced)
TEMPORARY_NAME = re.compile(r"^\.\d+\.tmp-(?P<host>[A-Za-z0-9_]+)-(?P<pid>\d+)-")


def check_model_file(run_dir: str | os.PathLike[str], error: type[StepError] = StepError) -> Path:
    """run_dir/model.keras, refused in one sentence (`error`) when missing, cut short or damaged.

    Reads the archive's index and CRCs, not the model: fast enough for a pre-flight check.
    """
    path = require(run_dir, MODEL_FILE, "03_train")
    try:
        with zipfile.ZipFile(path) as archive:
            missing = [part for part in KERAS_PARTS if part not in archive.namelist()]
            damaged = archive.testzip()
            config = json.loads(archive.read("config.json")) if not missing else None
    except zipfile.BadZipFile:
        raise _model_error(path, "not a complete .keras archive", error) from None
    except (OSError, ValueError, RuntimeError, EOFError, zlib.error) as failure:
        raise _model_error(path, _reason(failure), error) from None
    if missing:
        raise _model_error(path, f"no {' or '.join(missing)} inside", error)
    if damaged is not None:
        raise _model_error(path, f"{damaged} inside is damaged", error)
    if not isinstance(config, dict):
        raise _model_error(path, "its config.json holds no model", error)
    return path


def check_trained_model(
    run_dir: str | os.PathLike[str], error: type[StepError], needed_by: str
) -> Path:
    """What steps 4 and 5 build on: a readable model.keras, the data, and the model trained on
    that data, not on data 01_data has replaced since (StaleInputError naming 03_train). A
    model.keras 03_train did not record (copied in by hand, or left by a training that died
    before its end) is refused too: a model without its training record is never exported."""
    path = check_model_file(run_dir, error)
    read_meta(run_dir)
    lineage.check_made_from(run_dir, "model", needed_by=needed_by)
    if lineage.made_from(run_dir, "model") is None:
        raise error(
            f"{path} has no training record (03_train records the model it writes in "
            f"lineage.json, beside metrics/train.json; this one was copied in or left by a "
            f"training that did not finish): run 03_train before {needed_by}."
        )
    return path


def load_model(run_dir: str | os.PathLike[str], error: type[StepError] = StepError) -> Any:
    """model.keras, loaded without its optimizer; anything unreadable is one sentence (`error`)."""
    import keras

    from ..tasks import current

    current()  # the task's own layers (text: position embeddings, ...) are registered on import
    path = check_model_file(run_dir, error)
    try:
        return keras.models.load_model(path, compile=False)
    except Exception as failure:  # Keras raises anything from ValueError to OSError and KeyError
        raise _model_error(path, _reason(failure), error) from None


def check_savedmodel(
    export_dir: str | os.PathLike[str], error: type[StepError] = StepError
) -> Path:
    """A SavedModel folder, refused in one sentence when its graph or variables cannot be read.

    Parses saved_model.pb (milliseconds) and looks for serving_default and the variables' index;
    variables cut short are found by the load (load_savedmodel), which says the same.
    """
    from google.protobuf.message import DecodeError
    from tensorflow.core.protobuf import saved_model_pb2

    folder = Path(export_dir)
    proto = saved_model_pb2.SavedModel()
    try:
        proto.ParseFromString((folder / "saved_model.pb").read_bytes())
    except OSError as failure:
        raise _savedmodel_error(folder, _reason(failure), error) from None
    except DecodeError:
        raise _savedmodel_error(folder, "saved_model.pb does not parse", error) from None
    if not any(SIGNATURE in graph.signature_def for graph in proto.meta_graphs):
        raise _savedmodel_error(folder, f"saved_model.pb has no {SIGNATURE} signature", error)
    if not (folder / "variables" / "variables.index").is_file():
        raise _savedmodel_error(folder, "variables/variables.index is missing", error)
    return folder


def load_savedmodel(
    export_dir: str | os.PathLike[str],
    error: type[StepError] = StepError,
    signature: str = SIGNATURE,
) -> Any:
    """The SavedModel's `signature` (serving_default); anything unreadable is one sentence."""
    import tensorflow as tf

    folder = check_savedmodel(export_dir, error)
    current()  # the task's module registers the ops its export needs (text: tensorflow-text's)
    try:
        return tf.saved_model.load(str(folder)).signatures[signature]
    except Exception as failure:  # TensorFlow raises OSError, OpError, IndexError, KeyError
        raise _savedmodel_error(folder, _reason(failure), error) from None


def remove_stale_temporaries(target: Path) -> list[Path]:
    """Remove what an interrupted export of `target` left beside it: its hidden temporary
    folders whose process is gone (this host's; any without a host and process id in the name).
    A replaced version a killed overwrite had moved aside is put back first, when the target is
    missing. Returns the folders removed (or put back); one that cannot be removed stays (no
    reader counts it as a version: TF Serving and this package only read folders named by a
    number)."""
    removed = []
    for path in sorted(target.parent.glob(f".{target.name}.tmp-*")):
        if not path.is_dir() or _writer_alive(path.name):
            continue
        try:
            if path.name.endswith(".old") and not target.exists():
                os.replace(path, target)  # the version being replaced, as it was
            else:
                shutil.rmtree(path)
        except OSError:
            continue
        removed.append(path)
    return removed


def _writer_alive(name: str) -> bool:
    """Whether the process named in a temporary folder's name may still be writing it."""
    found = TEMPORARY_NAME.match(name)
    if found is None:  # a name without host and process: an older export's, long gone
        return False
    if found["host"] != _host():
        return True  # another machine's process: not ours to judge
    try:
        os.kill(int(found["pid"]), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def temporary_prefix(target: Path) -> str:
    """The start of the hidden name a version is written under: its host and process."""
    return f".{target.name}.tmp-{_host()}-{os.getpid()}-"


def _host() -> str:
    return re.sub(r"[^A-Za-z0-9]", "_", socket.gethostname())[:40] or "host"


def _model_error(path: Path, reason: str, error: type[StepError]) -> StepError:
    return error(f"{path.name} in {path.parent} cannot be read ({reason}): re-run 03_train.")


def _savedmodel_error(folder: Path, reason: str, error: type[StepError]) -> StepError:
    run_dir = resolve_run_dir(folder.parent.parent, create=False)
    return error(
        f"{folder.parent.name}/{folder.name} in {run_dir} cannot be read ({reason}): re-run "
        "04_export (a new version, or overwrite=true)."
    )


def _reason(failure: BaseException) -> str:
    """The first clause of an error's message, short and without a full stop of its own."""
    text = (str(failure).strip().splitlines() or [""])[0]
    text = re.split(r"(?<=[.!?])\s", text)[0].rstrip(".!?:; ")[:160]
    return f"{type(failure).__name__}: {text}" if text else type(failure).__name__


def signature_table(signature: dict[str, Any]) -> str:
    """The serving signature as a Markdown table: each input and output, its dtype and shape
    (None: any size, the batch)."""
    rows = [
        f"Signature `{signature['name']}`:",
        "",
        "| | name | dtype | shape |",
        "|---|---|---|---|",
    ]
    for side in ("inputs", "outputs"):
        for name, spec in signature[side].items():
            shape = "[" + ", ".join("None" if n is None else str(n) for n in spec["shape"]) + "]"
            rows.append(f"| {side[:-1]} | `{name}` | {spec['dtype']} | {shape} |")
    return "\n".join(rows)
