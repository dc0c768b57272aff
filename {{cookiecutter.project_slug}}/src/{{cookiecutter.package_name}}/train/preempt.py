"""Stop when the cluster says so, and keep the work: SIGTERM (and a warning signal) end training
after the step that is running, with a checkpoint of that step.

Clusters stop jobs with SIGTERM (SLURM at the time limit, on preemption and on `scancel`;
Kubernetes on eviction) and SLURM can warn ahead (`sbatch --signal=B:USR1@120`). The signals in
STOP_SIGNALS_ENV (default SIGTERM, SIGUSR1 and SIGUSR2: deploy/slurm_train.sh forwards either
warning signal) are caught for the length of a training run:

- the handler cannot act inside a step function call (Python runs handlers between bytecodes, and
  one call runs a whole epoch), so the signal is also written to a wakeup file descriptor
  (`signal.set_wakeup_fd`), which a thread reads to set `flag`, a variable every train step reads;
- every replica adds the flag to the numbers it sums across replicas each step, so all workers
  see the same sum after the same step and leave the step loop together (a worker that stopped
  alone would leave the others waiting forever in an all-reduce); no extra collective op;
- the loop then saves a mid-epoch checkpoint (a number of its own, above any epoch's, so a
  failed save never touches the last epoch's checkpoint; epoch counter = epochs completed) and
  beside it INTERRUPTED_FILE: the step within the epoch, the optimizer's iteration count it
  was saved at (a resume uses the file only when the restored count agrees), and the epoch's
  partial sums, so the resumed epoch reports the whole epoch;
- train.json records `interrupted`, and the run ends with Interrupted, whose exit status,
  128 + the signal's number, is what a shell reports for a process the signal ended (143 for
  SIGTERM), so launchers pass it on and Kubernetes' retry rules treat it as retryable.

Under MultiWorkerMirroredStrategy TensorFlow's coordination service installs its own SIGTERM
handler, which only records the notice (so the workers trained on until SIGKILL); installing
ours after the strategy exists replaces it for the run.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

import tensorflow as tf

from ..quiet import PACKAGE
from ..writes import write_json
from .errors import TrainError

if TYPE_CHECKING:
    from .running import Running
    from .state import Checkpoints

STOP_SIGNALS_ENV = f"{PACKAGE.upper()}_STOP_SIGNALS"  # e.g. "TERM USR1"; "none": catch nothing
# USR2 too: slurm_train.sh forwards it (--signal=B:USR2@T), and uncaught it killed the task unsaved
DEFAULT_SIGNALS = "TERM USR1 USR2"
INTERRUPTED_FILE = "interrupted.json"  # inside CHECKPOINT_DIR, beside the checkpoint it describes


class Interrupted(TrainError):
    """Training stopped on a signal after saving its last step; `exit_status` is 128 + signal."""

    def __init__(self, message: str, exit_status: int) -> None:
        super().__init__(message)
        self.exit_status = exit_status


def stop_signals(text: str | None = None) -> list[signal.Signals]:
    """The signals named in STOP_SIGNALS_ENV (or `text`): names with or without SIG, spaces or
    commas between; "none" for none. A name that is not a catchable signal is refused."""
    text = os.environ.get(STOP_SIGNALS_ENV, DEFAULT_SIGNALS) if text is None else text
    names = text.replace(",", " ").split()
    if [name.lower() for name in names] == ["none"]:
        return []
    chosen = []
    for name in names:
        full = name.upper() if name.upper().startswith("SIG") else f"SIG{name.upper()}"
        if full in ("SIGKILL", "SIGSTOP") or not hasattr(signal.Signals, full):
            raise TrainError(
                f"{STOP_SIGNALS_ENV}={text!r} names {name!r}, which is not a signal training "
                "can catch: use names such as TERM, USR1, USR2, INT, or none."
            )
        chosen.append(signal.Signals[full])
    return chosen


class StopRequest:
    """The stop flag the train steps read, and, while entered, the handlers that set it."""

    def __init__(self) -> None:
        self.flag = tf.Variable(0, dtype=tf.int32, trainable=False, name="stop_requested")
        self.received: signal.Signals | None = None
        self._previous: dict[signal.Signals, Any] = {}
        self._pipe: tuple[int, int] | None = None
        self._old_fd = -1
        self._thread: threading.Thread | None = None

    def install(self) -> None:
        """Catch the stop signals until remove(); from the main thread only, where Python runs
        signal handlers (elsewhere, as in a thread of a notebook, training runs without)."""
        signals = stop_signals()
        if not signals or threading.current_thread() is not threading.main_thread():
            return
        read, write = os.pipe()
        os.set_blocking(write, False)
        self._pipe = (read, write)
        self._old_fd = signal.set_wakeup_fd(write, warn_on_full_buffer=False)
        self._thread = threading.Thread(target=self._watch, args=(read,), daemon=True)
        self._thread.start()
        for signum in signals:
            self._previous[signum] = signal.signal(signum, self._handle)

    def remove(self) -> None:
        """Give the signals back to the handlers they had before install()."""
        for signum, previous in self._previous.items():
            signal.signal(signum, signal.SIG_DFL if previous is None else previous)
        self._previous.clear()
        if self._pipe is not None:
            signal.set_wakeup_fd(self._old_fd)
            os.close(self._pipe[1])  # the watcher reads end-of-file and ends
            if self._thread is not None:
                self._thread.join(timeout=5)
            os.close(self._pipe[0])
            self._pipe, self._thread = None, None

    def _handle(self, signum: int, _frame: Any) -> None:
        """The Python-level handler, run between bytecodes: remember the first signal. No
        TensorFlow op here (it would run inside whatever op the main thread was between): the
        watcher sets the flag from the byte the wakeup descriptor got."""
        if self.received is None:
            self.received = signal.Signals(signum)

    def _watch(self, read: int) -> None:
        """Set the flag as soon as one of our signals arrives, even inside a step function call;
        pass every byte on to a wakeup descriptor that was there before ours."""
        while True:
            try:
                data = os.read(read, 64)
            except OSError:
                return
            if not data:
                return
            if self._old_fd >= 0:
                with contextlib.suppress(OSError):
                    os.write(self._old_fd, data)
            ours = [byte for byte in data if byte in self._previous]
            if ours:
                if self.received is None:
                    self.received = signal.Signals(ours[0])
                self.flag.assign(1)


def partial(epoch: int, step: int, sums: list, waited: float, seconds: float) -> dict[str, Any]:
    """An epoch cut short after `step` steps: what INTERRUPTED_FILE keeps of it."""
    return {"epoch": epoch, "step": step, "sums": sums, "waited": waited, "seconds": seconds}


def interrupt(loop: Running, checkpoints: Checkpoints, epoch: int, history: list) -> dict[str, Any]:
    """Save the steps done of epoch `epoch + 1` (every worker saves; the chief writes the
    checkpoint and INTERRUPTED_FILE); the record train.json keeps as `interrupted`."""
    partial = {**loop.partial, "iterations": int(loop.optimizer.iterations.numpy())}
    path = checkpoints.save(epoch, history, mid_epoch=True)
    save(checkpoints.folder, path, partial, chief=loop.role.is_chief)
    received = loop.stop.received  # None: another worker's signal stopped this one
    interrupted = {
        "signal": received.name if received else "another worker's signal",
        "exit_status": 128 + int(received or signal.SIGTERM),
        "epoch": partial["epoch"],
        "step": partial["step"],
        "steps_per_epoch": loop.steps_per_epoch,
        "epochs_completed": epoch,
        "checkpoint": path or str(checkpoints.folder),
    }
    return interrupted  # said once, by the Interrupted that ends the run (train/entry.py)


def save(folder: Path, path: str | None, partial: dict[str, Any], *, chief: bool) -> None:
    """Write INTERRUPTED_FILE beside checkpoint `path`, after it (the chief only): killed in
    between, a resume sees no file and repeats the epoch's steps, never skips any."""
    if chief and path is not None:
        write_json(folder / INTERRUPTED_FILE, {**partial, "checkpoint": Path(path).name})


def clear(folder: Path, *, chief: bool) -> None:
    """Remove INTERRUPTED_FILE once an epoch's checkpoint supersedes it."""
    if chief:
        (folder / INTERRUPTED_FILE).unlink(missing_ok=True)


def resumed(folder: Path, latest: str | None, iterations: int) -> dict[str, Any] | None:
    """The partial epoch saved with checkpoint `latest`, when INTERRUPTED_FILE describes it and
    the restored optimizer's iteration count agrees; else None (resume at the epoch's start)."""
    if latest is None:
        return None
    try:
        partial = json.loads((folder / INTERRUPTED_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    fits = (
        isinstance(partial, dict)
        and partial.get("checkpoint") == Path(latest).name
        and partial.get("iterations") == iterations
        and isinstance(partial.get("step"), int)
    )
    return partial if fits else None


def sentence(interrupted: dict[str, Any]) -> str:
    """What stopped and where the work is, in one sentence."""
    return (
        f"Stopped on {interrupted['signal']} after step {interrupted['step']} of "
        f"{interrupted['steps_per_epoch']} in epoch {interrupted['epoch']}; checkpoint "
        f"{interrupted['checkpoint']} holds it: run train again with the same run_dir and "
        "parameters to resume from that step."
    )


def resume_sentence(partial: dict[str, Any], steps_per_epoch: int) -> str:
    """Where a run resumes mid-epoch, in one sentence."""
    return (
        f"Resuming epoch {partial['epoch']} after step {partial['step']} of {steps_per_epoch}, "
        f"from the checkpoint {partial['checkpoint']} written on a stop signal (the rest of the "
        "epoch reads the training data reshuffled with another seed)."
    )


def barrier(strategy: tf.distribute.Strategy) -> None:
    """Under MultiWorkerMirroredStrategy, wait until every worker gets here: no worker exits
    (and has its launcher end the others) while the chief still writes."""
    if isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy):
        one = tf.constant(1.0)
        values = strategy.experimental_distribute_values_from_function(lambda _: one)
        strategy.reduce(tf.distribute.ReduceOp.SUM, values, axis=None).numpy()
