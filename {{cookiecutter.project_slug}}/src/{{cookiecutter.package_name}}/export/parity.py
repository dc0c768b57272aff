"""Parity: the SavedModel, reloaded in a fresh process, against the Keras model it came from.

A fresh process is the honest test: it has no Keras model object, no custom code and no cached
function, only what tf.saved_model.load finds on disk, the way TF Serving sees the export. Both
sides predict the same validation examples; the probabilities must agree within a tolerance set by
the precision the model computes in (TOLERANCE), and the class names must be the names of the
class ids.

TensorFlow computes float32 matmuls and convolutions in TF32 on Ampere and newer GPUs by default
(10 bits of mantissa): 1e-4 to 1e-3 apart from a float32 computation, more than float32's
tolerance. Every parity reference (both sides here, and the SavedModel that 05_optimize compares
its backends with) runs with TF32 off (exact_float32), so float32 is compared with float32.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import tensorflow as tf

from ..artifacts import MissingInputError, resolve_run_dir
from ..quiet import quiet_env
from ..tasks import current as task
from ..tasks import read_meta
from ..tasks.outputs import feed
from .files import SIGNATURE, load_model
from .params import ExportError
from .savedmodel import model_precision, saved_model_cli_command

# Largest allowed |Keras - SavedModel| probability. float32: both run the same float32 graph, so
# only the order of operations may differ. Mixed precision: float16 keeps about 3 significant
# digits (bfloat16 fewer), so a differently fused op may move a probability by up to ~1e-2.
TOLERANCE = {"float32": 1e-5, "mixed": 1e-2}
PREDICT_BATCH = 256
MISCLASSIFIED = 16  # wrong answers kept for the figure, most confident first
PROCESS_TIMEOUT = 600
PACKAGE = (__package__ or "").split(".")[0]


def check_parity(
    run_dir: str | os.PathLike[str],
    export_dir: str | os.PathLike[str],
    max_examples: int = 512,
) -> dict[str, Any]:
    """Compare the Keras model and the reloaded SavedModel on up to max_examples held-out examples.

    Returns examples, max_abs_diff, top1_agreement (share of examples whose Keras top class is the
    SavedModel's class id), class_names_match, precision, tolerance, parity_ok, served_pid (the
    fresh process), keras_pid and a verdict sentence.
    """
    if isinstance(max_examples, bool) or not isinstance(max_examples, int) or max_examples < 1:
        raise ExportError(f"max_examples={max_examples!r} is not allowed: use a whole number >= 1.")
    folder = resolve_run_dir(run_dir, create=False)
    model = load_model(folder, ExportError)
    export_dir = Path(export_dir)
    if not (export_dir / "saved_model.pb").is_file():
        raise MissingInputError(
            f"{export_dir} holds no SavedModel: export it first with export_savedmodel (04_export)."
        )
    meta = read_meta(folder)
    classes = np.array(meta["classes"])
    # The held-out test split when 01_data wrote one (test_fraction): the confusion matrix then
    # shows examples no choice was made on; else the validation split.
    split = parity_split(meta)
    # As many as the task compares (images: up to max_examples; text: the whole split, cheap).
    max_examples = task().export.parity_examples(meta, split, max_examples)
    # The same examples twice: raw, as a client sends them to the SavedModel (pixels, strings),
    # and as the trained model takes them (for text, the ids the tokenizer makes of the strings).
    raw, labels = task().examples(folder, split, max_examples)
    inputs, _ = task().examples(folder, split, max_examples, form="model")
    served = predict_in_fresh_process(export_dir, raw)  # and saved_model_cli's text
    with exact_float32():
        expected = model.predict(inputs, batch_size=PREDICT_BATCH, verbose=0).astype("float32")
    precision = model_precision(model)
    tolerance = TOLERANCE["float32" if precision == "float32" else "mixed"]
    diff = float(np.max(np.abs(expected - served["probabilities"])))
    agreement = float(np.mean(np.argmax(expected, axis=-1) == served["class_ids"]))
    names_match = bool(np.all(classes[served["class_ids"]] == served["class_names"]))
    parity_ok = diff <= tolerance and names_match
    return {
        "examples": int(len(raw)),
        "parity_split": split,
        "max_abs_diff": diff,
        "top1_agreement": agreement,
        "class_names_match": names_match,
        "precision": precision,
        "tolerance": tolerance,
        "parity_ok": parity_ok,
        "served_pid": served["pid"],
        "keras_pid": os.getpid(),
        "saved_model_cli_all": served["saved_model_cli_all"],
        **served_errors(labels, served["class_ids"], served["probabilities"], len(classes)),
        "verdict": _verdict(diff, agreement, names_match, tolerance, precision, len(raw), split),
    }


def parity_split(meta: dict[str, Any]) -> str:
    """The held-out test split when 01_data wrote one (no choice was made on it), else validation:
    where the export and every converted model are compared with the Keras model."""
    return "test" if "test" in meta["splits"] else "validation"


@contextlib.contextmanager
def exact_float32() -> Iterator[None]:
    """TF32 off inside (float32 ops compute in float32 on every GPU), as it was after."""
    enabled = tf.config.experimental.tensor_float_32_execution_enabled()
    tf.config.experimental.enable_tensor_float_32_execution(False)
    try:
        yield
    finally:
        tf.config.experimental.enable_tensor_float_32_execution(enabled)


def served_errors(
    labels: np.ndarray, predicted: np.ndarray, probabilities: np.ndarray, num_classes: int
) -> dict[str, Any]:
    """How the SavedModel's answers compare with the true labels: its accuracy on these examples,
    the confusion matrix (rows: true class, columns: predicted) and the most confident mistakes
    (index into the validation examples, true and predicted class id, confidence)."""
    labels, predicted = labels.astype(int), predicted.astype(int)
    confusion = np.zeros((num_classes, num_classes), dtype=int)
    np.add.at(confusion, (labels, predicted), 1)
    wrong = np.flatnonzero(labels != predicted)
    confidence = probabilities.max(axis=-1)
    wrong = wrong[np.argsort(-confidence[wrong], kind="stable")][:MISCLASSIFIED]
    return {
        "served_accuracy": float(np.mean(labels == predicted)) if len(labels) else None,
        "confusion_matrix": confusion.tolist(),
        "misclassified": [
            {
                "index": int(i),
                "label": int(labels[i]),
                "predicted": int(predicted[i]),
                "confidence": round(float(confidence[i]), 4),
            }
            for i in wrong
        ],
    }


def predict_in_fresh_process(export_dir: Path, inputs: np.ndarray) -> dict[str, Any]:
    """serving_default's outputs for `inputs`, computed by `python -m <package>.export predict`,
    and what `saved_model_cli show --all` prints for the export (saved_model_cli_all).

    The same fresh process runs saved_model_cli's own code after predicting: one TensorFlow start
    instead of two, and the tool still reads only what is on disk.
    """
    with tempfile.TemporaryDirectory(prefix="export-parity-") as scratch:
        inputs_file, outputs = Path(scratch) / "inputs.npy", Path(scratch) / "outputs.npz"
        shown = Path(scratch) / "saved_model_cli.txt"
        np.save(inputs_file, inputs)
        source = str(Path(__file__).resolve().parents[2])  # src/, in case it is not installed
        path = os.pathsep.join(filter(None, [source, os.environ.get("PYTHONPATH")]))
        env = quiet_env({**os.environ, "PYTHONPATH": path})
        command = [sys.executable, "-m", f"{PACKAGE}.export", "predict", "--cli-text", str(shown)]
        done = subprocess.run(
            [*command, str(export_dir), str(inputs_file), str(outputs)],
            capture_output=True,
            text=True,
            env=env,
            timeout=PROCESS_TIMEOUT,
            check=False,
        )
        if done.returncode != 0:
            last = (done.stderr.strip().splitlines() or ["no output"])[-1]
            raise ExportError(f"Reloading {export_dir} in a fresh process failed ({last}).")
        with np.load(outputs) as saved:
            result: dict[str, Any] = {name: saved[name] for name in saved.files}
        result["saved_model_cli_all"] = shown.read_text(encoding="utf-8").strip()
    result["pid"] = int(result["pid"])
    return result


def main(argv: list[str] | None = None) -> int:
    """The fresh process: load the SavedModel alone, predict, write the outputs to a .npz file."""
    parser = argparse.ArgumentParser(description="Predict with a SavedModel's serving_default.")
    parser.add_argument("command", choices=["predict"])
    parser.add_argument("export_dir")
    parser.add_argument("inputs", help=".npy file of raw inputs (uint8 images, strings, rows)")
    parser.add_argument("outputs", help=".npz file to write the outputs to")
    parser.add_argument("--cli-text", help="also write `saved_model_cli show --all` here")
    args = parser.parse_args(argv)
    task()  # the task's module registers the ops its export needs (text: tensorflow-text's)
    signature = tf.saved_model.load(args.export_dir).signatures[SIGNATURE]
    inputs = np.load(args.inputs)  # pixels, strings, or a table's rows (a structured array)
    parts: dict[str, list[np.ndarray]] = {}
    with exact_float32():
        for start in range(0, len(inputs), PREDICT_BATCH):
            batch = feed(signature, inputs[start : start + PREDICT_BATCH])
            for output, value in signature(**batch).items():
                parts.setdefault(output, []).append(value.numpy())
    outputs = {name: np.concatenate(values) for name, values in parts.items()}
    for name, value in outputs.items():  # string outputs (class_names, a table's out_of_range)
        if value.dtype == object:  # as text: np.load refuses object arrays
            outputs[name] = np.array([item.decode("utf-8") for item in value])
    np.savez(args.outputs, pid=np.int64(os.getpid()), **outputs)
    return show_all(args.export_dir, args.cli_text) if args.cli_text else 0


def show_all(export_dir: str, text_file: str) -> int:
    """Run saved_model_cli's own main (`show --dir EXPORT_DIR --all`), its output into text_file.

    Its main ends the process (absl's app.run), so this is the fresh process's last act.
    """
    from tensorflow.python.tools import saved_model_cli

    sys.argv = [*saved_model_cli_command(export_dir, show_all=True)]
    with open(text_file, "w", encoding="utf-8") as out, contextlib.redirect_stdout(out):
        try:
            saved_model_cli.main()
        except SystemExit as stop:  # sys.exit(None) is success
            return 0 if stop.code is None else stop.code if isinstance(stop.code, int) else 1
    return 0


def _verdict(
    diff: float,
    agreement: float,
    names_match: bool,
    tolerance: float,
    precision: str,
    count: int,
    split: str = "validation",
) -> str:
    if not names_match:
        return "The SavedModel's class names are not those of its class ids: the export is broken."
    if diff > tolerance:
        return (
            f"The probabilities differ by up to {diff:.2g}, more than the {tolerance:g} allowed "
            f"under {precision}: the SavedModel does not compute what the Keras model computes."
        )
    if agreement < 1.0:
        return (
            f"Probabilities agree within {tolerance:g} ({precision}), but {agreement:.2%} of top "
            f"classes: the others are near-ties, where two classes' probabilities differ by less "
            "than the rounding between the two runs."
        )
    return (
        f"Same top class on all {count} {split} {task().noun}; largest probability difference "
        f"{diff:.2g} (allowed under {precision}: {tolerance:g})."
    )
