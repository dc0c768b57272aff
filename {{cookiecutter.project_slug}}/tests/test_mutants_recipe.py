"""The training recipe at the edges that decide what a user gets (`make mutate MUTATE=recipe`):
the learning rate at the thaw and at each epoch's end, the weights a run starts from and a resumed
run keeps, the values the recipe accepts, its phases. test_mutants_stop.py, test_mutants_scores.py
and, in an image project, test_mutants_crop.py hold the group's other tests.

In-process and fast: tiny Keras models, fake runs (SimpleNamespace) where a whole Loop would take
a training run; test_train_recipe.py runs the real thing.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from types import SimpleNamespace

import h5py
import keras
import numpy as np
import pytest
import tensorflow as tf

from {{ cookiecutter.package_name }} import tasks
from {{ cookiecutter.package_name }}.train import TrainError, finetune, phases, schedule
from {{ cookiecutter.package_name }}.train.recipe import check_recipe, make_optimizer

PEAK = 0.016


@pytest.fixture(autouse=True)
def task_options(monkeypatch: pytest.MonkeyPatch) -> None:
    """The shared recipe, with a task that offers pretrained weights by the name "zoo" and has an
    option of its own ("own"): what any task may declare, whichever this bake holds."""
    task = tasks.current()
    monkeypatch.setattr(task.models, "pretrained", ("zoo",))
    words = lambda params: (f"own={params.own} here",) * (params.own != "none")  # noqa: E731
    monkeypatch.setattr(task.recipe, "words", words)
    monkeypatch.setattr(task.recipe, "summary", lambda params: {"own": params.own})


def plan(**values) -> schedule.Plan:
    base = {"peak": PEAK, "steps_per_epoch": 4, "epochs": 6, "warmup_epochs": 0}
    return schedule.Plan(**{**base, "schedule": "constant", **values})


# --- the learning rate ---------------------------------------------------------------------------


def test_the_first_step_after_the_thaw_already_runs_at_the_fine_tuning_rate() -> None:
    """freeze_epochs=2 of 4 steps: steps 0-7 at the peak, step 8 (the first unfrozen) on at a
    tenth of it."""
    rates = schedule.rates(plan(freeze_epochs=2, fine_tune_factor=0.1))
    assert rates[:8] == pytest.approx([PEAK] * 8)
    assert rates[8:] == pytest.approx([PEAK * 0.1] * 16)
    assert schedule.rates(plan(freeze_epochs=2, fine_tune_factor=1.0)) == pytest.approx([PEAK] * 24)


def test_a_schedule_without_freeze_epochs_never_takes_the_fine_tuning_factor() -> None:
    assert schedule.rates(plan(fine_tune_factor=0.1)) == pytest.approx([PEAK] * 24)


def test_per_epoch_rates_are_each_epochs_last_step() -> None:
    """During warmup the rate rises every step: epoch 1's is its 4th step's, not its 1st's."""
    the_plan = plan(warmup_epochs=2)
    every = schedule.rates(the_plan)
    start = PEAK * schedule.WARMUP_START
    assert every[:8] == pytest.approx([start + (PEAK - start) * step / 8 for step in range(8)])
    assert schedule.per_epoch(the_plan) == pytest.approx([every[3], every[7], *[PEAK] * 4])
    loop = SimpleNamespace(plan=the_plan, steps_per_epoch=4)
    assert [phases.rate_at_end_of(loop, epoch) for epoch in range(2)] == pytest.approx(
        [every[3], every[7]]
    )


def test_cosine_decays_from_the_end_of_warmup_to_the_floor_at_the_last_step() -> None:
    the_plan = plan(schedule="cosine", warmup_epochs=1, epochs=3, steps_per_epoch=2)
    every = schedule.rates(the_plan)
    decayed = [0.5 * (1 + np.cos(np.pi * done / 4)) for done in range(4)]
    expected = [PEAK * ((1 - schedule.FLOOR) * c + schedule.FLOOR) for c in decayed]
    assert every == pytest.approx(
        [PEAK * schedule.WARMUP_START, (PEAK + PEAK * 0.01) / 2, *expected]
    )


def test_per_step_rates_are_every_nth_beyond_most() -> None:
    the_plan = plan(epochs=5, steps_per_epoch=5)
    every = schedule.rates(the_plan).tolist()
    assert schedule.per_step(the_plan, most=25) == pytest.approx(every)
    assert schedule.per_step(the_plan, most=24) == pytest.approx(every[::2])
    assert schedule.per_step(the_plan, most=10) == pytest.approx(every[::3])


def test_auto_warmup_at_the_edges() -> None:
    assert schedule.auto_warmup("auto", 256, 10) == 0
    assert schedule.auto_warmup("auto", 257, 10) == 2
    assert schedule.auto_warmup("auto", 512, 14) == 2  # a fifth of 14 epochs, whole
    assert schedule.auto_warmup("auto", 257, 4) == 1
    assert schedule.auto_warmup("3", 64, 10) == 3


RUNS = [  # (global batch, warmup_epochs asked, schedule, epochs): what 03 may be given
    (64, "auto", "constant", 5),  # issue 42 §3.3: the smoke text run, told warmup and cosine
    (64, "auto", "cosine", 5),
    (256, "auto", "constant", 3),
    (512, "auto", "cosine", 10),
    (1024, "auto", "constant", 3),
    (64, 2, "cosine", 6),
    (512, 0, "constant", 4),
]


@pytest.mark.parametrize(("batch", "asked", "name", "epochs"), RUNS)
def test_the_sentence_says_what_the_built_schedule_does(
    batch: int, asked: int | str, name: str, epochs: int
) -> None:
    """Issue 42 §3.3: 03 printed "warmup over 1 epoch(s) … (warmup_epochs=auto: the global batch
    64 exceeds 256), then cosine decay" for a run that trained with no warmup at a constant rate.
    The sentence is read against the rates of the plan training builds (phases.plan's call)."""
    the_plan = schedule.plan_for(PEAK, 4, epochs, asked, name, batch)
    sentence = schedule.describe(the_plan, batch, asked)
    every = schedule.rates(the_plan)
    warm = the_plan.warmup_steps
    assert ("warmup over" in sentence) == (every[0] < PEAK * 0.5), sentence
    if warm:
        assert f"warmup over {warm // 4} epoch(s)" in sentence and every[warm - 1] < PEAK
        assert every[warm] == pytest.approx(PEAK)
    assert ("exceeds 256" in sentence) == (asked == "auto" and batch > 256 and warm > 0)
    assert ("<= 256" in sentence) == (asked == "auto" and batch <= 256)
    after = every[warm:]
    if "constant at" in sentence:
        assert after == pytest.approx([PEAK] * len(after)) and "cosine" not in sentence
    else:
        assert "cosine decay" in sentence and PEAK * schedule.FLOOR <= after[-1] < PEAK / 20
        assert all(np.diff(after) <= 0)


def test_training_builds_its_plan_with_the_call_03_describes() -> None:
    """phases.plan (the run) and 03's sentence both come from schedule.plan_for."""
    params = SimpleNamespace(
        epochs=5, warmup_epochs="auto", schedule="constant", freeze_epochs=0,
        fine_tune_lr_factor=0.1,
    )  # fmt: skip
    loop = SimpleNamespace(params=params, learning_rate=PEAK, steps_per_epoch=4, global_batch=64)
    assert phases.plan(loop) == schedule.plan_for(PEAK, 4, 5, "auto", "constant", 64, 0, 0.1)
    assert schedule.describe(phases.plan(loop), 64, "auto") == (
        "Learning rate: no warmup (global batch 64 <= 256), constant at 0.016."
    )


def test_a_plan_is_never_said_to_warm_up_for_a_reason_untrue_of_its_batch() -> None:
    """A plan with warmup described for a global batch of 64 says no "64 exceeds 256"."""
    sentence = schedule.describe(plan(warmup_epochs=1, schedule="cosine"), 64, "auto")
    assert "exceeds" not in sentence and "warmup over 1 epoch(s)" in sentence


@pytest.mark.parametrize(
    ("asked", "name", "said"),
    [
        ("auto", "constant", "This run: Learning rate: no warmup (global batch 64 <= 256), "),
        (2, "cosine", "This run: Learning rate: warmup over 2 epoch(s) from 1e-05 to 0.001, "),
    ],
)
def test_03_describes_the_plan_its_run_trains_on(
    tmp_path: Path, capsys, asked: int | str, name: str, said: str
) -> None:
    """03's schedule cell, run as the notebook runs it at batch 64 (the text smoke run): its
    sentence is this run's plan, not the figure's "warmup + cosine" example (issue 42 §3.3)."""
    import nbformat
    from IPython.display import display

    from {{ cookiecutter.package_name }} import artifacts, figures, train

    notebook = Path(__file__).parents[1] / "notebooks" / "03_train.ipynb"
    cell = next(c for c in nbformat.read(notebook, as_version=4).cells if c.get("id") == "schedule")
    exec(  # noqa: S102 - the notebook's own cell, with the names its earlier cells define
        cell.source,
        {
            "train": train, "figures": figures, "artifacts": artifacts, "display": display,
            "folder": tmp_path, "meta": {"splits": {"train": {"count": 640}}}, "rate": 0.001,
            "batch": 64, "epochs": 5, "warmup_epochs": asked, "schedule": name,
            "freeze_epochs": 0, "fine_tune_lr_factor": 0.1,
        },
    )  # fmt: skip
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last.startswith(said), last
    assert ("constant at 0.001." in last) == (name == "constant"), last


def test_the_schedule_is_described_in_one_sentence() -> None:
    warm = plan(warmup_epochs=2, schedule="cosine", freeze_epochs=1, fine_tune_factor=0.1)
    assert schedule.describe(warm, 512, "auto") == (
        "Learning rate: warmup over 2 epoch(s) from 0.00016 to 0.016 (warmup_epochs=auto: the "
        "global batch 512 exceeds 256), then cosine decay to 0.00016, x 0.1 from epoch 2 "
        "(fine-tuning)."
    )
    assert schedule.describe(plan(warmup_epochs=1), 64, 1) == (
        "Learning rate: warmup over 1 epoch(s) from 0.00016 to 0.016, then constant at 0.016."
    )
    assert schedule.describe(plan(), 256, "auto") == (
        "Learning rate: no warmup (global batch 256 <= 256), constant at 0.016."
    )
    assert schedule.describe(plan(), 64, 0) == "Learning rate: constant at 0.016."
    assert schedule.WarmupSchedule(warm).get_config() == vars(warm)


# --- the recipe's values -------------------------------------------------------------------------


def recipe(**values) -> SimpleNamespace:
    base = {
        "weights": "zoo",
        "epochs": 5,
        "freeze_epochs": 1,
        "unfreeze": "all",
        "fine_tune_lr_factor": 0.1,
        "warmup_epochs": "auto",
        "schedule": "cosine",
        "weight_decay": 0.0,
        "label_smoothing": 0.0,
    }
    return SimpleNamespace(**{**base, **values})


@pytest.mark.parametrize(
    "values",
    [
        {"unfreeze": 0},  # fine-tune the head only, after the frozen epochs
        {"unfreeze": 3},
        {"freeze_epochs": 4},
        {"freeze_epochs": 0, "weights": "none"},
        {"warmup_epochs": 5},
        {"warmup_epochs": 0},
        {"fine_tune_lr_factor": 1},
        {"weight_decay": 0, "label_smoothing": 0},
        {"schedule": "constant"},
        {"epochs": "many", "freeze_epochs": 9, "warmup_epochs": 9},  # epochs refused elsewhere
    ],
)
def test_a_good_recipe_value_is_accepted(values: dict) -> None:
    check_recipe(recipe(**values))


FREEZE = (
    "is not allowed with epochs=5: use a whole number from 0 to epochs - 1 (at least one epoch "
    "must fine-tune after it)."
)
UNFREEZE = (
    "is not allowed: use all, or a whole number >= 0 of backbone layers (with weights, from the "
    "top) to fine-tune after freeze_epochs."
)
FACTOR = "is not allowed: use a number above 0 and at most 1."
WARMUP = "is not allowed with epochs=5: use auto or a whole number from 0 to epochs."
BELOW_1 = "is not allowed: use a number from 0 to below 1, e.g."
REFUSED = [
    ({"freeze_epochs": 5}, f"freeze_epochs=5 {FREEZE}"),
    ({"freeze_epochs": -1}, f"freeze_epochs=-1 {FREEZE}"),
    ({"freeze_epochs": True}, f"freeze_epochs=True {FREEZE}"),
    (
        {"freeze_epochs": 2, "weights": "none"},
        "freeze_epochs=2 freezes a backbone with random weights, which learns nothing: give "
        "weights (a .keras file, or zoo), or freeze_epochs=0.",
    ),
    ({"unfreeze": -1}, f"unfreeze=-1 {UNFREEZE}"),
    ({"unfreeze": "2"}, f"unfreeze='2' {UNFREEZE}"),
    ({"fine_tune_lr_factor": 1.5}, f"fine_tune_lr_factor=1.5 {FACTOR}"),
    ({"fine_tune_lr_factor": 0}, f"fine_tune_lr_factor=0 {FACTOR}"),
    ({"fine_tune_lr_factor": float("nan")}, f"fine_tune_lr_factor=nan {FACTOR}"),
    ({"fine_tune_lr_factor": True}, f"fine_tune_lr_factor=True {FACTOR}"),
    ({"fine_tune_lr_factor": "0.1"}, f"fine_tune_lr_factor='0.1' {FACTOR}"),
    ({"warmup_epochs": 6}, f"warmup_epochs=6 {WARMUP}"),
    ({"warmup_epochs": -1}, f"warmup_epochs=-1 {WARMUP}"),
    ({"warmup_epochs": "2"}, f"warmup_epochs='2' {WARMUP}"),
    ({"schedule": "step"}, "schedule='step' is not allowed: use constant or cosine."),
    ({"weight_decay": 1}, f"weight_decay=1 {BELOW_1} 0.05."),
    ({"weight_decay": -0.1}, f"weight_decay=-0.1 {BELOW_1} 0.05."),
    ({"label_smoothing": 1.0}, f"label_smoothing=1.0 {BELOW_1} 0.1."),
    ({"label_smoothing": -0.1}, f"label_smoothing=-0.1 {BELOW_1} 0.1."),
    (
        {"weights": ""},
        "weights='' is not allowed: use none, zoo or the path of a .keras or .weights.h5 file.",
    ),
]


@pytest.mark.parametrize(("values", "said"), REFUSED)
def test_a_bad_recipe_value_is_refused_with_its_sentence(values: dict, said: str) -> None:
    with pytest.raises(TrainError) as refused:
        check_recipe(recipe(**values))
    assert str(refused.value) == said


def test_a_weights_file_is_read_into_the_same_builder_with_the_files_classes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A .weights.h5 holds no architecture: the task's builder makes this model with the file's
    class count (read from its head), loads the file, and the layers are copied from that."""
    source = tiny(3)
    source.save_weights(tmp_path / "three.weights.h5")
    target = tiny(5)
    rebuilt = []

    def rebuild(model, classes):
        rebuilt.append((model, classes))
        return tiny(classes)

    fake = SimpleNamespace(models=SimpleNamespace(rebuilt=rebuild))
    monkeypatch.setattr(finetune, "task", lambda: fake)
    loaded = finetune.load_into(target, str(tmp_path / "three.weights.h5"))
    assert rebuilt == [(target, 3)]
    assert loaded == {"layers": 2, "head": "new", "matched_by": "name"}
    assert same(target, source, "a") and same(target, source, "b")


def test_weight_decay_makes_adamw_which_leaves_biases_and_batch_norm_alone() -> None:
    model = keras.Sequential(
        [keras.Input((4,)), keras.layers.Dense(3), keras.layers.BatchNormalization()]
    )
    plain = make_optimizer(0.002, 0.0)
    assert type(plain) is keras.optimizers.Adam and float(plain.learning_rate) == pytest.approx(
        0.002
    )
    optimizer = make_optimizer(0.003, 0.05)
    assert type(optimizer) is keras.optimizers.AdamW and float(
        optimizer.learning_rate
    ) == pytest.approx(0.003)
    assert optimizer.weight_decay == 0.05
    optimizer.build(model.trainable_variables)
    decayed = [
        v.path.rsplit("/", 1)[-1]
        for v in model.trainable_variables
        if optimizer._use_weight_decay(v)
    ]
    assert decayed == ["kernel"]


def test_unfreeze_0_fine_tunes_the_head_alone_and_a_count_the_top_layers() -> None:
    """unfreeze=0: after the frozen epochs only the head trains (still at the lower rate);
    unfreeze=2: the two top layers with weights, BatchNorm never, the fixed preprocessing never."""
    model = keras.Sequential(
        [
            keras.Input((4,)),
            keras.layers.Dense(3, name="preprocess"),
            keras.layers.Dense(3, name="a"),
            keras.layers.BatchNormalization(name="bn"),
            keras.layers.Dense(3, name="b"),
            keras.layers.Dropout(0.1, name="drop"),
            keras.layers.Dense(3, name="c"),
            keras.layers.Dense(2, name="logits"),
        ]
    )

    def trainable() -> list[str]:
        return [layer.name for layer in model.layers if layer.trainable and layer.weights]

    assert finetune.backbone_layers(model) == [model.get_layer(n) for n in ("a", "bn", "b", "c")]
    assert finetune.set_phase(model, finetune.FROZEN, "all") == 2
    assert trainable() == ["logits"]
    assert finetune.set_phase(model, finetune.FINE_TUNE, 0) == 2
    assert trainable() == ["logits"]
    assert finetune.set_phase(model, finetune.FINE_TUNE, 2) == 6
    assert trainable() == ["b", "c", "logits"]
    assert finetune.set_phase(model, finetune.FINE_TUNE, "all") == 8
    assert trainable() == ["a", "b", "c", "logits"]
    assert [finetune.phase(epoch, 2) for epoch in range(3)] == ["frozen", "frozen", "fine_tune"]
    inner = keras.Sequential(
        [keras.Input((4,)), keras.layers.Dense(3, name="in_a"), keras.layers.Dense(3, name="in_b")],
        name="backbone",
    )  # a keras.applications model inside: its layers are the backbone's
    nested = keras.Sequential([keras.Input((4,)), inner, keras.layers.Dense(2, name="logits")])
    assert [layer.name for layer in finetune.backbone_layers(nested)] == ["in_a", "in_b"]
    assert finetune.set_phase(nested, finetune.FINE_TUNE, 1) == 4  # in_b and the head
    assert [layer.trainable for layer in inner.layers] == [False, True]


# --- the weights a run starts from -------------------------------------------------------------


def test_weights_are_loaded_into_a_fresh_model_only_never_over_a_resumed_checkpoint(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A resumed run's checkpoint holds the weights trained since: loading weights= over them
    would throw that training away."""
    loaded = []

    def load_into(model, weights):
        loaded.append((model, weights))
        return {"layers": 3, "head": "new", "matched_by": "name"}

    monkeypatch.setattr(finetune, "load_into", load_into)
    strategy = tf.distribute.get_strategy()
    loop = SimpleNamespace(
        params=SimpleNamespace(weights="pre.keras"), strategy=strategy, model="m", weights_loaded=1
    )
    phases.begin(loop, fresh=False)
    assert loaded == [] and loop.weights_loaded is None
    phases.begin(loop, fresh=True)
    assert loaded == [("m", "pre.keras")] and loop.weights_loaded["layers"] == 3
    for weights in ("none", "zoo"):
        loop.params.weights = weights
        phases.begin(loop, fresh=True)
        assert len(loaded) == 1 and loop.weights_loaded is None


def weights_file(path: Path, heads: dict[str, int]) -> Path:
    """A .weights.h5 as Keras 3 writes it: layers/<type>[_<n>]/vars/<i>."""
    with h5py.File(path, "w") as h5:
        for name, classes in heads.items():
            h5.create_dataset(f"layers/{name}/vars/0", data=np.zeros((4, classes)))
            h5.create_dataset(f"layers/{name}/vars/1", data=np.zeros(classes))
    return path


def test_the_head_of_a_weights_file_is_its_last_dense_by_number_not_by_name(
    tmp_path: Path,
) -> None:
    """dense_10 comes after dense_9 (a name sort puts it before): its 7 classes are the head's."""
    heads = {"dense": 3, "dense_2": 5, "dense_9": 4, "dense_10": 7, "conv2d_11": 9}
    with h5py.File(weights_file(tmp_path / "a.weights.h5", heads), "r") as h5:
        assert finetune._head_classes(h5) == 7
    with h5py.File(weights_file(tmp_path / "b.weights.h5", {"dense": 6}), "r") as h5:
        assert finetune._head_classes(h5) == 6
    with h5py.File(weights_file(tmp_path / "f.weights.h5", {"dense": 6, "dense_1": 2}), "r") as h5:
        assert finetune._head_classes(h5) == 2  # dense is number 0
    with h5py.File(weights_file(tmp_path / "c.weights.h5", {"conv2d": 6}), "r") as h5:
        assert finetune._head_classes(h5) is None
    with h5py.File(tmp_path / "d.weights.h5", "w") as h5:
        h5.create_dataset("layers/dense_1/vars/0", data=np.zeros((4, 2)))
    with h5py.File(tmp_path / "d.weights.h5", "r") as h5:
        assert finetune._head_classes(h5) is None  # a Dense without a bias: unknown
    with h5py.File(tmp_path / "e.weights.h5", "w") as h5:
        h5.attrs["empty"] = 1
    with h5py.File(tmp_path / "e.weights.h5", "r") as h5:
        assert finetune._head_classes(h5) is None


def tiny(classes: int, prefix: str = "") -> keras.Model:
    keras.utils.set_random_seed(classes + len(prefix))
    return keras.Sequential(
        [
            keras.Input((4,)),
            keras.layers.Dense(3, name=f"{prefix}a"),
            keras.layers.Dropout(0.1, name=f"{prefix}drop"),
            keras.layers.Dense(3, name=f"{prefix}b"),
            keras.layers.Dense(classes, name="logits"),
        ],
        name=f"tiny{prefix}",
    )


def same(target: keras.Model, source: keras.Model, name: str, other: str | None = None) -> bool:
    mine, theirs = (
        target.get_layer(name).get_weights(),
        source.get_layer(other or name).get_weights(),
    )
    return all(np.array_equal(a, b) for a, b in zip(mine, theirs, strict=True))


def test_a_keras_file_is_copied_by_name_or_by_order_and_its_head_only_for_the_same_classes(
    tmp_path: Path,
) -> None:
    source = tiny(3)
    source.save(tmp_path / "three.keras")
    target = tiny(3)
    loaded = finetune.load_into(target, str(tmp_path / "three.keras"))
    assert loaded == {"layers": 3, "head": "copied", "matched_by": "name"}
    assert all(same(target, source, name) for name in ("a", "b", "logits"))
    other = tiny(5, prefix="old_")  # an older builder's names: matched by order
    loaded = finetune.load_into(other, str(tmp_path / "three.keras"))
    assert loaded == {"layers": 2, "head": "new", "matched_by": "order"}
    assert same(other, source, "old_a", "a") and same(other, source, "old_b", "b")
    assert not same(tiny(5, prefix="old_"), source, "old_a", "a")
    narrow = keras.Sequential(
        [keras.Input((4,)), keras.layers.Dense(5, name="a"), keras.layers.Dense(3, name="b")]
        + [keras.layers.Dense(3, name="logits")],
        name="narrow",
    )  # the same names, the same head, another layer "a"
    with pytest.raises(TrainError, match=r"holds another architecture \(tiny, 3 layers"):
        finetune.load_into(narrow, str(tmp_path / "three.keras"))
    short = keras.Sequential(
        [keras.Input((4,)), keras.layers.Dense(3, name="x"), keras.layers.Dense(3, name="y")],
        name="short",
    )  # its two layers are the source's first two, by shape: still another model
    with pytest.raises(TrainError, match=r"than short \(2\)"):
        finetune.load_into(short, str(tmp_path / "three.keras"))
    wide = keras.Sequential(
        [keras.Input((4,)), keras.layers.Dense(4, name="a"), keras.layers.Dense(3, name="logits")],
        name="wide",
    )
    with pytest.raises(TrainError) as refused:
        finetune.load_into(wide, str(tmp_path / "three.keras"))
    assert str(refused.value) == (
        f"weights={str(tmp_path / 'three.keras')!r} holds another architecture (tiny, 3 layers "
        "with weights) than wide (2): use weights from the same model, with the same input "
        "shape, or weights=none."
    )


# --- the phases of a run -------------------------------------------------------------------------


def run_of(**values) -> SimpleNamespace:
    """A fake run: what phases.py reads of a Loop."""
    params = {
        "epochs": 4,
        "warmup_epochs": "auto",
        "schedule": "cosine",
        "freeze_epochs": 1,
        "fine_tune_lr_factor": 0.5,
        "unfreeze": 2,
        "label_smoothing": 0.1,
        "weight_decay": 0.05,
        "own": "light",
        "weights": "pre.keras",
    }
    said = []
    loop = SimpleNamespace(
        params=SimpleNamespace(**{**params, **values}),
        learning_rate=0.02,
        steps_per_epoch=3,
        global_batch=512,
        phase=None,
        model="model",
        strategy="strategy",
        optimizer="optimizer",
        loss_scaling=True,
        jit=False,
        timed=True,
        augment="augmenter",
        meta={"num_classes": "7"},
        stop=SimpleNamespace(flag="flag"),
        weights_loaded={"layers": 5, "matched_by": "order", "head": "new"},
        weighting=None,  # no class weights (the table task's class_weight=none)
        say=said.append,
        said=said,
    )
    loop.plan = phases.plan(loop)
    return loop


def test_the_plan_of_a_run_is_its_scaled_rate_steps_and_fine_tuning_factor() -> None:
    loop = run_of()
    assert loop.plan == schedule.Plan(
        peak=0.02, steps_per_epoch=3, epochs=4, warmup_epochs=1, schedule="cosine",
        freeze_epochs=1, fine_tune_factor=0.5,
    )  # fmt: skip
    assert phases.schedule_of(loop.plan).plan is loop.plan


def test_each_epoch_enters_its_phase_and_a_new_phase_traces_new_steps(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    made, set_to = [], []

    def make_train_steps(*args, **kwargs):
        made.append((args, kwargs))
        return f"steps {len(made)}"

    monkeypatch.setattr(phases, "make_train_steps", make_train_steps)
    monkeypatch.setattr(
        finetune,
        "set_phase",
        lambda model, which, unfreeze: set_to.append((model, which, unfreeze)),
    )
    loop = run_of()
    phases.enter(loop, 0)
    assert (loop.phase, loop.train_steps, set_to) == ("frozen", "steps 1", [("model", "frozen", 2)])
    assert made[0] == (
        ("strategy", "model", "optimizer"),
        {"task": tasks.current(), "global_batch": 512, "loss_scaling": True, "jit": False,
         "timed": True, "augment": "augmenter", "label_smoothing": 0.1, "num_classes": 7,
         "stop": "flag", "class_weights": None},
    )  # fmt: skip
    assert loop.said == []  # the first phase is said by describe()
    phases.enter(loop, 0)
    assert len(made) == 1 and len(set_to) == 1  # the same phase: the same steps
    phases.enter(loop, 1)
    assert (loop.phase, loop.train_steps, set_to[1]) == (
        "fine_tune",
        "steps 2",
        ("model", "fine_tune", 2),
    )
    assert loop.said == [
        "Epoch 2: the backbone is unfrozen (2 layer(s) with weights, any BatchNorm kept frozen), "
        "learning rate x 0.5."
    ]
    phases.enter(loop, 2)
    assert len(made) == 2
    plain = run_of(freeze_epochs=0)
    phases.enter(plain, 0)
    phases.enter(plain, 1)
    assert plain.phase == "train" and len(made) == 3 and len(set_to) == 2 and plain.said == []


def test_the_recipe_is_described_and_summarised_for_train_json(tmp_path: Path) -> None:
    loop = run_of()
    assert phases.describe(loop) == (
        "Learning rate: warmup over 1 epoch(s) from 0.0002 to 0.02 (warmup_epochs=auto: the global "
        "batch 512 exceeds 256), then cosine decay to 0.0002, x 0.5 from epoch 2 (fine-tuning). "
        "Weights from pre.keras (5 layers by order, head new). Backbone frozen for 1 epoch(s), "
        "then unfreeze=2. AdamW weight_decay 0.05, label_smoothing 0.1, own=light here."
    )
    plain = run_of(freeze_epochs=0, weights="none", weight_decay=0, label_smoothing=0, own="none")
    plain.weights_loaded = None
    assert phases.describe(plain) == (
        "Learning rate: warmup over 1 epoch(s) from 0.0002 to 0.02 (warmup_epochs=auto: the global "
        "batch 512 exceeds 256), then cosine decay to 0.0002."
    )
    only = run_of(freeze_epochs=0, weights="zoo", weight_decay=0, own="none")
    only.weights_loaded = None
    assert phases.describe(only).endswith(" Weights from zoo. label_smoothing 0.1.")
    (tmp_path / "pre.keras").write_bytes(b"weights")
    loop.params.weights = str(tmp_path / "pre.keras")
    summary = phases.summary(loop)
    every = schedule.rates(loop.plan)
    assert summary["learning_rates"] == pytest.approx([every[2], every[5], every[8], every[11]])
    assert summary["learning_rates_per_step"] == pytest.approx(every.tolist())
    assert summary["learning_rates_step_stride"] == 1
    assert summary["schedule"] == {
        "name": "cosine",
        "warmup_epochs": 1,
        "warmup_asked": "auto",
        "peak": 0.02,
        "floor": pytest.approx(0.0002),
        "fine_tune_lr_factor": 0.5,
        "sentence": schedule.describe(loop.plan, 512, "auto"),
    }
    assert summary["phases"] == {"frozen": [1], "fine_tune": [2, 3, 4]}
    assert summary["weights"] == {
        "source": str(tmp_path / "pre.keras"),
        "sha256": hashlib.sha256(b"weights").hexdigest(),
        "loaded": loop.weights_loaded,
    }
    assert (summary["weight_decay"], summary["label_smoothing"], summary["own"]) == (
        0.05,
        0.1,
        "light",
    )
    constant = phases.summary(
        run_of(freeze_epochs=0, schedule="constant", weights="none", epochs=667)
    )
    assert (
        constant["schedule"]["floor"] is None
        and constant["schedule"]["fine_tune_lr_factor"] is None
    )
    assert (
        constant["phases"] == {"train": list(range(1, 668))}
        and constant["weights"]["sha256"] is None
    )
    assert constant["learning_rates_step_stride"] == 2  # 2001 steps: every 2nd of them, 1001
    assert len(constant["learning_rates_per_step"]) == 1001
