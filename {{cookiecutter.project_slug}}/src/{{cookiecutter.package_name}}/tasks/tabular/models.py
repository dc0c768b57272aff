"""The table models, from Keras 3 layers: Wide & Deep and DCN-v2 over the FeatureSpace's matrix.

Both take the one float32 matrix features.py packs (the numeric columns, then one index per
categorical column and cross; `layout` in meta.json). Every categorical index is offset into one
shared embedding table (one gather instead of one per column), 8 wide per column by default, so
the deep input is a multiple of 8 and a mixed-precision policy runs it on Tensor Cores; the
softmax is float32 whatever the policy.

- Wide & Deep (Cheng et al. 2016, built for Google Play recommendations): a linear model over
  every categorical and crossed value (one weight per value and class: the "wide" side that
  memorizes) added to an MLP over the numbers and the embeddings (the "deep" side that
  generalizes).
- DCN-v2 (Wang et al. 2021): cross layers x_{l+1} = x0 * (W x_l + b) + x_l learn bounded-degree
  feature interactions explicitly, beside the same MLP. No maintained Keras 3 package has the
  cross layer (TensorFlow Recommenders' tfrs.layers.dcn.Cross is Keras 2 only), so `Cross` is
  written here, in a dozen lines.
"""

from __future__ import annotations

from typing import Any

import keras
from keras import layers, ops

from .blocks import PACKAGE, Columns, ModelError, _check_eights, _mlp
from .tabm import build_tabm


@keras.saving.register_keras_serializable(package=PACKAGE)
class Cross(layers.Layer):
    """One DCN-v2 cross layer: x0 * (W x + b) + x, W full rank [d, d], always in float32: the
    product of two standardized values squares a heavy tail (z = 300 gives 90,000 after one
    layer), past float16's 65,504, so under mixed_float16 the crosses would be inf/NaN at once."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**{**kwargs, "dtype": "float32"})

    def build(self, input_shape: Any) -> None:
        width = int(input_shape[0][-1])
        self.dense = layers.Dense(width, dtype=self.dtype_policy, name="w")
        self.dense.build((None, width))

    def call(self, inputs: Any) -> Any:
        x0, x = inputs
        return x0 * self.dense(x) + x


def _inputs(slots: list[dict[str, Any]], embed: int) -> tuple[Any, Any, Any, list[int]]:
    """The input, its numbers, the embedded indices flattened [batch, columns * embed], sizes."""
    numeric = sum(1 for slot in slots if slot["kind"] == "numeric")
    sizes = [int(slot["size"]) for slot in slots if slot["kind"] != "numeric"]
    features = keras.Input((len(slots),), dtype="float32", name="features")
    numbers, ids = Columns(numeric, sizes, name="columns")(features)
    if not sizes:  # numbers only: nothing to embed
        return features, numbers, (None, None), sizes
    vectors = layers.Embedding(sum(sizes), embed, name="embeddings")(ids)
    flat = layers.Flatten(name="embedded")(vectors)
    return features, numbers, (ids, flat), sizes


def _joined(numbers: Any, flat: Any, name: str) -> Any:
    """[numbers, embeddings], or whichever of them the table has (categories only: no numbers,
    and a Dense over zero columns aborts oneDNN on the CPU)."""
    if flat is None:
        return numbers
    return flat if not numbers.shape[-1] else layers.Concatenate(name=name)([numbers, flat])


def build_wide_deep(
    slots: list[dict[str, Any]],
    num_classes: int,
    *,
    width: int = 256,
    dropout: float = 0.1,
    embed: int = 8,
) -> keras.Model:
    """Wide & Deep: a linear model over every categorical and crossed value plus an MLP over the
    numbers and the categorical embeddings; their logits summed, softmax in float32."""
    _check_eights(width=width, embed=embed)
    features, numbers, (ids, flat), sizes = _inputs(slots, embed)
    wide = []  # a linear model of the numbers (when there are any) ...
    if numbers.shape[-1]:
        wide.append(layers.Dense(num_classes, name="wide_numbers")(numbers))
    if sizes:  # ... and one weight per categorical and crossed value and class, summed
        weights = layers.Embedding(sum(sizes), num_classes, name="wide")(ids)
        wide.append(ops.sum(weights, axis=1))
    deep = _joined(numbers, flat, "deep_input")
    # The deep side's last Dense is the head (`logits`, as every builder names it): what the frozen
    # phase of a fine-tuning trains alone (train/finetune.py), and what a new task replaces.
    deep = layers.Dense(num_classes, name="logits")(_mlp(deep, width, dropout))
    logits = layers.Add(name="wide_plus_deep")([*wide, deep])
    probabilities = layers.Activation("softmax", dtype="float32", name="probabilities")(logits)
    return keras.Model(features, probabilities, name="wide_deep")


def build_dcn_v2(
    slots: list[dict[str, Any]],
    num_classes: int,
    *,
    width: int = 256,
    dropout: float = 0.1,
    embed: int = 8,
    crosses: int = 2,
) -> keras.Model:
    """DCN-v2, parallel form: `crosses` cross layers beside the MLP, both over [numbers,
    embeddings], their outputs joined under a softmax in float32."""
    _check_eights(width=width, embed=embed)
    features, numbers, (_, flat), _ = _inputs(slots, embed)
    x0 = _joined(numbers, flat, "x0")
    crossed = x0
    for index in range(crosses):
        crossed = Cross(name=f"cross_{index}")([x0, crossed])
    # The crosses stay float32 up to the logits (a float16 join would overflow where they do).
    joined = layers.Concatenate(name="joined", dtype="float32")([crossed, _mlp(x0, width, dropout)])
    logits = layers.Dense(num_classes, name="logits", dtype="float32")(joined)
    probabilities = layers.Activation("softmax", dtype="float32", name="probabilities")(logits)
    return keras.Model(features, probabilities, name="dcn_v2")


def build_model(
    name: str, slots: list[dict[str, Any]], num_classes: int, **knobs: Any
) -> keras.Model:
    """The named table model for this layout and number of classes."""
    if name not in BUILDERS:
        raise ModelError(f"model={name!r} is not a table model: use one of {sorted(BUILDERS)}.")
    return BUILDERS[name](slots, num_classes, **knobs)


BUILDERS = {"wide_deep": build_wide_deep, "dcn_v2": build_dcn_v2, "tabm": build_tabm}
