"""The notebooks' kernel ends with the process that started it, even when that one is SIGKILLed.

A harness process becomes a child subreaper (Linux), so the kernel, orphaned when its "runner"
(a jupyter_client KernelManager, as the runner and JupyterLab use) is killed, is handed to the
harness, which reads how the kernel ended: by SIGTERM at once (die_with_parent), not by
ipykernel's poller thread (exit status 1), which cannot run while a cell holds the GIL.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from {{ cookiecutter.package_name }} import kernel

PACKAGE = "{{ cookiecutter.package_name }}"

RUNNER = """
import sys, time
from jupyter_client.manager import KernelManager

manager = KernelManager(kernel_name="python3")
manager.format_kernel_cmd = lambda extra_arguments=None: [
    sys.executable, "-m", "{package}.kernel", "-f", manager.connection_file
]
manager.start_kernel()
client = manager.blocking_client()
client.start_channels()
client.wait_for_ready(timeout=120)
print(manager.provisioner.pid, flush=True)
client.execute(sys.argv[1])
time.sleep(600)
"""

# The cell: says it started, then holds the GIL for 30 s (libc's sleep through PyDLL, which does
# not release it), then writes `finished`.
CELL = """
import ctypes, pathlib
pathlib.Path({started!r}).write_text("started")
ctypes.PyDLL(None).sleep(30)
pathlib.Path({finished!r}).write_text("finished")
"""

HARNESS = """
import ctypes, json, os, signal, subprocess, sys, time
from pathlib import Path

ctypes.CDLL(None).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER: orphans come to this process
runner = subprocess.Popen([sys.executable, "-c", sys.argv[1], sys.argv[2]], stdout=subprocess.PIPE)
kernel = int(runner.stdout.readline())
started = Path(sys.argv[3])
while not started.exists():
    time.sleep(0.1)
os.kill(runner.pid, signal.SIGKILL)
runner.wait()
_, status = os.waitpid(kernel, 0)
signal_number = os.WTERMSIG(status) if os.WIFSIGNALED(status) else None
exit_status = os.WEXITSTATUS(status) if os.WIFEXITED(status) else None
print(json.dumps(dict(signal=signal_number, exit=exit_status)))
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="prctl is Linux only")
def test_a_kernel_ends_by_sigterm_when_its_runner_is_killed(tmp_path: Path) -> None:
    """SIGKILL to the runner: the kernel gets SIGTERM at once, in the middle of a cell that holds
    the GIL, and the cell never finishes (without die_with_parent it finishes, then exits 1)."""
    started, finished = tmp_path / "started", tmp_path / "finished"
    cell = CELL.format(started=str(started), finished=str(finished))
    runner = RUNNER.format(package=PACKAGE)
    harness = textwrap.dedent(HARNESS)
    done = subprocess.run(
        [sys.executable, "-c", harness, runner, cell, str(started)],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONWARNINGS": "ignore"},
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    ended = json.loads(done.stdout.strip().splitlines()[-1])
    assert ended == {"signal": 15, "exit": None}, ended
    assert not finished.exists()


def test_die_with_parent_only_where_a_jupyter_client_is_the_parent(monkeypatch) -> None:
    """No JPY_PARENT_PID, or one that is not this process's parent (a wrapper started the
    kernel): nothing is requested."""
    monkeypatch.delenv("JPY_PARENT_PID", raising=False)
    assert kernel.die_with_parent() is False
    monkeypatch.setenv("JPY_PARENT_PID", str(os.getppid() + 1))
    assert kernel.die_with_parent() is False
