"""KerasHub encoders as text models: a preset's backbone under a float32 softmax, its tokenizer.

`model=` takes a KerasHub preset name (downloaded from Kaggle on first use) or a local preset
folder, what `save_to_preset` writes: the way an offline machine gets one. The model takes token
ids [batch, length] (0 pads) like the task's own models, so training, the finders, ONNX and the
`token_ids` signature are unchanged; the preset's tokenizer runs in tf.data (hub_data.py) and
inside the export's `serving_default` (hub_export.py).

`make_local_preset` builds a tiny BERT from a config with a WordPiece vocabulary computed on the
given texts and saves it as a preset: its weights are RANDOM, not pretrained, so what it scores is
what a small Transformer trained from scratch scores, not a pretrained encoder's accuracy.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from functools import cache
from typing import Any

import keras

from .hub_names import RANDOM_MARK, check_folder, kind, random_weights
from .models import ModelError

NAME = "hub_encoder"  # the Keras model's name: how export and check_trained know one
PAD_ID = 0  # the pipeline and the padding mask pad with 0
RESERVED = ["[PAD]", "[CLS]", "[SEP]", "[UNK]", "[MASK]"]
DEFAULT_DROPOUT = 0.1


def build_model(preset: str, num_classes: int, *, dropout: float | None = None) -> keras.Model:
    """The preset's backbone (its weights, the global dtype policy), the first token's vector
    (BERT's pooled output where it has one), dropout and a float32 softmax of `num_classes`."""
    import keras_hub

    tokenizer(preset)  # refuses a pad id the pipeline does not use, before the backbone loads
    if random_weights(preset):
        print(
            f"model={preset} was built from a config (make_local_preset): its weights are "
            "random, not pretrained, so its accuracy is not a pretrained encoder's.",
            flush=True,
        )
    policy = keras.mixed_precision.global_policy().name
    backbone = keras_hub.models.Backbone.from_preset(_source(preset), dtype=policy)
    ids = keras.Input((None,), dtype="int64", name="token_ids")
    inputs = {"token_ids": ids, "padding_mask": keras.ops.not_equal(ids, PAD_ID)}
    if "segment_ids" in {tensor.name for tensor in backbone.inputs}:
        inputs["segment_ids"] = keras.ops.zeros_like(ids)
    outputs = backbone({name: inputs[name] for name in _input_names(backbone)})
    if isinstance(outputs, dict) and "pooled_output" in outputs:
        pooled = outputs["pooled_output"]
    else:
        sequence = outputs["sequence_output"] if isinstance(outputs, dict) else outputs
        pooled = sequence[:, 0, :]
    rate = DEFAULT_DROPOUT if dropout is None else dropout
    pooled = keras.layers.Dropout(rate, name="head_dropout")(pooled)
    head = keras.layers.Dense(num_classes, activation="softmax", dtype="float32", name="logits")
    return keras.Model(ids, head(pooled), name=NAME)


def check_model(model: str, *, width: Any = None) -> None:
    """A preset folder must hold the preset's files; a width is the preset's, not a knob."""
    try:
        if kind(model) == "folder":
            check_folder(model)
    except Exception as error:
        raise ModelError(str(error)) from None
    if width is not None:
        raise ModelError(
            f"width={width!r} is not allowed for a KerasHub preset: its widths are the preset's; "
            "leave width unset."
        )


def is_encoder(model: keras.Model) -> bool:
    """True for a model build_model made (export and the checks tell it by its name)."""
    return model.name == NAME


@cache
def tokenizer(preset: str) -> Any:
    """The preset's tokenizer (a Keras layer running tensorflow-text ops), loaded once, eagerly
    (a tf.data map or tf.function may ask first)."""
    import keras_hub
    import tensorflow as tf

    with tf.init_scope():  # its tables outside any graph being traced: every graph may use them
        loaded = keras_hub.models.Tokenizer.from_preset(_source(preset))
    pad = getattr(loaded, "pad_token_id", PAD_ID)
    if pad != PAD_ID:
        raise ModelError(
            f"model={preset!r} pads with token id {pad}, and the text pipeline pads with "
            f"{PAD_ID}: use a BERT-family preset (BERT, DistilBERT, DeBERTa-v3, ALBERT, ELECTRA)."
        )
    return loaded


def special_ids(preset: str) -> tuple[int | None, int | None, int | None]:
    """(start, end, unknown) token ids of the preset's tokenizer ([CLS], [SEP], [UNK] for BERT)."""
    layer = tokenizer(preset)
    start = getattr(layer, "start_token_id", None)
    end = getattr(layer, "end_token_id", None)
    unknown = getattr(layer, "unk_token_id", None)
    if unknown is None:
        try:
            unknown = layer.token_to_id("[UNK]")
        except Exception:  # a vocabulary without [UNK]: no share of unknown tokens to report
            unknown = None
    return start, end, unknown


def max_length(preset: str) -> int:
    """The longest sequence the backbone has position embeddings for (BERT: 512)."""
    import json
    from pathlib import Path

    if kind(preset) == "folder":
        config = json.loads((Path(preset).expanduser() / "config.json").read_text("utf-8"))
        return int(config["config"].get("max_sequence_length", 512))
    import keras_hub

    backbone = keras_hub.models.Backbone.from_preset(preset, load_weights=False)
    return int(getattr(backbone, "max_sequence_length", 512))


def make_local_preset(
    folder: str | os.PathLike[str],
    texts: Sequence[str],
    *,
    vocabulary_size: int = 2048,
    layers: int = 2,
    hidden: int = 64,
    heads: int = 2,
    max_length: int = 128,
) -> str:
    """A tiny BERT built from a config, its WordPiece vocabulary computed on `texts`, written
    with save_to_preset: a preset folder `model=` takes offline. Its weights are random."""
    import keras_hub
    import tensorflow as tf

    data = tf.data.Dataset.from_tensor_slices(list(texts)).batch(1024)
    vocabulary = keras_hub.tokenizers.compute_word_piece_vocabulary(
        data, vocabulary_size, lowercase=True, reserved_tokens=RESERVED
    )
    vocabulary += [f"[unused{i}]" for i in range(-len(vocabulary) % 8)]  # Tensor Cores: x 8
    words = keras_hub.models.BertTokenizer(vocabulary=vocabulary, lowercase=True)
    backbone = keras_hub.models.BertBackbone(
        vocabulary_size=len(vocabulary),
        num_layers=layers,
        num_heads=heads,
        hidden_dim=hidden,
        intermediate_dim=2 * hidden,
        max_sequence_length=max_length,
        dtype="float32",
    )
    os.makedirs(folder, exist_ok=True)
    backbone.save_to_preset(os.fspath(folder))
    words.save_to_preset(os.fspath(folder))
    with open(os.path.join(folder, RANDOM_MARK), "w", encoding="utf-8") as mark:
        mark.write("Built from a config by make_local_preset: random weights, not pretrained.\n")
    return os.fspath(folder)


def _source(preset: str) -> str:
    """What from_preset takes: a folder's absolute path, or the name itself."""
    return os.path.abspath(os.path.expanduser(preset)) if kind(preset) == "folder" else preset


def _input_names(backbone: Any) -> list[str]:
    """The backbone's input names (token_ids, padding_mask, segment_ids for BERT)."""
    names = backbone.input if isinstance(backbone.input, dict) else {}
    return list(names) or [tensor.name for tensor in backbone.inputs]


def banking77_texts() -> list[str]:
    """The vendored BANKING77's training texts: what make_local_preset's vocabulary is fit on
    by default (its test split is left out)."""
    from .sources import _banking77

    return list(_banking77()[1])


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m <package>.tasks.text.hub FOLDER`: a tiny random-weights BERT preset of
    BANKING77's training vocabulary in FOLDER, for `model=FOLDER` offline."""
    import argparse

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("folder", help="where save_to_preset writes the preset")
    parser.add_argument("--hidden", type=int, default=64, help="hidden width (64)")
    parser.add_argument("--layers", type=int, default=2, help="Transformer layers (2)")
    args = parser.parse_args(argv)
    folder = make_local_preset(
        args.folder, banking77_texts(), hidden=args.hidden, layers=args.layers
    )
    print(f"A KerasHub preset with RANDOM weights (not pretrained) is in {folder}: model={folder}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
