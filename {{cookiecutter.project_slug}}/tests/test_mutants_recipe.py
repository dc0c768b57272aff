"""The training recipe at the edges that decide what a user gets (`make mutate MUTATE=recipe`):
the learning rate at the thaw and at each epoch's end, the weights a resumed run keeps, the
values the recipe accepts, the stop signals that end a run and the saved step a resume trusts,
the test split's scores, and the crop's pixel levels.

In-process and fast: tiny Keras models, fake runs (SimpleNamespace) where a whole Loop would take
a training run; test_train_recipe.py and test_preempt.py run the real thing.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
from pathlib import Path
from types import SimpleNamespace

import h5py
import keras
import numpy as np
import pytest
import tensorflow as tf

from {{ cookiecutter.package_name }}.data import decode
from {{ cookiecutter.package_name }}.train import TrainError, evaluate, finetune, phases, preempt, schedule
from {{ cookiecutter.package_name }}.train.recipe import check_recipe, make_optimizer

PEAK = 0.016


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
        "weights": "imagenet",
        "epochs": 5,
        "freeze_epochs": 1,
        "unfreeze": "all",
        "fine_tune_lr_factor": 0.1,
        "warmup_epochs": "auto",
        "schedule": "cosine",
        "weight_decay": 0.0,
        "label_smoothing": 0.0,
        "augment": "none",
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
        "weights (a .keras file, or imagenet), or freeze_epochs=0.",
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
        "weights='' is not allowed: use none, imagenet or the path of a .keras or .weights.h5 "
        "file.",
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

    monkeypatch.setattr(finetune, "task", lambda: SimpleNamespace(rebuilt=rebuild))
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
    for weights in ("none", "imagenet"):
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


# --- stop signals and the step a resume trusts ---------------------------------------------------


def watched(received: bytes, ours: tuple[signal.Signals, ...]) -> tuple[preempt.StopRequest, bytes]:
    """The watcher thread's loop, run here on `received` (bytes as the wakeup descriptor gets
    them: one per signal number), with `ours` caught; and what it passed on to the descriptor
    that was there before."""
    request = preempt.StopRequest()
    request._previous = dict.fromkeys(ours, signal.SIG_DFL)
    read, write = os.pipe()
    before_read, before_write = os.pipe()
    os.write(write, received)
    os.close(write)
    request._old_fd = before_write
    try:
        request._watch(read)  # returns at end-of-file
        os.close(before_write)
        with os.fdopen(before_read, "rb") as before:
            passed = before.read()
    finally:
        os.close(read)
    return request, passed


def test_only_the_stop_signals_stop_training_not_any_signal_with_a_python_handler() -> None:
    """The wakeup descriptor gets a byte for every signal with a Python handler (SIGINT's
    KeyboardInterrupt, a library's SIGCHLD): those must not stop the run."""
    other = bytes([signal.SIGINT, signal.SIGCHLD])
    request, passed = watched(other, (signal.SIGTERM, signal.SIGUSR1))
    assert int(request.flag.numpy()) == 0 and request.received is None
    assert passed == other  # still passed on to the descriptor that was there before
    both = bytes([signal.SIGINT, signal.SIGUSR1, signal.SIGTERM])
    request, passed = watched(both, (signal.SIGTERM, signal.SIGUSR1))
    assert int(request.flag.numpy()) == 1 and request.received == signal.SIGUSR1
    assert passed == both


def test_a_broken_earlier_wakeup_descriptor_does_not_end_the_watcher() -> None:
    """The descriptor that was there before ours can fail (its reader gone): the stop signal
    behind the byte it could not take still sets the flag."""
    request = preempt.StopRequest()
    request._previous = {signal.SIGTERM: signal.SIG_DFL}
    read, write = os.pipe()
    gone_read, gone_write = os.pipe()
    os.close(gone_read)  # writing to it raises BrokenPipeError
    os.write(write, bytes([signal.SIGINT, signal.SIGTERM]))
    os.close(write)
    request._old_fd = gone_write
    try:
        request._watch(read)
    finally:
        os.close(read)
        os.close(gone_write)
    assert int(request.flag.numpy()) == 1 and request.received == signal.SIGTERM


def test_an_earlier_wakeup_descriptor_numbered_0_still_gets_every_byte() -> None:
    """Any descriptor from 0 up is a real one (-1 is none): the bytes are passed on."""
    saved = os.dup(0)
    before_read, before_write = os.pipe()
    os.dup2(before_write, 0)
    os.close(before_write)
    request = preempt.StopRequest()
    request._previous = {signal.SIGTERM: signal.SIG_DFL}
    read, write = os.pipe()
    os.write(write, bytes([signal.SIGTERM]))
    os.close(write)
    request._old_fd = 0
    try:
        request._watch(read)
    finally:
        os.close(read)
        os.dup2(saved, 0)
        os.close(saved)
    with os.fdopen(before_read, "rb") as before:
        assert before.read() == bytes([signal.SIGTERM])
    assert int(request.flag.numpy()) == 1


def test_the_stop_signals_come_from_the_environment_or_the_default(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(preempt.STOP_SIGNALS_ENV, "USR2")
    assert preempt.stop_signals() == [signal.SIGUSR2]
    assert preempt.stop_signals("TERM") == [signal.SIGTERM]
    monkeypatch.delenv(preempt.STOP_SIGNALS_ENV)
    assert preempt.stop_signals() == [signal.SIGTERM, signal.SIGUSR1, signal.SIGUSR2]
    for name in ("KILL", "sigkill", "STOP"):
        with pytest.raises(TrainError, match="which is not a signal training can catch"):
            preempt.stop_signals(name)


def test_the_first_stop_signal_is_the_one_remembered() -> None:
    request = preempt.StopRequest()
    request._handle(signal.SIGUSR1, None)
    request._handle(signal.SIGTERM, None)
    assert request.received == signal.SIGUSR1 and int(request.flag.numpy()) == 0


def test_a_signal_training_cannot_catch_is_refused_with_its_sentence() -> None:
    with pytest.raises(TrainError) as refused:
        preempt.stop_signals("TERM, STOP")
    assert str(refused.value) == (
        f"{preempt.STOP_SIGNALS_ENV}='TERM, STOP' names 'STOP', which is not a signal training "
        "can catch: use names such as TERM, USR1, USR2, INT, or none."
    )
    with pytest.raises(TrainError, match="names 'bogus'"):
        preempt.stop_signals("bogus")
    assert preempt.stop_signals("SIGint") == [signal.SIGINT]
    assert preempt.stop_signals(" None ") == []


def interrupted_file(folder: Path, **values) -> None:
    saved = {"epoch": 2, "step": 5, "sums": [1.0, 2.0, 3.0], "waited": 0.5, "seconds": 2.0}
    saved.update(iterations=13, checkpoint="ckpt-100002")
    (folder / preempt.INTERRUPTED_FILE).write_text(json.dumps({**saved, **values}), "utf-8")


def test_a_resume_trusts_interrupted_json_only_when_the_optimizers_count_agrees(
    tmp_path: Path,
) -> None:
    """The checkpoint restored must be the one the file describes, at the iteration count it
    was saved at: else (a later epoch's checkpoint, a save cut short) the epoch starts over."""
    latest = str(tmp_path / "ckpt-100002")
    assert preempt.resumed(tmp_path, latest, 13) is None  # no file
    interrupted_file(tmp_path)
    partial = preempt.resumed(tmp_path, latest, 13)
    assert partial is not None and (partial["step"], partial["epoch"]) == (5, 2)
    assert preempt.resumed(tmp_path, latest, 12) is None
    assert preempt.resumed(tmp_path, latest, 14) is None
    assert preempt.resumed(tmp_path, str(tmp_path / "ckpt-3"), 13) is None
    assert preempt.resumed(tmp_path, None, 13) is None
    interrupted_file(tmp_path, iterations=None)
    assert preempt.resumed(tmp_path, latest, 13) is None
    interrupted_file(tmp_path, step="5")
    assert preempt.resumed(tmp_path, latest, 13) is None
    (tmp_path / preempt.INTERRUPTED_FILE).write_text("[13]", "utf-8")
    assert preempt.resumed(tmp_path, latest, 13) is None
    (tmp_path / preempt.INTERRUPTED_FILE).write_text("{cut", "utf-8")
    assert preempt.resumed(tmp_path, latest, 13) is None


def test_a_stop_saves_the_step_and_the_optimizers_count_beside_its_checkpoint(
    tmp_path: Path,
) -> None:
    saved = []

    class Checkpoints:
        folder = tmp_path

        def save(self, epoch, history, *, mid_epoch=False):
            saved.append((epoch, history, mid_epoch))
            return str(tmp_path / "ckpt-100003") if loop.role.is_chief else None

    loop = SimpleNamespace(
        partial=preempt.partial(3, 7, [1.0, 2.0, 3.0], 0.25, 4.0),
        optimizer=SimpleNamespace(iterations=tf.Variable(27, dtype=tf.int64)),
        role=SimpleNamespace(is_chief=True),
        stop=SimpleNamespace(received=signal.SIGUSR1),
        steps_per_epoch=10,
    )
    record = preempt.interrupt(loop, Checkpoints(), 2, ["h"])
    assert saved == [(2, ["h"], True)]
    assert record == {
        "signal": "SIGUSR1",
        "exit_status": 128 + signal.SIGUSR1,
        "epoch": 3,
        "step": 7,
        "steps_per_epoch": 10,
        "epochs_completed": 2,
        "checkpoint": str(tmp_path / "ckpt-100003"),
    }
    written = json.loads((tmp_path / preempt.INTERRUPTED_FILE).read_text("utf-8"))
    assert written == {
        "epoch": 3,
        "step": 7,
        "sums": [1.0, 2.0, 3.0],
        "waited": 0.25,
        "seconds": 4.0,
        "iterations": 27,
        "checkpoint": "ckpt-100003",
    }
    assert preempt.resumed(tmp_path, str(tmp_path / "ckpt-100003"), 27) == written
    assert preempt.sentence(record) == (
        "Stopped on SIGUSR1 after step 7 of 10 in epoch 3; checkpoint "
        f"{tmp_path / 'ckpt-100003'} holds it: run train again with the same run_dir and "
        "parameters to resume from that step."
    )
    assert preempt.resume_sentence(written, 10) == (
        "Resuming epoch 3 after step 7 of 10, from the checkpoint ckpt-100003 written on a stop "
        "signal (the rest of the epoch reads the training data reshuffled with another seed)."
    )
    preempt.clear(tmp_path, chief=False)
    assert (tmp_path / preempt.INTERRUPTED_FILE).is_file()
    preempt.clear(tmp_path, chief=True)
    assert not (tmp_path / preempt.INTERRUPTED_FILE).exists()
    preempt.clear(tmp_path, chief=True)  # none there: nothing to do

    loop.stop.received, loop.role.is_chief = None, False  # a worker stopped by the chief
    record = preempt.interrupt(loop, Checkpoints(), 2, [])
    assert (record["signal"], record["exit_status"]) == ("another worker's signal", 143)
    assert record["checkpoint"] == str(tmp_path)  # the chief's, in the same folder
    assert not (tmp_path / preempt.INTERRUPTED_FILE).exists()  # only the chief writes it
    preempt.save(tmp_path, None, {"step": 1}, chief=True)  # no checkpoint written: no file
    assert not (tmp_path / preempt.INTERRUPTED_FILE).exists()


# --- the test split ------------------------------------------------------------------------------


def test_macro_f1_is_the_mean_of_the_per_class_f1_not_f1_of_the_mean_precision_and_recall() -> None:
    """a: P 1, R 2/3, F1 0.8; b: P 0.5, R 1, F1 2/3; c: never said nor true (0). Macro F1 is
    (0.8 + 2/3 + 0) / 3 = 0.489; F1 of the macro precision (0.5) and recall (0.556) is 0.526."""
    junk = [np.full(3, 7.0) for _ in range(16)]  # numpy hands these buffers out again
    del junk  # a class never predicted nor present must score 0, not what memory held
    result = evaluate.scores(np.array([0, 0, 0, 1]), np.array([0, 0, 1, 1]), ["a", "b", "c"])
    assert result["test_macro_f1"] == pytest.approx((0.8 + 2 / 3 + 0) / 3)
    assert result["test_per_class"] == {
        "a": {
            "precision": 1.0,
            "recall": pytest.approx(2 / 3),
            "f1": pytest.approx(0.8),
            "support": 3,
        },
        "b": {"precision": 0.5, "recall": 1.0, "f1": pytest.approx(2 / 3), "support": 1},
        "c": {"precision": 0.0, "recall": 0.0, "f1": 0.0, "support": 0},
    }
    assert json.dumps(result["test_confusion_matrix"]) == "[[2, 1, 0], [0, 1, 0], [0, 0, 0]]"
    assert (result["test_accuracy"], result["test_examples"]) == (0.75, 4)
    two = evaluate.scores(np.array([0, 0, 0, 1]), np.array([0, 0, 1, 1]), ["a", "b"])
    assert two["test_macro_f1"] == pytest.approx((0.8 + 2 / 3) / 2)
    exact = evaluate.scores(np.array([0, 1]), np.array([0, 1]), ["a", "b"])  # each said once
    assert exact["test_macro_f1"] == 1.0 and exact["test_per_class"]["a"]["precision"] == 1.0
    half = evaluate.scores(np.array([0, 0, 1, 1]), np.array([0, 1, 0, 1]), ["a", "b"])
    assert half["test_macro_f1"] == 0.5  # precision + recall of 1 each
    empty = evaluate.scores(np.array([], int), np.array([], int), ["a", "b"])
    assert (empty["test_accuracy"], empty["test_examples"]) == (None, 0)


def evaluated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, **values) -> tuple:
    """test_split on a fake task whose model's output depends on `training`: Dropout and
    BatchNorm behave otherwise in training mode, and the test split must see the final model.
    values: the run's global_batch and replicas, the task's baseline and test extras."""
    labels = np.array([0, 1, 1, 0, 1])
    probabilities = np.array([[0.9, 0.1], [0.2, 0.8], [0.6, 0.4], [0.5, 0.5], [1.0, 0.0]])
    asked, said = [], []

    def make_dataset(folder, split, batch, **kwargs):
        assert folder == tmp_path
        asked.append((split, batch, kwargs))
        return [(tf.constant(probabilities[:3]), tf.constant(labels[:3])),
                (tf.constant(probabilities[3:]), tf.constant(labels[3:]))]  # fmt: skip

    def model(inputs, training):
        return tf.reverse(inputs, [1]) if training else inputs  # training mode: all wrong

    def test_extras(folder, split, truth, probs, classes, predict):
        assert (folder, split, classes) == (tmp_path, "test", ["a", "1"])
        np.testing.assert_array_equal(truth, labels)
        np.testing.assert_array_equal(probs, probabilities)
        again, predicted = predict("validation")  # the task predicts other splits through it
        np.testing.assert_array_equal(again, labels)
        np.testing.assert_array_equal(predicted, probabilities)
        return values.get("extras", {"extra": split})

    fake = SimpleNamespace(
        make_dataset=make_dataset,
        test_extras=test_extras,
        baseline=lambda folder: values.get("baseline") if folder == tmp_path else "elsewhere",
        NOUN="images",
    )
    monkeypatch.setattr(evaluate, "task", lambda: fake)
    loop = SimpleNamespace(
        folder=tmp_path,
        meta={"splits": {"train": 8, "test": 5}, "classes": ["a", 1]},
        global_batch=values.get("global_batch", 12),
        replicas=values.get("replicas", 3),
        model=model,
    )
    return evaluate.test_split(loop, said.append), asked, said


def test_the_test_split_is_scored_by_the_model_in_inference_mode(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One replica's batch (the model runs outside the strategy, on one device), in inference
    mode; the loss of a true class given probability 0 is -log(1e-7), not infinite."""
    result, asked, said = evaluated(tmp_path, monkeypatch)
    kwargs = {"training": False, "cache": False}
    assert asked == [("test", 4, kwargs), ("validation", 4, kwargs)]
    assert result["test_accuracy"] == 0.6 and result["test_examples"] == 5
    assert result["test_confusion_matrix"] == [[2, 0], [2, 1]]
    picked = [0.9, 0.8, 0.4, 0.5, 1e-7]
    assert result["test_loss"] == pytest.approx(float(np.mean(-np.log(picked))))
    assert list(result["test_per_class"]) == ["a", "1"]
    assert result["extra"] == "test" and result["baseline"] is None
    assert said == [
        "Test split (5 images, evaluated once, after training): accuracy 0.6000, macro F1 "
        f"{result['test_macro_f1']:.4f}."
    ]
    for global_batch, replicas, batch in ((12, 1, 12), (2, 3, 1)):
        _, asked, _ = evaluated(tmp_path, monkeypatch, global_batch=global_batch, replicas=replicas)
        assert [size for _, size, _ in asked] == [batch, batch]
        assert all(type(size) is int for _, size, _ in asked)  # a batch of 4.0 is refused


def test_the_test_split_names_its_roc_auc_and_the_baselines(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    other = {"name": "forest", "seconds": 3.4, "test_accuracy": 0.5, "roc_auc": 0.61}
    baseline = {"name": "logistic", "seconds": 1.6, "test_accuracy": 0.75, "test_macro_f1": 0.7,
                "others": [other]}  # fmt: skip
    extras = {"test_roc_auc": 0.9}
    result, _, said = evaluated(tmp_path, monkeypatch, baseline=baseline, extras=extras)
    assert result["baseline"] == baseline and result["test_roc_auc"] == 0.9
    assert said[0].endswith(f"macro F1 {result['test_macro_f1']:.4f}, ROC AUC 0.9000.")
    assert said[1:] == [
        "Baseline logistic (scikit-learn, same split, 2 s): test accuracy 0.7500, macro F1 0.7000.",
        "Baseline forest (scikit-learn, same split, 3 s): test accuracy 0.5000, ROC AUC 0.6100.",
    ]
    alone = {"name": "logistic", "seconds": 1.0, "test_accuracy": 0.5}  # no others
    _, _, said = evaluated(tmp_path, monkeypatch, baseline=alone)
    assert said[1:] == ["Baseline logistic (scikit-learn, same split, 1 s): test accuracy 0.5000."]
    loop = SimpleNamespace(meta={"splits": {"train": 8, "validation": 2}})
    assert evaluate.test_split(loop, said.append) == {"test_accuracy": None}


# --- the crop's pixels ---------------------------------------------------------------------------


def test_a_training_crop_rounds_its_resized_pixels_as_serving_does(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Truncating would make every cropped image half a level darker than the same photo
    resized for serving (its resize rounds)."""
    image = np.zeros((32, 24, 3), np.uint8)
    jpeg = tf.io.encode_jpeg(tf.constant(image))
    levels = tf.constant([-3.0, 0.4, 0.6, 99.5, 100.5, 127.7, 254.4, 254.6, 300.0])
    resized = []

    def resize(images, size, method, antialias):
        resized.append((images.shape.as_list(), size, method, antialias))
        return tf.reshape(tf.tile(levels, [8 * 2]), [*size, 3])

    monkeypatch.setattr(tf.image, "resize", resize)
    crop = decode.random_crop_record((8, 6, 3))
    cropped, label = crop(jpeg, tf.constant(4), tf.constant([1, 2], tf.int64))
    assert int(label) == 4 and cropped.dtype == tf.uint8 and cropped.shape == (8, 6, 3)
    assert cropped.numpy().reshape(-1)[:9].tolist() == [0, 0, 1, 100, 100, 128, 254, 255, 255]
    ((shape, size, method, antialias),) = resized
    assert size == [8, 6] and method == "bilinear" and antialias is True
    height, width, channels = shape
    area = height * width / (32 * 24)
    assert channels == 3 and decode.CROP_AREA[0] - 0.05 <= area <= 1.0
    assert 3 / 4 - 0.1 <= width / height <= 4 / 3 + 0.1


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
        "augment": "light",
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
        {"global_batch": 512, "loss_scaling": True, "jit": False, "timed": True,
         "augment": "augmenter", "label_smoothing": 0.1, "num_classes": 7, "stop": "flag"},
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
        "then unfreeze=2. AdamW weight_decay 0.05, label_smoothing 0.1, augment=light on the "
        "device."
    )
    plain = run_of(
        freeze_epochs=0, weights="none", weight_decay=0, label_smoothing=0, augment="none"
    )
    plain.weights_loaded = None
    assert phases.describe(plain) == (
        "Learning rate: warmup over 1 epoch(s) from 0.0002 to 0.02 (warmup_epochs=auto: the global "
        "batch 512 exceeds 256), then cosine decay to 0.0002."
    )
    only = run_of(freeze_epochs=0, weights="imagenet", weight_decay=0, augment="none")
    only.weights_loaded = None
    assert phases.describe(only).endswith(" Weights from imagenet. label_smoothing 0.1.")
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
    assert (summary["weight_decay"], summary["label_smoothing"], summary["augment"]) == (
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


def test_a_training_crop_is_a_window_of_the_photo_of_the_area_and_aspect_asked_for(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """40 crops of a 48x64 JPEG of noise: each the photo's own window (as a whole decode, then
    the slice, resized and rounded, gives it), of 35 % to all of its area, 3:4 to 4:3, spread
    over both ranges; the channels the model takes, and a static shape for tf.data."""
    rng = np.random.default_rng(3)
    jpeg = tf.io.encode_jpeg(tf.constant(rng.integers(0, 255, (48, 64, 3)), tf.uint8))
    whole = tf.io.decode_jpeg(jpeg, channels=3)
    sample = tf.image.stateless_sample_distorted_bounding_box
    windows = []

    def recorded(*args, **kwargs):
        begin, size, box = sample(*args, **kwargs)
        windows.append((begin.numpy().tolist(), size.numpy().tolist()))
        return begin, size, box

    monkeypatch.setattr(tf.image, "stateless_sample_distorted_bounding_box", recorded)
    crop = decode.random_crop_record((8, 6, 3))
    areas, aspects = [], []
    for seed in range(40):
        cropped, _ = crop(jpeg, tf.constant(0), tf.constant([seed, 7], tf.int64))
        (top, left, _), (height, width, _) = windows[-1]
        part = whole[top : top + height, left : left + width]
        expected = tf.image.resize(part, (8, 6), method="bilinear", antialias=True)
        expected = tf.cast(tf.clip_by_value(tf.round(expected), 0, 255), tf.uint8)
        # decoding only the window's blocks upsamples colour at its edges a level apart
        differ = np.abs(cropped.numpy().astype(int) - expected.numpy().astype(int))
        assert differ.max() <= 2 and differ.mean() < 0.2, differ.max()  # another window: ~80
        areas.append(height * width / (48 * 64))
        aspects.append(width / height)
    assert 0.35 - 0.02 <= min(areas) < 0.5 and 0.85 < max(areas) <= 1.0, areas
    assert 0.75 - 0.03 <= min(aspects) < 0.85 and 1.2 < max(aspects) <= 4 / 3 + 0.03, aspects
    monkeypatch.undo()
    grey, _ = decode.random_crop_record((8, 6, 1))(jpeg, tf.constant(0), tf.constant([1, 2]))
    assert grey.shape == (8, 6, 1)
    traced = tf.data.Dataset.from_tensors((jpeg, tf.constant(0), tf.constant([1, 2], tf.int64)))
    assert traced.map(crop).element_spec[0].shape == (8, 6, 3)
