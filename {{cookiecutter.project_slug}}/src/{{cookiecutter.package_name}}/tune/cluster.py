"""Several trials at once, on keras-tuner's own chief/worker mode: the chief holds the oracle and
serves it over gRPC; each worker asks it for a trial, trains it and reports back, until told to
stop. keras-tuner picks the role from its variables: KERASTUNER_TUNER_ID (`chief`, `worker0`, …),
KERASTUNER_ORACLE_IP and KERASTUNER_ORACLE_PORT.

    none set, workers=1   the search runs in this process, as keras-tuner's tuner `tuner0`
    none set, workers=N   this process is the chief, on 127.0.0.1 at a free port, and starts N
                          workers: the same `<package> tune` command with the variables set,
                          each on its own GPU where there are several (CUDA_VISIBLE_DEVICES),
                          with memory growth on any GPU two of them share (more workers than
                          GPUs, or one GPU), and each on its own share of the CPU cores; their
                          output goes to tuning/workers/
    set                   this process is the role named (deploy/slurm_tune.sh sets them)

The chief trains nothing, but keras-tuner builds one model in it (`_populate_initial_space`)
before any worker starts: `keep_off_gpus` hides the GPUs from it first, so it maps none of the
memory its workers need (deploy/slurm_tune.sh also starts its chief with CUDA_VISIBLE_DEVICES="").

Every trial's files are in tuning/tuner/trial_NN/ (its id is the oracle's, so two workers never
share one); the chief alone writes the oracle's state and, once every trial has ended,
trials.json and best_hparams.json.

A worker that dies leaves its trial RUNNING in the oracle, and keras-tuner's chief would then
wait for it for ever. Started again with the same tuner id, a worker gets that trial back
(keras-tuner's create_trial returns a tuner's ongoing trial) and runs it from its first epoch;
the chief here does so RESTARTS times per worker. A search that ended with trials RUNNING (the
chief killed, or a SLURM job cancelled) has them run again by the next worker that asks
(keras-tuner's reload puts them in its retry queue; `requeue_lost` takes out those that had in
fact ended), whatever its id: the same command again ends the search, no trial counted twice.

Why the chief does not call keras-tuner's `search()`: that blocks in a loop that looks every 20 s
whether the workers are done (20 s lost at the end of every search) and cannot watch worker
processes; `serve` runs keras-tuner's own OracleServicer and exit test every POLL seconds.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from concurrent import futures
from pathlib import Path
from typing import Any

from ..parts.tune import TUNING_DIR
from ..progress import line
from .checks import TuneError
from .trials import last_line, trial_number
from .tuners import TUNER_DIR, ran_by

ID_ENV, IP_ENV, PORT_ENV = "KERASTUNER_TUNER_ID", "KERASTUNER_ORACLE_IP", "KERASTUNER_ORACLE_PORT"
LOGS_DIR = f"{TUNING_DIR}/workers"  # worker0.log, … (launched here; appended to on a restart)
RESTARTS = 2  # times a dead worker is started again before the search stops
POLL = 0.5  # seconds between the chief's looks at the oracle and the workers
STOP_WAIT = 10  # seconds a worker has to end after SIGTERM, before SIGKILL
CHIEF_ENV = "TUNE_CHIEF_PID"  # set for the workers this process starts: they end with it


def role() -> str | None:
    """This process's tuner id when keras-tuner's variables name one (chief, worker0, …)."""
    return os.environ.get(ID_ENV) or None


def is_worker() -> bool:
    """A worker of a chief elsewhere: keras-tuner's own test (an id without "chief")."""
    tuner_id = role()
    return tuner_id is not None and IP_ENV in os.environ and "chief" not in tuner_id


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


def requeue_lost(oracle: Any) -> list[str]:
    """The trials a search that ended early left RUNNING, which the next workers to ask run again
    from their first epoch; the ids. keras-tuner's reload puts every trial of the oracle's saved
    ongoing_trials into its retry queue, but that record is saved before a trial's end is
    forgotten, so it may name a trial that has ended: keras-tuner would train it again."""
    for trial in oracle.ongoing_trials.values():  # none after a reload; kept for safety
        oracle._retry_queue.append(trial.trial_id)
    oracle.ongoing_trials.clear()
    running = [tid for tid in dict.fromkeys(oracle._retry_queue) if _running(oracle, tid)]
    oracle._retry_queue[:] = running
    return running


def _running(oracle: Any, trial_id: str) -> bool:
    trial = oracle.trials.get(trial_id)
    return trial is not None and trial.status == "RUNNING"


def keep_off_gpus() -> bool:
    """Hide every GPU from this process, the chief, before keras-tuner builds its first model;
    False where TensorFlow's runtime has already started (a notebook that used a GPU): then the
    chief keeps what it holds."""
    import tensorflow as tf

    try:
        tf.config.set_visible_devices([], "GPU")
    except RuntimeError:  # visible devices cannot be set once the runtime is up
        return False
    return True


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


def run_chief(tuner: Any, folder: Path, params: dict[str, Any], verbose: bool) -> None:
    """Serve the oracle until every trial has ended: with the workers this process starts
    (no KERASTUNER_TUNER_ID), or with those started elsewhere (KERASTUNER_TUNER_ID=chief)."""
    tuner.oracle.verbose = 0  # keras-tuner's display would clear the notebook cell per trial
    tuner.save()  # the oracle's state and the tuner's, before any worker asks
    workers = None
    if role() is None:
        from .. import env

        port = free_port()
        address = f"127.0.0.1:{port}"
        gpus = visible_gpus(len(env.list_gpus()))
        workers = Workers(folder, worker_argv(folder, params), params["workers"], port, gpus)
    else:
        address = f"{os.environ[IP_ENV]}:{os.environ[PORT_ENV]}"
    serve(tuner.oracle, address, workers, folder if verbose else None)


def serve(oracle: Any, address: str, workers: Workers | None, folder: Path | None) -> None:
    """keras-tuner's OracleServicer on `address` until the oracle has stopped and no worker
    holds a trial; every POLL seconds, dead workers are started again and ended trials shown."""
    import grpc
    from keras_tuner.src import protos
    from keras_tuner.src.distribute import oracle_chief

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=1))
    servicer = oracle_chief.OracleServicer(oracle)
    protos.get_service_grpc().add_OracleServicer_to_server(servicer, server)
    try:
        bound = server.add_insecure_port(address)
    except RuntimeError:
        bound = 0
    if not bound:
        raise TuneError(f"The chief cannot listen on {address}: choose another port.")
    server.start()
    shown = len(oracle.end_order)
    try:
        if workers is not None:
            workers.start()
        while not (servicer.stop_triggered and oracle_chief.exit_chief(oracle)):
            time.sleep(POLL)
            oracle._check_consecutive_failures()  # a worker's failure would only kill it
            if folder is not None:
                shown = _show_ended(oracle, folder, shown)
            if workers is not None:
                workers.check()
                if workers.all_ended() and not oracle_chief.exit_chief(oracle):
                    raise TuneError("Every worker ended while trials were still running.")
        if folder is not None:
            _show_ended(oracle, folder, shown)
    finally:
        if workers is not None:
            workers.stop()
        server.stop(grace=None)


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


def _show_ended(oracle: Any, folder: Path, shown: int) -> int:
    """One line per trial ended since the last look: its status, score and who ran it."""
    for trial_id in oracle.end_order[shown:]:
        trial = oracle.trials[trial_id]
        runs = ran_by(folder / TUNER_DIR / f"trial_{trial_id}")
        who = f"{runs[-1]['tuner_id']} (pid {runs[-1]['pid']})" if runs else "a worker"
        score = f", {oracle.objective.name} {trial.score:.4f}" if trial.score is not None else ""
        line(f"Trial #{trial_number(trial_id)} {str(trial.status).lower()} by {who}{score}")
    return len(oracle.end_order)


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
