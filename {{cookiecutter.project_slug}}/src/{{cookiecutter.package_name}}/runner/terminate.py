"""SIGTERM to the runner reaches the notebook's kernel, and the attempt is recorded as interrupted.

A cluster or a container runtime stops the runner with SIGTERM. By default it would die at once,
leaving run.json saying `running` and the kernel, a separate process, training on. While a
notebook runs, the runner instead passes SIGTERM on to its kernel: training there finishes its
step and saves it (train/preempt.py) and the cell ends with that sentence; in any other cell the
kernel simply ends. The runner then records the attempt as interrupted and stops the chain with
Terminated, whose exit status is 143 (128 + SIGTERM), as if the signal had ended it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from typing import Any

from jupyter_client.manager import AsyncKernelManager


class Terminated(KeyboardInterrupt):
    """SIGTERM stopped the run; run.json records the attempt as interrupted."""

    exit_status = 128 + signal.SIGTERM


_RECEIVED = threading.Event()  # once set, no further notebook starts in this process


class ForwardTerm:
    """While entered (from the main thread), SIGTERM is passed on to the kernels in `kernels`."""

    def __init__(self) -> None:
        self.kernels: list[AsyncKernelManager] = []
        self._previous: Any = None
        self._installed = False

    @property
    def received(self) -> bool:
        return _RECEIVED.is_set()

    def __enter__(self) -> ForwardTerm:
        if self.received:
            raise Terminated("SIGTERM received before this notebook started")
        if threading.current_thread() is threading.main_thread():
            self._previous = signal.signal(signal.SIGTERM, self._handle)
            self._installed = True
        return self

    def __exit__(self, *_: Any) -> None:
        if self._installed:
            previous = signal.SIG_DFL if self._previous is None else self._previous
            signal.signal(signal.SIGTERM, previous)
            self._installed = False

    def _handle(self, _signum: int, _frame: Any) -> None:
        _RECEIVED.set()
        for manager in self.kernels:
            pid = getattr(manager.provisioner, "pid", None)
            if pid:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGTERM)


def reset() -> None:
    """Forget a SIGTERM received earlier (tests run several chains in one process)."""
    _RECEIVED.clear()
