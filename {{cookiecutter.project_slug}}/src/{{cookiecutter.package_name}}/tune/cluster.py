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

The chief trains nothing, but keras-tuner builds one model in it (`_populate_initial_space`):
`keep_off_gpus` hides the GPUs from it first, so it maps none of the memory its workers need
(deploy/slurm_tune.sh also starts its chief with CUDA_VISIBLE_DEVICES=""). It starts its workers
right then (tune/workers.py), so their TensorFlow loads while it builds its tuner; each waits for
the chief's oracle to answer before building its own.

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
import time
from concurrent import futures
from pathlib import Path
from typing import Any

from ..progress import line
from .checks import TuneError
from .trials import trial_number
from .tuners import TUNER_DIR, ran_by
from .workers import ID_ENV, IP_ENV, PORT_ENV, Workers

POLL = 0.5  # seconds between the chief's looks at the oracle and the workers


def role() -> str | None:
    """This process's tuner id when keras-tuner's variables name one (chief, worker0, …)."""
    return os.environ.get(ID_ENV) or None


def is_worker() -> bool:
    """A worker of a chief elsewhere: keras-tuner's own test (an id without "chief")."""
    tuner_id = role()
    return tuner_id is not None and IP_ENV in os.environ and "chief" not in tuner_id


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


def run_chief(tuner: Any, folder: Path, workers: Workers | None, verbose: bool) -> None:
    """Serve the oracle until every trial has ended: with the workers this process started
    (workers.start, no KERASTUNER_TUNER_ID), or with those started elsewhere
    (KERASTUNER_TUNER_ID=chief)."""
    tuner.oracle.verbose = 0  # keras-tuner's display would clear the notebook cell per trial
    tuner.save()  # the oracle's state and the tuner's, before any worker asks
    if workers is not None:
        address = f"127.0.0.1:{workers.port}"
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


def _show_ended(oracle: Any, folder: Path, shown: int) -> int:
    """One line per trial ended since the last look: its status, score and who ran it."""
    for trial_id in oracle.end_order[shown:]:
        trial = oracle.trials[trial_id]
        runs = ran_by(folder / TUNER_DIR / f"trial_{trial_id}")
        who = f"{runs[-1]['tuner_id']} (pid {runs[-1]['pid']})" if runs else "a worker"
        score = f", {oracle.objective.name} {trial.score:.4f}" if trial.score is not None else ""
        line(f"Trial #{trial_number(trial_id)} {str(trial.status).lower()} by {who}{score}")
    return len(oracle.end_order)
