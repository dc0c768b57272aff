"""The worker processes a chief starts on this machine (tune/cluster.py): where each runs, its
command, its log, a restart when it dies, and a stop at the end or on any failure.

The chief starts them as soon as it has hidden its GPUs, before it loads keras-tuner and builds
its own tuner: each worker spends most of its start loading TensorFlow (about 20 s on a busy
2-core machine), and that now happens while the chief gets ready, not after. A worker then waits
for the chief's oracle to answer (`wait_for_chief`) before it builds its tuner: the chief's tuner,
made with overwrite, first removes tuning/tuner/, which a worker reading it then would lose.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from ..parts.tune import TUNING_DIR
from ..progress import line
from .checks import TuneError
from .trials import last_line

ID_ENV, IP_ENV, PORT_ENV = "KERASTUNER_TUNER_ID", "KERASTUNER_ORACLE_IP", "KERASTUNER_ORACLE_PORT"
LOGS_DIR = f"{TUNING_DIR}/workers"  # worker0.log, … (launched here; appended to on a restart)
RESTARTS = 2  # times a dead worker is started again before the search stops
STOP_WAIT = 10  # seconds a worker has to end after SIGTERM, before SIGKILL
CHIEF_ENV = "TUNE_CHIEF_PID"  # set for the workers this process starts: they end with it
CHIEF_WAIT = 3600  # seconds a worker waits for the chief's oracle (keras-tuner's own timeout)


def start_workers(folder: Path, params: dict[str, Any]) -> Workers:
    """Start `params["workers"]` workers of this chief, at a free port of 127.0.0.1 it will
    serve its oracle on; each on its own GPU where there are several (see placement)."""
    from .. import env

    gpus = visible_gpus(len(env.list_gpus()))
    workers = Workers(folder, worker_argv(folder, params), params["workers"], free_port(), gpus)
    workers.start()
    return workers


def wait_for_chief(timeout: float = CHIEF_WAIT) -> None:
    """Block until the chief's oracle answers at KERASTUNER_ORACLE_IP:PORT (its tuner is then
    saved), ending this worker with its chief meanwhile (follow_chief)."""
    import grpc

    follow_chief()
    address = f"{os.environ[IP_ENV]}:{os.environ[PORT_ENV]}"
    with grpc.insecure_channel(address) as channel:
        try:
            grpc.channel_ready_future(channel).result(timeout=timeout)
        except grpc.FutureTimeoutError:
            raise TuneError(
                f"The chief's oracle at {address} did not answer within {timeout:.0f} s: start "
                "the chief (KERASTUNER_TUNER_ID=chief) at that address."
            ) from None


def follow_chief() -> None:
    """End this worker when the chief that started it (CHIEF_ENV) is gone, even by SIGKILL:
    else it would wait an hour for the oracle (keras-tuner's gRPC timeout), holding its memory."""
    chief = os.environ.get(CHIEF_ENV)
    if not chief:
        return

    def watch() -> None:
        while os.getppid() == int(chief):
            time.sleep(1)
        os._exit(1)

    threading.Thread(target=watch, name="follow-chief", daemon=True).start()


def placement(index: int, workers: int, gpus: list[str], cpus: list[int]) -> dict[str, Any]:
    """Where worker `index` of `workers` runs: its CUDA_VISIBLE_DEVICES (gpus: the ids this
    process may use; round robin) and its CPU cores, an even share (cores are shared when fewer
    than workers). A GPU that two workers share gives each memory growth: each takes the memory
    it needs, not all of it (TensorFlow's default), which would leave the other none."""
    environment: dict[str, str] = {}
    if len(gpus) > 1:
        environment["CUDA_VISIBLE_DEVICES"] = gpus[index % len(gpus)]
    if gpus and workers > len(gpus):
        sharing = len(range(index % len(gpus), workers, len(gpus)))  # workers on this GPU
        if sharing > 1:
            environment["TF_FORCE_GPU_ALLOW_GROWTH"] = "true"
    share = max(1, len(cpus) // workers)
    own = cpus[index * share : (index + 1) * share] if len(cpus) >= workers else []
    return {"env": environment, "cpus": own or [cpus[index % len(cpus)]]}


def visible_gpus(count: int) -> list[str]:
    """The ids of the `count` GPUs this process sees, as CUDA_VISIBLE_DEVICES names them."""
    given = os.environ.get("CUDA_VISIBLE_DEVICES")
    ids = [part for part in given.split(",") if part.strip()] if given else []
    return ids[:count] if len(ids) >= count else [str(i) for i in range(count)]


class Workers:
    """The worker processes the chief started: each `<package> tune` with keras-tuner's
    variables, its placement and its log; `check` starts a dead one again with its tuner id."""

    def __init__(self, folder: Path, argv: list[str], count: int, port: int, gpus: list[str]):
        self.folder, self.argv, self.port = folder, argv, port
        cpus = sorted(os.sched_getaffinity(0))
        self.places = [placement(i, count, gpus, cpus) for i in range(count)]
        self.processes: dict[str, subprocess.Popen] = {}
        self.restarts = dict.fromkeys((f"worker{i}" for i in range(count)), 0)

    def start(self) -> None:
        for tuner_id in self.restarts:
            self._start(tuner_id)

    def _start(self, tuner_id: str) -> None:
        place = self.places[int(tuner_id.removeprefix("worker"))]
        environment = {**os.environ, **place["env"], ID_ENV: tuner_id, CHIEF_ENV: str(os.getpid())}
        environment.update({IP_ENV: "127.0.0.1", PORT_ENV: str(self.port)})
        log = self.folder / LOGS_DIR / f"{tuner_id}.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        with log.open("a", encoding="utf-8") as out:
            process = subprocess.Popen(
                self.argv, env=environment, stdout=out, stderr=subprocess.STDOUT, text=True
            )
        os.sched_setaffinity(process.pid, place["cpus"])  # before TensorFlow starts its threads
        self.processes[tuner_id] = process
        cores = ",".join(map(str, place["cpus"]))
        line(f"{tuner_id}: pid {process.pid} on CPU cores {cores}{_gpu_text(place['env'])}")

    def check(self) -> None:
        """Start again a worker that died (RESTARTS times), else stop the search in a sentence."""
        for tuner_id, process in self.processes.items():
            status = process.poll()
            if status in (None, 0):
                continue
            log = self.folder / LOGS_DIR / f"{tuner_id}.log"
            if self.restarts[tuner_id] >= RESTARTS:
                raise TuneError(
                    f"{tuner_id} (pid {process.pid}) ended with status {status} "
                    f"{RESTARTS + 1} times, last: {last_line(_tail(log))}; its output is in "
                    f"{log}, and the same command again resumes the search."
                )
            self.restarts[tuner_id] += 1
            line(f"{tuner_id} (pid {process.pid}) ended with status {status}: starting it again")
            self._start(tuner_id)

    def all_ended(self) -> bool:
        return all(process.poll() is not None for process in self.processes.values())

    def stop(self) -> None:
        """SIGTERM every worker still running, then SIGKILL those still there after STOP_WAIT."""
        running = [p for p in self.processes.values() if p.poll() is None]
        for process in running:
            process.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + STOP_WAIT
        for process in running:
            try:
                process.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def worker_argv(folder: Path, params: dict[str, Any]) -> list[str]:
    """The same `tune` command for a worker: every value as YAML (JSON is YAML), overwrite left
    out (a worker never removes anything)."""
    import json

    package = __name__.split(".")[0]
    values = [f"{key}={json.dumps(value)}" for key, value in params.items() if key != "overwrite"]
    return [
        sys.executable,
        "-m",
        package,
        "tune",
        "--run-dir",
        str(folder),
        *(arg for value in values for arg in ("-p", value)),
    ]


def free_port() -> int:
    """A port of 127.0.0.1 nothing listens on now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _gpu_text(environment: dict[str, str]) -> str:
    shared = " (shared, memory growth)" if "TF_FORCE_GPU_ALLOW_GROWTH" in environment else ""
    if "CUDA_VISIBLE_DEVICES" in environment:
        return f", GPU {environment['CUDA_VISIBLE_DEVICES']}{shared}"
    return ", sharing the GPU" if shared else ""


def _tail(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")[-2000:]
    except OSError:
        return "no output"
