"""The text task behind the seam: BANKING77 by default, a CSV, a folder of .txt files or TFRecords.

The shards hold raw UTF-8 text; the data step fits the vocabulary on the training split, the
pipeline tokenizes in tf.data and batches by length, the models take token ids, and the export puts
the tokenizer in front of the model so a client sends strings. This module is what the steps ask of
the task, grouped at the end into the seam's Task (tasks/base.py); each module below does one job.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import keras
import numpy as np
import tensorflow as tf

from ...artifacts import DATA_DIR, StepError
from ...seam import NOUNS
from ..base import Bench, Export, Models, Recipe, Scores, Task, examples_of
from . import data_step, export, hub, hub_data, hub_export, hub_names, models
from .dataset import longest_batches, make_dataset, model_examples, raw_examples, read_text_meta
from .dataset import vocabulary as run_vocabulary

__all__ = ["longest_batches", "make_dataset", "model_examples", "raw_examples"]
hub_export.load_ops()  # a preset tokenizer's ops, for tf.saved_model.load of its export

NAME = "text_classification"
NOUN = NOUNS["text"]
RAW_INPUT = export.TEXT_INPUT  # serving_default takes a batch of strings
MODEL_INPUT = export.IDS_INPUT
# serving_default takes strings and tokenizes them in the graph: a converter of that signature
# meets string ops; converted models take MODEL_SIGNATURE's ids, one profile per length_ranges.
RAW_STRINGS = True
MODEL_SIGNATURE = export.IDS_SIGNATURE  # the token ids the model and the compiled backends take
INT8 = "dynamic"  # a Transformer's MatMuls: ranges per batch suit them better than calibration
MODELS = tuple(models.BUILDERS)
DEFAULT_MODEL = "bag_of_ngrams"
MODEL_HELP = (
    "bag_of_ngrams (fastText-like, seconds a epoch), transformer (2 encoder blocks), a KerasHub "
    "preset name (bert_tiny_en_uncased) or a local preset folder (save_to_preset's)"
)
# The builders' knobs, as training takes them: the default and the width's range.
KNOBS = {
    "bag_of_ngrams": {"width": 128, "dropout": 0.3, "width_range": (32, 256)},
    "transformer": {"width": 128, "dropout": 0.1, "width_range": (64, 256)},
}
# What an earlier run's weights must share with this run's data (train/finetune.check_source).
SAME_INPUTS = ("vocabulary_sha256",)
# An encoder's fine-tuning clips each step's gradients to this global norm (BERT's recipe).
ENCODER_CLIPNORM = 1.0


def build_model(
    name: str,
    meta: dict[str, Any],
    *,
    weights: str | None = None,
    width: int | None = None,
    dropout: float | None = None,
) -> keras.Model:
    """The named text model for this data's vocabulary, classes and max_tokens."""
    check_model(name, meta, weights=weights, width=width, dropout=dropout)
    if hub_names.is_hub(name):
        hub_data.activate(name)  # its tokenizer feeds this process's batches
        return hub.build_model(name, int(meta["num_classes"]), dropout=dropout)
    hub_data.activate(None)
    knobs = {key: value for key, value in (("width", width), ("dropout", dropout)) if value}
    if dropout == 0:
        knobs["dropout"] = 0.0
    return models.build_model(
        name, int(meta["vocab_size"]), int(meta["num_classes"]), int(meta["max_tokens"]), **knobs
    )


def set_optimizer(optimizer: Any, params: Any) -> None:
    """A KerasHub encoder's gradients are clipped to ENCODER_CLIPNORM (in the optimizer's apply,
    after a loss scale is taken off); the task's own models train unclipped, as before."""
    if hub_names.is_hub(params.model):
        optimizer.global_clipnorm = ENCODER_CLIPNORM


def recipe_words(params: Any) -> tuple[str, ...]:
    """The clipping in train's recipe sentence, where there is one."""
    if hub_names.is_hub(params.model):
        return (f"gradients clipped to a global norm of {ENCODER_CLIPNORM:g}",)
    return ()


def parity_examples(meta: dict[str, Any], split: str, default: int) -> int:
    """Every text of the split: a few thousand short rows of ids cost seconds, and "the same top
    class for every test example" is then a measured claim, not a sample's."""
    return max(default, int(meta["splits"][split]["count"]))


def length_ranges(meta: dict[str, Any]) -> tuple[tuple[int, int], ...]:
    """(fewest, most) tokens of each length bucket the pipeline pads to, shortest first: the
    ranges an engine gets a profile for (optimize/lengths.py)."""
    from .pipeline import bucket_boundaries

    most = [boundary - 1 for boundary in bucket_boundaries(int(meta["max_tokens"]))]
    return tuple(zip([1, *(n + 1 for n in most[:-1])], most, strict=True))


def longest(meta: dict[str, Any]) -> int:
    """The longest input the model meets: max_tokens (its length is open, batches differ)."""
    return int(hub_data.active_length(meta)["max_tokens"])


def padded_longest(data: tf.data.Dataset, meta: dict[str, Any]) -> tf.data.Dataset:
    """longest_batches, at a preset's sequence length when this process trains one."""
    return longest_batches(data, hub_data.active_length(meta))


def model_inputs(run_dir: str | os.PathLike[str], split: str, count: int) -> Any:
    """model_examples, tokenized by the preset when the run folder's model is an encoder."""
    meta = hub_data.meta_for(run_dir, read_text_meta(run_dir))
    if hub_data.KEY not in meta:
        return model_examples(run_dir, split, count)
    texts, labels = raw_examples(run_dir, split, count)
    return hub_data.model_ids(meta, texts), labels


def check_model(
    name: str,
    meta: dict[str, Any],
    *,
    weights: str | None = None,
    width: int | None = None,
    dropout: float | None = None,
) -> None:
    """Refuse a model name, knob or weights this task has no use for, in one sentence."""
    if hub_names.is_hub(name):
        try:
            hub_names.check({"model": name})
        except StepError as error:
            raise models.ModelError(str(error)) from None
        hub.check_model(name, width=width)
    elif name not in MODELS:
        raise models.ModelError(f"model={name!r} is not allowed: use {MODEL_HELP}.")
    if weights is not None:
        raise models.ModelError(
            f"weights={weights!r} is not allowed for text: there are no pretrained ImageNet "
            "weights for a text model; start from your own .keras file with weights=PATH."
        )
    check_knobs(name, width=width, dropout=dropout)


def check_knobs(name: str, *, width: Any = None, dropout: Any = None) -> None:
    """A width (a multiple of 8; the Transformer's divides by its 4 heads) and a dropout rate."""
    if width is not None and (
        isinstance(width, bool) or not isinstance(width, int) or width < 8 or width % 8
    ):
        raise models.ModelError(
            f"width={width!r} is not allowed for {name}: use a multiple of 8 (Tensor Cores "
            f"under mixed precision), e.g. {KNOBS.get(name, {}).get('width', 128)}."
        )
    if dropout is not None and (
        isinstance(dropout, bool) or not isinstance(dropout, int | float) or not 0 <= dropout < 1
    ):
        raise models.ModelError(f"dropout={dropout!r} is not allowed: use 0 to below 1.")


def rebuilt(model: keras.Model, classes: int) -> keras.Model:
    """A .weights.h5 saved with another number of classes: rebuilt with the same builder and
    widths, and a head of `classes` outputs."""
    words = model.get_layer("words")
    name = model.name if model.name in MODELS else DEFAULT_MODEL
    meta = {"vocab_size": words.input_dim, "num_classes": classes, "max_tokens": 4096}
    if name == "transformer":
        meta["max_tokens"] = int(model.get_layer("positions").max_tokens)
    return build_model(name, meta, width=int(words.output_dim))


def model_state(meta: dict[str, Any]) -> dict[str, Any]:
    """What a checkpoint depends on beyond the training values: token length and vocabulary."""
    return {"max_tokens": int(meta["max_tokens"]), "vocab_size": int(meta["vocab_size"])}


def model_spec(model: keras.Model) -> tf.TensorSpec:
    """The trained model's input: int64 token ids [batch, length], any batch and length."""
    return export.ids_spec()


def check_trained(model: keras.Model, meta: dict[str, Any], model_path: Any) -> None:
    """model.keras must take token ids and give one probability per class of this data."""
    dtype = keras.backend.standardize_dtype(model.inputs[0].dtype)
    if not dtype.startswith("int") or len(model.inputs[0].shape) != 2:
        raise StepError(
            f"{model_path} takes {dtype} inputs of shape {tuple(model.inputs[0].shape)}, not "
            "token ids [batch, length]: re-run 03_train on this run folder's data."
        )
    if model.outputs[0].shape[-1] != len(meta["classes"]):
        raise StepError(
            f"{model_path} gives {model.outputs[0].shape[-1]} outputs per text, but the data has "
            f"{len(meta['classes'])} classes: re-run 03_train on this run folder's data."
        )


def build_archive(
    model: keras.Model, meta: dict[str, Any], run_dir: str | os.PathLike[str]
) -> keras.export.ExportArchive:
    """serving_default (strings, tokenized inside with the data step's vocabulary as an asset)
    and token_ids (the ids themselves, for ONNX Runtime and the compiled backends)."""
    if hub.is_encoder(model):
        tokens = hub_data.meta_for(run_dir, meta)
        if hub_data.KEY not in tokens:
            raise StepError(
                f"{Path(run_dir) / hub_data.MARKER} does not say which preset tokenizes for "
                "this encoder: re-run 03_train on this run folder's data."
            )
        classes = list(meta["classes"])
        return hub_export.build_archive(model, tokens[hub_data.KEY], classes, tokens["max_tokens"])
    vocabulary = Path(run_dir) / DATA_DIR / meta["vocabulary"]
    return export.build_text_archive(
        model, vocabulary, list(meta["classes"]), int(meta["max_tokens"])
    )


def client_encoder(run_dir: str | os.PathLike[str]) -> Any:
    """raw texts -> the token ids MODEL_SIGNATURE takes, as a converted model's client runs it."""
    meta = hub_data.meta_for(run_dir, read_text_meta(run_dir))
    if hub_data.KEY in meta:
        return hub_data.client_encoder(meta)
    return export.client_encoder(run_vocabulary(run_dir, meta), int(meta["max_tokens"]))


def baseline(run_dir: str | os.PathLike[str]) -> dict[str, Any] | None:
    """TF-IDF (word 1-2-grams, char 2-5-grams) and a linear SVM, fit on the training split and
    scored on the test split: the bar the network has to clear."""
    from ...data.meta import read_meta
    from .baseline import NAME as BASELINE
    from .baseline import run_baseline

    meta = read_meta(run_dir)
    if "test" not in meta["splits"]:
        return None
    train_texts, train_labels = raw_examples(run_dir, "train", meta["splits"]["train"]["count"])
    test_texts, test_labels = raw_examples(run_dir, "test", meta["splits"]["test"]["count"])
    result = run_baseline(
        train_texts, train_labels, test_texts, test_labels, num_classes=int(meta["num_classes"])
    )
    return {"name": BASELINE, **{key: value for key, value in result.items() if key != "baseline"}}


def test_extras(
    run_dir: str | os.PathLike[str],
    split: str,
    labels: np.ndarray,
    probabilities: np.ndarray,
    classes: list[str],
    **_: Any,
) -> dict[str, Any]:
    """With 77 classes a confusion matrix is unreadable: the ten most confused pairs and the
    mistakes the model was surest of, as text (the split is read in the order it was scored)."""
    from .scores import confident_mistakes, confused_pairs

    texts, _ = raw_examples(run_dir, split, len(labels))
    predictions = probabilities.argmax(axis=1)
    return {
        "test_confused_pairs": confused_pairs(labels, predictions, classes),
        "test_confident_mistakes": confident_mistakes(labels, probabilities, classes, texts),
    }


def rest_payload(raw: Any) -> dict[str, Any]:
    """TF Serving's REST body: the strings as they are (row form, "instances")."""
    texts = np.asarray(raw)
    if texts.ndim != 1 or texts.dtype.kind not in "UO":
        raise StepError(
            f"texts of dtype {texts.dtype} and shape {texts.shape} are not allowed: send a list "
            "of strings, the model tokenizes them itself."
        )
    return export.rest_payload(export.check_texts(texts))


def plot_mistakes(raw: np.ndarray, metrics: dict[str, Any], classes: list[str], path: Any) -> Any:
    """figures/export_misclassified.png: the texts the export got most confidently wrong."""
    from .mistakes import plot_text_mistakes

    return plot_text_mistakes(raw, metrics, classes, path)


# What a load test of TF Serving sends, and what gpu-bench trains on: in the seam's names.
BENCH_VOCAB = 8192  # the default profile's vocabulary: the embedding gpu-bench's models carry


def serving_examples(
    run_dir: str | os.PathLike[str], meta: dict[str, Any], count: int, seed: int = 0
) -> np.ndarray:
    """What a load test of TF Serving sends: `count` real texts of the validation split (in
    shard order, repeated when it holds fewer), so the server tokenizes what users write."""
    splits = list(meta.get("splits") or ["validation"])
    split = "validation" if "validation" in splits else splits[0]
    texts, _ = raw_examples(run_dir, split, count)
    if not len(texts):
        raise StepError(
            f"the {split} split of {run_dir} holds no texts to send: run 01_data again."
        )
    return np.resize(texts, count)


def bench_model(quick: bool) -> dict[str, Any]:
    """gpu-bench's reference: the Transformer encoder on 128-token texts and BANKING77's 77
    classes; --quick: the bag of n-grams on 32 tokens, seconds on any machine."""
    if quick:
        shown = "bag_of_ngrams on 32 tokens"
        return {"model": "bag_of_ngrams", "size": 32, "num_classes": 10, "shown": shown}
    shown = "transformer on 128 tokens"
    return {"model": "transformer", "size": 128, "num_classes": 77, "shown": shown}


def synthetic_meta(size: int, num_classes: int) -> dict[str, Any]:
    """The meta of synthetic texts of `size` tokens over BENCH_VOCAB ids, for build_model."""
    return {"max_tokens": size, "vocab_size": BENCH_VOCAB, "num_classes": num_classes}


def synthetic_batch(
    meta: dict[str, Any], count: int, seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """`count` texts of random int64 token ids, every one max_tokens long (no padding: the most
    work a batch can be), and int64 labels of the meta's classes."""
    rng = np.random.default_rng(seed)
    shape = (count, int(meta["max_tokens"]))
    ids = rng.integers(2, int(meta["vocab_size"]), shape, dtype=np.int64)  # 0 pads, 1 is unknown
    return ids, rng.integers(0, int(meta["num_classes"]), count).astype(np.int64)


class TextTask(Task):
    """The text task as every step sees it (tasks/base.py): this module's answers, grouped."""

    name = NAME
    noun = NOUN
    data = data_step.DATA

    def __init__(self) -> None:
        self.models = Models(
            names=MODELS,
            default=DEFAULT_MODEL,
            help=MODEL_HELP,
            knobs=KNOBS,
            check=check_model,
            check_knobs=check_knobs,
            check_trained=check_trained,
            rebuilt=rebuilt,
            state=model_state,
            longest=longest,
            longest_batches=padded_longest,
            takes=hub_names.is_hub,
            space=hub_names.search_space,  # a pretrained encoder's learning rate
        )
        self.recipe = Recipe(
            optimizer=set_optimizer,
            words=recipe_words,
            summary=hub_names.recipe_summary,
            learning_rate=hub_names.learning_rate,
            same_inputs=SAME_INPUTS,
        )
        self.export = Export(
            raw_input=RAW_INPUT,
            model_input=MODEL_INPUT,
            model_signature=MODEL_SIGNATURE,
            build_archive=build_archive,
            model_spec=model_spec,
            rest_payload=rest_payload,
            parity_examples=parity_examples,
            plot_mistakes=plot_mistakes,
            int8=INT8,
            raw_strings=RAW_STRINGS,
            length_ranges=length_ranges,
            client_encoder=client_encoder,
        )
        self.scores = Scores(baseline=baseline, extras=test_extras)
        self.bench = Bench(
            model=bench_model,
            synthetic_meta=synthetic_meta,
            synthetic_batch=synthetic_batch,
            serving_examples=serving_examples,
        )

    def build_inputs(
        self, run_dir: str | os.PathLike[str], split: str, batch_size: int, **options: Any
    ) -> tf.data.Dataset:
        """(int32 token ids [B, T], int32 labels [B]) batches, bucketed by length."""
        return make_dataset(run_dir, split, batch_size, **options)

    def examples(
        self, run_dir: str | os.PathLike[str], split: str, count: int, form: str = "raw"
    ) -> tuple[Any, np.ndarray]:
        """The first texts of a split: raw strings, or the token ids the model takes."""
        return examples_of(form, raw_examples, model_inputs)(run_dir, split, count)

    def build_model(self, name: str, meta: dict[str, Any], **options: Any) -> keras.Model:
        return build_model(name, meta, **options)


TASK = TextTask()
