"""TabM-mini with periodic numeric embeddings (tasks/tabular/tabm.py): float32 where the phases
need it, members that differ, crosses left out, and one epoch under mixed_float16 on two
replicas (MirroredStrategy over two logical CPUs, in a fresh process)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import keras
import numpy as np
import pytest
import tensorflow as tf
from tables import make_table_run

from {{ cookiecutter.package_name }}.tasks.tabular import dataset, tabm, task


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return make_table_run(tmp_path_factory.mktemp("tabm"))


def test_periodic_phases_are_float32_under_mixed_float16():
    # z = 13 (census income's capital gain) at frequency 3: a phase near 245, where float16
    # steps by 0.125; computed in float16 the cosines would be off by about 0.1.
    keras.mixed_precision.set_global_policy("mixed_float16")
    try:
        layer = tabm.Periodic(freqs=8, embed=8, sigma=3.0)
        out = layer(np.array([[13.0], [-7.3]], np.float32))
    finally:
        keras.mixed_precision.set_global_policy("float32")
    assert keras.backend.standardize_dtype(out.dtype) == "float32"
    f, kernel, bias = (np.asarray(w, np.float64) for w in layer.get_weights())
    phase = 2 * np.pi * np.array([[13.0], [-7.3]])[:, :, None] * f
    waves = np.concatenate([np.cos(phase), np.sin(phase)], -1)
    expected = np.maximum(np.einsum("bnf,nfd->bnd", waves, kernel) + bias, 0).reshape(2, -1)
    np.testing.assert_allclose(np.asarray(out), expected, atol=2e-3)


def test_periodic_rows_do_not_depend_on_the_batch_they_come_in():
    # The export's parity compares eager and graph runs of other batch sizes: at phases near 250
    # their cos/sin differed by 2e-5 (past float32's 1e-5 tolerance) until whole turns were taken
    # off before them.
    keras.utils.set_random_seed(0)
    layer = tabm.Periodic(freqs=16, embed=16, sigma=3.0)
    rows = np.random.default_rng(0).normal(0, 5, (16281, 6)).astype(np.float32)
    whole = np.asarray(layer(rows))
    graph = tf.function(layer)  # as predict and the SavedModel run it, in batches of 4,096
    parts = np.concatenate([graph(rows[i : i + 4096]).numpy() for i in range(0, len(rows), 4096)])
    assert np.abs(whole - parts).max() <= 1e-6


def test_members_start_different_so_the_ensemble_is_not_one_model(run):
    model = task.build_model("tabm", dataset.read_tabular_meta(run))
    r = np.asarray(model.get_layer("members").r)
    assert r.shape[0] == 16 and len({tuple(row) for row in r}) == 16
    assert set(np.unique(r)) == {-1.0, 1.0}


def test_crosses_are_left_out_of_the_embeddings_by_default(run):
    meta = dataset.read_tabular_meta(run)
    indexed = [slot for slot in meta["layout"] if slot["kind"] != "numeric"]
    crosses = sum(slot["kind"] == "cross" for slot in indexed)
    assert crosses, "the fixture's layout has a cross"
    model = task.build_model("tabm", meta)
    embedded = model.get_layer("embedded").output.shape[-1]
    assert embedded == 8 * (len(indexed) - crosses)


def test_tabm_imports_first_without_a_cycle():
    import subprocess as sp

    code = "import {{ cookiecutter.package_name }}.tasks.tabular.tabm as t; print(t.build_tabm.__name__)"
    done = sp.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.stdout.strip() == "build_tabm", done.stderr[-300:]


def test_tabm_is_the_default_table_model():
    assert task.DEFAULT_MODEL == "tabm" and "tabm" in task.MODELS


# One epoch of the fixture's training split on 2 replicas under mixed_float16 with loss scaling,
# through the training step function (replica.make_train_steps) the train step runs: a float16
# tensor meeting a float32 one anywhere in the model or its gradients raises there.
SCRIPT = """
from types import SimpleNamespace
import keras
from {{ cookiecutter.package_name }}.data.meta import read_meta
from {{ cookiecutter.package_name }}.find.probes import Trainer

keras.mixed_precision.set_global_policy(sys.argv[3])
folder = Path(sys.argv[1])
meta = read_meta(folder)
params = SimpleNamespace(model=sys.argv[2], width=32, dropout=0.1, seed=42)
loss_scaling = sys.argv[3] == "mixed_float16"
trainer = Trainer(folder, meta, params, strategy, 32, loss_scaling=loss_scaling, jit=False)
steps = meta["splits"]["train"]["count"] // 32
loss, _, count = (float(value) for value in trainer.run(steps))
print(json.dumps(dict(replicas=strategy.num_replicas_in_sync, loss=loss / count, count=count,
                      steps=steps, policy=trainer.model.dtype_policy.name,
                      out=keras.backend.standardize_dtype(trainer.model.outputs[0].dtype))))
"""


@pytest.mark.parametrize("policy", ["mixed_float16"])
def test_one_epoch_under_mixed_float16_on_two_replicas(
    run: Path, policy: str, two_replicas: Callable[..., dict]
) -> None:
    result = two_replicas(SCRIPT, run, "tabm", policy)
    assert result["replicas"] == 2 and result["policy"] == policy
    assert result["out"] == "float32"  # the members' mean: float32 probabilities under any policy
    assert result["count"] == result["steps"] * 32
    assert np.isfinite(result["loss"]) and 0 < result["loss"] < 100


def test_the_export_on_raw_rows_gives_what_tabm_gives_on_their_encoding(run, tmp_path):
    from {{ cookiecutter.package_name }}.tasks.outputs import feed

    keras.utils.set_random_seed(0)
    meta = dataset.read_tabular_meta(run)
    model = task.build_model("tabm", meta)
    task.build_archive(model, meta, run).write_out(str(tmp_path / "export"), verbose=False)
    signature = tf.saved_model.load(str(tmp_path / "export")).signatures["serving_default"]
    rows, _ = dataset.raw_examples(run, "test", 200)
    inputs, _ = dataset.model_examples(run, "test", 200)
    served = signature(**feed(signature, rows))["probabilities"].numpy()
    np.testing.assert_allclose(served, model.predict(inputs, batch_size=64, verbose=0), atol=1e-5)
