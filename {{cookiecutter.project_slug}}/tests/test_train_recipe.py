"""The training recipe: starting weights and two-phase fine-tuning, the warmup and cosine schedule,
AdamW and label smoothing, augmentation on the device (never in the model), the held-out test split.

Fine-tuning is tested from a backbone trained here (ImageNet weights cannot be downloaded in CI).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import subprocess
import sys
from pathlib import Path

import keras
import numpy as np
import pytest
import tensorflow as tf
from helpers import assert_one_sentence

from {{ cookiecutter.package_name }} import data, export, lineage, tasks, train
from {{ cookiecutter.package_name }}.artifacts import MODEL_FILE
from {{ cookiecutter.package_name }}.runner.summary import headline
from {{ cookiecutter.package_name }}.tasks.image import augment, data_step, models
from {{ cookiecutter.package_name }}.train import Params, TrainError, finetune, schedule
from {{ cookiecutter.package_name }}.train.evaluate import scores
from {{ cookiecutter.package_name }}.train.recipe import make_optimizer

SHAPE, CLASSES = (8, 8, 1), 10


def plan(**values) -> schedule.Plan:
    base = {"peak": 0.016, "steps_per_epoch": 4, "epochs": 6, "warmup_epochs": 2}
    return schedule.Plan(**{**base, "schedule": "cosine", **values})


def test_warmup_and_cosine_are_keras_cosine_decay_step_by_step() -> None:
    """The schedule's numbers are Keras' CosineDecay with warmup, at every step of the run."""
    ours = schedule.rates(plan())
    keras_schedule = keras.optimizers.schedules.CosineDecay(
        0.016 * schedule.WARMUP_START,
        decay_steps=24 - 8,
        alpha=schedule.FLOOR,
        warmup_target=0.016,
        warmup_steps=8,
    )
    theirs = [float(keras_schedule(step)) for step in range(24)]
    np.testing.assert_allclose(ours, theirs, rtol=1e-5)
    assert ours[0] < 0.016 * 0.02 and max(ours) == pytest.approx(0.016)
    assert ours[-1] < 0.016 * 0.05  # decayed towards the floor


def test_constant_schedule_ramps_then_holds_and_fine_tuning_divides_the_rate() -> None:
    """Warmup ramps up to the peak and stays; from freeze_epochs on, the rate times the factor."""
    rates = schedule.per_epoch(
        plan(schedule="constant", freeze_epochs=3, fine_tune_factor=0.1, warmup_epochs=1)
    )
    assert rates[0] < 0.016 and rates[1:3] == pytest.approx([0.016] * 2)  # epoch 1 ramps
    assert rates[3:] == pytest.approx([0.0016] * 3)
    ramp = schedule.rates(plan(schedule="constant"))[:8]
    assert np.all(np.diff(ramp) > 0) and ramp[0] == pytest.approx(0.016 * schedule.WARMUP_START)


def test_auto_warmup_only_above_a_global_batch_of_256() -> None:
    """warmup_epochs=auto warms up large batches only, and never for the whole run."""
    assert schedule.auto_warmup("auto", 256, 20) == 0
    assert schedule.auto_warmup("auto", 1024, 20) == 4
    assert schedule.auto_warmup("auto", 1024, 100) == 5
    assert schedule.auto_warmup("auto", 1024, 3) == 1
    assert schedule.auto_warmup(2, 64, 20) == 2


def test_adamw_decays_kernels_but_not_biases_or_batch_norm() -> None:
    """weight_decay: AdamW, whose decay leaves biases and BatchNorm's gamma/beta alone."""
    model = models.build_model("resnet_small", (8, 8, 1), 3, width=8)
    optimizer = make_optimizer(0.0, 0.5)  # a rate of 0: only the decay could move a weight
    assert isinstance(optimizer, keras.optimizers.AdamW)
    optimizer.build(model.trainable_variables)
    decayed = {v.path for v in model.trainable_variables if optimizer._use_weight_decay(v)}
    kept = {v.path for v in model.trainable_variables} - decayed
    assert decayed and all(path.endswith("kernel") for path in decayed)
    assert kept and all(path.rsplit("/", 1)[-1] in ("bias", "gamma", "beta") for path in kept)
    assert type(make_optimizer(1e-3, 0.0)) is keras.optimizers.Adam


@pytest.mark.parametrize(
    ("values", "words"),
    [
        ({"weights": "/no/such/model.keras"}, "does not exist"),
        ({"weights": "model.onnx"}, ".weights.h5"),
        ({"weights": "imagenet", "freeze_epochs": 5, "epochs": 5}, "freeze_epochs=5"),
        ({"freeze_epochs": 1, "epochs": 3}, "random weights"),
        ({"warmup_epochs": 6, "epochs": 5}, "warmup_epochs=6"),
        ({"schedule": "step"}, "constant or cosine"),
        ({"augment": "heavy"}, "none, light"),
        ({"label_smoothing": 1.0}, "below 1"),
        ({"label_smoothing": -0.1}, "below 1"),
        ({"weight_decay": -1e-4}, "weight_decay"),
        ({"unfreeze": "top"}, "unfreeze='top'"),
        ({"fine_tune_lr_factor": 0}, "above 0"),
    ],
)
def test_a_bad_recipe_value_is_refused_in_one_sentence(values: dict, words: str) -> None:
    """Each bad recipe value: one sentence naming it, before any TensorFlow work."""
    with pytest.raises(TrainError) as caught:
        train.check("unused", Params(**values), inputs=False)
    assert_one_sentence(str(caught.value))
    assert words in str(caught.value)


def small_model(classes: int, width: int = 8) -> keras.Model:
    return models.build_model("small_cnn", SHAPE, classes, width=width)


def test_weights_of_another_task_keep_the_backbone_and_get_a_new_head(tmp_path: Path) -> None:
    """A .keras of 3 classes into a 5-class model: every layer copied by name but the new head."""
    keras.utils.set_random_seed(1)
    source = small_model(3)
    source.save(tmp_path / "pre.keras")
    target = small_model(5)
    loaded = finetune.load_into(target, str(tmp_path / "pre.keras"))
    assert loaded == {"layers": 3, "head": "new", "matched_by": "name"}
    for name in ("stage0_conv0", "stage0_conv1", "features"):
        pairs = zip(target.get_layer(name).weights, source.get_layer(name).weights, strict=True)
        for mine, theirs in pairs:
            np.testing.assert_array_equal(mine.numpy(), theirs.numpy())
    assert target.get_layer("logits").weights[0].shape == (128 // 4, 5)
    source.save_weights(tmp_path / "pre.weights.h5")
    again = small_model(5)
    assert finetune.load_into(again, str(tmp_path / "pre.weights.h5"))["head"] == "new"
    np.testing.assert_array_equal(
        again.get_layer("features").weights[0].numpy(), source.get_layer("features").weights[0]
    )


def test_weights_of_another_architecture_or_a_corrupt_file_are_refused(tmp_path: Path) -> None:
    """Another model's file, a truncated .weights.h5 and a non-zip .keras: one sentence each."""
    models.build_model("resnet_small", SHAPE, 3, width=8).save(tmp_path / "resnet.keras")
    with pytest.raises(TrainError, match="another architecture") as caught:
        finetune.load_into(small_model(3), str(tmp_path / "resnet.keras"))
    assert_one_sentence(str(caught.value))
    small_model(3).save_weights(tmp_path / "good.weights.h5")
    cut = tmp_path / "cut.weights.h5"
    cut.write_bytes((tmp_path / "good.weights.h5").read_bytes()[:300])
    (tmp_path / "junk.keras").write_bytes(b"not a zip file")
    for path in (cut, tmp_path / "junk.keras"):
        with pytest.raises(TrainError, match="cut short or corrupt") as caught:
            finetune.check_file(str(path))
        assert_one_sentence(str(caught.value))
    finetune.check_file(str(tmp_path / "good.weights.h5"))
    finetune.check_file(str(tmp_path / "resnet.keras"))


def test_frozen_phase_trains_the_head_only_and_fine_tuning_keeps_batch_norm_frozen() -> None:
    """Frozen: only the head's weights train. Fine-tune: the top layers too, BatchNorm never."""
    model = models.build_model("resnet_small", SHAPE, 3, width=8)
    finetune.set_phase(model, finetune.FROZEN, "all")
    assert [v.path.split("/")[0] for v in model.trainable_weights] == ["logits", "logits"]
    finetune.set_phase(model, finetune.FINE_TUNE, 2)
    assert {v.path.split("/")[0] for v in model.trainable_weights} == {
        "logits",
        "block21_conv2",
        "block21_conv1",
    }
    finetune.set_phase(model, finetune.FINE_TUNE, "all")
    trainable = {v.path.split("/")[0] for v in model.trainable_weights}
    assert "stem_conv" in trainable and not any("bn" in name for name in trainable)
    assert finetune.phase(0, 1) == finetune.FROZEN and finetune.phase(1, 1) == finetune.FINE_TUNE


def test_augmentation_changes_training_images_and_strong_mixes_labels() -> None:
    """light keeps the labels and moves pixels; strong returns soft labels that sum to 1."""
    images = tf.constant(np.random.default_rng(0).integers(0, 255, (16, 8, 8, 1)), tf.uint8)
    labels = tf.constant(np.arange(16) % 3)
    light = augment.make_augmenter("light", 3, seed=1)
    moved, same = light(images, labels)
    assert moved.dtype == tf.uint8 and moved.shape == images.shape
    assert not np.array_equal(moved.numpy(), images.numpy())
    np.testing.assert_array_equal(same.numpy(), labels.numpy())
    _, soft = augment.make_augmenter("strong", 3, seed=1)(images, labels)
    assert soft.shape == (16, 3)
    np.testing.assert_allclose(soft.numpy().sum(axis=1), 1.0, rtol=1e-5)
    assert augment.make_augmenter("none", 3, seed=1) is None


@pytest.mark.parametrize(("task_type", "index", "has_chief", "rank"), [
    ("chief", 0, True, 0), ("worker", 0, True, 1), ("worker", 1, False, 1), ("worker", 2, True, 3),
])  # fmt: skip
def test_each_worker_augments_with_its_own_seed(
    monkeypatch, run_dir: Path, task_type: str, index: int, has_chief: bool, rank: int
) -> None:
    """Issue 33: every worker augmented with the run's seed, so all drew the same flips, crops
    and mixes for their i-th batches. The chief keeps the seed; each other worker shifts it by
    its rank."""
    from {{ cookiecutter.package_name }}.tasks import current
    from {{ cookiecutter.package_name }}.train import loop as loop_module
    from {{ cookiecutter.package_name }}.train.cluster import Cluster

    class Built(Exception):
        pass

    seeds = []

    def record(params: Params, classes: int, seed: int) -> None:
        seeds.append((params.augment, seed))
        raise Built  # the seed is all this test needs: no training

    role = Cluster(workers=3, task_type=task_type, task_index=index, has_chief=has_chief)
    monkeypatch.setattr(loop_module, "worker_role", lambda strategy: role)
    monkeypatch.setattr(current().recipe, "augmenter", record)
    with pytest.raises(Built):
        train.run(run_dir, Params(epochs=1, augment="light", seed=42), verbose=False)
    assert seeds == [("light", 42 + loop_module.AUGMENT_SEED_STRIDE * rank)]


def test_the_augmenter_is_built_outside_the_strategys_scope(monkeypatch, run_dir: Path) -> None:
    """Built inside a Mirrored scope, its seed generators become mirrored variables: every replica
    reads its own copy of one state and draws the same flips and crops as the others (the next
    test shows the replicas drawing their own). Mirrored over this process's one CPU is enough to
    see where it is built."""
    from {{ cookiecutter.package_name }}.tasks import current

    class Built(Exception):
        pass

    inside = []

    def record(params: Params, classes: int, seed: int) -> None:
        inside.append(tf.distribute.has_strategy())
        raise Built

    monkeypatch.setattr(current().recipe, "augmenter", record)
    with pytest.raises(Built):
        train.run(run_dir, Params(epochs=1, augment="light", strategy="mirrored"), verbose=False)
    assert inside == [False]


def test_augment_and_imagenet_are_the_image_tasks_own() -> None:
    """Issue 43: augment is a training parameter the image task declares (Recipe.options), not a
    shared one; imagenet is a name its builders fetch weights for (Models.pretrained); its
    level reaches the augmenter, train.json and the recipe's sentence through the task."""
    from {{ cookiecutter.package_name }}.tasks import current
    from {{ cookiecutter.package_name }}.train import params as train_params

    task = current()
    assert [f.name for f in dataclasses.fields(task.recipe.options)] == ["augment"]
    assert "augment" not in {f.name for f in dataclasses.fields(train_params.SharedParams)}
    assert task.models.pretrained == ("imagenet",)
    light = Params(augment="light")
    assert task.recipe.summary(light) == {"augment": "light"}
    assert task.recipe.words(light) == ("augment=light on the device",)
    assert task.recipe.words(Params()) == ()
    assert task.recipe.augmenter(Params(), 3, 1) is None
    assert task.recipe.augmenter(light, 3, 1) is not None
    train.check("unused", Params(weights="imagenet", freeze_epochs=1, epochs=2), inputs=False)


REPLICAS_DRAW = """
import numpy as np, tensorflow as tf
from {{ cookiecutter.package_name }}.tasks.image.augment import make_augmenter
from {{ cookiecutter.package_name }}.train.devices import configure_devices, make_strategy
configure_devices(2)
strategy = make_strategy("mirrored", 2)
images = np.tile((np.arange(16 * 16) % 251).astype(np.uint8).reshape(1, 16, 16, 1), (4, 1, 1, 3))
batch = tf.data.Dataset.from_tensors((images, np.arange(4) % 3)).repeat(2).unbatch().batch(4)
for level in ("light", "strong"):
    augment = make_augmenter(level, 3, seed=7)  # as train/loop.py builds it: outside the scope
    step = tf.function(lambda x, y: strategy.run(augment, args=(x, y)))
    for x, y in strategy.experimental_distribute_dataset(batch):
        first, second = strategy.experimental_local_results(step(x, y)[0])
        print(level, first.shape[0], second.shape[0], np.array_equal(first, second))
"""


def test_the_replicas_of_one_worker_draw_their_own_augmentations() -> None:
    """Two replicas given the same two images each: every replica must flip, crop and mix its
    own way (one generator shared, its draws serialized in the step's graph), or a replica's
    batch is a copy of another's and N replicas see one augmentation."""
    done = subprocess.run(
        [sys.executable, "-c", REPLICAS_DRAW], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    rows = [line.split() for line in done.stdout.splitlines()]
    assert rows == [[level, "2", "2", "False"] for level in ("light", "light", "strong", "strong")]


def test_rand_augment_computes_only_the_ops_it_picked_and_the_same_images() -> None:
    """Keras's RandAugment runs all 11 transforms per pick (22 a batch for 2 ops) and keeps one;
    the package's runs the 2 it picked, and with the same seed makes the same images."""
    images = tf.constant(np.random.default_rng(0).integers(0, 255, (4, 32, 32, 3)), tf.float32)
    made, calls = {}, {}
    for kind in (keras.layers.RandAugment, augment.OneOpRandAugment):
        layer = kind(value_range=(0, 255), seed=3, dtype="float32")
        for name in layer._AUGMENT_LAYERS:
            sub = getattr(layer, name)
            sub.transform_images = _counted(sub.transform_images, calls, kind)
        made[kind] = layer(images, training=True).numpy()
    assert calls[keras.layers.RandAugment] == 22 and calls[augment.OneOpRandAugment] == 2
    np.testing.assert_allclose(made[augment.OneOpRandAugment], made[keras.layers.RandAugment])


def test_strong_augmentation_is_built_with_the_randaugment_that_runs_only_its_picks(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The augmenter training uses is the one-op RandAugment, in float32: the test above checks
    the class, this one that augment=strong builds it (Keras's own ran 22 transforms a step)."""
    built: list[dict] = []

    class Recorded(augment.OneOpRandAugment):
        def __init__(self, **options: object) -> None:
            built.append(options)
            super().__init__(**options)

    monkeypatch.setattr(augment, "OneOpRandAugment", Recorded)
    augment.make_augmenter("strong", 3, seed=1)
    assert [options.get("dtype") for options in built] == ["float32"]


def _counted(function, calls: dict, kind: type):
    def counted(*args, **kwargs):
        calls[kind] = calls.get(kind, 0) + 1
        return function(*args, **kwargs)

    return counted


def test_scores_are_per_class_precision_recall_f1_and_the_confusion_matrix() -> None:
    """Two of class a right, one a called b, one b right: P/R/F1 by hand."""
    result = scores(np.array([0, 0, 0, 1]), np.array([0, 0, 1, 1]), ["a", "b"])
    assert result["test_accuracy"] == 0.75
    assert result["test_confusion_matrix"] == [[2, 1], [0, 1]]
    assert result["test_per_class"]["a"] == pytest.approx(
        {"precision": 1.0, "recall": 2 / 3, "f1": 0.8, "support": 3}
    )
    assert result["test_per_class"]["b"]["precision"] == 0.5


def test_test_fraction_writes_a_third_stratified_split(tmp_path: Path) -> None:
    """test_fraction=0.1: train, validation and test, every class in each; a bad one refused."""
    meta = data_step.prepare(tmp_path, "digits", test_fraction=0.1)
    assert list(meta["splits"]) == ["train", "validation", "test"]
    test = meta["splits"]["test"]
    assert 170 <= test["count"] <= 190 and min(test["per_class"].values()) >= 17
    counts = sum(meta["splits"][split]["count"] for split in meta["splits"])
    assert counts == 1797
    with pytest.raises(data.DataError, match="test_fraction=0.9") as caught:
        data_step.prepare(tmp_path / "other", "digits", test_fraction=0.9)
    assert_one_sentence(str(caught.value))


@pytest.fixture(scope="module")
def pretrained(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small_cnn trained one epoch on the digits (10 classes): a backbone of our own."""
    run = tmp_path_factory.mktemp("pre") / "run"
    data_step.prepare(run, "digits", shards=1)
    train.train(run, epochs=1, width=8, verbose=False)
    return run / MODEL_FILE


def test_fine_tuning_from_a_model_keras_runs_both_phases_and_records_the_weights(
    tmp_path: Path, pretrained: Path
) -> None:
    """weights=<model.keras> on a 3-class task: frozen epoch, then fine-tuning at a tenth of the
    rate; train.json and lineage.json name the file's sha256; the test split is scored once."""
    run = tmp_path / "run"
    data_step.prepare(
        run,
        "synthetic",
        shards=1,
        synthetic_shape=SHAPE,
        synthetic_classes=3,
        synthetic_count=300,
        test_fraction=0.1,
    )
    values = {"epochs": 2, "width": 8, "weights": str(pretrained), "freeze_epochs": 1}
    metrics = train.train(run, verbose=False, **values)
    sha = hashlib.sha256(pretrained.read_bytes()).hexdigest()
    assert metrics["weights"]["sha256"] == sha
    assert metrics["weights"]["loaded"]["head"] == "new"
    assert metrics["phases"] == {"frozen": [1], "fine_tune": [2]}
    assert [record["phase"] for record in metrics["history"]] == ["frozen", "fine_tune"]
    rates = metrics["learning_rates"]
    assert rates[1] == pytest.approx(rates[0] * 0.1)
    assert lineage.read(run)["model"]["origins"]["weights"]["sha256"] == sha
    assert isinstance(metrics["test_accuracy"], float) and metrics["test_examples"] == 30
    assert len(metrics["test_confusion_matrix"]) == 3
    saved = json.loads((run / "metrics" / "train.json").read_text(encoding="utf-8"))
    assert saved["test_accuracy"] == metrics["test_accuracy"]
    record = {"status": "ok", "notebooks": [{"name": "03_train", "status": "ok", "seconds": 1.0}]}
    said = headline(run, record)[0]
    assert said.startswith("- **03_train**: ")  # "**stayed at chance**: ..." may come first
    assert f"test_accuracy **{metrics['test_accuracy']:.4f}**" in said
    # One more epoch: resumed after the frozen phase, it fine-tunes, from the checkpoint; the
    # weights file is not loaded again over the trained weights the checkpoint restored.
    more = train.train(run, verbose=False, **{**values, "epochs": 3})
    assert more["initial_epoch"] == 2 and more["history"][-1]["phase"] == "fine_tune"
    assert more["weights"]["loaded"] is None and more["weights"]["sha256"] == sha


RANDOM_OPS = ("Random", "Multinomial", "Shuffle", "Rng")  # StatelessRandom*, RngBitGenerator…


def test_augmentation_never_reaches_the_export_and_parity_holds_on_the_test_split(
    tmp_path: Path,
) -> None:
    """augment=strong trains on the device; model.keras and the SavedModel hold no random op,
    parity holds, and the export's confusion matrix is the test split's."""
    run = tmp_path / "run"
    data_step.prepare(run, "digits", shards=1, test_fraction=0.1)
    metrics = train.train(
        run, epochs=1, width=8, augment="strong", label_smoothing=0.1, verbose=False
    )
    assert metrics["augment"] == "strong" and metrics["epochs_completed"] == 1
    config = json.dumps(keras.saving.load_model(run / MODEL_FILE).get_config())
    assert "Random" not in config and "MixUp" not in config and "CutMix" not in config
    exported = export.run(run, export.Params(version=1))
    ops = export.graph_ops(exported["saved_model_cli_all"])  # saved_model_cli's list
    assert "Conv2D" in ops  # the model is there
    assert not [op for op in ops if any(word in op for word in RANDOM_OPS)], sorted(ops)
    assert exported["parity_ok"] and exported["parity_split"] == "test"
    assert sum(map(sum, exported["confusion_matrix"])) == metrics["test_examples"]


def test_the_test_split_is_evaluated_one_replicas_batch_at_a_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The final model runs outside the strategy, on the first device: fed the global batch of 8
    replicas (8 x what one device held in training) it could run out of memory there."""
    from types import SimpleNamespace

    from {{ cookiecutter.package_name }}.train import evaluate

    asked = []
    labels = np.array([0, 1, 1, 0])

    def make_dataset(folder, split, batch, **kwargs):
        asked.append(batch)
        return [(tf.zeros((len(labels), 2)), tf.constant(labels))]

    real = tasks.current()
    fake = SimpleNamespace(
        build_inputs=make_dataset,
        build_losses=real.build_losses,
        build_metrics=real.build_metrics,
        scores=SimpleNamespace(
            extras=lambda *args, **_: {}, baseline=lambda folder: None, compare=lambda *_: None
        ),
        noun="images",
    )
    monkeypatch.setattr(evaluate, "task", lambda: fake)
    loop = SimpleNamespace(
        folder=tmp_path,
        meta={"splits": {"train": 8, "validation": 4, "test": 4}, "classes": ["a", "b"]},
        global_batch=2048,
        replicas=8,
        model=lambda inputs, training: tf.one_hot(labels, 2),
        verbose=False,  # `train --json`: nothing but the metrics on stdout
        role=SimpleNamespace(is_chief=True),
    )
    result = evaluate.test_split(loop, lambda text: None)  # type: ignore[arg-type]
    assert asked == [256]
    assert result["test_accuracy"] == 1.0
