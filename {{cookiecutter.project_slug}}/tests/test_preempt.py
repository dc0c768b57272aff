"""A stop signal ends training after the running step with a checkpoint of it (train/preempt.py).

A real `<package> train` process gets SIGTERM mid-epoch, as a cluster sends it on preemption,
eviction or scancel; the next `train` resumes after the step it saved. tests/test_slurm.py does
the same with two workers under a real SLURM.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers import assert_one_sentence
from test_runner import one_notebook_project, start_run
from test_runner_records import alive, one_line_error, record_of

from {{ cookiecutter.package_name }}.progress import MARK
from {{ cookiecutter.package_name }}.train import TrainError, preempt

PACKAGE = "{{ cookiecutter.package_name }}"


def test_stop_signals_are_read_from_the_environment_and_refused_in_one_sentence() -> None:
    """TERM and USR1 by default; names with or without SIG, any case; none; KILL is refused."""
    assert preempt.stop_signals("TERM USR1") == [signal.SIGTERM, signal.SIGUSR1]
    assert preempt.stop_signals("sigusr2,term") == [signal.SIGUSR2, signal.SIGTERM]
    assert preempt.stop_signals("none") == []
    with pytest.raises(TrainError) as refused:
        preempt.stop_signals("TERM KILL")
    assert preempt.STOP_SIGNALS_ENV in str(refused.value) and "'KILL'" in str(refused.value)
    assert_one_sentence(str(refused.value))


def train(run: Path, *params: str) -> subprocess.Popen:
    """`<package> train` in its own process, its output in run/../train-<n>.log."""
    environment = {**os.environ, "CUDA_VISIBLE_DEVICES": "", "TF_CPP_MIN_LOG_LEVEL": "2"}
    log = run.parent / f"train-{len(list(run.parent.glob('train-*.log')))}.log"
    command = [sys.executable, "-m", PACKAGE, "train", "--run-dir", str(run)]
    for param in params:
        command += ["-p", param]
    with log.open("w") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=environment)
    process.log = log  # type: ignore[attr-defined]
    return process


def test_the_flag_is_set_by_the_watcher_thread_not_in_the_signal_handler(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A real SIGUSR1 to this process sets the flag through the wakeup descriptor's watcher;
    the Python handler only remembers the signal (it ran a TensorFlow op between bytecodes)."""
    monkeypatch.setenv(preempt.STOP_SIGNALS_ENV, "USR1")
    request = preempt.StopRequest()
    flag, assigned = request.flag, []
    request.flag = type("Flag", (), {"assign": lambda self, value: assigned.append(value)})()
    request._handle(signal.SIGUSR1, None)
    assert request.received == signal.SIGUSR1 and assigned == []
    request.flag, request.received = flag, None
    request.install()
    try:
        os.kill(os.getpid(), signal.SIGUSR1)
        deadline = time.monotonic() + 10
        while int(request.flag.numpy()) == 0 and time.monotonic() < deadline:
            time.sleep(0.01)
    finally:
        request.remove()
    assert int(request.flag.numpy()) == 1 and request.received == signal.SIGUSR1


def test_every_warning_signal_the_slurm_script_forwards_is_a_default_stop_signal(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """slurm_train.sh traps USR1 and USR2 and passes them to the tasks: uncaught, USR2's default
    action ended a task without its checkpoint."""
    monkeypatch.delenv(preempt.STOP_SIGNALS_ENV, raising=False)
    script = (Path(__file__).parents[1] / "deploy" / "slurm_train.sh").read_text(encoding="utf-8")
    forwarded = re.findall(r"^trap 'forward (\w+)' ", script, re.MULTILINE)
    assert forwarded == ["USR1", "USR2"]
    caught = preempt.stop_signals()
    assert signal.SIGTERM in caught
    assert all(signal.Signals[f"SIG{name}"] in caught for name in forwarded), caught


def test_a_stop_is_said_once_and_no_input_verdict_follows_it(
    fake_run: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """SIGTERM as training starts: the stop sentence is said once, by the Interrupted that ends
    the command, and no 'No training step ran in this call' follows 'Stopped … after step N'
    (both were printed, and the stop sentence twice)."""
    from {{ cookiecutter.package_name }} import train

    def install(self: preempt.StopRequest) -> None:  # as if SIGTERM came before the first step
        self.received = signal.SIGTERM
        self.flag.assign(1)

    monkeypatch.setattr(preempt.StopRequest, "install", install)
    with pytest.raises(preempt.Interrupted) as stopped:
        train.run(fake_run, train.Params(model="dense", epochs=2, batch_size=16), verbose=True)
    said = capsys.readouterr().out
    assert re.match(r"Stopped on SIGTERM after step \d+ of \d+ in epoch 1;", str(stopped.value))
    assert "Stopped on" not in said, said
    assert "No training step ran" not in said, said
    metrics = json.loads((fake_run / "metrics" / "train.json").read_text(encoding="utf-8"))
    assert metrics["interrupted"]["step"] >= 1 and metrics["input_wait_epochs"] == 0


def test_a_run_that_ends_normally_waits_at_the_barrier_after_the_chiefs_writes(
    fake_run: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every worker meets at the barrier once the chief has written model.keras and train.json,
    on a normal end too (only a stopped run waited: workers exited while the chief still wrote).
    The barrier's all-reduce itself runs under MultiWorkerMirroredStrategy in test_slurm."""
    from {{ cookiecutter.package_name }} import train

    met = []

    def barrier(strategy: object) -> None:
        written = (fake_run / "model.keras").is_file(), (fake_run / "metrics/train.json").is_file()
        met.append((strategy, written))

    monkeypatch.setattr(preempt, "barrier", barrier)
    train.run(fake_run, train.Params(model="dense", epochs=1, batch_size=16), verbose=False)
    assert [written for _, written in met] == [(True, True)]


@pytest.mark.slow
def test_sigterm_mid_epoch_saves_the_last_step_and_the_next_train_resumes_there(
    run_dir: Path,
) -> None:
    """Two replicas (Mirrored over logical CPUs), 4 images a step: SIGTERM once the first epoch
    is done ends the process with 143 after the step that was running; train.json says where,
    and the checkpoint holds that step. The next train runs exactly the epoch's steps left: the
    optimizer's step count comes out at epochs x steps per epoch, none lost or run twice."""
    params = ["batch_size=4", "logical_cpus=2", "patience=0", "width=32"]
    first = train(run_dir, "epochs=100", *params)
    # Epoch 1's result line is printed after its checkpoint, just before epoch 2's first step:
    # a signal from then on stops after a step of epoch 2 (a step runs before the flag is read),
    # however slow the machine. "Epoch 1/" alone also matches the progress lines printed every
    # 10 s during epoch 1, and a fixed sleep after one of them guesses at the machine's speed.
    deadline = time.monotonic() + 300
    result = re.compile(rf"^({re.escape(MARK)})?Epoch 1/100: loss ", re.MULTILINE)
    while not result.search(first.log.read_text()):
        assert first.poll() is None and time.monotonic() < deadline, first.log.read_text()
        time.sleep(0.1)
    first.send_signal(signal.SIGTERM)
    signalled = time.monotonic()
    status = first.wait(timeout=120)
    print(f"train exited with {status} {time.monotonic() - signalled:.1f} s after SIGTERM")
    text = first.log.read_text()
    assert status == 128 + signal.SIGTERM, text
    metrics = json.loads((run_dir / "metrics" / "train.json").read_text(encoding="utf-8"))
    stopped = metrics["interrupted"]
    assert stopped["signal"] == "SIGTERM" and stopped["epoch"] >= 2, stopped
    steps_per_epoch = stopped["steps_per_epoch"]
    assert 1 <= stopped["step"] < steps_per_epoch
    assert f"Stopped on SIGTERM after step {stopped['step']} of {steps_per_epoch}" in text
    assert text.count("Stopped on SIGTERM") == 1, text  # said once, by the command
    assert (run_dir / "checkpoints" / preempt.INTERRUPTED_FILE).is_file()
    assert not (run_dir / "model.keras").exists()  # an unfinished run writes no model

    epoch = stopped["epoch"]
    second = train(run_dir, f"epochs={epoch}", *params)
    assert second.wait(timeout=300) == 0, second.log.read_text()
    metrics = json.loads((run_dir / "metrics" / "train.json").read_text(encoding="utf-8"))
    assert metrics["interrupted"] is None
    assert (metrics["initial_epoch"], metrics["resumed_at_step"]) == (epoch - 1, stopped["step"])
    assert [record["epoch"] for record in metrics["history"]] == list(range(1, epoch + 1))
    assert metrics["history"][-1]["examples"] == steps_per_epoch * 4  # the whole epoch counted
    assert metrics["optimizer_steps"] == epoch * steps_per_epoch
    assert not (run_dir / "checkpoints" / preempt.INTERRUPTED_FILE).exists()
    print(
        f"stopped after step {stopped['step']} of {steps_per_epoch} in epoch {epoch}; resumed "
        f"with step {stopped['step'] + 1}: {metrics['optimizer_steps']} steps in all"
    )


def test_sigterm_to_the_runner_reaches_the_kernel_and_records_the_attempt_interrupted(
    tmp_path: Path,
) -> None:
    """SIGTERM to `<package> run` during a notebook: the kernel gets it too (its cell, standing in
    for training, finishes its work and stops), run.json records the attempt as interrupted,
    and the runner exits 143, one line and no traceback."""
    project = one_notebook_project(
        tmp_path / "project",
        "00_train",
        "stops on SIGTERM",
        "import os, signal, time\nfrom pathlib import Path\n"
        "told = []\nsignal.signal(signal.SIGTERM, lambda *_: told.append(1))\n"
        "Path(run_dir, 'kernel.pid').write_text(str(os.getpid()))\n"
        "while not told:\n    time.sleep(0.05)\n"
        "Path(run_dir, 'saved').write_text('the last step')\n"
        "raise RuntimeError('stopped on SIGTERM after saving')",
    )
    run_dir = tmp_path / "run"
    pid_file = run_dir / "kernel.pid"
    process = start_run(project, run_dir)
    try:
        process.send_signal(signal.SIGTERM)
        stdout, stderr = process.communicate(timeout=300)  # a safety net: a busy machine is slow
    finally:
        process.kill()
    assert process.returncode == 128 + signal.SIGTERM, stdout + stderr
    assert (run_dir / "saved").read_text() == "the last step"  # the kernel was told, and saved
    message = one_line_error(stderr)
    assert "interrupted during 00_train" in message
    record = record_of(run_dir)
    assert record["status"] == "interrupted"
    (attempt,) = record["attempts"]
    assert attempt["status"] == "interrupted" and attempt["error"]["ename"] == "Terminated"
    assert "stopped on SIGTERM after saving" in attempt["error"]["evalue"]
    kernel = int(pid_file.read_text())
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and alive(kernel):
        time.sleep(0.2)
    assert not alive(kernel), "the kernel outlived the run"
