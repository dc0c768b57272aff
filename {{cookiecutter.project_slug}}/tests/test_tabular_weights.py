"""Class weights for rare positives (tasks/tabular/weights.py, issue 44 §3): the balanced weights
from the training split's counts, the refusals, and the train step's weighted loss."""

from __future__ import annotations

import re

import numpy as np
import pytest
import tensorflow as tf

from {{ cookiecutter.package_name }}.artifacts import StepError
from {{ cookiecutter.package_name }}.replica import weighted
from {{ cookiecutter.package_name }}.tasks.tabular import weights
from {{ cookiecutter.package_name }}.train import Params, TrainError, check_values

META = {"classes": ["<=50K", ">50K"], "splits": {"train": {"per_class": [760, 240]}}}


def test_balanced_weights_come_from_the_training_counts() -> None:
    # n / (classes * count): 1000 / (2 * 760) and 1000 / (2 * 240)
    assert weights.balanced([760, 240]) == pytest.approx([0.6579, 2.0833], abs=1e-4)
    assert weights.balanced([5, 0, 5]) == [1.0, 0.0, 1.0]  # the classes with rows


def test_balanced_weighting_says_its_weights_and_the_shares() -> None:
    said = weights.weighting(Params(class_weight="balanced"), META)
    assert said["weights"] == pytest.approx([0.6579, 2.0833], abs=1e-4)
    assert said["sentence"].startswith(
        "class_weight=balanced: weights 0.66 / 2.1 from 76 % / 24 % of the training rows"
    )
    assert weights.weighting(Params(), META) is None  # none: the loss is not weighted


def test_explicit_weights_by_label_keep_one_for_a_class_not_named() -> None:
    said = weights.weighting(Params(class_weight=">50K:3"), META)
    assert said["weights"] == [1.0, 3.0]
    with pytest.raises(StepError, match=r"'>50k', which is no class of this data"):
        weights.weighting(Params(class_weight=">50k:3"), META)


BAD = ["balance", ">50K:0", ">50K:-1", ">50K", ":2", "a:1,a:2", "x:nan"]


@pytest.mark.parametrize("value", BAD)
def test_a_bad_class_weight_is_refused_in_one_sentence(value: str) -> None:
    said = re.escape(f"class_weight={value!r} is not allowed: use none, ")
    with pytest.raises(TrainError, match=f"^{said}"):
        check_values(Params(class_weight=value))


def test_the_weighted_loss_of_a_toy_batch_is_the_hand_computed_one() -> None:
    per_example = tf.constant([0.5, 2.0, 1.0], tf.float16)  # a float16 loss meets float32 weights
    labels = tf.constant([0, 1, 1], tf.int32)
    got = weighted(per_example, labels, [0.25, 4.0]).numpy()
    np.testing.assert_allclose(got, [0.125, 8.0, 4.0])
    soft = tf.constant([[1.0, 0.0], [0.5, 0.5], [0.0, 1.0]])  # mixed labels mix the weights
    np.testing.assert_allclose(weighted(per_example, soft, [0.25, 4.0]).numpy(), [0.125, 4.25, 4.0])


def test_the_command_refuses_a_bad_class_weight_before_tensorflow_loads(tmp_path) -> None:
    """`train -p class_weight=balance` is one sentence and exit status 2, TensorFlow not loaded."""
    import json
    import subprocess
    import sys

    script = (
        "import json, sys\n"
        "from {{ cookiecutter.package_name }}.cli import main\n"
        f"status = main(['train', '--run-dir', {str(tmp_path)!r}, '-p', 'class_weight=balance'])\n"
        "print(json.dumps([status, 'tensorflow' in sys.modules]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert json.loads(done.stdout.strip().splitlines()[-1]) == [2, False], done.stderr[-800:]
    assert "class_weight='balance' is not allowed: use none, balanced" in done.stderr
