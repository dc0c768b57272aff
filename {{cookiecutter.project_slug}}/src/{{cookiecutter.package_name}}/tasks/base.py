"""The task seam, typed: what every step asks of a task, in one class of thirteen members.

In the spirit of TF Model Garden's `official/core/base_task.Task` (build_inputs, build_model,
build_losses, build_metrics) and keras-hub's `Task`: a task is one object that builds its inputs and
its model, says how they are scored, and hands the steps four groups of answers. The steps reach
it through `tasks.current()`; nothing else in the shared code names a task.

    name            the bake's answer ("image_classification")
    noun            what one example is called in sentences and on axes ("images", "texts", "rows")
    data            Data: step 1's task half (its Params, checks, source to data/, timing, figures);
                    the shared step (prepare/entry.py) calls it in order and does the rest
    build_inputs    (run_dir, split, batch_size, **options) → (model inputs, int32 labels) batches
    examples        (run_dir, split, count, form) → the first examples of a split and their labels:
                    form="raw" as serving_default takes them (uint8 pixels, strings, a table's
                    rows as a structured array), form="model" as the trained model (and ONNX) does
    build_model     (name, meta, *, weights, width, dropout, **models.values) → a Keras model
    build_losses    (label_smoothing, soft, num_classes) → the per-example loss of (targets, probs)
    build_metrics   () → {"accuracy": per-example score of (int32 labels, probabilities)}
    models          Models: the names accepted, the default, the checks of a model and its knobs
    recipe          Recipe: the task's own training parameters (images: augment), added to train's
                    Params; their checks, their augmenter, their words in train.json, a search's
                    choices among them, what earlier weights must share with this run's data
    export          Export: the SavedModel's endpoints, the converters' input, REST bodies
    scores          Scores: the baseline beside the model, the task's test extras, its figures
    bench           Bench: gpu-bench's reference model and synthetic data; a load test's requests

Optional capabilities are fields with defaults (a Recipe with no choices, no baseline, no length
ranges); a task gives what it has. tests/test_task_contract.py checks that the task of the bake
gives every member, and that this list and the class agree.
"""

from __future__ import annotations

import abc
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

Meta = dict[str, Any]
RunDir = str | os.PathLike[str]


def _nothing(*_: Any, **__: Any) -> None:
    return None


def _no_extras(*_: Any, **__: Any) -> dict[str, Any]:
    return {}


def _no_words(*_: Any, **__: Any) -> tuple[str, ...]:
    return ()


@dataclass(frozen=True)
class NoOptions:
    """The training parameters of a task that has none of its own."""


@dataclass
class Data:
    """Step 1's task half (tasks/<folder>/data_step.py's DATA, no TensorFlow read): prepare/entry.py
    calls check, prepare, describe, measure and metrics in order, and does the rest."""

    params: type  # notebook 01's Params: a frozen dataclass of steps.param fields (dataset, seed…)
    check: Callable[[Any], None]  # (params): refuse a value in one sentence, nothing read
    preparing: tuple[str, str]  # what prepare does and about how long, said before it starts
    prepare: Callable[..., Meta]  # (folder, params) → meta: source read, split, data/ written
    describe: Callable[[Meta], str]  # (meta) → what prepare wrote or reused, in lines
    measure: Callable[..., dict[str, Any]]  # (folder, params, meta) → the input's timing, verdict
    metrics: Callable[[Meta, dict[str, Any]], dict[str, Any]]  # (meta, measured) → data.json
    drawers: Mapping[str, Callable[..., Any]]  # figure → (folder, metrics, path): data read back
    measuring: str = ""  # said before measure ({seconds}: benchmark_seconds); "": nothing
    closing: tuple[str, ...] = ("verdict",)  # the metrics' keys said last, one line each
    # (meta) → what is wrong with the task's own keys of meta.json in a few words, None: nothing
    # (tasks.read_meta asks it after data/meta.py's shared checks; images: image_shape)
    meta_problem: Callable[[Meta], str | None] = _nothing


@dataclass
class Models:
    """The models a task builds: what `model=` accepts and how a choice is checked."""

    names: tuple[str, ...]  # every name the steps and the finders accept
    default: str
    help: str  # the allowed values, in words (train's --help, refusals)
    knobs: Mapping[str, Mapping[str, Any]]  # own builders' width and dropout: default, range
    check: Callable[..., None]  # (name, meta, **options): refuse what this data cannot take
    check_knobs: Callable[..., None]  # (model, *, width, dropout)
    check_trained: Callable[..., None]  # (model, meta, path): model.keras fits this data
    rebuilt: Callable[..., Any]  # (model, classes): the same builder, another head
    state: Callable[[Meta], dict[str, Any]]  # what a checkpoint depends on beyond training values
    # the input length the model leaves open (text: max_tokens); 1: none, every input one shape
    longest: Callable[[Meta], int] = lambda meta: 1
    # optional: (data, meta) → build_inputs' batches padded to the longest input (the batch
    # finder probes memory at that shape); None where every input has one shape
    longest_batches: Callable[..., Any] | None = None
    # the names of weights the builders fetch themselves (the image task's): `weights` takes
    # them beside none and a file; build_model gets weights=name
    pretrained: tuple[str, ...] = ()
    # optional: (model) → True for a model= value beyond `names` the task builds (text: a
    # KerasHub preset folder or name); its own check refuses what it cannot build
    takes: Callable[[str], bool] = lambda model: False
    # optional: (model) → a search's specs of that model's own knobs ({name: {"type", range or
    # "values", "default"}}, as step 2 writes its space), also replacing a shared one's range
    # (an encoder's learning rate); each is a training parameter of Recipe.options or Params
    space: Callable[[str], Mapping[str, Mapping[str, Any]]] = lambda model: {}
    # optional: (params) → build_model's own keyword values of params.model, those set (not None)
    values: Callable[[Any], Mapping[str, Any]] = lambda params: {}


@dataclass
class Recipe:
    """The task's own training parameters beyond the shared recipe, and what is done with them."""

    # a frozen dataclass of steps.param fields: train's Params adds them after its own (images:
    # augment), so its --help, notebook 03 and the runner's checks know them in this task only
    options: type = NoOptions
    check: Callable[[Any], None] = _nothing  # (params): refuse a value the task cannot use
    # (params, num_classes, seed) → on-device augmentation of (inputs, labels), or None
    augmenter: Callable[..., Any] = _nothing
    # (params, meta) → {"weights": one per class, "sentence": 03's words, ...} for the train
    # step's per-example loss (replica.weighted; tables: class_weight), or None: unweighted
    class_weights: Callable[..., Any] = _nothing
    summary: Callable[[Any], dict[str, Any]] = _no_extras  # (params) → train.json's keys
    words: Callable[[Any], tuple[str, ...]] = _no_words  # (params) → the recipe's sentence
    optimizer: Callable[..., None] = _nothing  # (optimizer, params): the task's own settings on it
    # (params) → (rate, why in one line) where learning_rate is not given or auto, or None: the
    # default or the range test (text: a KerasHub encoder's fine-tuning rate)
    learning_rate: Callable[..., Any] = _nothing
    choices: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # a search's, default 1st
    same_inputs: tuple[str, ...] = ()  # meta keys earlier weights must share with this data


@dataclass
class Export:
    """What export, optimize and serving need: endpoints, the converters' input, REST bodies."""

    raw_input: str  # serving_default's input name ("images", "text"; tables: "columns")
    model_input: str  # the trained model's input name (ONNX and the converted engines)
    model_signature: str  # the endpoint taking `examples(form="model")` (converted models' parity)
    build_archive: Callable[..., Any]  # (model, meta, run_dir) → keras.export.ExportArchive
    model_spec: Callable[[Any], Any]  # (model) → the TensorSpec of the model's input
    rest_payload: Callable[[Any], dict[str, Any]]  # raw examples → TF Serving's REST body
    parity_examples: Callable[..., int]  # (meta, split, default) → how many parity compares
    plot_mistakes: Callable[..., Any]  # (raw, metrics, classes, path) → the mistakes figure
    int8: str = "static"  # "static" (calibrated on training examples) or "dynamic" quantization
    # serving_default takes strings (converters meet string ops): True, or words naming which
    raw_strings: bool | str = False
    # optional: (meta) → (fewest, most) tokens of each length bucket, where the input length varies
    length_ranges: Callable[[Meta], Any] | None = None
    # optional, where model_signature is not serving_default: (run_dir) → raw examples → the
    # model's input, as a client of a converted model runs it (05's end-to-end comparison)
    client_encoder: Callable[..., Any] | None = None


@dataclass
class Scores:
    """What the task adds to the test split's scores."""

    baseline: Callable[[RunDir], dict[str, Any] | None] = _nothing  # scikit-learn, same split
    # (run_dir, split, labels, probabilities, classes, *, predict) → confused pairs, AUCs, ...
    extras: Callable[..., dict[str, Any]] = _no_extras
    drawers: Mapping[str, Mapping[str, Callable[..., Any]]] = field(default_factory=dict)
    # (loop, say) → one entry per other model trained and scored beside, not exported (tables:
    # compare_models): {name, test_accuracy, roc_auc, seconds, ...}; None: none
    compare: Callable[..., Any] = _nothing
    # what 02 ranks trials by, higher better: the epoch's own "val_accuracy", or a name whose
    # value `objective_score` computes from validation's (labels, probabilities) after each epoch
    objective: str = "val_accuracy"
    objective_score: Callable[..., Any] = _nothing


@dataclass
class Bench:
    """gpu-bench's reference and synthetic data; what a load test of TF Serving sends."""

    model: Callable[[bool], dict[str, Any]]  # (quick) → model, size, classes, and in words
    synthetic_meta: Callable[[int, int], Meta]  # (size, num_classes) → a meta build_model takes
    synthetic_batch: Callable[..., Any]  # (meta, count, seed) → (inputs, int64 labels)
    serving_examples: Callable[..., Any]  # (run_dir, meta, count, seed) → raw request examples


FORMS = ("raw", "model")  # what Task.examples gives: serving_default's input, or the model's


def examples_of(
    form: str, raw: Callable[..., Any], model: Callable[..., Any]
) -> Callable[..., Any]:
    """The task's reader of examples in `form`: "raw" or "model"."""
    if form not in FORMS:
        raise ValueError(f"form={form!r} is not a form of examples: use one of {', '.join(FORMS)}.")
    return raw if form == "raw" else model


class Task(abc.ABC):
    """One task, as every step sees it (the members are listed in this module's docstring)."""

    name: ClassVar[str]
    noun: ClassVar[str]
    data: Data
    models: Models
    recipe: Recipe
    export: Export
    scores: Scores
    bench: Bench

    MEMBERS: ClassVar[tuple[str, ...]] = (
        "name", "noun", "data", "build_inputs", "examples", "build_model", "build_losses",
        "build_metrics", "models", "recipe", "export", "scores", "bench",
    )  # fmt: skip

    @abc.abstractmethod
    def build_inputs(self, run_dir: RunDir, split: str, batch_size: int, **options: Any) -> Any:
        """(model inputs, int32 labels) batches of a split, as a tf.data.Dataset."""

    @abc.abstractmethod
    def examples(self, run_dir: RunDir, split: str, count: int, form: str = "raw") -> Any:
        """The first `count` examples of a split and their labels, "raw" or as the "model" takes."""

    @abc.abstractmethod
    def build_model(self, name: str, meta: Meta, **options: Any) -> Any:
        """A Keras model for this data (weights, width, dropout as options)."""

    def build_losses(
        self, *, label_smoothing: float = 0.0, soft: bool = False, num_classes: int | None = None
    ) -> Callable[[Any, Any], Any]:
        """The per-example loss of (targets, probabilities): sparse cross-entropy of class ids;
        with `soft` labels (mixed by augmentation) or label smoothing, the categorical
        cross-entropy of one-hot targets."""
        import keras
        import tensorflow as tf

        if not soft:
            return keras.losses.sparse_categorical_crossentropy

        def loss(targets: Any, probabilities: Any) -> Any:
            if targets.shape.rank == 1:
                targets = tf.one_hot(targets, num_classes, dtype=probabilities.dtype)
            return keras.losses.categorical_crossentropy(
                tf.cast(targets, probabilities.dtype),
                probabilities,
                label_smoothing=label_smoothing,
            )

        return loss

    def build_metrics(self) -> dict[str, Callable[[Any, Any], Any]]:
        """{"accuracy": 1.0 where the top class is the label, else 0.0}, per example."""
        import tensorflow as tf

        def accuracy(labels: Any, probabilities: Any) -> Any:
            predicted = tf.argmax(probabilities, axis=-1, output_type=tf.int32)
            return tf.cast(tf.equal(predicted, labels), tf.float32)

        return {"accuracy": accuracy}
