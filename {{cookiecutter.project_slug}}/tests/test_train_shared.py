"""Training's task-independent behaviour on the fake task (tests/fake_task.py), in every bake: the
run folder it writes, resuming and refusing to resume, the lineage that keeps a run from resuming
on other data, damaged checkpoints, the command line's exit codes, and (slow) two replicas, two
worker processes and a SIGKILL mid-run.

The `train` command runs in fresh processes where logical CPUs or TF_CONFIG need one (TensorFlow
fixes its devices when it initializes); LAUNCH installs the fake task there first, and the GPUs are
hidden, so the CPU equivalents of the GPU paths run on every machine. What only a real task shows
(the digits' accuracy, a model that takes raw images) stays in the task's own tests.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import fake_task
import keras
import pytest
from helpers import assert_one_sentence

from {{ cookiecutter.package_name }} import cli, data, env, lineage, train
from {{ cookiecutter.package_name }}.train import Params, TrainError, resolve_precision
from {{ cookiecutter.package_name }}.train.state import weights_digest

PACKAGE = "{{ cookiecutter.package_name }}"
PROCESS_TIMEOUT = 300
# `<package> train` in a fresh process, on the fake task: the tests folder is importable there.
LAUNCH = (
    f"import sys; sys.path.insert(0, {str(Path(__file__).parent)!r}); import fake_task; "
    f"fake_task.install(); from {PACKAGE}.cli import main; sys.exit(main(sys.argv[1:]))"
)
pytestmark = pytest.mark.usefixtures("fake_module")


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory, fake_module) -> tuple[Path, dict]:
    """One in-process run with the default parameters, shared by the tests that read it."""
    run = fake_task.write_data(tmp_path_factory.mktemp("default") / "run")
    return run, train_here(run)


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    """A run folder holding the fake task's data/, as a data step leaves it."""
    return fake_task.write_data(tmp_path / "run")


def train_here(run: Path, **values: Any) -> dict[str, Any]:
    """train.run in this process, quietly."""
    return train.run(run, Params(**values), verbose=False)


def cpu_env(**extra: str) -> dict[str, str]:
    """The environment of a training process on the CPU only, without an inherited TF_CONFIG."""
    environment = {k: v for k, v in os.environ.items() if k != "TF_CONFIG"}
    return {**environment, "CUDA_VISIBLE_DEVICES": "", "TF_CPP_MIN_LOG_LEVEL": "2", **extra}


def train_command(run: Path, *params: str, json_out: bool = True) -> list[str]:
    options = [item for param in params for item in ("-p", param)]
    flags = ["--json"] if json_out else []
    return [sys.executable, "-c", LAUNCH, "train", "--run-dir", str(run), *options, *flags]


def run_train(run: Path, *params: str, **extra: str) -> dict[str, Any]:
    done = subprocess.run(
        train_command(run, *params),
        capture_output=True,
        text=True,
        timeout=PROCESS_TIMEOUT,
        env=cpu_env(**extra),
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


def free_ports(count: int) -> list[int]:
    sockets = [socket.socket() for _ in range(count)]
    for sock in sockets:
        sock.bind(("127.0.0.1", 0))
    ports = [sock.getsockname()[1] for sock in sockets]
    for sock in sockets:
        sock.close()
    return ports


def without_timings(history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    timings = (
        "seconds",
        "val_seconds",
        "examples_per_sec",
        "input_wait_seconds",
        "input_wait_fraction",
    )
    return [{k: v for k, v in record.items() if k not in timings} for record in history]


def validation_count(run: Path) -> int:
    return int(data.read_meta(run)["splits"]["validation"]["count"])


def test_check_refuses_a_batch_larger_than_the_training_set(run_dir: Path) -> None:
    """The batch is checked against the data 01_data wrote, before anything is built."""
    count = int(data.read_meta(run_dir)["splits"]["train"]["count"])
    train.check(run_dir, Params(batch_size=count))
    with pytest.raises(TrainError, match=f"batch_size={count + 1} is larger than the {count}"):
        train.check(run_dir, Params(batch_size=count + 1))
    with pytest.raises(TrainError) as error:
        train.run(run_dir, Params(batch_size=count + 1), verbose=False)
    assert_one_sentence(str(error.value))
    assert sorted(path.name for path in run_dir.iterdir()) == ["data"]


# --- one process, in this one ---------------------------------------------------------------


def test_train_json_reports_the_run(trained: tuple[Path, dict]) -> None:
    """metrics/train.json holds what train.run returned: strategy, precision, rates, history."""
    run, metrics = trained
    written = json.loads((run / "metrics" / "train.json").read_text(encoding="utf-8"))
    assert written == json.loads(json.dumps(metrics))
    expected = resolve_precision("auto", env.list_gpus())
    assert metrics["precision"] == expected
    assert metrics["loss_scaling"] is (expected == "mixed_float16")
    assert metrics["global_batch_size"] == 64 and metrics["effective_learning_rate"] == 1e-3
    assert "linear" in metrics["lr_rule"]
    assert metrics["examples_per_sec"] > 0 and metrics["stopped_early"] is False
    assert [record["epoch"] for record in metrics["history"]] == [1, 2, 3, 4, 5]
    assert metrics["epochs_completed"] == 5 and metrics["initial_epoch"] == 0
    assert all(record["val_examples"] == validation_count(run) for record in metrics["history"])
    model = keras.saving.load_model(run / "model.keras")
    assert weights_digest(model.weights) == metrics["weights_sha256"]
    if not env.list_gpus():
        assert metrics["strategy"] == "DefaultDistributionStrategy" and metrics["replicas"] == 1
        assert metrics["jit_compile"] is False


def test_tensorboard_logs_hold_train_and_validation_curves(trained: tuple[Path, dict]) -> None:
    """logs/train and logs/validation hold TensorBoard event files."""
    run, _ = trained
    for split in ("train", "validation"):
        assert list((run / "logs" / split).glob("events.out.tfevents.*")), split


def test_every_value_not_given_is_a_default(trained: tuple[Path, dict]) -> None:
    """With nothing else offering values, every value is a default in train.json: the task's
    default model at 0.001."""
    run, metrics = trained
    assert metrics["parameter_sources"] == dict.fromkeys(metrics["parameters"], "default")
    assert metrics["parameters"]["model"] == fake_task.MODEL
    assert metrics["parameters"]["learning_rate"] == 1e-3


def test_resume_with_other_parameters_is_refused(trained: tuple[Path, dict]) -> None:
    """A run folder whose checkpoints were made with another batch size is refused, untouched."""
    run, _ = trained
    before = (run / "metrics" / "train.json").read_bytes()
    with pytest.raises(TrainError, match="batch_size=64, not batch_size=32") as error:
        train_here(run, batch_size=32)
    assert_one_sentence(str(error.value))
    assert (run / "metrics" / "train.json").read_bytes() == before


def test_a_refusal_to_resume_names_the_value_asked_for_not_the_auto_batch(
    trained: tuple[Path, dict],
) -> None:
    """Checkpoints at batch 64 meet width=64 and batch_size=auto: the width is the cause (a part's
    values added after training were reported as "batch_size=64, not 'auto'", issue 27)."""
    run, _ = trained
    with pytest.raises(TrainError) as error:
        train.check(run, Params(batch_size="auto", width=64))
    message = str(error.value)
    assert "made with width=None, not width=64 (width given)" in message
    assert "batch_size" not in message
    assert_one_sentence(message)


def test_more_epochs_continue_a_finished_run(trained: tuple[Path, dict], tmp_path: Path) -> None:
    """The same folder with a higher epoch count resumes after the last epoch, history whole."""
    run = tmp_path / "more"
    shutil.copytree(trained[0], run)
    metrics = train_here(run, epochs=6)
    assert metrics["initial_epoch"] == 5 and metrics["epochs_completed"] == 6
    assert [record["epoch"] for record in metrics["history"]] == [1, 2, 3, 4, 5, 6]
    assert metrics["history"][:5] == trained[1]["history"]


# --- the command line -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("params", "named"),
    [
        (["model=resnet5"], "model='resnet5'"),
        (["strategy=parallel"], "strategy='parallel'"),
        (["precision=fp16"], "precision='fp16'"),
        (["epochs=0"], "epochs=0"),
        (["learning_rate=0"], "learning_rate=0"),
        (["nonsense=1"], "'nonsense'"),
        (["epochs"], "key=value"),
    ],
)
def test_cli_refuses_bad_parameters_with_exit_2(
    run_dir: Path, params: list[str], named: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """`train -p` with a bad value exits 2 with one sentence, before anything is trained."""
    argv = ["train", "--run-dir", str(run_dir), *[x for p in params for x in ("-p", p)]]
    assert cli.main(argv) == 2
    message = capsys.readouterr().err.strip().removeprefix(f"{PACKAGE}: ")
    assert named in message
    assert_one_sentence(message)
    assert not (run_dir / "checkpoints").exists()


def test_cli_refuses_a_run_folder_without_data(tmp_path: Path, capsys) -> None:
    """A run folder without the data step's output is refused naming the notebook to run."""
    assert cli.main(["train", "--run-dir", str(tmp_path)]) == 2
    assert "01_data" in capsys.readouterr().err


def test_cli_json_prints_the_metrics_alone(run_dir: Path, capsys) -> None:
    """`train --json` prints train.json's content and nothing else on stdout (the baseline's
    starting line was printed before it, so the output did not parse)."""
    argv = ["train", "--run-dir", str(run_dir), "-p", "epochs=1", "-p", "batch_size=16", "--json"]
    assert cli.main(argv) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed == json.loads((run_dir / "metrics" / "train.json").read_text(encoding="utf-8"))


def test_cli_process_exits_2_for_a_batch_the_replicas_cannot_split(run_dir: Path) -> None:
    """A batch of 63 over 2 logical CPUs is refused by the process with exit code 2."""
    command = train_command(run_dir, "strategy=mirrored", "logical_cpus=2", "batch_size=63")
    done = subprocess.run(
        command, capture_output=True, text=True, timeout=PROCESS_TIMEOUT, env=cpu_env()
    )
    assert done.returncode == 2, done.stderr[-3000:]
    message = done.stderr.strip().splitlines()[-1].removeprefix(f"{PACKAGE}: ")
    assert "batch_size=63" in message and "2 replicas" in message
    assert_one_sentence(message)


# --- several replicas, several processes ----------------------------------------------------


@pytest.mark.slow
def test_mirrored_over_two_logical_cpus_trains_two_replicas(run_dir: Path) -> None:
    """strategy=mirrored with logical_cpus=2: 2 replicas of 8 examples, and the loss falls."""
    params = ("strategy=mirrored", "logical_cpus=2", "epochs=3", "batch_size=16")
    metrics = run_train(run_dir, *params)
    assert metrics["strategy"] == "MirroredStrategy" and metrics["replicas"] == 2
    assert metrics["per_replica_batch_size"] == 8 and metrics["devices"]["logical_cpus"] == 2
    losses = [record["loss"] for record in metrics["history"]]
    assert losses[-1] < losses[0], losses
    assert all(r["val_examples"] == validation_count(run_dir) for r in metrics["history"])
    assert (run_dir / "model.keras").is_file() and (run_dir / "metrics" / "train.json").is_file()


@pytest.mark.slow
def test_multi_worker_two_processes_end_with_identical_weights(
    run_dir: Path, tmp_path: Path
) -> None:
    """Two workers on 127.0.0.1 train in sync to bit-identical weights; only the chief writes."""
    workers = [f"127.0.0.1:{port}" for port in free_ports(2)]
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    processes, outputs = [], []
    for index in range(2):
        config = {"cluster": {"worker": workers}, "task": {"type": "worker", "index": index}}
        out, err = tmp_path / f"worker{index}.json", tmp_path / f"worker{index}.log"
        outputs.append((out, err))
        with out.open("w") as stdout, err.open("w") as stderr:
            processes.append(
                subprocess.Popen(
                    train_command(run_dir, "epochs=2", "batch_size=16"),
                    stdout=stdout,
                    stderr=stderr,
                    env=cpu_env(TF_CONFIG=json.dumps(config), TMPDIR=str(scratch)),
                )
            )
    try:
        codes = [process.wait(timeout=PROCESS_TIMEOUT) for process in processes]
    finally:
        for process in processes:
            process.kill()
    logs = "\n".join(err.read_text()[-2000:] for _, err in outputs)
    assert codes == [0, 0], logs
    chief, worker = (json.loads(out.read_text()) for out, _ in outputs)
    for index, metrics in enumerate((chief, worker)):
        assert metrics["strategy"] == "MultiWorkerMirroredStrategy"
        assert metrics["replicas"] == 2 and metrics["workers"] == 2
        assert metrics["task"] == {"type": "worker", "index": index}
        assert metrics["epochs_completed"] == 2
    assert chief["weights_sha256"] == worker["weights_sha256"]
    # Both workers report the same reduced loss and accuracy; only their timings differ.
    assert without_timings(chief["history"]) == without_timings(worker["history"])
    assert all(r["val_examples"] == validation_count(run_dir) for r in chief["history"])
    assert chief["model_path"] == str(run_dir / "model.keras") and worker["model_path"] is None
    saved = keras.saving.load_model(run_dir / "model.keras")
    assert weights_digest(saved.weights) == chief["weights_sha256"]
    assert json.loads((run_dir / "metrics" / "train.json").read_text())["task"]["index"] == 0
    assert (run_dir / "checkpoints" / "ckpt-2.index").is_file()
    assert not list(scratch.glob("worker-checkpoints-*"))  # the worker removed its own


@pytest.mark.slow
def test_sigkill_mid_training_then_rerun_resumes_and_completes(run_dir: Path) -> None:
    """Killed with SIGKILL after epoch 2, the same command resumes and ends at the epoch count."""
    epochs = 40
    params = (f"epochs={epochs}", "patience=0", "batch_size=16")
    with (run_dir.parent / "killed.log").open("w") as log:
        process = subprocess.Popen(
            train_command(run_dir, *params, json_out=False),
            stdout=log,
            stderr=subprocess.STDOUT,
            env=cpu_env(),
        )
    marker = run_dir / "checkpoints" / "ckpt-2.index"
    deadline = time.monotonic() + PROCESS_TIMEOUT
    while not marker.exists() and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    assert process.poll() is None, "training ended before it could be killed"
    process.send_signal(signal.SIGKILL)
    assert process.wait(timeout=60) == -signal.SIGKILL
    assert not (run_dir / "metrics" / "train.json").exists()

    metrics = run_train(run_dir, *params)
    assert metrics["initial_epoch"] >= 1
    assert metrics["epochs_completed"] == epochs
    assert metrics["epochs_run"] == epochs - metrics["initial_epoch"]
    assert [record["epoch"] for record in metrics["history"]] == list(range(1, epochs + 1))
    assert (run_dir / "model.keras").is_file()


# --- lineage: what the run folder was made from ----------------------------------------------


def test_the_model_is_recorded_as_made_from_the_current_data(trained: tuple[Path, dict]) -> None:
    """The ledger says model.keras was made from this data; train.json shows what was read."""
    run, metrics = trained
    data_fp = lineage.fingerprint(run, "data")
    assert data_fp is not None
    assert lineage.made_from(run, "model") == {"data": data_fp}
    assert metrics["lineage"]["reads"]["data"] == data_fp
    assert metrics["lineage"]["writes"] == {"model": lineage.fingerprint(run, "model")}
    assert metrics["restarted_because"] is None


def test_a_training_that_fails_in_its_baseline_leaves_no_model_keras(
    run_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """model.keras is written last, once the test split and the baseline are measured: a run that
    dies there (a table's baseline refused a column) left a model.keras with no training record,
    which 04_export then exported and served (issue 45, the loss)."""
    from {{ cookiecutter.package_name }}.train import evaluate

    def refuse(loop: Any, say: Any) -> dict[str, Any]:
        raise RuntimeError("the baseline died")

    monkeypatch.setattr(evaluate, "test_split", refuse)
    with pytest.raises(RuntimeError, match="the baseline died"):
        train_here(run_dir, epochs=1, batch_size=64)
    assert not (run_dir / "model.keras").exists()
    assert not list(run_dir.glob(".model.keras*"))


def test_checkpoints_made_on_replaced_data_are_set_aside_and_training_starts_over(
    run_dir: Path,
) -> None:
    """01_data re-ran with another split: 03 does not resume (its validation examples may have
    been trained on), says why in one sentence, keeps the old checkpoints and logs aside."""
    train_here(run_dir, epochs=1, patience=0)
    fake_task.write_data(run_dir, seed=7)
    train.check(run_dir, Params(epochs=2))  # not a refusal: run starts over
    metrics = train_here(run_dir, epochs=2, patience=0)
    assert metrics["initial_epoch"] == 0 and metrics["epochs_run"] == 2
    assert [record["epoch"] for record in metrics["history"]] == [1, 2]
    assert metrics["history"][0]["val_examples"] == validation_count(run_dir)
    sentence = metrics["restarted_because"]
    assert "other data (01_data re-ran since)" in sentence and "epoch 0" in sentence
    assert_one_sentence(sentence)
    aside = sorted(path.name for path in run_dir.glob("*.other-data-*"))
    assert [name.split(".")[0] for name in aside] == ["checkpoints", "logs"]
    assert all(name in sentence for name in aside)
    assert (run_dir / aside[0] / "ckpt-1.index").is_file()
    written = json.loads((run_dir / "metrics" / "train.json").read_text(encoding="utf-8"))
    assert written["restarted_because"] == sentence
    assert lineage.made_from(run_dir, "model") == {"data": lineage.fingerprint(run_dir, "data")}
    again = train_here(run_dir, epochs=3, patience=0)  # same data now: resumes
    assert again["initial_epoch"] == 2 and again["restarted_because"] is None


def test_checkpoints_without_a_data_fingerprint_resume_as_before(
    trained: tuple[Path, dict], tmp_path: Path
) -> None:
    """Checkpoints made before the lineage existed record no data: they resume when values match."""
    run = tmp_path / "older"
    shutil.copytree(trained[0], run)
    saved_path = run / "checkpoints" / "params.json"
    saved = json.loads(saved_path.read_text(encoding="utf-8"))
    del saved["data_fingerprint"]
    saved_path.write_text(json.dumps(saved), encoding="utf-8")
    metrics = train_here(run, epochs=6)
    assert metrics["initial_epoch"] == 5 and metrics["restarted_because"] is None


# --- damaged checkpoints: one sentence naming the folder to delete --------------------------


def _truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


DAMAGE = {
    "index file truncated": lambda latest: _truncate(latest.with_suffix(".index")),
    "data file truncated": lambda latest: _truncate(
        next(latest.parent.glob(f"{latest.name}.data-*"))
    ),
    "pointer corrupt": lambda latest: (latest.parent / "checkpoint").write_text("garbage {"),
    "params.json corrupt": lambda latest: (latest.parent / "params.json").write_text("{not"),
    "history.json corrupt": lambda latest: (latest.parent / "history.json").write_text("[{"),
    "history.json missing": lambda latest: (latest.parent / "history.json").unlink(),
}


@pytest.mark.parametrize("damage", DAMAGE)
def test_a_damaged_checkpoint_folder_is_refused_naming_the_folder_to_delete(
    trained: tuple[Path, dict], tmp_path: Path, damage: str
) -> None:
    """A checkpoint cut short or corrupt stops training in one sentence, no traceback, nothing
    written; deleting the named folder lets training start over."""
    run = tmp_path / "damaged"
    shutil.copytree(trained[0], run)
    latest = run / "checkpoints" / Path(trained[1]["checkpoint"]).name
    DAMAGE[damage](latest)
    before = (run / "metrics" / "train.json").read_bytes()
    with pytest.raises(TrainError) as error:
        train_here(run, epochs=6)
    message = str(error.value)
    assert_one_sentence(message)
    assert f"delete {run / 'checkpoints'}" in message or "delete that folder" in message
    assert str(run / "checkpoints") in message
    assert (run / "metrics" / "train.json").read_bytes() == before
