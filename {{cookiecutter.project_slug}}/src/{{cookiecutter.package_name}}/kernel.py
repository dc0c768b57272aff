"""The notebooks' Jupyter kernel: ipykernel, loading TensorFlow quietly when a cell first needs it.

TensorFlow prints its load-time lines before any log level applies (see quiet.py). Before a cell
that imports tensorflow, keras or this package runs, and TensorFlow is not loaded yet, this kernel
loads it with those lines dropped (quiet.import_tensorflow), so they never become a red block
under the cell; the cell's own `import tensorflow` then finds it loaded. The load still happens
in that cell, so its time is where a reader expects it, under a moving "Loading TensorFlow" bar
(a line every few seconds where the runner reads it) and one line saying how long it took.

    python -m <package>.kernel -f CONNECTION_FILE   # what Jupyter runs (the kernel spec's argv)
    python -m <package>.kernel install              # make it this environment's python3 kernel

A kernel the runner starts ahead of its notebook (runner/kernels.py, PRELOAD_ENV=1) begins loading
TensorFlow and Keras as soon as it is up, in a background thread at the lowest CPU priority (nice
19, that thread only), while the previous notebook still runs; the first cell that needs TensorFlow
waits for that load under the same "Loading TensorFlow" bar (any cell does: while it loads,
descriptor 2 goes to a file, as in quiet.import_tensorflow). Nothing configures TensorFlow when it
loads (devices, memory growth and precision are set by the cells, after the import), so loading
before the parameters arrive changes nothing but when the seconds are spent.

`make setup` runs `install`: the kernel spec keeps the name python3 the notebooks ask for, in this
virtual environment only. With <PACKAGE>_VERBOSE=1 nothing is quieted.

A kernel ends with the process that started it (the runner, JupyterLab's server): on Linux it asks
for SIGTERM at that moment (prctl PR_SET_PDEATHSIG, die_with_parent), so a runner killed with
SIGKILL does not leave its kernel finishing an export or an epoch that nothing will record.
ipykernel's own parent poller would also end it, but only from a thread, once a second, and not
while a cell holds the GIL; SIGTERM is what a preempted training saves its step on.
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib.util
import json
import os
import re
import signal
import sys
import tempfile
import threading
from pathlib import Path

from . import progress, quiet

PACKAGE = quiet.PACKAGE
KERNEL_NAME = "python3"
# A cell importing one of these loads TensorFlow (comments and strings naming them do not count).
PR_SET_PDEATHSIG = 1  # linux/prctl.h
PRELOAD_ENV = f"{PACKAGE.upper()}_PRELOAD"  # "1": load TensorFlow ahead (the runner sets it)
PRELOAD_NICE = 19  # the loading thread's priority: the running notebook's benchmarks come first
_preload: list[threading.Thread] = []  # the thread loading TensorFlow ahead, if one started
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
    preload()
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


def preload(environ: dict[str, str] | os._Environ[str] | None = None) -> threading.Thread | None:
    """Where PRELOAD_ENV is 1 (removed from the environment, so no child inherits it), start
    loading TensorFlow and Keras in a background thread; the thread, or None."""
    environ = os.environ if environ is None else environ
    if environ.pop(PRELOAD_ENV, "") != "1" or importlib.util.find_spec("tensorflow") is None:
        return None
    thread = threading.Thread(target=_load_ahead, name="load-tensorflow-ahead", daemon=True)
    thread.start()
    _preload[:] = [thread]
    return thread


def _load_ahead() -> None:
    """TensorFlow and Keras, loaded at nice PRELOAD_NICE (this thread only, on Linux); an error
    is left for the cell whose own import meets it again and shows it."""
    with contextlib.suppress(AttributeError, OSError):  # elsewhere: the usual priority
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), PRELOAD_NICE)
    try:
        quiet.import_tensorflow()
        import keras  # noqa: F401  (the first cell's package import loads it next)
    except BaseException:  # noqa: BLE001, S110  (the cell's own import raises it, visibly)
        pass


def _before_cell(info: object) -> None:
    """IPython's pre_run_cell event: load TensorFlow quietly before the first cell that needs it.
    A load started ahead (preload) is waited for, under the same bar, before any cell runs: it
    sends descriptor 2 to a file while it runs, which would swallow what a cell writes there."""
    ahead = _preload[0] if _preload else None
    if ahead is not None and ahead.is_alive():  # any cell: the load holds descriptor 2 meanwhile
        with progress.task("Loading TensorFlow (started ahead)", unit=""):
            ahead.join()
    source = getattr(info, "raw_cell", "") or ""
    if "tensorflow" in sys.modules:
        return
    if NEEDS_TENSORFLOW.search(source) and importlib.util.find_spec("tensorflow") is not None:
        with progress.task("Loading TensorFlow", unit=""):  # 5-15 s: a moving bar, not a pause
            quiet.import_tensorflow()


if __name__ == "__main__":
    main(sys.argv[1:])
