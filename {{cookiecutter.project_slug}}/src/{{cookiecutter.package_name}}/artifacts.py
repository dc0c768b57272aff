"""The artifact contract: one run = one folder, and every name inside it is spelled here, once.

Notebooks, the runner, the CLI and the steps share these names and helpers, so every step finds its
inputs in the same place and a missing input stops with one sentence naming the step to run first.
Writing those files whole or not at all (write_json, write_metrics, WriteError) is writes.py's.
Nothing else in the package spells a run-folder file name, but an optional part's module in
parts/, which spells its own.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from . import parts, seam

# The steps in chain order, by notebook number; an optional part's step (parts/) in its place.
_CORE_STEPS = {"00": "environment", "01": "data", "03": "train", "04": "export", "05": "optimize"}
_PART_STEPS = {step[1][:2]: step[0] for step in parts.collect("STEP")}
STEPS = tuple(name for _, name in sorted({**_CORE_STEPS, **_PART_STEPS}.items()))

# --- the run folder's names -------------------------------------------------------------------
DATA_DIR = "data"  # 01: TFRecord shards and META_FILE
META_FILE = "data/meta.json"  # 01: classes, shapes, counts, the shard list
CHECKPOINT_DIR = "checkpoints"  # 03: checkpoints, their params.json and history.json
LOGS_DIR = "logs"  # 03: TensorBoard logs
SET_ASIDE = "{name}.other-data-{stamp}"  # 03: checkpoints/ and logs/ made on replaced data
MODEL_FILE = "model.keras"  # 03: the trained model
BATCH_FINDER = "batch_finder"  # 03 with batch_size=auto: metrics/ and figures/ <name>.json/.png
LR_FINDER = "lr_finder"  # 03 with learning_rate=auto: metrics/ and figures/ <name>.json/.png
EXPORT_DIR = "export"  # 04: export/<version>/ SavedModels
OPTIMIZED_DIR = "optimized"  # 05: ONNX files, and each other backend's own
METRICS_DIR = "metrics"  # every step: metrics/<step>.json
FIGURES_DIR = "figures"  # every step: its figures
NOTEBOOKS_DIR = "notebooks"  # the runner: executed notebooks and kernel logs
LINEAGE_FILE = "lineage.json"  # every step: what made each artifact (see lineage.py)
RUN_RECORD = "run.json"  # the runner: every attempt, the latest success per notebook
RUN_LOCK = ".run.lock"  # the runner: held by the run writing in the folder (its pid inside)
REPORT_FILE = "report.md"  # the runner: the run report
REPORT_HTML = "report.html"  # the runner: the report and the executed notebooks, in one file

# figures/<name>.png of each step, in the order the report shows them; a step writes its own
# (the figures package), and the report embeds those that exist.
FIGURES = {
    "environment": ("environment_matmul",),  # GFLOP/s per device
    "data": ("data_throughput", "data_classes", "data_samples", *seam.figures("data")),
    "train": ("train_curves", *seam.figures("train"), BATCH_FINDER, LR_FINDER),
    "export": ("export_confusion", "export_misclassified"),
    "optimize": ("optimize_latency", "optimize_throughput"),
    **parts.merged("FIGURES"),  # an optional part's own
}


class StepError(ValueError):
    """A step refused its input in one sentence that names the value and what is allowed.

    Nothing was written. Every error of the package that a user can fix is one of these, so the
    CLI prints it as its sentence (exit 2) and JupyterLab shows the sentence, not a traceback.
    """

    def _render_traceback_(self) -> list[str]:
        """IPython shows this instead of the traceback (JupyterLab, papermill's error cell)."""
        return [f"\x1b[0;31m{type(self).__name__}\x1b[0m: {self}"]


class NoProjectError(StepError, FileNotFoundError):
    """A relative run folder used outside a project: one sentence, as every StepError (a
    FileNotFoundError too, for callers that look for a project and fall back)."""


class MissingInputError(StepError):
    """An input a step needs is not in the run folder: the message names the step to run first."""


class StaleInputError(StepError):
    """An input was made from something another step has since replaced: re-run the named step."""


def project_root(start: Path | None = None) -> Path:
    """The folder at or above `start` (default: here) that holds pyproject.toml and notebooks/.

    Notebooks run with their own folder as working directory (JupyterLab and papermill both do), so
    relative run folders are resolved against the project root, not against the notebook's folder.
    """
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / "pyproject.toml").is_file() and (folder / "notebooks").is_dir():
            return folder
    raise NoProjectError(
        f"No project found at or above {here}: run this from inside the project "
        "(a folder with pyproject.toml and notebooks/), or pass an absolute run folder."
    )


def resolve_run_dir(run_dir: str | os.PathLike[str], create: bool = True) -> Path:
    """An absolute run folder; a relative one is taken from the project root. A RunFolder is
    resolved already: it comes back as it is (made, with create)."""
    if isinstance(run_dir, RunFolder):
        path: Path = run_dir
    else:
        path = Path(run_dir).expanduser()
        if not path.is_absolute():
            path = project_root() / path
    if create:
        path.mkdir(parents=True, exist_ok=True)
    return path


def run_folder(run_dir: str | os.PathLike[str], create: bool = False) -> RunFolder:
    """A step's door: its run_dir resolved once, into the value it hands down (see RunFolder)."""
    return RunFolder(resolve_run_dir(run_dir, create=create))


class RunFolder(type(Path())):  # type: ignore[misc]  # PosixPath (WindowsPath): a Path in full
    """One run folder, resolved once at a step's door, that knows its own paths by the names
    above. Handed down instead of run_dir, it is never resolved again: resolve_run_dir returns
    it as it is. Every path it gives is a plain Path inside it."""

    def __truediv__(self, key: str | os.PathLike[str]) -> Path:
        """A path inside the folder is a plain Path, not another run folder."""
        return Path(self, key)

    @property
    def data(self) -> Path:
        return Path(self, DATA_DIR)

    @property
    def meta(self) -> Path:
        return Path(self, META_FILE)

    @property
    def checkpoints(self) -> Path:
        return Path(self, CHECKPOINT_DIR)

    @property
    def logs(self) -> Path:
        return Path(self, LOGS_DIR)

    @property
    def model(self) -> Path:
        return Path(self, MODEL_FILE)

    @property
    def export(self) -> Path:
        return Path(self, EXPORT_DIR)

    def export_version(self, version: int | str) -> Path:
        return Path(self, EXPORT_DIR, str(version))

    @property
    def optimized(self) -> Path:
        return Path(self, OPTIMIZED_DIR)

    @property
    def metrics(self) -> Path:
        return Path(self, METRICS_DIR)

    def metrics_file(self, step: str) -> Path:
        return Path(self, METRICS_DIR, f"{step}.json")

    @property
    def figures(self) -> Path:
        return Path(self, FIGURES_DIR)

    @property
    def lineage(self) -> Path:
        return Path(self, LINEAGE_FILE)


def read_metrics(run_dir: str | os.PathLike[str], step: str) -> dict[str, Any]:
    """Read metrics/<step>.json; a missing file names the step that writes it."""
    path = run_folder(run_dir).metrics_file(step)
    if not path.is_file():
        raise MissingInputError(f"{path} is missing: run the {step} step first.")
    return json.loads(path.read_text(encoding="utf-8"))


def require(run_dir: str | os.PathLike[str], relative: str, step: str) -> Path:
    """Return run_dir/relative, or stop with one sentence naming the notebook that writes it."""
    path = resolve_run_dir(run_dir, create=False) / relative
    if not path.exists():
        raise MissingInputError(f"{path} is missing: run {step} first, with the same run_dir.")
    return path


def figure_path(run_dir: str | os.PathLike[str], name: str) -> Path:
    """figures/<name>.png in the run folder (made if needed); name must be one of FIGURES."""
    if not any(name in names for names in FIGURES.values()):
        raise ValueError(f"Unknown figure {name!r}: add it to artifacts.FIGURES first.")
    folder = run_folder(run_dir, create=True).figures
    folder.mkdir(parents=True, exist_ok=True)
    return folder / f"{name}.png"
