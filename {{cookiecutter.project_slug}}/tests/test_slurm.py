"""deploy/slurm_train.sh under a real SLURM: two workers on this machine train in sync, stop on
a signal with their last step saved, and resume from it.

The `slurm` fixture starts munged, slurmctld and slurmd (tests/slurm_cluster.py) and stops them
by their PIDs; without Debian/Ubuntu's slurm-wlm and munge (.ci/run installs them) the tests
skip with that sentence. Jobs use the script's CPU-only layout, two tasks on one node, on the
8x8 digits with a global batch of 64 (of 8 to stop mid-epoch; one job has one task with two
CPUs, for the CPU binding);
tests/test_deploy.py covers other layouts (fake srun).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import assert_one_sentence
from slurm_cluster import SlurmCluster, missing

PROJECT = Path(__file__).resolve().parents[1]
SCRIPT = PROJECT / "deploy" / "slurm_train.sh"
CPU_LAYOUT = ["--nodes=1", "--ntasks=2", "--ntasks-per-node=2", "--cpus-per-task=1", "--gres=none"]
JOB_TIMEOUT = 300

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def slurm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SlurmCluster]:
    """A one-node SLURM with this machine's CPUs, for the module's jobs."""
    reason = missing()
    if reason:
        pytest.skip(reason)
    cluster = SlurmCluster(tmp_path_factory.mktemp("slurm"))
    try:
        yield cluster.start()
    finally:
        cluster.stop()


def job_env(slurm: SlurmCluster, run: Path, train_params: str) -> dict[str, str]:
    """What sbatch passes on to the tasks: the project's python and package first on PATH, the
    CPU only, and a scratch TMPDIR to see what the non-chief worker leaves behind."""
    scratch = run.parent / "tmp"
    scratch.mkdir(exist_ok=True)
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "TF_"))}
    environment["SLURM_CONF"] = slurm.env["SLURM_CONF"]
    return {
        **environment,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{environment['PATH']}",
        "PYTHONPATH": str(PROJECT / "src"),
        "CUDA_VISIBLE_DEVICES": "",
        "TF_CPP_MIN_LOG_LEVEL": "2",
        "TMPDIR": str(scratch),
        "RUN_DIR": str(run),
        "TRAIN_PARAMS": train_params,
    }


def sbatch(
    slurm: SlurmCluster,
    run: Path,
    train_params: str,
    *,
    wait: bool = True,
    ok: bool = True,
    layout: list[str] = CPU_LAYOUT,
) -> tuple[str, Path]:
    """Submit the script with the CPU-only layout and, by default, wait for the job to end in
    success (ok) or failure; (job id, its log). The job's state is polled twice a second, where
    `sbatch --wait` would poll ever more slowly."""
    log = run.parent / "job-%j.out"
    done = subprocess.run(
        ["sbatch", "--parsable", *layout, f"--output={log}", str(SCRIPT)],
        env=job_env(slurm, run, train_params),
        cwd=PROJECT,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    job = done.stdout.strip().split(";")[0]
    path = run.parent / f"job-{job}.out"
    if wait:
        state = job_state(slurm, job, until=("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT"))
        text = path.read_text() if path.exists() else ""
        assert (state == "COMPLETED") == ok, f"{state}\n{text[-3000:]}\n{slurm.logs()}"
    return job, path


def job_state(slurm: SlurmCluster, job: str, until: tuple[str, ...]) -> str:
    """Wait until the job's state is one of `until` (JOB_TIMEOUT at most); the state."""
    deadline = time.monotonic() + JOB_TIMEOUT
    while True:
        shown = subprocess.run(
            ["scontrol", "--oneliner", "show", "job", job],
            env=slurm.env,
            capture_output=True,
            text=True,
            timeout=30,
        ).stdout
        state = shown.split("JobState=")[1].split()[0] if "JobState=" in shown else "UNKNOWN"
        if state in until:
            return state
        assert time.monotonic() < deadline, f"job {job} still {state} after {JOB_TIMEOUT} s"
        time.sleep(0.5)


def train_json(run: Path) -> dict:
    return json.loads((run / "metrics" / "train.json").read_text(encoding="utf-8"))


def test_slurm_job_trains_two_workers_in_sync_then_resumes(
    slurm: SlurmCluster, run_dir: Path
) -> None:
    """Two tasks train with MultiWorkerMirroredStrategy (2 replicas); only the chief writes the
    run folder; the log shows each task's TF_CONFIG; epochs=3 resubmitted resumes at epoch 2."""
    job, log = sbatch(slurm, run_dir, "-p epochs=2 -p batch_size=64")
    metrics = train_json(run_dir)
    assert (metrics["strategy"], metrics["replicas"], metrics["workers"]) == (
        "MultiWorkerMirroredStrategy",
        2,
        2,
    )
    assert metrics["task"] == {"type": "worker", "index": 0} and metrics["epochs_completed"] == 2
    text = log.read_text()
    port = 20000 + int(job) % 20000
    workers = [f"{slurm.node}:{port}", f"{slurm.node}:{port + 1}"]
    for index in (0, 1):
        config = {"cluster": {"worker": workers}, "task": {"type": "worker", "index": index}}
        assert f"task {index} on " in text and f"TF_CONFIG={json.dumps(config)}" in text, text
    written = sorted(path.name for path in run_dir.iterdir())
    expected = ["checkpoints", "data", "figures", "lineage.json", "logs", "metrics", "model.keras"]
    assert written == expected
    assert not list((run_dir.parent / "tmp").glob("worker-checkpoints-*"))

    sbatch(slurm, run_dir, "-p epochs=3 -p batch_size=64")
    resumed = train_json(run_dir)
    assert (resumed["initial_epoch"], resumed["epochs_run"]) == (2, 1)
    assert (resumed["epochs_completed"], resumed["replicas"]) == (3, 2)


def stop_mid_run(slurm: SlurmCluster, run: Path, job: str, log: Path, scancel: list[str]) -> dict:
    """Once the job has trained an epoch, signal it with `scancel`; wait for it to end on its
    own (the tasks stop; nothing is killed) and return train.json's `interrupted`."""
    deadline = time.monotonic() + JOB_TIMEOUT
    while not (log.exists() and "Epoch " in log.read_text()):
        assert time.monotonic() < deadline, log.read_text() if log.exists() else "no job log"
        time.sleep(0.05)
    time.sleep(0.5)  # into the next epoch's steps
    subprocess.run(["scancel", *scancel, job], env=slurm.env, check=True, timeout=30)
    signalled = time.monotonic()
    state = job_state(slurm, job, until=("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT"))
    print(f"job {job} ended {state} {time.monotonic() - signalled:.1f} s after scancel {scancel}")
    assert state == "FAILED", f"{state}\n{log.read_text()}"  # ended by its tasks' status
    text = log.read_text()
    assert "Stopped on SIG" in text, text
    metrics = train_json(run)
    assert metrics["task"] == {"type": "worker", "index": 0}
    return metrics["interrupted"]


def test_slurm_job_stopped_by_a_signal_resumes_from_the_step_it_saved(
    slurm: SlurmCluster, run_dir: Path
) -> None:
    """scancel --signal=TERM (as preemption or scancel sends it to the tasks), then the time-limit
    warning (USR1 to the batch script, which passes it on): each time both workers finish their
    step, the chief writes a checkpoint of it and the job ends by itself with 128 + the signal;
    each resubmission resumes after the step saved, so no step is lost or run twice."""
    # A batch of 8 (179 steps an epoch): most time goes to steps, so a signal lands mid-epoch.
    params = "-p epochs=200 -p batch_size=8 -p patience=0"
    job, log = sbatch(slurm, run_dir, params, wait=False)
    first = stop_mid_run(slurm, run_dir, job, log, ["--signal=TERM"])
    assert (first["signal"], first["exit_status"]) == ("SIGTERM", 143)
    steps_per_epoch = first["steps_per_epoch"]
    assert 1 <= first["step"] < steps_per_epoch and first["epoch"] < 200

    job, log = sbatch(slurm, run_dir, params, wait=False)
    second = stop_mid_run(slurm, run_dir, job, log, ["--batch", "--signal=USR1"])
    assert (second["signal"], second["exit_status"]) == ("SIGUSR1", 138)
    assert "USR1 received, passed on to the tasks" in log.read_text()
    resumed = train_json(run_dir)
    assert (resumed["initial_epoch"], resumed["resumed_at_step"]) == (
        first["epoch"] - 1,
        first["step"],
    )
    done = (second["epoch"] - 1) * steps_per_epoch + second["step"]
    assert resumed["optimizer_steps"] == done

    last = second["epoch"]
    sbatch(slurm, run_dir, f"-p epochs={last} -p batch_size=8 -p patience=0")
    metrics = train_json(run_dir)
    assert metrics["interrupted"] is None and metrics["resumed_at_step"] == second["step"]
    assert (metrics["initial_epoch"], metrics["epochs_completed"]) == (last - 1, last)
    assert [record["epoch"] for record in metrics["history"]] == list(range(1, last + 1))
    assert metrics["optimizer_steps"] == last * steps_per_epoch
    print(
        f"stopped at epoch {first['epoch']} step {first['step']} (TERM), resumed, stopped at "
        f"epoch {second['epoch']} step {second['step']} (USR1), resumed: "
        f"{metrics['optimizer_steps']} steps = {last} x {steps_per_epoch}"
    )


def test_slurm_gives_each_task_the_cpus_per_task_of_the_job(
    slurm: SlurmCluster, tmp_path: Path, digits_data: Path
) -> None:
    """One task with --cpus-per-task=2: the task's CPU affinity (nproc) holds both CPUs; srun
    would bind it to one had the script not passed --cpus-per-task on (Slurm 22.05+)."""
    if slurm.cpus < 2:
        pytest.skip(f"this machine has {slurm.cpus} CPU; the check needs 2")
    run = tmp_path / "run"
    shutil.copytree(digits_data, run / "data")
    layout = ["--nodes=1", "--ntasks=1", "--cpus-per-task=2", "--gres=none"]
    # A parameter train refuses at once: the task's line is printed before train starts.
    _, log = sbatch(slurm, run, "-p no_such_parameter=1", ok=False, layout=layout)
    text = log.read_text()
    assert "task 0 on " in text and "CPUs: 2)" in text, text


def test_slurm_job_without_data_stops_in_one_sentence_before_srun(
    slurm: SlurmCluster, tmp_path: Path
) -> None:
    """Under the real sbatch too, a run folder without data/ fails the job with one sentence."""
    run = tmp_path / "run"
    run.mkdir()
    _, log = sbatch(slurm, run, "-p epochs=1 -p batch_size=64", ok=False)
    message = log.read_text()
    assert "data/meta.json is missing" in message and "01_data" in message
    assert_one_sentence(message)
    assert sorted(path.name for path in run.iterdir()) == []
