"""Step 4 as one call: `run(run_dir, Params(...))` exports, proves parity, writes the metrics.

The notebook, `<package> export --run-dir DIR -p version=2` and the runner all go through here, so
the export a server gets has always passed the same checks and left the same record.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import keras
import tensorflow as tf

from .. import figures, lineage, parts, progress
from ..artifacts import run_folder
from ..data import read_meta
from ..figures import export as export_figures
from ..tasks import current as task
from ..writes import write_metrics
from .params import Params, check
from .parity import check_parity
from .savedmodel import export_savedmodel, signature_block


def run(run_dir: str | os.PathLike[str], params: Params, *, verbose: bool = True) -> dict[str, Any]:
    """Check, export model.keras to export/<version>/, reload it in a fresh process for parity and
    read its signature there with saved_model_cli, write metrics/export.json; return the metrics."""
    folder = run_folder(run_dir)  # resolved once, here: every call below gets this value
    check(folder, params)
    say = print if verbose else _silent
    if verbose:
        progress.starting("Exporting model.keras to a SavedModel", "5-30 s on a CPU")
    exported = export_savedmodel(folder, params.version, params.overwrite, params.replace_served)
    if exported["removed"]:
        names = ", ".join(Path(path).name for path in exported["removed"])
        say(f"Removed what an interrupted export left in {folder / 'export'}: {names}")
    say(f"Wrote {exported['export_dir']} ({exported['precision']} model)")
    # A fresh process loads TensorFlow and the export (minutes on a busy machine): a moving line.
    with progress.task("Parity: the export reloaded in a fresh process", unit="", shown=verbose):
        parity = check_parity(folder, exported["export_dir"])  # also runs saved_model_cli, once
    say(parity["verdict"])
    shown = parity.pop("saved_model_cli_all")
    metrics = export_metrics(exported, parity, shown)
    writes = [f"export/{exported['version']}"]
    metrics["lineage"] = lineage.summary(folder, reads=["data", "model"], writes=writes)
    metrics["figures"] = figures.save(folder, "export", metrics, say=say, drawers=DRAWERS)
    say(f"Wrote {write_metrics(folder, 'export', metrics)}")
    for hook in parts.collect("after_export"):  # an optional part's follow-up, if any
        say(hook(folder, metrics))
    return metrics


def draw_confusion(folder: Path, metrics: dict[str, Any], path: Path) -> Path | None:
    """figures/export_confusion.png, its classes named from data/meta.json."""
    return export_figures.plot_confusion(metrics, _classes(folder), path)


def draw_misclassified(folder: Path, metrics: dict[str, Any], path: Path) -> Path | None:
    """figures/export_misclassified.png: the most confident mistakes, read back from the shards
    and drawn as the task shows an example (an image, a text)."""
    count = export_figures.images_needed(metrics)
    if not count:  # no mistakes: no figure, nothing read
        return None
    raw, _ = task().examples(folder, metrics.get("parity_split", "validation"), count)
    return task().export.plot_mistakes(raw, metrics, _classes(folder), path)


# The figures that read the data back (figures draw the arrays handed to them).
DRAWERS = {"export_confusion": draw_confusion, "export_misclassified": draw_misclassified}


def export_metrics(
    exported: dict[str, Any], parity: dict[str, Any], show_all_text: str
) -> dict[str, Any]:
    """metrics/export.json: the export, its signature, the parity figures and the CLI text.

    saved_model_cli is serving_default's part of `show --all` (what `show --signature_def
    serving_default` prints); saved_model_cli_all is the whole text, op list included.
    """
    return {
        "version": exported["version"],
        "export_dir": exported["export_dir"],
        "model_path": exported["model_path"],
        "model_name": exported["model_name"],
        "signature": exported["signature"],
        "saved_model_cli": signature_block(show_all_text),
        "saved_model_cli_all": show_all_text,
        **{key: value for key, value in parity.items() if key != "keras_pid"},
        "tensorflow_version": tf.__version__,
        "keras_version": keras.__version__,
    }


def _silent(*args: Any, **kwargs: Any) -> None:
    """print's stand-in when verbose=False (the CLI's --json wants stdout to itself)."""


def _classes(folder: Path) -> list[str]:
    return [str(name) for name in read_meta(folder)["classes"]]
