"""A fake task for the shared machinery's tests: random float vectors, a few classes, one Dense
layer. Every bake holds it, whatever its own task, so train, export, optimize, the run folder and
the figures are tested in each bake in seconds, through the same seam (tasks/base.py) a real task
fills. `fake_run` writes data/ as step 1 leaves it (meta.json and one file per split); `installed`
makes `tasks.current()` give the fake task (the bake's own task module's TASK is swapped), which
is also how a fresh process (two replicas) takes it: `install()` before any step runs.
"""

from __future__ import annotations

import importlib
import json
import os
from pathlib import Path
from typing import Any

import keras
import numpy as np
import pytest
import tensorflow as tf

from {{ cookiecutter.package_name }} import seam
from {{ cookiecutter.package_name }}.artifacts import DATA_DIR, META_FILE, StepError
from {{ cookiecutter.package_name }}.data import reader
from {{ cookiecutter.package_name }}.tasks.base import (
    Bench,
    Export,
    Models,
    Recipe,
    Scores,
    Task,
    examples_of,
)
from {{ cookiecutter.package_name }}.tasks.outputs import SIGNATURE, serving_outputs

NAME = "fake_classification"
NOUN = "vectors"
MODEL = "dense"  # the one model: Dense(classes) and a float32 softmax
INPUT = "features"
FEATURES = 6
CLASSES = ("a", "b", "c")
COUNTS = {"train": 96, "validation": 48, "test": 48}


def write_data(folder: str | os.PathLike[str], seed: int = 0, train: int | None = None) -> Path:
    """folder/data/ as a data step leaves it: meta.json and one .npz per split, vectors drawn
    around one centre per class (a Dense layer separates them in a few epochs)."""
    data = Path(folder) / DATA_DIR
    data.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    centres = rng.normal(0, 2, (len(CLASSES), FEATURES)).astype(np.float32)
    splits = {}
    for split, count in {**COUNTS, **({"train": train} if train else {})}.items():
        labels = rng.integers(0, len(CLASSES), count).astype(np.int32)
        vectors = centres[labels] + rng.normal(0, 1, (count, FEATURES)).astype(np.float32)
        np.savez(data / f"{split}.npz", x=vectors, y=labels)
        splits[split] = {"count": count, "shards": [f"{split}.npz"]}
    meta = {
        "dataset": "fake",
        "seed": seed,  # as a data step records its values: other draws, another fingerprint
        "task": NAME,
        "classes": list(CLASSES),
        "num_classes": len(CLASSES),
        "features": FEATURES,
        "splits": splits,
    }
    (data / META_FILE.split("/")[-1]).write_text(json.dumps(meta, indent=1), encoding="utf-8")
    return Path(folder)


def _split(run_dir: Any, split: str) -> tuple[np.ndarray, np.ndarray]:
    with np.load(Path(run_dir) / DATA_DIR / f"{split}.npz") as arrays:
        return arrays["x"], arrays["y"]


def make_dataset(run_dir: Any, split: str, batch_size: int, **options: Any) -> tf.data.Dataset:
    """(float32 [B, FEATURES], int32 [B]) batches through the shared reader: the rows are in
    memory, their decode is nothing; each input pipeline reads every n-th row."""

    def source(name: str) -> reader.Source:
        vectors, labels = _split(run_dir, name)
        rows = tf.data.Dataset.from_tensor_slices((vectors, labels))
        return reader.Source(rows, len(labels), reading)

    options.pop("augment", None)  # nothing to augment: accepted and ignored, as before
    return reader.read(source, COUNTS, split, batch_size, **options)


def reading(plan: reader.Plan) -> reader.Reading:
    """The fake task's part of the reader: rows as they are, the whole split in the buffer."""
    return reader.Reading(decode=lambda rows: rows, cache=False, shuffle_buffer=plan.count)


def examples(run_dir: Any, split: str, count: int) -> tuple[np.ndarray, np.ndarray]:
    vectors, labels = _split(run_dir, split)
    return vectors[:count], labels[:count]


def build_model(name: str, meta: dict[str, Any], **_: Any) -> keras.Model:
    """One Dense layer (in the policy's compute dtype) and a float32 softmax."""
    check_model(name, meta)
    inputs = keras.Input((int(meta["features"]),), name=INPUT)
    logits = keras.layers.Dense(int(meta["num_classes"]), name="dense")(inputs)
    outputs = keras.layers.Activation("softmax", dtype="float32", name="probabilities")(logits)
    return keras.Model(inputs, outputs, name=MODEL)


def check_model(name: str, meta: dict[str, Any], **_: Any) -> None:
    if name != MODEL:
        raise StepError(f"model={name!r} is not allowed: use {MODEL}.")


def check_trained(model: keras.Model, meta: dict[str, Any], path: Any) -> None:
    if model.outputs[0].shape[-1] != len(meta["classes"]):
        raise StepError(f"{path} gives other outputs than the data's classes: re-run 03_train.")


def spec(_: Any = None) -> tf.TensorSpec:
    return tf.TensorSpec([None, FEATURES], tf.float32, name=INPUT)


def build_archive(model: keras.Model, meta: dict[str, Any], run_dir: Any) -> Any:
    archive = keras.export.ExportArchive()
    archive.track(model)
    archive.add_endpoint(
        SIGNATURE, serving_outputs(model, meta["classes"]), input_signature=[spec()]
    )
    return archive


def rest_payload(raw: Any) -> dict[str, Any]:
    return {"signature_name": SIGNATURE, "instances": np.asarray(raw, np.float32).tolist()}


def plot_mistakes(raw: Any, metrics: dict[str, Any], classes: list[str], path: Path) -> Any:
    """The mistaken vectors as rows of an image, true and said class in the title."""
    from {{ cookiecutter.package_name }}.figures import style

    wrong = metrics.get("misclassified") or []
    if not wrong:
        return None
    fig, (ax,) = style.new(6, 0.3 * len(wrong) + 1)
    ax.imshow(np.stack([raw[item["index"]] for item in wrong]), aspect="auto")
    ax.set_title(", ".join(f"{classes[i['label']]}→{classes[i['predicted']]}" for i in wrong))
    return style.write(fig, path)


def synthetic_batch(meta: dict[str, Any], count: int, seed: int = 0) -> Any:
    rng = np.random.default_rng(seed)
    vectors = rng.normal(size=(count, int(meta["features"]))).astype(np.float32)
    return vectors, rng.integers(0, int(meta["num_classes"]), count).astype(np.int64)


class FakeTask(Task):
    """The fake task as every step sees it: every member of the seam, the smallest answers."""

    name = NAME
    noun = NOUN
    data = None  # no step 1: tests write data/ with write_data

    def __init__(self) -> None:
        self.models = Models(
            names=(MODEL,),
            default=MODEL,
            help=MODEL,
            knobs={},  # no width or dropout: 02 searches the shared recipe alone
            check=check_model,
            check_knobs=lambda *_, **__: None,
            check_trained=check_trained,
            rebuilt=lambda model, classes: model,
            state=lambda meta: {"features": int(meta["features"])},
            longest=lambda meta: 1,
        )
        self.recipe = Recipe()
        self.export = Export(
            raw_input=INPUT,
            model_input=INPUT,
            model_signature=SIGNATURE,
            build_archive=build_archive,
            model_spec=spec,
            rest_payload=rest_payload,
            parity_examples=lambda meta, split, default: default,
            plot_mistakes=plot_mistakes,
        )
        self.scores = Scores()
        self.bench = Bench(
            model=lambda quick: {"model": MODEL, "size": FEATURES, "num_classes": 3, "shown": ""},
            synthetic_meta=lambda size, classes: {"features": size, "num_classes": classes},
            synthetic_batch=synthetic_batch,
            serving_examples=lambda run_dir, meta, count, seed=0: synthetic_batch(
                meta, count, seed
            )[0],
        )

    def build_inputs(self, run_dir: Any, split: str, batch_size: int, **options: Any) -> Any:
        return make_dataset(run_dir, split, batch_size, **options)

    def examples(self, run_dir: Any, split: str, count: int, form: str = "raw") -> Any:
        return examples_of(form, examples, examples)(run_dir, split, count)

    def build_model(self, name: str, meta: dict[str, Any], **options: Any) -> keras.Model:
        return build_model(name, meta, **options)


TASK = FakeTask()


def install(patch: pytest.MonkeyPatch | None = None) -> FakeTask:
    """Make tasks.current() (and the seam's noun) give the fake task: until `patch` is undone,
    or for the rest of the process (a fresh one's first call)."""
    patch = patch or pytest.MonkeyPatch()
    module = importlib.import_module(f"{seam.__package__}.tasks.{seam.folder()}.task")
    patch.setattr(module, "TASK", TASK)
    patch.setattr(seam, "noun", lambda: NOUN)
    return TASK


@pytest.fixture
def fake_task(monkeypatch: pytest.MonkeyPatch) -> FakeTask:
    """tasks.current() and the seam's noun give the fake task during one test."""
    return install(monkeypatch)


@pytest.fixture(scope="module")
def fake_module():
    """The fake task is the task for every test of a module (its pytestmark uses this fixture)."""
    with pytest.MonkeyPatch.context() as patch:
        yield install(patch)


@pytest.fixture
def fake_run(tmp_path: Path, fake_task: FakeTask) -> Path:
    """A run folder holding the fake task's data/, as a data step leaves it."""
    return write_data(tmp_path / "run")


def write_model(folder: str | os.PathLike[str], seed: int = 0, epochs: int = 0) -> Path:
    """folder as 03_train leaves it, on the fake task: data/, and a model.keras with its lineage,
    untrained (it exports and serves like a trained one) or fitted for `epochs` (confident
    answers, real activation ranges for int8 calibration)."""
    from {{ cookiecutter.package_name }} import lineage
    from {{ cookiecutter.package_name }}.artifacts import MODEL_FILE

    folder = write_data(folder)
    keras.utils.set_random_seed(seed)
    meta = json.loads((folder / META_FILE).read_text(encoding="utf-8"))
    model = build_model(MODEL, meta)
    if epochs:
        model.compile(keras.optimizers.Adam(5e-2), "sparse_categorical_crossentropy")
        model.fit(*_split(folder, "train"), batch_size=32, epochs=epochs, verbose=0)
    model.save(folder / MODEL_FILE)
    lineage.record(folder, "model", "train", {"data": lineage.fingerprint(folder, "data")})
    return folder


@pytest.fixture
def fake_exported(tmp_path: Path, fake_task: FakeTask) -> Path:
    """A run folder as 04_export leaves it, on the fake task: data/, an untrained model.keras with
    its lineage, and export/1/ (a test that needs trained answers trains through train.run)."""
    from {{ cookiecutter.package_name }}.export import savedmodel

    folder = write_model(tmp_path / "fake-exported")
    savedmodel.export_savedmodel(folder, version=1)
    return folder
