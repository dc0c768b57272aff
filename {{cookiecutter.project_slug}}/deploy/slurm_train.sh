#!/usr/bin/env bash
# Multi-worker training on SLURM: every task of the job is one worker running `{{ cookiecutter.package_name }} train` with
# MultiWorkerMirroredStrategy and a TF_CONFIG built from SLURM's environment. One task per node, or
# several per node (one per GPU): each task gets its own port and its own GPUs. Submit from the
# project root with its venv active (sbatch passes the environment on), naming a run folder on
# storage that every node sees:
#
#   RUN_DIR=/shared/artifacts/run1 sbatch --nodes=4 deploy/slurm_train.sh
#   RUN_DIR=/shared/artifacts/run1 sbatch --nodes=2 --ntasks-per-node=4 --gres=gpu:4 deploy/slurm_train.sh
#   RUN_DIR=/shared/artifacts/run1 TRAIN_PARAMS="-p epochs=30 -p batch_size=512" sbatch deploy/slurm_train.sh
#   RUN_DIR=R sbatch --nodes=1 --ntasks=2 --ntasks-per-node=2 --cpus-per-task=1 --gres=none deploy/slurm_train.sh
#
# The last line is the CPU-only layout: two workers on one node, no GPU. RUN_DIR must already hold
# data/ (notebook 01_data, or `{{ cookiecutter.package_name }} run --only 01`). Submitting again with the same
# RUN_DIR and parameters resumes from the last checkpoint: after the last completed epoch, or at the
# step where a stop signal ended the job (scancel, preemption, or the time-limit warning below).
#SBATCH --job-name={{ cookiecutter.project_slug }}-train
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=1
#SBATCH --gres=gpu:1
#SBATCH --cpus-per-task=8
#SBATCH --time=02:00:00
# 120 s before the time limit SLURM sends USR1 to this script, which passes it to every task: each
# finishes its step, the chief writes a checkpoint of it, and the job ends with status 138
# (128 + USR1) before the limit's SIGTERM and SIGKILL. Change the lead time to a few steps
# plus a checkpoint's writing; a task stops likewise on SIGTERM (scancel, preemption): 143.
#SBATCH --signal=B:USR1@120
#SBATCH --output=%x-%j.out

set -euo pipefail

fail() {
    echo "$1" >&2
    exit 2
}

# Storage every node reads and writes: the data, the checkpoints (written by the chief, task 0,
# and restored by all) and the model. A node-local path would give each worker its own run.
[[ -n "${RUN_DIR:-}" ]] || fail "RUN_DIR is not set: name a run folder on shared storage that holds data/, such as RUN_DIR=/shared/artifacts/run1."
[[ -f "$RUN_DIR/data/meta.json" ]] || fail "$RUN_DIR/data/meta.json is missing: run 01_data first, with the same run_dir."
export RUN_DIR
# Training parameters, with notebook 03's names; the global batch is split across all replicas.
export TRAIN_PARAMS="${TRAIN_PARAMS:--p epochs=20 -p batch_size=256}"

# The job's layout: tasks (workers) in all, per node, and GPUs per task (none under --gres=none).
TASKS="${SLURM_NTASKS:-${SLURM_NNODES:-1}}"
NODES="${SLURM_NNODES:-1}"
(( TASKS % NODES == 0 )) || fail "--ntasks=$TASKS does not split evenly over --nodes=$NODES: give every node the same number of tasks, e.g. --ntasks-per-node."
TASKS_PER_NODE=$(( TASKS / NODES ))
GPUS_PER_NODE="${SLURM_GPUS_ON_NODE:-0}"
(( GPUS_PER_NODE % TASKS_PER_NODE == 0 )) || fail "$GPUS_PER_NODE GPUs per node do not split evenly over $TASKS_PER_NODE tasks per node: ask for a multiple, e.g. --ntasks-per-node=$GPUS_PER_NODE."
GPUS_PER_TASK=$(( GPUS_PER_NODE / TASKS_PER_NODE ))
REPLICAS=$(( TASKS * (GPUS_PER_TASK > 0 ? GPUS_PER_TASK : 1) ))
if [[ "$TRAIN_PARAMS" =~ batch_size=([0-9]+) ]]; then
    BATCH="${BASH_REMATCH[1]}"
    (( BATCH % REPLICAS == 0 )) || fail "batch_size=$BATCH is not divisible by the $REPLICAS replicas of this job ($TASKS tasks x $(( GPUS_PER_TASK > 0 ? GPUS_PER_TASK : 1 )) each): use a multiple of $REPLICAS."
fi

# The ports the workers listen on for each other: TF_PORT on every node, plus SLURM_LOCALID for
# the second, third, … task of a node. Derived from the job id, so two jobs sharing a node do not
# collide; the range must also stay clear of the metrics ports (metrics_port + task index).
export TF_PORT="${TF_PORT:-$(( 20000 + ${SLURM_JOB_ID:-0} % 20000 ))}"
LAST_PORT=$(( TF_PORT + TASKS_PER_NODE - 1 ))
(( TF_PORT >= 1024 && LAST_PORT <= 65535 )) || fail "TF_PORT=$TF_PORT gives ports $TF_PORT-$LAST_PORT, outside 1024-65535: set TF_PORT to a free range."
if [[ "$TRAIN_PARAMS" =~ metrics_port=([0-9]+) ]] && (( BASH_REMATCH[1] > 0 )); then
    METRICS="${BASH_REMATCH[1]}"
    (( METRICS + TASKS - 1 < TF_PORT || METRICS > LAST_PORT )) || fail "metrics_port=$METRICS gives ports $METRICS-$(( METRICS + TASKS - 1 )), which collide with the workers' ports $TF_PORT-$LAST_PORT: move one of them (TF_PORT or metrics_port)."
fi
for (( port = TF_PORT; port <= LAST_PORT; port++ )); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
        fail "port $port of the workers' range $TF_PORT-$LAST_PORT is in use on $(hostname): set TF_PORT to a free range."
    fi
done

# TF_CONFIG for this task, on its node: the workers are the job's nodes (`scontrol show
# hostnames`), each with TASKS_PER_NODE ports; tasks are placed in blocks (srun --distribution),
# so task SLURM_PROCID is the SLURM_LOCALID-th task of node SLURM_PROCID / TASKS_PER_NODE.
tf_config() {
    local hosts
    hosts="$(scontrol show hostnames "$SLURM_JOB_NODELIST")"
    HOSTS="$hosts" python3 -c '
import json, os
hosts = os.environ["HOSTS"].split()
port, per_node = int(os.environ["TF_PORT"]), int(os.environ["TASKS_PER_NODE"])
workers = [f"{host}:{port + local}" for host in hosts for local in range(per_node)]
index, local = int(os.environ["SLURM_PROCID"]), int(os.environ["SLURM_LOCALID"])
assert workers[index] == f"{hosts[index // per_node]}:{port + local}", "tasks not in blocks"
print(json.dumps({"cluster": {"worker": workers}, "task": {"type": "worker", "index": index}}))'
}

# One worker: its TF_CONFIG, then the same train command in every task. Under GPUs SLURM has
# already narrowed CUDA_VISIBLE_DEVICES to this task's own (srun --gpu-bind=per_task).
train_task() {
    TF_CONFIG="$(tf_config)"
    export TF_CONFIG
    echo "task ${SLURM_PROCID} on $(hostname) (GPUs: ${CUDA_VISIBLE_DEVICES:-none}, CPUs: $(nproc)): TF_CONFIG=${TF_CONFIG}" >&2
    # shellcheck disable=SC2086  # TRAIN_PARAMS is a list of -p key=value words
    exec {{ cookiecutter.package_name }} train --run-dir "$RUN_DIR" -p strategy=multi_worker $TRAIN_PARAMS
}

export TASKS_PER_NODE
BIND=()
(( GPUS_PER_TASK == 0 )) || BIND=(--gpu-bind="per_task:$GPUS_PER_TASK")
# Since Slurm 22.05 srun no longer inherits sbatch's --cpus-per-task: without it every task would
# get one CPU, and tf.data's parallel stages would starve the GPU. Ask again for the job's value.
CPUS=()
[[ -z "${SLURM_CPUS_PER_TASK:-}" ]] || CPUS=(--cpus-per-task="$SLURM_CPUS_PER_TASK")
# srun runs in the background so that this script can pass the time-limit warning (USR1, or
# USR2 when asked for with --signal=B:USR2@T) on to srun, which forwards it to every task. A
# SIGTERM here (scancel, the time limit) reaches the tasks from SLURM itself: the script only
# keeps waiting, so the job lasts until the chief has written its checkpoint.
# The functions travel inside the command, since the batch script itself is on one node only.
srun --ntasks="$TASKS" --ntasks-per-node="$TASKS_PER_NODE" --distribution=block \
    --kill-on-bad-exit=1 ${CPUS[@]+"${CPUS[@]}"} ${BIND[@]+"${BIND[@]}"} \
    bash -c "set -euo pipefail; $(declare -f tf_config train_task); train_task" &
SRUN_PID=$!
forward() {
    echo "batch script: $1 received, passed on to the tasks" >&2
    kill -s "$1" "$SRUN_PID" 2>/dev/null || true
}
trap 'forward USR1' USR1
trap 'forward USR2' USR2
trap 'echo "batch script: TERM received; waiting for the tasks to save and stop" >&2' TERM
# `wait` returns early when a trapped signal arrives: wait again until srun has ended, then
# end with its status (the highest of the tasks': 0, 143 or 138 after a stop signal).
while true; do
    STATUS=0
    wait "$SRUN_PID" || STATUS=$?
    kill -0 "$SRUN_PID" 2>/dev/null || break
done
exit "$STATUS"
