"""Stop signals at the edges that decide what a user gets (`make mutate MUTATE=recipe`): which
signals stop training, what a stop saves, and when a resume trusts the step it saved.

In-process and fast: the watcher thread's loop on a pipe, fake runs; test_preempt.py sends real
signals to real training.
"""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path
from types import SimpleNamespace

import pytest
import tensorflow as tf

from {{ cookiecutter.package_name }}.train import TrainError, preempt

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
