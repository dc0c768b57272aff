"""The notebooks' kernels: the project's quiet kernel, and the next one started ahead.

Every notebook of a run gets a fresh kernel. Loading TensorFlow in it is most of its first cell
(5-7 s on a 2-core CPU, more under load), so while one notebook runs, the runner starts the next
notebook's kernel (`Ahead`), which loads TensorFlow and Keras in a low-priority thread
(kernel.PRELOAD_ENV, see kernel.py); papermill then runs the notebook on that kernel. The kernel
is the one the notebook would have had: same spec, folder, environment and log; only the import
has happened earlier.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any, BinaryIO

from jupyter_client.manager import AsyncKernelManager
from jupyter_core.utils import ensure_event_loop, run_sync

from .. import kernel, progress, quiet

KERNEL = "python3"


def kernel_manager(stderr: BinaryIO, started: list) -> type[AsyncKernelManager]:
    """A kernel manager class (nbclient's kernel_manager_class): the project's quiet kernel
    (kernel.py, whatever python3 spec is installed), writing its own stderr to `stderr`; each
    manager whose kernel started is added to `started`."""

    class KernelManager(AsyncKernelManager):
        def format_kernel_cmd(self, extra_arguments: list[str] | None = None) -> list[str]:
            command = super().format_kernel_cmd(extra_arguments)
            if "ipykernel_launcher" in command:  # ipykernel's own spec: use ours in its place
                at = command.index("ipykernel_launcher")
                command[at] = f"{kernel.PACKAGE}.kernel"
            return command

        async def start_kernel(self, **kw: Any) -> None:  # kw ends up in subprocess.Popen
            env = quiet.quiet_env(kw.get("env") or dict(os.environ))
            env.setdefault(progress.PROGRESS_ENV, "lines")  # the runner forwards whole lines
            await super().start_kernel(**{**kw, "stderr": stderr, "env": env})
            started.append(self)

    return KernelManager


class Ahead:
    """The kernel of `notebook`, started now and loading TensorFlow until its notebook runs.

    Its stderr goes to `log` (the notebook's kernel log); log=None (the first notebook's kernel,
    started while the checks run, before the run folder may be made) to a temporary file, copied
    to the log named by `log_to` when the kernel closes. Hand `manager` to papermill (its `km`):
    papermill leaves a kernel it did not start running, so `close()` stops it, as soon as its
    notebook ends or when the run stops before that notebook.
    """

    def __init__(self, notebook: str, log: Path | None, cwd: Path) -> None:
        self.notebook = notebook
        self.copy_to: Path | None = None
        if log is None:
            self.log: BinaryIO = tempfile.TemporaryFile()  # noqa: SIM115  (closed by close())
        else:
            log.parent.mkdir(parents=True, exist_ok=True)
            self.log = log.open("ab")
        self.started: list[AsyncKernelManager] = []
        self.manager = kernel_manager(self.log, self.started)(kernel_name=KERNEL)
        try:
            env = {**os.environ, kernel.PRELOAD_ENV: "1"}
            run_sync(self.manager.start_kernel)(cwd=str(cwd), env=env)
        except BaseException:
            self.close()
            raise

    def log_to(self, log: Path) -> None:
        """The kernel log that a kernel started with log=None is copied to when it closes."""
        self.copy_to = log

    def close(self) -> None:
        """Stop the kernel at once (every file a step writes is complete when its cell
        returns) and release its ports and log. Safe to call twice."""
        # What an interrupted notebook left waiting in the loop (nbclient's reply and pulse
        # polls) would wake while the kernel stops and log "Kernel died while waiting …".
        for task in asyncio.all_tasks(ensure_event_loop()):
            task.cancel()
        try:
            if self.started and run_sync(self.manager.is_alive)():
                run_sync(self.manager.shutdown_kernel)(now=True)
        except RuntimeError as error:  # "No kernel is running!": it ended on its own
            if "No kernel is running" not in str(error):
                raise
        finally:
            with contextlib.suppress(Exception):
                run_sync(self.manager.cleanup_resources)()
            self.started.clear()
            if self.copy_to is not None and not self.log.closed:  # the kernel has ended
                self.log.seek(0)
                self.copy_to.parent.mkdir(parents=True, exist_ok=True)
                with self.copy_to.open("ab") as log:
                    shutil.copyfileobj(self.log, log)
            self.log.close()
