#!/usr/bin/env bash
# Multi-worker training on SLURM: one task per node, each running `{{ cookiecutter.package_name }} train` with a
# TF_CONFIG built from SLURM's environment. Submit from the project root with its venv active
# (sbatch passes the environment on), naming a run folder on storage that every node sees:
#
#   RUN_DIR=/shared/artifacts/run1 sbatch --nodes=4 deploy/slurm_train.sh
#   RUN_DIR=/shared/artifacts/run1 TRAIN_PARAMS="-p epochs=30 -p batch_size=512" sbatch deploy/slurm_train.sh
#
# RUN_DIR must already hold data/ (notebook 01_data, or `{{ cookiecutter.package_name }} run --only 01`). Submitting
# again with the same RUN_DIR and parameters resumes after the last completed epoch.
#SBATCH --job-name={{ cookiecutter.project_slug }}-train
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=1
#SBATCH --gres=gpu:1
#SBATCH --cpus-per-task=8
#SBATCH --time=02:00:00
#SBATCH --output=%x-%j.out

set -euo pipefail

# Storage every node reads and writes: the data, the checkpoints (written by worker 0, the chief,
# and restored by all) and the model. A node-local path would give each worker its own run.
export RUN_DIR="${RUN_DIR:?set RUN_DIR to a run folder on shared storage, e.g. /shared/artifacts/run1}"
# Training parameters, with notebook 03's names; the global batch is split across all GPUs.
export TRAIN_PARAMS="${TRAIN_PARAMS:--p epochs=20 -p batch_size=256}"
# The port each worker listens on for the others; derived from the job id, so two jobs sharing
# a node do not collide.
export TF_PORT="${TF_PORT:-$((20000 + ${SLURM_JOB_ID:-0} % 20000))}"

# TF_CONFIG for this task: every node of the job is a worker, SLURM_PROCID is this task's index
# (one task per node, so it is also its node's position in the node list). Runs on each node.
tf_config() {
    local hosts
    hosts="$(scontrol show hostnames "$SLURM_JOB_NODELIST")"
    HOSTS="$hosts" python3 -c '
import json, os
hosts = os.environ["HOSTS"].split()
port = os.environ["TF_PORT"]
index = int(os.environ["SLURM_PROCID"])
print(json.dumps({
    "cluster": {"worker": [f"{host}:{port}" for host in hosts]},
    "task": {"type": "worker", "index": index},
}))'
}

# One worker: its TF_CONFIG, then the same train command on every node.
train_task() {
    TF_CONFIG="$(tf_config)"
    export TF_CONFIG
    echo "task ${SLURM_PROCID} on $(hostname): TF_CONFIG=${TF_CONFIG}" >&2
    # shellcheck disable=SC2086  # TRAIN_PARAMS is a list of -p key=value words
    exec {{ cookiecutter.package_name }} train --run-dir "$RUN_DIR" -p strategy=multi_worker $TRAIN_PARAMS
}

if [[ ! -f "$RUN_DIR/data/meta.json" ]]; then
    echo "$RUN_DIR/data/meta.json is missing: run 01_data first, with the same run_dir." >&2
    exit 2
fi

# The functions travel inside the command, since the batch script itself is on one node only.
srun --ntasks-per-node=1 --kill-on-bad-exit=1 \
    bash -c "$(declare -f tf_config train_task); train_task"
