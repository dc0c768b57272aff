"""KerasHub encoders as text models (issue 44 §1), offline: a tiny BERT built from a config with a
WordPiece vocabulary of the slice's texts, saved with save_to_preset into a temporary folder, and
`model=<that folder>` through the real steps. Its weights are random (no pretrained encoder can be
downloaded here): these tests check the plumbing, not a pretrained encoder's accuracy."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from test_text_chain import banking77_slice

from {{ cookiecutter.package_name }}.prepare import entry
from {{ cookiecutter.package_name }}.tasks.text import data_step, hub_names

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "{{ cookiecutter.package_name }}"


def test_a_preset_name_offline_is_refused_before_tensorflow_loads(tmp_path: Path) -> None:
    """`train -p model=bert_tiny_en_uncased` where Kaggle cannot be reached (the network check
    stubbed to fail): exit 2 and one sentence naming the preset, the failed check and the way
    out, with TensorFlow never imported (from_preset would fail minutes later otherwise)."""
    code = (
        "import sys\n"
        f"from {PACKAGE}.tasks.text import hub_names\n"
        "hub_names.unreachable = lambda *a, **k: 'stubbed: the DNS lookup failed'\n"
        f"from {PACKAGE}.cli import main\n"
        f"status = main(['train', '--run-dir', {str(tmp_path / 'run')!r}, "
        "'-p', 'model=bert_tiny_en_uncased'])\n"
        "assert status == 2, status\n"
        "assert 'tensorflow' not in sys.modules, 'TensorFlow was imported'\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT
    )
    assert done.returncode == 0, done.stdout + done.stderr
    expected = (
        "model='bert_tiny_en_uncased' is a KerasHub preset name, which is downloaded from Kaggle "
        "on first use, and this machine cannot reach it (stubbed: the DNS lookup failed): pass "
        "a local preset folder made with save_to_preset"
    )
    assert expected in done.stderr, done.stderr
    assert done.stderr.count("\n") == 1, done.stderr  # one sentence, no traceback


def test_model_names_and_folders_are_told_apart(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Preset names and folders are encoders; the task's own names and typos are not; a folder
    without save_to_preset's files is refused naming what it lacks; a reachable Kaggle passes."""
    assert hub_names.kind("bert_tiny_en_uncased") == "name"
    assert hub_names.kind(str(tmp_path)) == "folder"
    assert hub_names.kind("transformer") is None and hub_names.kind("bag_of_ngram") is None
    with pytest.raises(Exception, match="lacks config.json, tokenizer.json"):
        hub_names.check({"model": str(tmp_path)})
    monkeypatch.setattr(hub_names, "unreachable", lambda *a, **k: None)
    hub_names.check({"model": "bert_tiny_en_uncased"})  # online: left to from_preset


@pytest.mark.parametrize(
    ("marked", "given", "rate", "source"),
    [
        (True, None, 1e-3, "task recipe"),
        (True, "auto", 1e-3, "task recipe"),
        (False, None, 3e-5, "task recipe"),
        (False, "auto", 3e-5, "task recipe"),
        (True, 0.01, 0.01, "given"),
    ],
)
def test_an_encoder_learns_at_its_recipe_rate_not_the_range_tests(
    tmp_path: Path, marked: bool, given: object, rate: float, source: str
) -> None:
    """A preset with random weights (make_local_preset's mark) trains from scratch at 1e-3, a
    pretrained one fine-tunes at 3e-5, where learning_rate is not given or auto (the range test
    picked 2.3e-06 for random weights: 03 stayed at chance); a given number wins. train.json's
    accuracy_caveat, and with it the headline, says when the weights are random."""
    from {{ cookiecutter.package_name }} import train
    from {{ cookiecutter.package_name }}.runner import summary

    preset = tmp_path / "preset"
    preset.mkdir()
    for name in (*hub_names.PRESET_FILES, *([hub_names.RANDOM_MARK] if marked else [])):
        (preset / name).write_text("{}")
    (tmp_path / "run").mkdir()
    params = train.Params(model=str(preset), learning_rate=given)
    resolved, sources = train.resolve_params(tmp_path / "run", params)
    assert (resolved.params.learning_rate, sources["learning_rate"]) == (rate, source)
    why = hub_names.learning_rate(resolved.params)[1]
    assert why.startswith(f"learning_rate {rate:.0e}: " if source != "given" else "learning_rate")
    caveat = hub_names.recipe_summary(resolved.params).get("accuracy_caveat")
    assert caveat == (hub_names.CAVEAT if marked else None)
    metrics = {"val_accuracy": 0.5, "epochs_completed": 1, "strategy": "one_device"}
    metrics |= {"replicas": 1, "precision": "float32", "global_batch_size": 64}
    line = summary._train({**metrics, **hub_names.recipe_summary(resolved.params)})
    assert ("random weights: not a pretrained encoder's accuracy" in line) == marked, line


@pytest.fixture(scope="module")
def encoder_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(a run folder with data/ of the BANKING77 slice, a tiny random-weights preset folder)."""
    from {{ cookiecutter.package_name }}.tasks.text.dataset import raw_examples
    from {{ cookiecutter.package_name }}.tasks.text.hub import make_local_preset

    base = tmp_path_factory.mktemp("text-hub")
    folder = base / "run"
    source = banking77_slice(base / "slice.csv")
    entry.run(
        folder,
        data_step.Params(dataset="csv", data_dir=str(source), max_tokens=32, benchmark_seconds=1),
        verbose=False,
    )
    texts, _ = raw_examples(folder, "train", 100_000)
    preset = make_local_preset(
        base / "preset", texts, vocabulary_size=512, layers=1, hidden=32, heads=2, max_length=64
    )
    return folder, Path(preset)


@pytest.mark.slow
def test_an_encoder_trains_exports_raw_strings_and_onnx_keeps_the_top_class(
    encoder_run: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """One epoch through the real train step with the preset's tokenizer in tf.data (the length
    from the data, batches padded to buckets), an export whose serving_default takes strings and
    reloads in a fresh process, and ONNX Runtime fp32 on the token_ids signature agreeing on the
    top class of at least 99.5 % of the test split."""
    from {{ cookiecutter.package_name }} import export, optimize, train
    from {{ cookiecutter.package_name }}.tasks.text import hub_data
    from {{ cookiecutter.package_name }}.tasks.text.dataset import make_dataset

    folder, preset = encoder_run
    params = train.Params(model=str(preset), epochs=1, batch_size=16, learning_rate=0.001)
    train.run(folder, params, verbose=False)
    said = capsys.readouterr().out
    marker = json.loads((folder / hub_data.MARKER).read_text())
    assert f"Sequence length {marker['sequence_length']} tokens for model={preset}" in said
    assert "its weights are random, not pretrained" in said
    assert marker["preset"] == str(preset)
    assert marker["sequence_length"] == max(8, min(marker["longest"], 64))
    lengths = {int(ids.shape[1]) for ids, _ in make_dataset(folder, "train", 16)}
    assert lengths <= {8, 16, 32, 64} and max(lengths) <= marker["sequence_length"]

    exported = export.run(folder, export.Params(version=1), verbose=False)
    assert exported["top1_agreement"] == 1.0 and exported["parity_ok"]
    assert "inputs['text']" in exported["saved_model_cli"]
    assert "DT_STRING" in exported["saved_model_cli"]

    done = optimize.run(
        folder,
        optimize.Params(
            backends="onnx",
            precisions="fp32",
            batch_sizes="1",
            iterations=5,
            benchmark_seconds=0.1,
        ),
        verbose=False,
    )
    onnx = next(b for b in done["backends"] if b["name"] == "onnx" and b["precision"] == "fp32")
    assert onnx["status"] == "ran", onnx
    assert onnx["top1_agreement"] >= 0.995, onnx


# Two replicas (Mirrored over two logical CPUs) train 20 steps of 16 texts with the finders'
# Trainer: the real training step on the preset's batches, in a fresh process (logical devices
# must be set before TensorFlow starts); under mixed_float16 the backbone computes in float16,
# the head in float32, and an op meeting a float16 tensor with a float32 one fails the run.
SCRIPT = """
from types import SimpleNamespace
from {{ cookiecutter.package_name }}.data.meta import read_meta
from {{ cookiecutter.package_name }}.find.probes import Trainer
import keras

policy = sys.argv[3]
keras.mixed_precision.set_global_policy(policy)
folder = Path(sys.argv[1])
params = SimpleNamespace(model=sys.argv[2], width=None, dropout=0.1, seed=42)
scaling = policy == "mixed_float16"
trainer = Trainer(folder, read_meta(folder), params, strategy, 32, loss_scaling=scaling, jit=False)
loss, _, count = (float(value) for value in trainer.run(20))
dtypes = {layer.name: layer.compute_dtype for layer in trainer.model.layers}
replicas = strategy.num_replicas_in_sync
print(json.dumps(dict(replicas=replicas, loss=loss / count, count=count, dtypes=dtypes)))
"""


@pytest.mark.slow
@pytest.mark.parametrize("policy", ["float32", "mixed_float16"])
def test_an_encoder_trains_on_two_replicas(
    encoder_run: tuple[Path, Path], policy: str, two_replicas: Callable[..., dict]
) -> None:
    """20 steps of 2 replicas x 16 texts end with every text counted and a finite loss; under
    mixed_float16 the backbone runs in float16 and the softmax in float32."""
    folder, preset = encoder_run
    result = two_replicas(SCRIPT, folder, preset, policy, timeout=600)
    assert result["replicas"] == 2 and result["count"] == 20 * 32
    assert 0 < result["loss"] < 100
    backbone = next(name for name in result["dtypes"] if name.startswith("bert_backbone"))
    assert result["dtypes"][backbone] == ("float16" if policy == "mixed_float16" else "float32")
    assert result["dtypes"]["logits"] == "float32"
