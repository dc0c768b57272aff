"""A real one-node SLURM for the tests: munged, slurmctld and slurmd started from a temporary
slurm.conf, each in the foreground as a child of the test process, and stopped by their PIDs.

Debian/Ubuntu's `slurm-wlm` and `munge` packages provide the daemons; they run without systemd,
as root or as the user running the tests (SlurmUser is that user; jobs run as it too). All they
write (key, sockets, state, spool, logs) stays in the given folder, and their ports are free
ones, so a system SLURM on the same machine is left alone.
"""

from __future__ import annotations

import getpass
import os
import secrets
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

DAEMONS = ("munged", "slurmctld", "slurmd")
START_TIMEOUT = 60


def missing() -> str | None:
    """Why a real SLURM cannot start here, in one sentence; None when it can."""
    absent = [name for name in (*DAEMONS, "sbatch", "scontrol") if not _which(name)]
    if absent:
        return (
            f"{', '.join(absent)} not found: install Debian/Ubuntu's slurm-wlm and munge packages "
            "(as .ci/run does) to run the SLURM launcher under a real SLURM."
        )
    return None


def _which(name: str) -> str | None:
    return shutil.which(name) or shutil.which(name, path="/usr/sbin:/sbin")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class SlurmCluster:
    """A running one-node SLURM; `env` is what sbatch, squeue and scancel need to reach it."""

    root: Path
    node: str = field(default_factory=socket.gethostname)
    cpus: int = field(default_factory=lambda: os.cpu_count() or 1)
    processes: list[subprocess.Popen] = field(default_factory=list)

    @property
    def conf(self) -> Path:
        return self.root / "slurm.conf"

    @property
    def env(self) -> dict[str, str]:
        return {**os.environ, "SLURM_CONF": str(self.conf)}

    def write_conf(self) -> None:
        for folder in ("state", "spool", "munge"):
            (self.root / folder).mkdir(mode=0o700, exist_ok=True)
        lines = {
            "ClusterName": "tests",
            "SlurmctldHost": f"{self.node}(127.0.0.1)",  # no name lookup needed
            "SlurmUser": getpass.getuser(),
            "SlurmdUser": getpass.getuser(),
            "SlurmctldPort": _free_port(),
            "SlurmdPort": _free_port(),
            "AuthType": "auth/munge",
            "CredType": "cred/munge",
            "AuthInfo": f"socket={self.root / 'munge' / 'munge.socket'}",
            "StateSaveLocation": self.root / "state",
            "SlurmdSpoolDir": self.root / "spool",
            "SlurmctldPidFile": self.root / "slurmctld.pid",
            "SlurmdPidFile": self.root / "slurmd.pid",
            "SlurmctldLogFile": self.root / "slurmctld.log",
            "SlurmdLogFile": self.root / "slurmd.log",
            "ProctrackType": "proctrack/linuxproc",
            # Bind each task to its CPUs (sched_setaffinity, no cgroups needed), as clusters do
            # with task/cgroup: a task's affinity then shows how many CPUs SLURM gave it.
            "TaskPlugin": "task/affinity",
            "TaskPluginParam": "Cores",
            "SelectType": "select/cons_tres",
            "SelectTypeParameters": "CR_CPU",
            "SchedulerType": "sched/builtin",
            "MpiDefault": "none",
            "ReturnToService": 2,
            "JobCompType": "jobcomp/none",
            "AccountingStorageType": "accounting_storage/none",
            "SlurmctldTimeout": 30,
            "SlurmdTimeout": 30,
            # Seconds from scancel's SIGTERM to its SIGKILL: enough for the tasks to finish their
            # step and write its checkpoint (the tests signal with scancel --signal, which kills
            # nothing).
            "KillWait": 30,
        }
        text = "".join(f"{key}={value}\n" for key, value in lines.items())
        text += f"NodeName={self.node} NodeAddr=127.0.0.1 CPUs={self.cpus} State=UNKNOWN\n"
        text += "PartitionName=tests Nodes=ALL Default=YES MaxTime=INFINITE State=UP\n"
        self.conf.write_text(text, encoding="utf-8")

    def _start(self, name: str, *args: str) -> None:
        log = (self.root / f"{name}.out").open("w")
        self.processes.append(
            subprocess.Popen(
                [_which(name), *args],
                stdout=log,
                stderr=subprocess.STDOUT,
                env=self.env,
                start_new_session=True,
            )
        )
        log.close()

    def start(self) -> SlurmCluster:
        self.write_conf()
        munge = self.root / "munge"
        key = munge / "munge.key"
        key.write_bytes(secrets.token_bytes(1024))
        key.chmod(0o600)
        self._start(
            "munged",
            "--foreground",
            "--force",
            f"--key-file={key}",
            f"--socket={munge / 'munge.socket'}",
            f"--pid-file={munge / 'munged.pid'}",
            f"--log-file={munge / 'munged.log'}",
            f"--seed-file={munge / 'munged.seed'}",
        )
        self._wait(lambda: (munge / "munge.socket").exists(), "munged")
        self._start("slurmctld", "-D", "-c", "-i", "-f", str(self.conf))
        self._wait(lambda: self._scontrol("ping").returncode == 0, "slurmctld")
        self._start("slurmd", "-D", "-f", str(self.conf), "-N", self.node)
        self._wait(self._node_idle, "slurmd")
        return self

    def _scontrol(self, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            ["scontrol", *args], capture_output=True, text=True, env=self.env, timeout=30
        )

    def _node_idle(self) -> bool:
        done = self._scontrol("show", "node", self.node)
        return done.returncode == 0 and "State=IDLE" in done.stdout

    def _wait(self, ready, name: str) -> None:
        deadline = time.monotonic() + START_TIMEOUT
        while not ready():
            for process in self.processes:
                if process.poll() is not None:
                    raise RuntimeError(f"{name} exited: {self.logs()}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"{name} not ready after {START_TIMEOUT} s: {self.logs()}")
            time.sleep(0.2)

    def logs(self) -> str:
        names = ("munge/munged.log", "slurmctld.log", "slurmd.log", *(f"{d}.out" for d in DAEMONS))
        paths = [self.root / name for name in names]
        return "\n".join(f"--- {p.name}\n{p.read_text()[-1500:]}" for p in paths if p.exists())

    def stop(self) -> None:
        """Stop the daemons this cluster started, newest first, by their PIDs."""
        for process in reversed(self.processes):
            if process.poll() is None:
                process.terminate()
                try:
                    process.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait(timeout=10)
        self.processes.clear()
