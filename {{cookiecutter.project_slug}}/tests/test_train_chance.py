"""A model that learned nothing is said so, a run that can barely learn says what to change, and
evaluation survives a replica with no examples.

Both were found on two replicas (issue 42, §1.2): a run whose validation accuracy sat at the share
of one class ended "status ok" in the report; and the last validation batch of a split that did
not fill both replicas left one replica an empty batch, on which the CPU's fused convolution
failed (`input depth must be evenly divisible by filter depth: 1 vs 32`). Every task holds these
tests: the verdict reads meta.json's counts (a dict for images and texts, a list for tables), and
the evaluation step is the shared one.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from {{ cookiecutter.package_name }} import seam
from {{ cookiecutter.package_name }}.runner.report import write_report
from {{ cookiecutter.package_name }}.runner.summary import headline, run_status
from {{ cookiecutter.package_name }}.train.chance import verdict
from {{ cookiecutter.package_name }}.train.report import few_steps

TEN = {
    "splits": {
        "validation": {"count": 359, "per_class": {str(i): 36 for i in range(9)} | {"9": 35}}
    }
}
RARE = {"splits": {"validation": {"count": 1000, "per_class": [967, 33]}}}


def test_accuracy_at_the_majority_share_is_chance_and_the_sentence_names_both() -> None:
    found = verdict(TEN, 0.1003)
    assert found["learned"] is False
    assert found["majority_share"] == pytest.approx(36 / 359)
    assert "val_accuracy 0.1003" in found["sentence"] and "0.1003" in found["sentence"]
    assert f"{36 / 359:.4f} of the 359 validation examples" in found["sentence"]


def test_a_model_well_above_the_majority_share_learned() -> None:
    assert verdict(TEN, 0.92) == {
        "majority_share": pytest.approx(36 / 359),
        "examples": 359,
        "threshold": pytest.approx(36 / 359 + 2 * ((36 / 359) * (1 - 36 / 359) / 359) ** 0.5),
        "learned": True,
        "sentence": None,
    }


def test_on_rare_positives_answering_no_to_everyone_is_chance_though_accuracy_is_high() -> None:
    """Tables keep per_class as a list; 0.967 is what answering "no" scores there, and a model
    that ranks the rows well (ROC AUC) learned even where its accuracy barely moves."""
    assert verdict(RARE, 0.9690)["learned"] is False
    assert verdict(RARE, 0.9690, roc_auc=0.55)["learned"] is False
    assert verdict(RARE, 0.9690, roc_auc=0.95)["learned"] is True
    assert verdict(RARE, 0.9900)["learned"] is True


def test_without_counts_or_accuracy_there_is_no_verdict() -> None:
    assert verdict({"splits": {}}, 0.5)["learned"] is None
    assert verdict(TEN, None)["sentence"] is None


def test_an_epoch_of_one_step_says_which_batch_gives_twenty() -> None:
    """Penguins: 276 rows at the default batch of 256 trained one step an epoch and scored 0.79
    against the baselines' 0.97-1.00, without a word (issue 42 §3.5)."""
    said = few_steps(276, 256, 40, 1)
    assert said == (
        f"Few updates: 276 training {seam.noun()} at a global batch of 256 make 1 step(s) an "
        "epoch, 40 in all over 40 epoch(s), and a model learns from the number of its updates: "
        "batch_size=8 gives 34 steps an epoch (batch_size=auto keeps 20 at least), or give more "
        "epochs."
    )


def test_twenty_steps_an_epoch_say_nothing_and_the_batch_suggested_splits_over_replicas() -> None:
    assert few_steps(1438, 70, 2, 2) is None  # the digits at the finder's cap
    assert "batch_size=4 gives" in few_steps(100, 64, 10, 2)
    assert "batch_size=" not in few_steps(30, 2, 10, 2)  # already the smallest the replicas take


def _run(tmp_path: Path, learned: bool) -> tuple[Path, dict]:
    run_dir = tmp_path / "run"
    (run_dir / "metrics").mkdir(parents=True)
    train = {
        "val_accuracy": 0.1003 if not learned else 0.95,
        "epochs_completed": 2,
        "strategy": "MirroredStrategy",
        "replicas": 2,
        "precision": "float32",
        "global_batch_size": 70,
        "chance": verdict(TEN, 0.1003 if not learned else 0.95),
    }
    (run_dir / "metrics" / "train.json").write_text(json.dumps(train), encoding="utf-8")
    record = {"status": "ok", "notebooks": [{"name": "03_train", "status": "ok", "seconds": 3.0}]}
    return run_dir, record


def test_a_run_whose_model_stayed_at_chance_says_so_in_its_headline(tmp_path: Path) -> None:
    lines = headline(*_run(tmp_path, learned=False))
    assert lines[0].startswith("- **03_train**: **stayed at chance**"), lines[0]
    assert lines[-1] == (
        "- **Total**: 3.0 s over 1 notebook(s), status **ok**, but **the model stayed at "
        "chance** (see 03_train)."
    )


def test_the_reports_status_line_and_the_terminals_say_chance_not_ok(tmp_path: Path) -> None:
    run_dir, record = _run(tmp_path, learned=False)
    record |= {"profile": "smoke", "started": "2026-12-06T01:00:00+00:00", "attempts": []}
    assert run_status(record, run_dir) == "ok, but the model stayed at chance"
    assert run_status(record) == "ok"  # without the run folder, the command's own status
    report = write_report(run_dir, record).read_text(encoding="utf-8")
    assert "Status: **ok, but the model stayed at chance**" in report


def test_a_model_that_learned_keeps_a_plain_ok(tmp_path: Path) -> None:
    run_dir, record = _run(tmp_path, learned=True)
    lines = headline(run_dir, record)
    assert "chance" not in "\n".join(lines) and run_status(record, run_dir) == "ok"
    assert lines[-1].endswith("status **ok**.")


# Two logical CPUs, a convolution fused with its ReLU (what Grappler does on a CPU), and a split
# of 5 per-replica batches: the third global step has a batch for replica 0 only.
EMPTY_REPLICA = textwrap.dedent(
    """
    import tensorflow as tf, keras
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
    from {{ cookiecutter.package_name }}.replica import make_eval_step
    from {{ cookiecutter.package_name }}.tasks import current
    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    with strategy.scope():
        model = keras.Sequential([
            keras.Input((8, 8, 1)),
            keras.layers.Conv2D(8, 3, padding="same", activation="relu"),
            keras.layers.Conv2D(8, 3, padding="same", activation="relu"),
            keras.layers.GlobalAveragePooling2D(),
            keras.layers.Dense(3, activation="softmax"),
        ])
    def batches(context):
        images = tf.zeros([9, 8, 8, 1])
        labels = tf.zeros([9], tf.int32)
        return tf.data.Dataset.from_tensor_slices((images, labels)).batch(2)
    step = make_eval_step(strategy, model, current())
    totals = sum(step(b).numpy() for b in strategy.distribute_datasets_from_function(batches))
    print("examples", int(totals[2]))
    """
)


def test_evaluation_counts_every_example_when_a_replica_gets_an_empty_batch() -> None:
    done = subprocess.run(
        [sys.executable, "-c", EMPTY_REPLICA], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "examples 9" in done.stdout, done.stdout
