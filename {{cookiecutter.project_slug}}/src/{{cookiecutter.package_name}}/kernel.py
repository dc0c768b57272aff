"""The notebooks' Jupyter kernel: ipykernel, loading TensorFlow quietly when a cell first needs it.

TensorFlow prints its load-time lines before any log level applies (see quiet.py). Before a cell
that imports tensorflow, keras or this package runs, and TensorFlow is not loaded yet, this kernel
loads it with those lines dropped (quiet.import_tensorflow), so they never become a red block
under the cell; the cell's own `import tensorflow` then finds it loaded. The load still happens
in that cell, so its time is where a reader expects it, under a moving "Loading TensorFlow" bar
(a line every few seconds where the runner reads it) and one line saying how long it took.

    python -m <package>.kernel -f CONNECTION_FILE   # what Jupyter runs (the kernel spec's argv)
    python -m <package>.kernel install              # make it this environment's python3 kernel

`make setup` runs `install`: the kernel spec keeps the name python3 the notebooks ask for, in this
virtual environment only. With <PACKAGE>_VERBOSE=1 nothing is quieted.

A kernel ends with the process that started it (the runner, JupyterLab's server): on Linux it asks
for SIGTERM at that moment (prctl PR_SET_PDEATHSIG, die_with_parent), so a runner killed with
SIGKILL does not leave its kernel finishing an export or an epoch that nothing will record.
ipykernel's own parent poller would also end it, but only from a thread, once a second, and not
while a cell holds the GIL; SIGTERM is what a preempted training saves its step on.
"""

from __future__ import annotations

import ctypes
import importlib.util
import json
import os
import re
import signal
import sys
import tempfile
from pathlib import Path

from . import progress, quiet

PACKAGE = quiet.PACKAGE
KERNEL_NAME = "python3"
# A cell importing one of these loads TensorFlow (comments and strings naming them do not count).
PR_SET_PDEATHSIG = 1  # linux/prctl.h
NEEDS_TENSORFLOW = re.compile(rf"^\s*(?:import|from)\s+(?:tensorflow|keras|{PACKAGE})\b", re.M)


def argv(python: str | None = None) -> list[str]:
    """The command Jupyter runs for this kernel."""
    return [python or sys.executable, "-m", f"{PACKAGE}.kernel", "-f", "{connection_file}"]


def install(prefix: str | None = None) -> Path:
    """Install the kernel spec as `python3` under prefix (default: this environment)."""
    from jupyter_client.kernelspec import KernelSpecManager

    spec = {
        "argv": argv(),
        "display_name": f"Python 3 ({PACKAGE})",
        "language": "python",
        "metadata": {"debugger": True, "supported_encryption": ["curve"]},
        "kernel_protocol_version": "5.5",
    }
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "kernel.json").write_text(json.dumps(spec, indent=1), encoding="utf-8")
        where = KernelSpecManager().install_kernel_spec(
            folder, KERNEL_NAME, prefix=prefix or sys.prefix
        )
    return Path(where)


def main(args: list[str]) -> None:
    if args[:1] == ["install"]:
        print(f"Kernel spec {KERNEL_NAME} ({PACKAGE}, quiet TensorFlow) installed in {install()}")
        return
    from ipykernel.kernelapp import IPKernelApp

    die_with_parent()
    quiet.setup()
    app = IPKernelApp.instance()
    app.initialize(args)
    if not quiet.verbose():
        app.shell.events.register("pre_run_cell", _before_cell)
    app.start()


def die_with_parent() -> bool:
    """Linux: SIGTERM to this process when the Jupyter client that started it ends, however it
    ends (prctl PR_SET_PDEATHSIG). Only for a kernel whose parent is that client (JPY_PARENT_PID,
    which jupyter_client sets, names the parent); True when the request is in place."""
    parent = os.environ.get("JPY_PARENT_PID", "")
    if not sys.platform.startswith("linux") or not parent.isdigit():
        return False
    if int(parent) != os.getppid():
        return False  # started through a wrapper, or the client has already gone
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0) != 0:
            return False
    except (OSError, AttributeError):
        return False
    if os.getppid() != int(parent):  # it ended between the check and the request
        os.kill(os.getpid(), signal.SIGTERM)
    return True


def _before_cell(info: object) -> None:
    """IPython's pre_run_cell event: load TensorFlow quietly before the first cell that needs it."""
    if "tensorflow" in sys.modules:
        return
    source = getattr(info, "raw_cell", "") or ""
    if NEEDS_TENSORFLOW.search(source) and importlib.util.find_spec("tensorflow") is not None:
        with progress.task("Loading TensorFlow", unit=""):  # 5-15 s: a moving bar, not a pause
            quiet.import_tensorflow()


if __name__ == "__main__":
    main(sys.argv[1:])
