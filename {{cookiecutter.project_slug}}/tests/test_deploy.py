"""deploy/: the Kubeflow TFJob and the SLURM script start `<package> train` on every worker.

Neither Kubernetes nor SLURM is needed: the manifests are read as data, and the SLURM script
runs for real with fake `scontrol`, `srun` and `<package>` commands on PATH that record what
each task would have run, with the TF_CONFIG it got. tests/test_slurm.py submits the same script
to a real SLURM.
"""

from __future__ import annotations

import functools
import json
import os
import signal
import socket
import subprocess
import time
from pathlib import Path

import jsonschema
import pytest
import yaml
from helpers import assert_one_sentence

from {{ cookiecutter.package_name }}.train import read_tf_config

PACKAGE = "{{ cookiecutter.package_name }}"
DEPLOY = Path(__file__).resolve().parents[1] / "deploy"
SLURM = DEPLOY / "slurm_train.sh"
NODES = ["gpu-node07", "gpu-node08"]
# The training operator's TFJob CRD (v1.9.0), kept verbatim with where it came from in its header.
POD = ["spec", "tfReplicaSpecs", "Chief", "template", "spec"]
TFJOB_CRD = Path(__file__).resolve().parent / "data" / "kubeflow.org_tfjobs.yaml"

FAKE_SCONTROL = """#!/usr/bin/env python3
import sys
assert sys.argv[1:] == ["show", "hostnames", "gpu-node[07-08]"], sys.argv
print("gpu-node07")
print("gpu-node08")
"""
# srun: record its own options, then run the command once per task, in blocks of
# --ntasks-per-node, as task SLURM_PROCID with SLURM_LOCALID.
FAKE_SRUN = """#!/usr/bin/env python3
import json, os, subprocess, sys
args = sys.argv[1:]
options = {}
while args[0].startswith("-"):
    key, _, value = args.pop(0).partition("=")
    options[key] = value
with open(os.path.join(os.environ["FAKE_OUT"], "srun.json"), "w") as handle:
    json.dump(options, handle)
per_node = int(options["--ntasks-per-node"])
for index in range(int(options["--ntasks"])):
    env = {**os.environ, "SLURM_PROCID": str(index), "SLURM_LOCALID": str(index % per_node)}
    subprocess.run(args, env=env, check=True)
"""
# The package's command: record the arguments and TF_CONFIG of each task.
FAKE_PACKAGE = """#!/usr/bin/env python3
import json, os, sys
out = os.path.join(os.environ["FAKE_OUT"], f"task-{os.environ['SLURM_PROCID']}.json")
with open(out, "w") as handle:
    json.dump({"argv": sys.argv[1:], "tf_config": os.environ.get("TF_CONFIG")}, handle)
"""


def manifest(name: str) -> dict:
    return yaml.safe_load((DEPLOY / name).read_text(encoding="utf-8"))


def containers(job: dict) -> dict[str, dict]:
    specs = job["spec"]["tfReplicaSpecs"]
    return {kind: spec["template"]["spec"]["containers"][0] for kind, spec in specs.items()}


def option(command: list[str], flag: str) -> str:
    return command[command.index(flag) + 1]


def test_tfjob_is_a_kubeflow_v1_tfjob_with_a_chief_and_workers() -> None:
    """The training operator's TFJob, with one Chief and at least one Worker replica."""
    job = manifest("tfjob.yaml")
    assert (job["apiVersion"], job["kind"]) == ("kubeflow.org/v1", "TFJob")
    specs = job["spec"]["tfReplicaSpecs"]
    assert set(specs) == {"Chief", "Worker"}
    assert specs["Chief"]["replicas"] == 1 and specs["Worker"]["replicas"] >= 1


def test_tfjob_restarts_a_pod_a_signal_ended_and_not_a_permanent_error() -> None:
    """ExitCode: the operator restarts exit statuses 128-255 (train's 143 after SIGTERM resumes
    from its checkpoint) and fails the job on 1-127 (2: a refused parameter); OnFailure retried
    a refused parameter backoffLimit times."""
    specs = manifest("tfjob.yaml")["spec"]["tfReplicaSpecs"]
    assert {name: spec["restartPolicy"] for name, spec in specs.items()} == {
        "Chief": "ExitCode",
        "Worker": "ExitCode",
    }


@functools.cache
def tfjob_schema() -> dict:
    """The CRD's openAPIV3Schema for kubeflow.org/v1, strict as `kubectl apply --validate=strict`:
    a field the schema does not name is an error (the API server would otherwise drop it)."""
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml reads the 0.5 MB at once
    crd = yaml.load(TFJOB_CRD.read_text(encoding="utf-8"), Loader=loader)
    assert (crd["spec"]["group"], crd["spec"]["names"]["kind"]) == ("kubeflow.org", "TFJob")
    (version,) = [v for v in crd["spec"]["versions"] if v["name"] == "v1"]

    def strict(node):
        if isinstance(node, dict):
            node = {key: strict(value) for key, value in node.items()}
            named = "properties" in node and "additionalProperties" not in node
            if named and not node.get("x-kubernetes-preserve-unknown-fields"):
                node["additionalProperties"] = False
        elif isinstance(node, list):
            node = [strict(item) for item in node]
        return node

    return strict(version["schema"]["openAPIV3Schema"])


def tfjob_errors(job: dict) -> list[str]:
    validator = jsonschema.Draft7Validator(tfjob_schema())
    errors = validator.iter_errors(job)
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in errors]


def test_tfjob_validates_against_the_training_operators_crd_schema() -> None:
    """deploy/tfjob.yaml is a valid TFJob for the operator's published v1 schema."""
    assert tfjob_errors(manifest("tfjob.yaml")) == []


@pytest.mark.parametrize(
    ("path", "value"),
    [
        (["spec", "tfReplicaSpecs", "Worker", "replicas"], "two"),
        (["spec", "tfReplicaSpecs", "Chief", "restartPolicy"], 1),
        (["spec", "tfReplicaSpecs", "Worker", "template", "spec", "containers", 0, "name"], None),
        ([*POD, "containers", 0, "ports", 0, "containerPort"], "2222"),
        (["spec", "runPolicy", "backoffLimits"], 3),
        ([*POD, "containers", 0, "cmd"], []),
    ],
)
def test_the_crd_schema_check_refuses_a_broken_tfjob(path: list, value: object) -> None:
    """The check can fail: a wrong type, a missing name and a misspelt field are errors."""
    job = manifest("tfjob.yaml")
    node = job
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    assert tfjob_errors(job), path


def test_every_tfjob_pod_runs_the_package_train_command_with_multi_worker() -> None:
    """Chief and workers run `<package> train -p strategy=multi_worker` with the same arguments."""
    commands = {kind: c["command"] for kind, c in containers(manifest("tfjob.yaml")).items()}
    for kind, command in commands.items():
        assert command[:2] == [PACKAGE, "train"], kind
        assert "strategy=multi_worker" in command, kind
    assert commands["Chief"] == commands["Worker"]


def test_every_tfjob_pod_keeps_the_run_folder_on_the_shared_claim() -> None:
    """The run folder is on one ReadWriteMany claim that every pod mounts: data and checkpoints
    are seen by all of them."""
    job, claim = manifest("tfjob.yaml"), manifest("pvc.yaml")
    assert claim["kind"] == "PersistentVolumeClaim"
    assert claim["spec"]["accessModes"] == ["ReadWriteMany"]
    for kind, spec in job["spec"]["tfReplicaSpecs"].items():
        pod = spec["template"]["spec"]
        volumes = {v["name"]: v for v in pod["volumes"]}
        mounts = pod["containers"][0]["volumeMounts"]
        (mount,) = [mount for mount in mounts if mount["mountPath"] != "/dev/shm"]
        volume = volumes[mount["name"]]
        assert volume["persistentVolumeClaim"]["claimName"] == claim["metadata"]["name"], kind
        run_dir = option(pod["containers"][0]["command"], "--run-dir")
        assert Path(run_dir).is_relative_to(mount["mountPath"]), kind


def test_every_tfjob_pod_asks_for_a_gpu_in_the_operators_container() -> None:
    """Each pod's `tensorflow` container (the name the operator looks for) limits nvidia.com/gpu."""
    for kind, container in containers(manifest("tfjob.yaml")).items():
        assert container["name"] == "tensorflow", kind
        assert int(container["resources"]["limits"]["nvidia.com/gpu"]) >= 1, kind


def test_slurm_script_is_valid_bash() -> None:
    """`bash -n` finds no syntax error."""
    done = subprocess.run(["bash", "-n", str(SLURM)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


@pytest.fixture
def fake_cluster(tmp_path: Path) -> dict[str, str]:
    """PATH with fake scontrol, srun and package commands, and a two-node SLURM environment."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, text in (("scontrol", FAKE_SCONTROL), ("srun", FAKE_SRUN), (PACKAGE, FAKE_PACKAGE)):
        path = bin_dir / name
        path.write_text(text, encoding="utf-8")
        path.chmod(0o755)
    run_dir = tmp_path / "shared" / "run"
    (run_dir / "data").mkdir(parents=True)
    (run_dir / "data" / "meta.json").write_text("{}", encoding="utf-8")
    (tmp_path / "out").mkdir()
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "TF_"))}
    return {
        **environment,
        "PATH": f"{bin_dir}{os.pathsep}{environment['PATH']}",
        "SLURM_JOB_ID": "4242",
        "SLURM_JOB_NODELIST": "gpu-node[07-08]",
        "SLURM_NNODES": "2",
        "RUN_DIR": str(run_dir),
        "FAKE_OUT": str(tmp_path / "out"),
    }


def test_slurm_script_gives_each_node_its_worker_tf_config(fake_cluster: dict[str, str]) -> None:
    """Each task gets valid TF_CONFIG JSON naming both nodes, with its SLURM_PROCID as the index,
    and runs the package's train command on the shared run folder."""
    done = subprocess.run(
        ["bash", str(SLURM)], env=fake_cluster, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    port = 20000 + 4242 % 20000
    for index in (0, 1):
        task = json.loads(
            (Path(fake_cluster["FAKE_OUT"]) / f"task-{index}.json").read_text(encoding="utf-8")
        )
        config = json.loads(task["tf_config"])
        assert config == {
            "cluster": {"worker": [f"{node}:{port}" for node in NODES]},
            "task": {"type": "worker", "index": index},
        }
        cluster = read_tf_config(task["tf_config"])
        assert (cluster.workers, cluster.task_index, cluster.is_chief) == (2, index, index == 0)
        argv = task["argv"]
        assert argv[0] == "train" and option(argv, "--run-dir") == fake_cluster["RUN_DIR"]
        assert "strategy=multi_worker" in argv


def run_script(environment: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["bash", str(SLURM)], env=environment, capture_output=True, text=True, timeout=60
    )


def test_slurm_script_gives_each_of_several_tasks_per_node_its_own_port(
    fake_cluster: dict[str, str],
) -> None:
    """Two nodes with two tasks each: four workers, a node's second task on the next port, task
    SLURM_PROCID at its own address; srun gets the layout, block placement, --kill-on-bad-exit and,
    without GPUs, no GPU binding."""
    done = run_script({**fake_cluster, "SLURM_NTASKS": "4", "TF_PORT": "31000"})
    assert done.returncode == 0, done.stderr
    workers = [f"{node}:{port}" for node in NODES for port in (31000, 31001)]
    out = Path(fake_cluster["FAKE_OUT"])
    for index in range(4):
        task = json.loads((out / f"task-{index}.json").read_text(encoding="utf-8"))
        config = json.loads(task["tf_config"])
        assert config == {
            "cluster": {"worker": workers},
            "task": {"type": "worker", "index": index},
        }
        assert f"TF_CONFIG={task['tf_config']}" in done.stderr
    srun = json.loads((out / "srun.json").read_text(encoding="utf-8"))
    assert srun["--ntasks"] == "4" and srun["--ntasks-per-node"] == "2"
    assert srun["--distribution"] == "block" and srun["--kill-on-bad-exit"] == "1"
    assert "--gpu-bind" not in srun


def test_slurm_script_binds_each_task_to_its_share_of_the_nodes_gpus(
    fake_cluster: dict[str, str],
) -> None:
    """Four GPUs per node shared by two tasks: SLURM binds two GPUs to each task."""
    environment = {**fake_cluster, "SLURM_NTASKS": "4", "SLURM_GPUS_ON_NODE": "4"}
    done = run_script({**environment, "TRAIN_PARAMS": "-p epochs=1 -p batch_size=256"})
    assert done.returncode == 0, done.stderr
    srun = json.loads((Path(fake_cluster["FAKE_OUT"]) / "srun.json").read_text(encoding="utf-8"))
    assert srun["--gpu-bind"] == "per_task:2"


@pytest.mark.parametrize(
    ("change", "named"),
    [
        ({"RUN_DIR": ""}, "RUN_DIR is not set"),
        ({"RUN_DIR": "/nonexistent/run"}, "01_data"),
        ({"SLURM_NTASKS": "3"}, "--ntasks=3"),
        ({"SLURM_NTASKS": "4", "TRAIN_PARAMS": "-p batch_size=66"}, "batch_size=66"),
        (
            {"SLURM_NTASKS": "4", "SLURM_GPUS_ON_NODE": "4", "TRAIN_PARAMS": "-p batch_size=36"},
            "8 replicas",
        ),
        ({"SLURM_GPUS_ON_NODE": "3", "SLURM_NTASKS": "4"}, "3 GPUs per node"),
        ({"SLURM_NTASKS": "4", "TF_PORT": "65535"}, "TF_PORT=65535"),
        ({"TF_PORT": "31000", "TRAIN_PARAMS": "-p metrics_port=30999"}, "metrics_port=30999"),
    ],
)
def test_slurm_script_refuses_bad_input_in_one_sentence_before_srun(
    fake_cluster: dict[str, str], change: dict[str, str], named: str
) -> None:
    """RUN_DIR unset or without data, a layout the tasks, GPUs or global batch do not split over,
    a port range out of bounds or colliding with the metrics ports: one sentence, no srun."""
    done = run_script({**fake_cluster, **change})
    assert done.returncode == 2, done.stderr
    assert named in done.stderr, done.stderr
    assert_one_sentence(done.stderr)
    assert not list(Path(fake_cluster["FAKE_OUT"]).iterdir())


def test_slurm_script_refuses_a_port_range_in_use(fake_cluster: dict[str, str]) -> None:
    """A worker port something already listens on is named before srun starts the workers."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        done = run_script({**fake_cluster, "SLURM_NTASKS": "4", "TF_PORT": str(port - 1)})
    assert done.returncode == 2, done.stderr
    assert f"port {port} " in done.stderr and "in use" in done.stderr
    assert_one_sentence(done.stderr)
    assert not list(Path(fake_cluster["FAKE_OUT"]).iterdir())


def shm_problems(job: dict) -> list[str]:
    """The replica types whose pods ask for more than one GPU without a memory-backed /dev/shm."""
    problems = []
    for kind, spec in job["spec"]["tfReplicaSpecs"].items():
        pod = spec["template"]["spec"]
        container = pod["containers"][0]
        if int(container["resources"]["limits"].get("nvidia.com/gpu", 0)) <= 1:
            continue
        volumes = {volume["name"]: volume for volume in pod.get("volumes", [])}
        mounted = [
            volumes.get(mount["name"], {})
            for mount in container.get("volumeMounts", [])
            if mount["mountPath"] == "/dev/shm"
        ]
        if not any(volume.get("emptyDir", {}).get("medium") == "Memory" for volume in mounted):
            problems.append(kind)
    return problems


def test_tfjob_pods_with_several_gpus_get_a_memory_backed_dev_shm() -> None:
    """Pods get 64 MB of /dev/shm, too little for NCCL between a pod's GPUs: scaled to four GPUs
    per pod, as deploy/README.md says to scale, every pod still mounts an emptyDir of medium
    Memory at /dev/shm (and the manifest still fits the CRD schema); without it the check names
    the pod."""
    job = manifest("tfjob.yaml")
    for spec in job["spec"]["tfReplicaSpecs"].values():
        spec["template"]["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] = 4
    assert shm_problems(job) == []
    assert tfjob_errors(job) == []
    for spec in job["spec"]["tfReplicaSpecs"].values():
        pod = spec["template"]["spec"]
        pod["containers"][0]["volumeMounts"] = [
            mount
            for mount in pod["containers"][0]["volumeMounts"]
            if mount["mountPath"] != "/dev/shm"
        ]
    assert shm_problems(job) == ["Chief", "Worker"]


def test_slurm_script_asks_srun_for_the_jobs_cpus_per_task(fake_cluster: dict[str, str]) -> None:
    """srun (Slurm 22.05+) does not inherit sbatch's --cpus-per-task: the script passes it on;
    without one in the job, srun gets none."""
    done = run_script({**fake_cluster, "SLURM_CPUS_PER_TASK": "8"})
    assert done.returncode == 0, done.stderr
    srun = json.loads((Path(fake_cluster["FAKE_OUT"]) / "srun.json").read_text(encoding="utf-8"))
    assert srun["--cpus-per-task"] == "8"
    done = run_script(fake_cluster)
    srun = json.loads((Path(fake_cluster["FAKE_OUT"]) / "srun.json").read_text(encoding="utf-8"))
    assert "--cpus-per-task" not in srun


# srun that waits for a signal, as a step whose tasks train, and ends as they would on it.
WAITING_SRUN = """#!/usr/bin/env python3
import os, signal, sys, time
got = []
for name in ("SIGUSR1", "SIGUSR2", "SIGTERM"):
    signal.signal(getattr(signal, name), lambda signum, _: got.append(signum))
open(os.path.join(os.environ["FAKE_OUT"], "srun.started"), "w").close()
deadline = time.monotonic() + 30
while not got and time.monotonic() < deadline:
    time.sleep(0.05)
with open(os.path.join(os.environ["FAKE_OUT"], "srun.signal"), "w") as handle:
    handle.write(signal.Signals(got[0]).name if got else "none")
sys.exit(128 + got[0] if got else 0)
"""


@pytest.mark.parametrize("name", ["USR1", "USR2"])
def test_slurm_script_passes_the_warning_signal_to_srun_and_its_status_back(
    fake_cluster: dict[str, str], name: str
) -> None:
    """SLURM's time-limit warning (--signal=B:USR1@120) reaches the batch script only: the script
    passes it on to srun, which forwards it to the tasks, waits for srun to end, and ends with its
    status (128 + the signal, the tasks' status after saving)."""
    srun = Path(fake_cluster["PATH"].split(os.pathsep)[0]) / "srun"
    srun.write_text(WAITING_SRUN, encoding="utf-8")
    out = Path(fake_cluster["FAKE_OUT"])
    script = subprocess.Popen(
        ["bash", str(SLURM)], env=fake_cluster, stderr=subprocess.PIPE, text=True
    )
    deadline = time.monotonic() + 30
    while not (out / "srun.started").exists():
        assert time.monotonic() < deadline and script.poll() is None, script.stderr.read()
        time.sleep(0.05)
    script.send_signal(getattr(signal, f"SIG{name}"))
    assert script.wait(timeout=30) == 128 + getattr(signal, f"SIG{name}"), script.stderr.read()
    assert (out / "srun.signal").read_text() == f"SIG{name}"
    assert f"{name} received, passed on to the tasks" in script.stderr.read()
    assert "#SBATCH --signal=B:USR1@" in SLURM.read_text(encoding="utf-8")
