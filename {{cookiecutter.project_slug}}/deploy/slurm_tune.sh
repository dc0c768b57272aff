#!/usr/bin/env bash
# Distributed tuning on SLURM, on keras-tuner's own chief/worker mode: this batch script runs the
# chief (it holds the oracle and serves it over gRPC; it trains nothing), and every task of the
# job is one worker running `{{ cookiecutter.package_name }} tune`, which asks the chief for a trial, trains it and
# asks for the next, until the chief says the search is done. keras-tuner finds its role in
# KERASTUNER_TUNER_ID (chief, worker0, worker1, …), KERASTUNER_ORACLE_IP and _PORT. Submit from the
# project root with its venv active (sbatch passes the environment on), naming a run folder on
# storage that every node sees:
#
#   RUN_DIR=/shared/artifacts/run1 sbatch --ntasks=8 --ntasks-per-node=4 --gres=gpu:4 deploy/slurm_tune.sh
#   RUN_DIR=/shared/artifacts/run1 TUNE_PARAMS="-p max_trials=64 -p epochs=10" sbatch deploy/slurm_tune.sh
#   RUN_DIR=R sbatch --nodes=1 --ntasks=2 --cpus-per-task=1 --gres=none deploy/slurm_tune.sh
#
# Each task gets one GPU (SLURM binds it) or none: a worker trains each trial on one GPU, so a
# layout that gives a task several (--gpus-per-task, or more GPUs than tasks on a node) is refused
# in one sentence; ask for one task per GPU instead, which runs that many trials at once.
# The last line is the CPU-only layout: one chief and two workers on one node, no GPU. RUN_DIR must
# already hold data/ (notebook 01_data). The chief writes tuning/trials.json (which worker, which
# pid ran each trial), tuning/best_hparams.json and metrics/tune.json once every trial has ended.
# A job that ends early (a worker killed: --kill-on-bad-exit ends the job; scancel; the time
# limit) is resumed by submitting it again with the same RUN_DIR and parameters: trials that
# ended are kept, those that were running are trained again, none is counted twice.
#SBATCH --job-name={{ cookiecutter.project_slug }}-tune
#SBATCH --nodes=1
#SBATCH --ntasks=2
#SBATCH --gres=gpu:2
#SBATCH --cpus-per-task=4
#SBATCH --time=04:00:00
#SBATCH --output=%x-%j.out

set -euo pipefail

fail() {
    echo "$1" >&2
    exit 2
}

[[ -n "${RUN_DIR:-}" ]] || fail "RUN_DIR is not set: name a run folder on shared storage that holds data/, such as RUN_DIR=/shared/artifacts/run1."
[[ -f "$RUN_DIR/data/meta.json" ]] || fail "$RUN_DIR/data/meta.json is missing: run 01_data first, with the same run_dir."
export RUN_DIR
# Tuning parameters, with notebook 02's names (workers is the job's task count, set below).
export TUNE_PARAMS="${TUNE_PARAMS:--p max_trials=12 -p epochs=2}"
[[ ! "$TUNE_PARAMS" =~ workers= ]] || fail "TUNE_PARAMS sets workers, which this script takes from the job: ask for that many tasks instead (--ntasks)."

# The job's layout: tasks (workers) in all, per node, and GPUs per task (none under --gres=none).
TASKS="${SLURM_NTASKS:-1}"
NODES="${SLURM_NNODES:-1}"
(( TASKS % NODES == 0 )) || fail "--ntasks=$TASKS does not split evenly over --nodes=$NODES: give every node the same number of tasks, e.g. --ntasks-per-node."
TASKS_PER_NODE=$(( TASKS / NODES ))
GPUS_PER_NODE="${SLURM_GPUS_ON_NODE:-0}"
(( GPUS_PER_NODE % TASKS_PER_NODE == 0 )) || fail "$GPUS_PER_NODE GPUs per node do not split evenly over $TASKS_PER_NODE tasks per node: ask for a multiple, e.g. --gres=gpu:$TASKS_PER_NODE."
GPUS_PER_TASK=$(( GPUS_PER_NODE / TASKS_PER_NODE ))
# A worker trains each trial on one GPU (its trials are small; more trials at once use GPUs
# better than one trial spread over several): a second GPU per task would sit idle.
(( GPUS_PER_TASK <= 1 )) || fail "--gpus-per-task=$GPUS_PER_TASK is not allowed ($GPUS_PER_NODE GPUs over $TASKS_PER_NODE tasks per node): a tuning worker trains each trial on one GPU, so give each task one GPU or none, e.g. --ntasks-per-node=$GPUS_PER_NODE --gres=gpu:$GPUS_PER_NODE, which runs $GPUS_PER_NODE trials at once on each node."

# The chief listens on this node's address as SLURM knows it (NodeAddr), at a port derived from
# the job id (two jobs on one node do not collide); TUNE_ORACLE_IP or TUNE_PORT choose others.
NODE_ADDR="$(scontrol show node "${SLURMD_NODENAME:-$(hostname -s)}" | grep -o 'NodeAddr=[^ ]*' | cut -d= -f2)"
export KERASTUNER_ORACLE_IP="${TUNE_ORACLE_IP:-${NODE_ADDR:-$(hostname)}}"
export KERASTUNER_ORACLE_PORT="${TUNE_PORT:-$(( 40000 + ${SLURM_JOB_ID:-0} % 20000 ))}"
(( KERASTUNER_ORACLE_PORT >= 1024 && KERASTUNER_ORACLE_PORT <= 65535 )) || fail "TUNE_PORT=$KERASTUNER_ORACLE_PORT is outside 1024-65535: set TUNE_PORT to a free port."
if (exec 3<>"/dev/tcp/127.0.0.1/$KERASTUNER_ORACLE_PORT") 2>/dev/null; then
    fail "port $KERASTUNER_ORACLE_PORT is in use on $(hostname): set TUNE_PORT to a free port."
fi
echo "chief on $(hostname) at $KERASTUNER_ORACLE_IP:$KERASTUNER_ORACLE_PORT; $TASKS workers ($GPUS_PER_TASK GPUs each)" >&2

# The chief trains nothing, but keras-tuner builds one model in it before any worker starts: with
# no GPU visible (CUDA_VISIBLE_DEVICES="") it maps none of the memory the workers on this node need.
# shellcheck disable=SC2086  # TUNE_PARAMS is a list of -p key=value words
CUDA_VISIBLE_DEVICES="" KERASTUNER_TUNER_ID=chief {{ cookiecutter.package_name }} tune --run-dir "$RUN_DIR" -p workers="$TASKS" $TUNE_PARAMS &
CHIEF_PID=$!

# One worker per task: its tuner id from its rank; under GPUs SLURM has already narrowed
# CUDA_VISIBLE_DEVICES to the task's own (srun --gpu-bind=per_task).
tune_task() {
    export KERASTUNER_TUNER_ID="worker${SLURM_PROCID}"
    echo "task ${SLURM_PROCID} on $(hostname) as ${KERASTUNER_TUNER_ID}, pid $$ (GPUs: ${CUDA_VISIBLE_DEVICES:-none}, CPUs: $(nproc))" >&2
    # shellcheck disable=SC2086
    exec {{ cookiecutter.package_name }} tune --run-dir "$RUN_DIR" -p workers="$TASKS" $TUNE_PARAMS
}
BIND=()
(( GPUS_PER_TASK == 0 )) || BIND=(--gpu-bind="per_task:$GPUS_PER_TASK")
# Since Slurm 22.05 srun no longer inherits sbatch's --cpus-per-task: ask again for the job's.
CPUS=()
[[ -z "${SLURM_CPUS_PER_TASK:-}" ]] || CPUS=(--cpus-per-task="$SLURM_CPUS_PER_TASK")
export TASKS
srun --ntasks="$TASKS" --ntasks-per-node="$TASKS_PER_NODE" --distribution=block \
    --kill-on-bad-exit=1 ${CPUS[@]+"${CPUS[@]}"} ${BIND[@]+"${BIND[@]}"} \
    bash -c "set -euo pipefail; $(declare -f tune_task); tune_task" &
SRUN_PID=$!

# Whichever ends first: a worker that failed ends srun (--kill-on-bad-exit), and the chief would
# wait for its trial for ever; a chief that failed leaves the workers waiting for an oracle. Stop
# the other one then; after a success, wait for it (workers end once the chief says stop).
STATUS=0
wait -n "$CHIEF_PID" "$SRUN_PID" || STATUS=$?
if (( STATUS != 0 )); then
    echo "batch script: a part of the job ended with status $STATUS; stopping the rest (submit again to resume)" >&2
    kill -s TERM "$CHIEF_PID" "$SRUN_PID" 2>/dev/null || true
fi
for pid in "$CHIEF_PID" "$SRUN_PID"; do
    wait "$pid" || STATUS=$(( STATUS ? STATUS : $? ))
done
exit "$STATUS"
