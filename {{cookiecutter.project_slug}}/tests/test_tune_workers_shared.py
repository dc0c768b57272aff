"""Distributed tuning on keras-tuner's chief/worker mode (tune/cluster.py, tune/workers.py,
deploy/slurm_tune.sh), on the fake task (tests/fake_task.py), in every bake that keeps 02.

The fast tests check what is decided without processes: a bad `workers` refused, where each worker
runs, which trials a search that ended early runs again (on keras-tuner's real oracle), when the
same command resumes. The slow ones start the real thing: a chief and two worker processes, one of
them killed with SIGKILL mid-trial, the chief killed and the command run again, and the same search
as a job of the real one-node SLURM of tests/slurm_cluster.py. Those processes are started by
tune/cluster.py and deploy/slurm_tune.sh with the package's own command, which would load the
bake's real task: a sitecustomize.py (FAKE_SITE), first on their PYTHONPATH with tests/, installs
the fake task in each of them before the command runs; the package itself holds no test hook.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import fake_task
import pytest
from helpers import assert_one_sentence

pytest.importorskip("keras_tuner", reason="keras-tuner is not installed (a project dependency)")

from {{ cookiecutter.package_name }} import lineage, tune  # noqa: E402
from {{ cookiecutter.package_name }}.tune import cluster  # noqa: E402
from {{ cookiecutter.package_name }}.tune import workers as workers_module  # noqa: E402
from {{ cookiecutter.package_name }}.tune.checks import MAX_WORKERS  # noqa: E402
from {{ cookiecutter.package_name }}.tune.search import REQUEST_FILE, resumable  # noqa: E402
from {{ cookiecutter.package_name }}.writes import write_json  # noqa: E402

PROJECT = Path(__file__).resolve().parents[1]
PACKAGE = "{{ cookiecutter.package_name }}"
TIMEOUT = 300
pytestmark = pytest.mark.usefixtures("fake_module")  # the fake task is the task of every test

# The first module every Python process of the slow tests imports (Python's site module imports
# sitecustomize from sys.path at start-up): the package first (its quiet TensorFlow set-up), then
# the fake task, installed for the rest of the process, as tests/test_train_shared.py's commands do.
# First on PYTHONPATH, it shadows an interpreter's own sitecustomize (a Debian system Python's
# error-reporting hook; a pyenv or python.org one has none), only in these processes.
FAKE_SITE = f"import {PACKAGE}\nimport fake_task\n\nfake_task.install()\n"


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run folder holding the fake task's data/, and nothing else."""
    return fake_task.write_data(tmp_path_factory.mktemp("fake-data") / "run")


@pytest.fixture
def run_dir(tmp_path: Path, data: Path) -> Path:
    run = tmp_path / "run"
    shutil.copytree(data, run)
    return run


@pytest.mark.parametrize(
    ("workers", "max_trials", "named"),
    [
        (0, 4, "workers=0"),
        (-2, 4, "workers=-2"),
        (True, 4, "workers=True"),
        ("2", 4, "workers='2'"),
        (MAX_WORKERS + 1, 300, f"workers={MAX_WORKERS + 1}"),
        (5, 4, "workers=5 is more than max_trials=4"),
    ],
)
def test_a_bad_workers_value_is_refused_in_one_sentence_before_any_work(
    tmp_path: Path, workers: object, max_trials: int, named: str
) -> None:
    """The value and what is allowed, in one sentence, without reading the run folder."""
    with pytest.raises(tune.TuneError) as error:
        tune.check(tmp_path / "none", tune.Params(workers=workers, max_trials=max_trials))
    assert named in str(error.value) and "use " in str(error.value)
    assert_one_sentence(str(error.value))


def test_each_worker_gets_its_own_gpu_or_its_own_cores() -> None:
    """Several GPUs: one each (round robin); one GPU: shared with memory growth; the CPU cores
    split evenly, or shared one by one when there are fewer cores than workers."""
    two = [workers_module.placement(i, 2, ["3", "5"], [0, 1, 2, 3]) for i in range(2)]
    assert [p["env"] for p in two] == [{"CUDA_VISIBLE_DEVICES": "3"}, {"CUDA_VISIBLE_DEVICES": "5"}]
    assert [p["cpus"] for p in two] == [[0, 1], [2, 3]]
    shared = workers_module.placement(1, 2, ["0"], [0, 1])
    assert shared == {"env": {"TF_FORCE_GPU_ALLOW_GROWTH": "true"}, "cpus": [1]}
    assert [workers_module.placement(i, 3, [], [0, 1])["cpus"] for i in range(3)] == [[0], [1], [0]]


@pytest.mark.parametrize(
    ("workers", "gpus", "growth"),
    [
        (3, ["3", "5"], [True, False, True]),  # GPU 3 holds worker0 and worker2
        (4, ["3", "5"], [True, True, True, True]),
        (2, ["3", "5"], [False, False]),  # one GPU each: TensorFlow's default is theirs
        (2, ["0"], [True, True]),
        (2, [], [False, False]),  # the CPU
    ],
)
def test_a_gpu_two_workers_share_gives_each_memory_growth(
    workers: int, gpus: list[str], growth: list[bool]
) -> None:
    """Issue 42 §2.3: three workers on two GPUs shared one without memory growth, so the first
    to start mapped the whole GPU; every worker on a shared GPU now gets growth in its env."""
    places = [workers_module.placement(i, workers, gpus, [0, 1]) for i in range(workers)]
    got = [p["env"].get("TF_FORCE_GPU_ALLOW_GROWTH") == "true" for p in places]
    assert got == growth, places
    if len(gpus) > 1:
        assert [p["env"]["CUDA_VISIBLE_DEVICES"] for p in places] == [
            gpus[i % len(gpus)] for i in range(workers)
        ]


@pytest.mark.parametrize(
    ("workers", "tuner_id", "hidden"), [(2, None, True), (1, "chief", True), (1, None, False)]
)
def test_the_chief_hides_the_gpus_before_keras_tuner_builds_a_model(
    run_dir: Path, monkeypatch: pytest.MonkeyPatch, workers: int, tuner_id: str | None, hidden: bool
) -> None:
    """Issue 42 §2.2: keras-tuner builds a model in the chief (_populate_initial_space) before any
    worker starts, and it mapped the GPUs the workers need. A CPU stand-in for the GPU: the
    search records what it asked of tf.config before make_tuner, and stops there."""
    import importlib

    import tensorflow as tf

    search_module = importlib.import_module(f"{PACKAGE}.tune.search")  # tune.search: the function

    asked: list[tuple] = []
    monkeypatch.setattr(tf.config, "set_visible_devices", lambda *a: asked.append(a))

    def stop(*_: object) -> None:
        raise InterruptedError(list(asked))

    monkeypatch.setattr(search_module, "make_tuner", stop)
    monkeypatch.setattr(search_module, "start_workers", lambda *_: None)  # no processes here
    for name in (cluster.ID_ENV, cluster.IP_ENV, cluster.PORT_ENV):
        monkeypatch.delenv(name, raising=False)
    if tuner_id:
        monkeypatch.setenv(cluster.ID_ENV, tuner_id)
    params = tune.Params(workers=workers, max_trials=2, epochs=1)
    with pytest.raises(InterruptedError) as stopped:
        tune.search(run_dir, params, verbose=False)
    assert stopped.value.args[0] == ([([], "GPU")] if hidden else [])


class StandInWorkers:
    """Records when the chief starts and stops its workers, in `events` beside its own steps."""

    def __init__(self, events: list[str]) -> None:
        self.events, self.port = events, 0
        events.append("workers started")

    def stop(self) -> None:
        self.events.append("workers stopped")


@pytest.mark.parametrize("fails_in", ["make_tuner", "run_chief"])
def test_the_chief_starts_its_workers_before_its_tuner_and_stops_them_when_it_fails(
    run_dir: Path, monkeypatch: pytest.MonkeyPatch, fails_in: str
) -> None:
    """Issue 42 §3.9: each worker spent ~20 s loading TensorFlow after the chief had loaded
    keras-tuner and built its tuner; they now start as soon as the GPUs are hidden, and a chief
    that fails at any point after that stops them (stand-ins for the processes and the tuner)."""
    import importlib

    search_module = importlib.import_module(f"{PACKAGE}.tune.search")
    events: list[str] = []
    monkeypatch.setattr(search_module, "start_workers", lambda *_: StandInWorkers(events))

    def fail(name: str) -> Any:
        def step(*_: object) -> Any:
            events.append(name)
            if name == fails_in:
                raise InterruptedError(name)
            return type("Tuner", (), {"oracle": type("Oracle", (), {"trials": {}})()})()

        return step

    monkeypatch.setattr(search_module, "make_tuner", fail("make_tuner"))
    monkeypatch.setattr(search_module, "completed", lambda _: 0)
    monkeypatch.setattr(cluster, "requeue_lost", lambda _: [])
    monkeypatch.setattr(cluster, "run_chief", fail("run_chief"))
    for name in (cluster.ID_ENV, cluster.IP_ENV, cluster.PORT_ENV):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(InterruptedError):
        tune.search(run_dir, tune.Params(workers=2, max_trials=2, epochs=1), verbose=False)
    built = ["make_tuner"] + (["run_chief"] if fails_in == "run_chief" else [])
    assert events == ["workers started", *built, "workers stopped"]


def test_a_worker_waits_for_the_chief_before_it_builds_its_tuner(
    run_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The chief's tuner, made with overwrite, removes tuning/tuner/ first: a worker started
    ahead of it must not read that folder before the chief's oracle answers."""
    import importlib

    search_module = importlib.import_module(f"{PACKAGE}.tune.search")
    events: list[str] = []
    monkeypatch.setattr(search_module, "wait_for_chief", lambda: events.append("wait"))

    def stop(*_: object) -> None:
        events.append("make_tuner")
        raise InterruptedError

    monkeypatch.setattr(search_module, "make_tuner", stop)
    monkeypatch.setenv(cluster.ID_ENV, "worker0")
    monkeypatch.setenv(cluster.IP_ENV, "127.0.0.1")
    monkeypatch.setenv(cluster.PORT_ENV, str(workers_module.free_port()))
    with pytest.raises(InterruptedError):
        tune.search(run_dir, tune.Params(workers=2, max_trials=2, epochs=1), verbose=False)
    assert events == ["wait", "make_tuner"]


def test_a_worker_whose_chief_never_answers_is_told_so_in_one_sentence(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """wait_for_chief against a port nothing serves: one sentence naming the address."""
    port = workers_module.free_port()
    monkeypatch.setenv(cluster.IP_ENV, "127.0.0.1")
    monkeypatch.setenv(cluster.PORT_ENV, str(port))
    monkeypatch.delenv(workers_module.CHIEF_ENV, raising=False)
    with pytest.raises(tune.TuneError) as error:
        workers_module.wait_for_chief(timeout=0.5)
    assert f"127.0.0.1:{port}" in str(error.value)
    assert_one_sentence(str(error.value))


# deploy/slurm_tune.sh's commands, faked: scontrol names the node, srun starts each task in turn
# (binding a GPU per task where asked), and the package command records the env it was given.
SLURM_FAKES = {
    "scontrol": "#!/usr/bin/env bash\necho 'NodeName=n1 NodeAddr=127.0.0.1 State=IDLE'\n",
    "srun": (
        "#!/usr/bin/env python3\nimport os, subprocess, sys\nargs = sys.argv[1:]\n"
        "options = {}\nwhile args[0].startswith('-'):\n"
        "    key, _, value = args.pop(0).partition('=')\n    options[key] = value\n"
        "for index in range(int(options['--ntasks'])):\n"
        "    env = {**os.environ, 'SLURM_PROCID': str(index)}\n"
        "    if '--gpu-bind' in options:\n        env['CUDA_VISIBLE_DEVICES'] = str(index)\n"
        "    subprocess.run(args, env=env, check=True)\n"
    ),
    PACKAGE: (
        "#!/usr/bin/env python3\nimport json, os\nname = os.environ['KERASTUNER_TUNER_ID']\n"
        "keys = ('CUDA_VISIBLE_DEVICES', 'TF_FORCE_GPU_ALLOW_GROWTH')\n"
        "seen = {key: os.environ.get(key) for key in keys}\n"
        "with open(os.path.join(os.environ['FAKE_OUT'], name + '.json'), 'w') as f:\n"
        "    json.dump(seen, f)\n"
    ),
}


def fake_slurm_tune(tmp_path: Path, tasks: int, gpus_on_node: int) -> tuple[Any, dict]:
    """deploy/slurm_tune.sh run as a one-node job of `tasks` tasks and `gpus_on_node` GPUs, with
    SLURM_FAKES: (the finished process, {tuner id: the env it saw})."""
    bin_dir, out = tmp_path / "bin", tmp_path / "out"
    bin_dir.mkdir()
    out.mkdir()
    for name, text in SLURM_FAKES.items():
        (bin_dir / name).write_text(text, encoding="utf-8")
        (bin_dir / name).chmod(0o755)
    run = tmp_path / "run"
    (run / "data").mkdir(parents=True)
    (run / "data" / "meta.json").write_text("{}", encoding="utf-8")
    kept = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "KERASTUNER_"))}
    kept.pop("CUDA_VISIBLE_DEVICES", None)
    job = {
        **kept,
        "PATH": f"{bin_dir}{os.pathsep}{kept['PATH']}",
        "RUN_DIR": str(run),
        "FAKE_OUT": str(out),
        "SLURM_NTASKS": str(tasks),
        "SLURM_GPUS_ON_NODE": str(gpus_on_node),
        "SLURM_JOB_ID": "4343",
        "TUNE_PORT": str(workers_module.free_port()),
    }
    done = subprocess.run(
        ["bash", str(PROJECT / "deploy" / "slurm_tune.sh")],
        env=job,
        capture_output=True,
        text=True,
        timeout=60,
    )
    return done, {path.stem: json.loads(path.read_text()) for path in out.glob("*.json")}


def test_the_slurm_chief_is_started_with_no_gpu_and_each_worker_with_its_own(
    tmp_path: Path,
) -> None:
    """Issue 42 §2.2: deploy/slurm_tune.sh's chief line gave the chief every GPU of its node. Run
    with fake scontrol, srun (binding a GPU per task) and package commands that record each
    process's env: the chief gets CUDA_VISIBLE_DEVICES="", each worker its own GPU."""
    done, seen = fake_slurm_tune(tmp_path, tasks=2, gpus_on_node=2)
    assert done.returncode == 0, done.stderr
    assert seen["chief"]["CUDA_VISIBLE_DEVICES"] == "", seen
    assert [seen[f"worker{i}"]["CUDA_VISIBLE_DEVICES"] for i in (0, 1)] == ["0", "1"], seen


def test_slurm_tune_refuses_several_gpus_per_task_before_the_chief_starts(
    tmp_path: Path,
) -> None:
    """Issue 42 §2.9: a tuning worker trains each trial on one GPU, so 4 GPUs over 2 tasks would
    leave one GPU of each idle: refused in one sentence naming the value, nothing started."""
    done, seen = fake_slurm_tune(tmp_path, tasks=2, gpus_on_node=4)
    assert done.returncode == 2, done.stderr
    sentence = done.stderr.strip()
    assert sentence.startswith("--gpus-per-task=2 is not allowed"), sentence
    assert "--ntasks-per-node=4 --gres=gpu:4" in sentence
    assert_one_sentence(sentence)
    assert seen == {}


def test_a_trial_left_running_is_run_again_and_an_ended_one_never(tmp_path: Path) -> None:
    """keras-tuner saves its ongoing trials before it forgets an ended one: after a kill, its
    reload would hand the ended trial out again; requeue_lost keeps only the running one."""
    import keras_tuner as kt

    def oracle() -> kt.Oracle:
        space = kt.HyperParameters()
        space.Int("x", 0, 10_000)
        made = kt.oracles.RandomSearchOracle(
            objective=kt.Objective("score", "max"), max_trials=6, hyperparameters=space, seed=1
        )
        made._set_project_dir(str(tmp_path), "tuner")
        return made

    first = oracle()
    ended, running = first.create_trial("worker0"), first.create_trial("worker1")
    first.update_trial(ended.trial_id, {"score": 1.0})
    ended.status = "COMPLETED"
    first.end_trial(ended)  # then the chief is killed, worker1 still training `running`

    second = oracle()
    second.reload()
    assert cluster.requeue_lost(second) == [running.trial_id]
    assert second.create_trial("worker5").trial_id == running.trial_id
    fresh = second.create_trial("worker0").trial_id
    assert fresh not in (ended.trial_id, running.trial_id)
    assert second.trials[ended.trial_id].status == "COMPLETED"


def test_the_same_command_resumes_only_an_unfinished_search_of_the_same_settings(
    run_dir: Path,
) -> None:
    """Unfinished, same settings, same data: resume; finished, other settings or other data:
    start over."""
    params = tune.Params(max_trials=4, epochs=1)
    path = run_dir / tune.TUNER_DIR / REQUEST_FILE
    request = {
        "algorithm": "random",
        "model": params.model,
        "weights": "none",
        "epochs": 1,
        "batch_size": params.batch_size,
        "seed": params.seed,
        "data": lineage.fingerprint(run_dir, "data"),
    }
    assert not resumable(run_dir, params)  # no search yet
    write_json(path, {**request, "finished": False})
    assert resumable(run_dir, params)
    assert resumable(run_dir, tune.Params(max_trials=8, epochs=1, workers=2))  # more trials
    assert not resumable(run_dir, tune.Params(max_trials=4, epochs=2))
    write_json(path, {**request, "finished": True})
    assert not resumable(run_dir, params)
    write_json(path, {**request, "finished": False, "data": "another"})
    assert not resumable(run_dir, params)


def tune_command(run: Path, *params: str) -> list[str]:
    values = [arg for value in params for arg in ("-p", value)]
    return [sys.executable, "-m", PACKAGE, "tune", "--run-dir", str(run), *values]


def tune_ok(run: Path, environment: dict[str, str], *params: str) -> str:
    """Run `tune` with these parameters to its end; it must succeed. What it printed."""
    done = subprocess.run(
        tune_command(run, *params),
        env=environment,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


@pytest.fixture(scope="module")
def environment(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The env of the slow tests' processes (the chief, the workers it starts, SLURM's tasks):
    on the CPU, no keras-tuner or SLURM variable of this process, and FAKE_SITE's folder, tests/
    and src/ first on PYTHONPATH, so that each of them runs the fake task."""
    site = tmp_path_factory.mktemp("fake-site")
    (site / "sitecustomize.py").write_text(FAKE_SITE, encoding="utf-8")
    kept = {k: v for k, v in os.environ.items() if not k.startswith(("KERASTUNER_", "SLURM_"))}
    path = os.pathsep.join(map(str, (site, PROJECT / "tests", PROJECT / "src")))
    return {**kept, "PYTHONPATH": path, "CUDA_VISIBLE_DEVICES": ""}


def trials_json(run: Path) -> list[dict]:
    return json.loads((run / "tuning" / "trials.json").read_text(encoding="utf-8"))["trials"]


def assert_each_trial_once(trials: list[dict], count: int) -> None:
    ids = [trial["trial_id"] for trial in trials]
    assert len(ids) == len(set(ids)) == count, ids
    assert all(trial["status"] == "COMPLETED" for trial in trials), trials


def wait_for_runner(run: Path, trial_id: str, settle: float = 1.0) -> dict:
    """The process that started trial `trial_id`, once it has (tuning/tuner/trial_N/ran_by.json),
    `settle` seconds later (well into its first epoch)."""
    path = run / tune.TUNER_DIR / f"trial_{trial_id}" / "ran_by.json"
    deadline = time.monotonic() + TIMEOUT
    while not path.is_file():
        assert time.monotonic() < deadline, f"no {path}"
        time.sleep(0.05)
    time.sleep(settle)
    return json.loads(path.read_text(encoding="utf-8"))[-1]


@pytest.mark.slow
def test_two_worker_processes_share_one_search_each_trial_recorded_once(
    run_dir: Path, environment: dict[str, str]
) -> None:
    """A chief (this command) and two workers: four trials, each once, run by both workers (their
    tuner ids and pids in trials.json, neither the chief's); the chief wrote the results."""
    tune_ok(run_dir, environment, "workers=2", "max_trials=4", "epochs=1")
    trials = trials_json(run_dir)
    assert_each_trial_once(trials, 4)
    assert {trial["worker"] for trial in trials} == {"worker0", "worker1"}
    assert len({trial["pid"] for trial in trials}) == 2
    metrics = json.loads((run_dir / "metrics" / "tune.json").read_text(encoding="utf-8"))
    assert (metrics["workers"], metrics["trials_run"]) == (2, 4)
    # the fake task's model: FAKE_SITE installed it in the chief, and in both workers, which
    # would have refused model='dense' under the bake's own task
    assert metrics["best_hparams"]["model"] == fake_task.MODEL
    assert (run_dir / "tuning" / "best_hparams.json").is_file()
    assert (run_dir / "figures" / "tune_trials.png").is_file()
    numbers = []
    for tuner_id in ("worker0", "worker1"):
        log = (run_dir / "tuning" / "workers" / f"{tuner_id}.log").read_text(encoding="utf-8")
        numbers += re.findall(r"Trial #(\d+) of at most", log)
    # each worker's log names its trials by their numbers in the search, not its own count
    assert sorted(numbers, key=int) == ["1", "2", "3", "4"], numbers


@pytest.mark.slow
def test_hyperband_hands_its_brackets_to_two_workers(
    run_dir: Path, environment: dict[str, str]
) -> None:
    """Hyperband's oracle under the chief: both workers train its trials, the short ones of the
    first round and the promoted ones at the full budget, each recorded once."""
    tune_ok(run_dir, environment, "workers=2", "algorithm=hyperband", "max_trials=6", "epochs=3")
    trials = trials_json(run_dir)
    assert_each_trial_once(trials, len(trials))
    assert 2 <= len(trials) <= 6
    assert {trial["worker"] for trial in trials} == {"worker0", "worker1"}
    budgets = {trial["epochs"] for trial in trials}
    assert max(budgets) == 3 and min(budgets) < 3, budgets  # a round cut short, then promoted


@pytest.mark.slow
def test_a_worker_killed_mid_trial_is_started_again_and_its_trial_counted_once(
    tmp_path: Path, environment: dict[str, str]
) -> None:
    """SIGKILL to the worker training trial 1: the chief starts that worker again, keras-tuner
    hands it the same trial, and the search ends with every trial recorded once."""
    # Trials of 4-5 s (8 epochs of 50,000 vectors; a 2-core machine): the kill comes a second
    # into trial 1, which the fake task's own 96 vectors would have ended by then.
    run_dir = fake_task.write_data(tmp_path / "run", train=50_000)
    command = tune_command(run_dir, "workers=2", "max_trials=4", "epochs=8")
    with subprocess.Popen(
        command, env=environment, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    ) as chief:
        victim = wait_for_runner(run_dir, "1")
        os.kill(victim["pid"], signal.SIGKILL)
        output, _ = chief.communicate(timeout=TIMEOUT)
    assert chief.returncode == 0, output
    assert f"{victim['tuner_id']} (pid {victim['pid']}) ended with status -9" in output
    trials = trials_json(run_dir)
    assert_each_trial_once(trials, 4)
    again = next(trial for trial in trials if trial["trial_id"] == "1")["ran_by"]
    assert [run["tuner_id"] for run in again] == [victim["tuner_id"]] * 2
    assert again[0]["pid"] == victim["pid"] != again[1]["pid"]


@pytest.mark.slow
def test_the_same_command_after_the_chief_was_killed_ends_the_search(
    run_dir: Path, environment: dict[str, str]
) -> None:
    """SIGKILL to the chief mid-search: its workers end too, and the same command again trains
    only the trials left (those running are trained again), each recorded once."""
    # Six trials, the chief killed the moment trial 2 starts: with four, and a second's wait per
    # trial seen, a quiet machine (digits trials of ~3 s) finished the search before the kill, and
    # the same command then started a new one instead of resuming.
    params = ("workers=2", "max_trials=6", "epochs=2")
    command = tune_command(run_dir, *params)
    with subprocess.Popen(
        command, env=environment, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    ) as chief:
        # trial 2 starts once trial 0 or 1 has ended: one trial done, two running
        workers = {wait_for_runner(run_dir, tid, settle=0)["pid"] for tid in ("2", "1", "0")}
        chief.kill()
    request = json.loads((run_dir / tune.TUNER_DIR / REQUEST_FILE).read_text(encoding="utf-8"))
    assert request["finished"] is False, "the search ended before the chief was killed"
    deadline = time.monotonic() + 30
    while any(_alive(pid) for pid in workers):
        assert time.monotonic() < deadline, f"workers {workers} outlived their chief"
        time.sleep(0.5)
    assert "Resuming the unfinished search" in tune_ok(run_dir, environment, *params)
    assert_each_trial_once(trials_json(run_dir), 6)
    metrics = json.loads((run_dir / "metrics" / "tune.json").read_text(encoding="utf-8"))
    assert metrics["trials_run"] < 6 and metrics["overwrite"] is False


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}").is_dir() and "zombie" not in _state(pid)


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/status").read_text().split("State:")[1].split("\n")[0].lower()
    except (OSError, IndexError):
        return "zombie"


@pytest.mark.slow
def test_slurm_job_runs_a_chief_and_two_workers(
    run_dir: Path, tmp_path: Path, environment: dict[str, str]
) -> None:
    """deploy/slurm_tune.sh under the real one-node SLURM: the batch script's chief and two
    tasks as workers share one search; the log names each task's tuner id."""
    from slurm_cluster import SlurmCluster, missing

    reason = missing()
    if reason:
        pytest.skip(reason)
    slurm = SlurmCluster(tmp_path / "slurm")
    slurm.root.mkdir()
    try:
        slurm.start()
        log = tmp_path / "job.out"
        job_env = {
            **environment,
            "SLURM_CONF": slurm.env["SLURM_CONF"],
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
            "RUN_DIR": str(run_dir),
            "TUNE_PARAMS": "-p max_trials=4 -p epochs=1",
        }
        layout = ["--nodes=1", "--ntasks=2", "--cpus-per-task=1", "--gres=none"]
        script = PROJECT / "deploy" / "slurm_tune.sh"
        done = subprocess.run(
            ["sbatch", "--parsable", "--wait", *layout, f"--output={log}", str(script)],
            env=job_env,
            cwd=PROJECT,
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
        )
        text = log.read_text() if log.exists() else ""
        assert done.returncode == 0, f"{done.stderr}\n{text[-3000:]}\n{slurm.logs()}"
    finally:
        slurm.stop()
    for task in (0, 1):
        assert f"task {task} on " in text and f"as worker{task}, pid" in text, text
    trials = trials_json(run_dir)
    assert_each_trial_once(trials, 4)
    assert {trial["worker"] for trial in trials} == {"worker0", "worker1"}
