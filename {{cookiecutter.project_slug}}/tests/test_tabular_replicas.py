"""Tables on two replicas under mixed_float16 (issue 44): MirroredStrategy over two logical CPUs,
in a fresh process (logical devices must be set before TensorFlow starts). The class-weighted
loss summed over both replicas is the hand-computed one, and TabM trains one epoch with
class_weight=balanced: a float16 tensor meeting a float32 one anywhere fails the run."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from tables import make_table_run

SCRIPT = """
from types import SimpleNamespace
import keras, numpy as np, tensorflow as tf
from {{ cookiecutter.package_name }}.data.meta import read_meta
from {{ cookiecutter.package_name }}.find.probes import Trainer
from {{ cookiecutter.package_name }}.replica import make_train_steps
from {{ cookiecutter.package_name }}.tasks import current
from {{ cookiecutter.package_name }}.tasks.tabular import weights
from {{ cookiecutter.package_name }}.train import Params

keras.mixed_precision.set_global_policy("mixed_float16")
task = current()

# one step of a toy model (a float16 hidden layer, a float32 softmax) on 8 rows, 4 per replica
rng = np.random.default_rng(0)
rows = rng.standard_normal((8, 4)).astype("float32")
labels = np.array([0, 0, 0, 0, 0, 1, 0, 1], "int32")
# class 0 at 1.0, class 1 above it: the weighted sum exceeds the plain one by 2 × class 1's losses
# whatever the unseeded initialization gives (with 0.5 for class 0 the two sums met once)
class_weights = [1.0, 3.0]
with strategy.scope():
    toy = keras.Sequential([keras.Input((4,)), keras.layers.Dense(8, activation="relu"),
                            keras.layers.Dense(2, activation="softmax", dtype="float32")])
    optimizer = keras.optimizers.LossScaleOptimizer(keras.optimizers.SGD(0.0))
    optimizer.build(toy.trainable_variables)
probabilities = toy(rows, training=False).numpy()
picked = probabilities[np.arange(8), labels]
expected = float(np.sum(np.take(class_weights, labels) * -np.log(picked)))
data = tf.data.Dataset.from_tensor_slices((rows, labels)).batch(8).repeat()
toy_totals = {}
for name, given in (("weighted", class_weights), ("plain", None)):
    steps = make_train_steps(strategy, toy, optimizer, task=task, global_batch=8,
                             loss_scaling=True, jit=False, timed=False, class_weights=given)
    totals, _ = steps(iter(strategy.experimental_distribute_dataset(data)), tf.constant(1))
    toy_totals[name] = [float(v) for v in totals.numpy()]

# one epoch of TabM with class_weight=balanced from the fixture's counts
folder = Path(sys.argv[1])
meta = read_meta(folder)
balanced = weights.weighting(Params(class_weight="balanced"), meta)["weights"]
params = SimpleNamespace(model="tabm", width=32, dropout=0.1, seed=42)
trainer = Trainer(folder, meta, params, strategy, 32, loss_scaling=True, jit=False)
trainer.steps = make_train_steps(strategy, trainer.model, trainer.optimizer, task=task,
                                 global_batch=32, loss_scaling=True, jit=False, timed=False,
                                 class_weights=balanced)
count = meta["splits"]["train"]["count"] // 32
loss, _, seen = (float(value) for value in trainer.run(count))
print(json.dumps(dict(replicas=strategy.num_replicas_in_sync, expected=expected, toy=toy_totals,
                      balanced=balanced, loss=loss / seen, seen=seen, steps=count)))
"""


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_table_run(tmp_path_factory.mktemp("replicas"))


def test_class_weights_under_mixed_float16_on_two_replicas(
    run: Path, two_replicas: Callable[..., dict]
) -> None:
    result = two_replicas(SCRIPT, run)
    assert result["replicas"] == 2
    # the replicas' loss sums add up to the hand-computed weighted sum of the 8 rows
    weighted_sum, _, examples = result["toy"]["weighted"]
    assert examples == 8
    assert weighted_sum == pytest.approx(result["expected"], rel=1e-3)
    assert result["toy"]["plain"][0] != pytest.approx(weighted_sum, rel=1e-2)
    assert result["balanced"][0] != pytest.approx(result["balanced"][1])
    assert result["seen"] == result["steps"] * 32
    assert np.isfinite(result["loss"]) and 0 < result["loss"] < 100
