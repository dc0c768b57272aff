"""Text on two replicas: MirroredStrategy over two logical CPUs, in a fresh process (logical
devices must be set before TensorFlow starts). Each replica reads its own length bucket, so the
replicas' batches differ in length; the embedding's gradient rows must still meet in one
all-reduce (replica.dense), where an all-gather of rows aborted on the shapes."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from test_text_chain import banking77_slice

from {{ cookiecutter.package_name }}.prepare import entry
from {{ cookiecutter.package_name }}.tasks.text import data_step


@pytest.fixture(scope="module")
def text_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run folder holding data/ of the BANKING77 slice, texts cut to 32 tokens."""
    folder = tmp_path_factory.mktemp("text-replicas") / "run"
    source = banking77_slice(folder.parent / "slice.csv")
    entry.run(
        folder,
        data_step.Params(dataset="csv", data_dir=str(source), max_tokens=32, benchmark_seconds=1),
        verbose=False,
    )
    return folder


# Two replicas train 40 steps of 16 texts each (two and a half epochs of the slice) with the
# finders' Trainer: the training step function (replica.make_train_steps) fed by the training
# pipeline, without the train step's baseline and test scores, so the test takes seconds.
SCRIPT = """
from types import SimpleNamespace
from {{ cookiecutter.package_name }}.data.meta import read_meta
from {{ cookiecutter.package_name }}.find.probes import Trainer
import keras

policy = sys.argv[3] if len(sys.argv) > 3 else "float32"
keras.mixed_precision.set_global_policy(policy)
folder = Path(sys.argv[1])
params = SimpleNamespace(model=sys.argv[2], width=32, dropout=0.1, seed=42)
scaling = policy == "mixed_float16"
trainer = Trainer(folder, read_meta(folder), params, strategy, 32, loss_scaling=scaling, jit=False)
loss, _, count = (float(value) for value in trainer.run(40))
replicas = strategy.num_replicas_in_sync
dtypes = {layer.name: layer.compute_dtype for layer in trainer.model.layers}
print(json.dumps(dict(replicas=replicas, loss=loss / count, count=count, dtypes=dtypes)))
"""


@pytest.mark.parametrize(
    "model", ["bag_of_ngrams", pytest.param("transformer", marks=pytest.mark.slow)]
)
def test_two_replicas_whose_batches_differ_in_length_train(
    text_data: Path, model: str, two_replicas: Callable[..., dict]
) -> None:
    """40 steps of 2 replicas x 16 texts end, every text counted, the mean loss a number."""
    result = two_replicas(SCRIPT, text_data, model)
    assert result["replicas"] == 2 and result["count"] == 40 * 32
    assert 0 < result["loss"] < 100


def test_the_bag_with_its_hidden_layer_trains_in_float16_on_two_replicas(
    text_data: Path, two_replicas: Callable[..., dict]
) -> None:
    """bag_of_ngrams under mixed_float16 and Mirrored over two logical CPUs (issue 44): its
    hidden layer computes in float16, the softmax in float32, and no op meets a float16 tensor
    with a float32 one (TensorFlow refuses such an op, and the run fails)."""
    result = two_replicas(SCRIPT, text_data, "bag_of_ngrams", "mixed_float16")
    assert result["replicas"] == 2 and result["count"] == 40 * 32
    assert 0 < result["loss"] < 100
    assert result["dtypes"].get("hidden") == "float16"
    assert result["dtypes"]["logits"] == "float32"
