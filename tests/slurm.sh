#!/usr/bin/env bash
# `psim sweep` on a real SLURM: a one-node cluster on localhost (munge,
# slurmctld, slurmd from Debian's slurm-wlm), started here unless one already
# answers. Submits a 2 x 2 sweep as a job array with `sbatch --wait`, checks
# every task's manifest and flows, checks that psim-analyze tabulates all four
# tasks in one table, then resubmits and checks that nothing is submitted.
# Submits `psim validate --backend slurm --wait` for two quick targets.
# The cluster's MaxArraySize is 3, so the four tasks go as two job arrays.
# Also runs slurm/single_node.sbatch, and slurm/multi_node_mpi.sbatch with
# two ranks (an MPI build of psim, when mpicc is there; else one rank).
# Finally, time limits: a single_node.sbatch job, a sweep task and an MPI
# job, each with a one-minute limit, are signalled by SLURM before it,
# checkpoint, requeue themselves, resume and finish with the flows of an
# uninterrupted run.
#
# Without `sbatch` this prints "skipped", unless PSIM_REQUIRE_SLURM=1 (CI sets
# it). Needs root to start the daemons (CI runs as root).
set -uo pipefail
cd "$(dirname "$0")/.."
repo=$PWD

if ! command -v sbatch >/dev/null 2>&1 || ! command -v slurmctld >/dev/null 2>&1; then
    if [[ "${PSIM_REQUIRE_SLURM:-0}" == 1 ]]; then
        echo "slurm: sbatch or slurmctld not found and PSIM_REQUIRE_SLURM=1 (apt-get install slurm-wlm munge)" >&2
        exit 1
    fi
    echo "slurm: skipped (sbatch not found)"
    exit 0
fi

fail() {
    echo "slurm: FAILED: $*" >&2
    echo "slurm: 0 passed, 1 failed"
    exit 1
}

work=$(mktemp -d /tmp/psim-slurm.XXXXXX)
chmod 755 "$work"
started=()
cleanup() {
    local pid
    for pid in "${started[@]}"; do
        kill "$pid" 2>/dev/null
    done
    # Give the daemons a moment to exit before their state directory goes.
    for pid in "${started[@]}"; do
        for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    done
    rm -rf "$work"
}
trap cleanup EXIT

# The binaries: the same dev profile as `cargo test`, so no release build.
cargo build -q -p psim -p analysis --bin psim --bin psim-analyze || fail "cargo build"
psim=$repo/target/debug/psim
analyze=$repo/target/debug/psim-analyze
# The MPI template runs an MPI build; keep a copy of it, then put the plain
# build back (only the psim crate recompiles).
ranks=1
if command -v mpicc >/dev/null 2>&1; then
    cargo build -q -p psim --features mpi --bin psim || fail "cargo build --features mpi"
    cp "$psim" "$work/psim-mpi"
    cargo build -q -p psim --bin psim || fail "cargo build"
    ranks=2
fi

# ---------------------------------------------------------------------------
# A one-node cluster, unless a configured one already answers.
if sinfo -h -o %T >/dev/null 2>&1; then
    echo "slurm: using the running cluster ($(sinfo -h -o '%N %T' | head -1))"
else
    # munge: the key comes with the Debian package; create one if it is missing.
    if [[ ! -s /etc/munge/munge.key ]]; then
        runuser -u munge -- mungekey --create || fail "mungekey --create"
    fi
    if ! munge -n >/dev/null 2>&1; then
        mkdir -p /run/munge && chown munge:munge /run/munge && chmod 755 /run/munge
        rm -f /run/munge/munged.pid
        runuser -u munge -- munged || fail "munged did not start"
        for _ in $(seq 50); do [[ -s /run/munge/munged.pid ]] && break; sleep 0.1; done
        started+=("$(cat /run/munge/munged.pid)")
        munge -n | unmunge >/dev/null || fail "munge does not work"
    fi

    # slurmd knows itself by the short host name.
    host=$(uname -n)
    host=${host%%.*}
    mkdir -p "$work/state" "$work/spool"
    export SLURM_CONF=$work/slurm.conf
    cat > "$SLURM_CONF" <<CONF
ClusterName=psimtest
SlurmctldHost=$host(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
# A requeued job waits cred_expire seconds before it starts again (default
# 120): the time-limit test requeues jobs.
AuthInfo=cred_expire=10
StateSaveLocation=$work/state
SlurmdSpoolDir=$work/spool
SlurmctldPidFile=$work/slurmctld.pid
SlurmdPidFile=$work/slurmd.pid
SlurmctldLogFile=$work/slurmctld.log
SlurmdLogFile=$work/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
SchedulerType=sched/backfill
# Start a requeued job within seconds of its becoming eligible (default 60 s).
SchedulerParameters=sched_interval=2,bf_interval=1
MaxArraySize=3
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmdParameters=config_overrides
ReturnToService=2
NodeName=$host NodeAddr=127.0.0.1 CPUs=$(( $(nproc) < 4 ? 4 : $(nproc) )) RealMemory=1000 State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
CONF
    slurmctld -f "$SLURM_CONF" || fail "slurmctld did not start (log: $(tail -3 "$work/slurmctld.log" 2>/dev/null))"
    for _ in $(seq 50); do [[ -s $work/slurmctld.pid ]] && break; sleep 0.1; done
    started+=("$(cat "$work/slurmctld.pid")")
    slurmd -f "$SLURM_CONF" || fail "slurmd did not start (log: $(tail -3 "$work/slurmd.log" 2>/dev/null))"
    for _ in $(seq 50); do [[ -s $work/slurmd.pid ]] && break; sleep 0.1; done
    started+=("$(cat "$work/slurmd.pid")")
    state=""
    for _ in $(seq 60); do
        state=$(sinfo -h -n "$host" -o %T 2>/dev/null)
        [[ $state == idle ]] && break
        sleep 1
    done
    [[ $state == idle ]] || fail "node $host is '${state}', not idle after 60 s (logs in $work: $(tail -2 "$work/slurmd.log" "$work/slurmctld.log" 2>/dev/null | tr '\n' ' '))"
    echo "slurm: one-node cluster $host up ($(nproc) CPUs)"
fi
# A cluster started elsewhere has its own MaxArraySize: psim is told 3.
if [[ $(scontrol show config | awk '$1 == "MaxArraySize" {print $3}') != 3 ]]; then
    export PSIM_MAX_ARRAY_SIZE=3
fi

# ---------------------------------------------------------------------------
# The sweep: 2 incast sizes x 2 initial windows on a k = 4 FatTree.
cat > "$work/sweep.toml" <<TOML
base = "$repo/scenarios/small/ndp_incast_k4.toml"
out = "out"
[slurm]
time = "00:05:00"
cpus_per_task = 1
[grid]
"traffic.0.senders" = [4, 8]
"protocol.ndp.iw_packets" = [4, 23]
TOML
dirs=(
    "protocol.ndp.iw_packets=4,traffic.0.senders=4"
    "protocol.ndp.iw_packets=4,traffic.0.senders=8"
    "protocol.ndp.iw_packets=23,traffic.0.senders=4"
    "protocol.ndp.iw_packets=23,traffic.0.senders=8"
)

# The dry run prints the sbatch lines and submits nothing: MaxArraySize = 3
# splits the four tasks into arrays 0-2 (tasks 0-2) and 0 (task 3).
"$psim" sweep "$work/sweep.toml" --backend slurm --dry-run > "$work/dry.txt" || fail "dry run: $(cat "$work/dry.txt")"
grep -q -- "PSIM_TASK_OFFSET=0 sbatch .*--array=0-2 " "$work/dry.txt" || fail "dry run printed no sbatch line for tasks 0-2: $(cat "$work/dry.txt")"
grep -q -- "PSIM_TASK_OFFSET=3 sbatch .*--array=0 " "$work/dry.txt" || fail "dry run printed no sbatch line for task 3: $(cat "$work/dry.txt")"
[[ $(grep -c " sbatch " "$work/dry.txt") == 2 ]] || fail "expected 2 sbatch lines: $(cat "$work/dry.txt")"
[[ -z $(squeue -h) ]] || fail "the dry run submitted a job: $(squeue -h)"

# A bad grid is refused before anything is submitted.
sed 's/"protocol.ndp.iw_packets"/"protocol.ndp.no_such_key"/' "$work/sweep.toml" > "$work/bad.toml"
if "$psim" sweep "$work/bad.toml" --backend slurm > "$work/bad.txt" 2>&1; then
    fail "a sweep with an unknown key was accepted"
fi
grep -q "no_such_key" "$work/bad.txt" || fail "the error does not name the key: $(cat "$work/bad.txt")"
[[ -z $(squeue -h) ]] || fail "the bad sweep submitted a job: $(squeue -h)"

timeout 300 "$psim" sweep "$work/sweep.toml" --backend slurm --wait > "$work/submit.txt" 2>&1 \
    || fail "sweep --backend slurm --wait: $(cat "$work/submit.txt"; cat "$work"/out/logs/* 2>/dev/null)"
[[ $(grep -c "Submitted batch job" "$work/submit.txt") == 2 ]] || fail "expected 2 job arrays: $(cat "$work/submit.txt")"
grep -q "ran 4, skipped 0, failed 0" "$work/submit.txt" || fail "unexpected summary: $(cat "$work/submit.txt")"

# Every task ran as an array element (its own log) and left a complete run
# whose manifest carries its own parameters.
[[ $(find "$work/out/logs" -name '*.out' | wc -l) == 4 ]] || fail "expected 4 array-task logs: $(ls "$work/out/logs")"
for d in "${dirs[@]}"; do
    m="$work/out/$d/manifest.json"
    [[ -s $m ]] || fail "$d: no manifest"
    senders=${d##*senders=}
    iw=${d#*iw_packets=}; iw=${iw%%,*}
    python3 - "$m" "$senders" "$iw" <<'PY' || fail "$d: manifest check"
import json, sys
m = json.load(open(sys.argv[1]))
senders, iw = int(sys.argv[2]), int(sys.argv[3])
assert m["complete"] is True, "not complete"
assert m["flows_started"] == senders and m["flows_finished"] == senders, (m["flows_started"], m["flows_finished"])
cfg = json.dumps(m["config"])
assert f'"iw_packets": {iw}' in cfg, f"iw_packets {iw} not in config"
PY
    [[ -n $(find "$work/out/$d/flows" -name 'part-*.parquet') ]] || fail "$d: no flows parts"
done

# One table across all tasks, keyed by the two swept parameters.
"$analyze" "$work/out" --format csv --out "$work/report" --no-plots > /dev/null 2>&1 || fail "psim-analyze on the sweep folder"
summary="$work/report/summary.csv"
[[ -s $summary ]] || fail "no summary.csv: $(ls "$work/report")"
rows=$(($(wc -l < "$summary") - 1))
[[ $rows == 4 ]] || fail "summary.csv has $rows rows, expected 4"
head -1 "$summary" | grep -q "protocol.ndp.iw_packets" || fail "summary.csv is not keyed by iw_packets: $(head -1 "$summary")"
head -1 "$summary" | grep -q "traffic.0.senders" || fail "summary.csv is not keyed by senders: $(head -1 "$summary")"
for d in "${dirs[@]}"; do
    grep -qF "$d" "$summary" || fail "summary.csv has no row for $d"
done

# Resubmitting skips every finished task and submits nothing.
jobs_before=$(scontrol show jobs -o 2>/dev/null | grep -c JobId=)
"$psim" sweep "$work/sweep.toml" --backend slurm --wait > "$work/again.txt" 2>&1 || fail "resubmission: $(cat "$work/again.txt")"
grep -q "nothing submitted" "$work/again.txt" || fail "resubmission submitted: $(cat "$work/again.txt")"
grep -q "skipped 4" "$work/again.txt" || fail "resubmission did not skip 4: $(cat "$work/again.txt")"
jobs_after=$(scontrol show jobs -o 2>/dev/null | grep -c JobId=)
[[ $jobs_before == "$jobs_after" ]] || fail "resubmission created a job ($jobs_before -> $jobs_after jobs)"

# A task lost since then is the only one resubmitted.
rm "$work/out/${dirs[2]}/manifest.json"
"$psim" sweep "$work/sweep.toml" --backend slurm --wait > "$work/redo.txt" 2>&1 || fail "partial resubmission: $(cat "$work/redo.txt")"
grep -q -- "--array=2 " "$work/redo.txt" || fail "expected only task 2 in the array: $(cat "$work/redo.txt")"
grep -q "ran 1, skipped 3, failed 0" "$work/redo.txt" || fail "partial resubmission summary: $(cat "$work/redo.txt")"

# psim validate --backend slurm: two quick targets (well under a second
# each) as array tasks; MaxArraySize = 3 may split them into two arrays.
# Both are collected into quick.json, as a local pass writes it.
"$psim" validate --backend slurm --wait --only V2,V23 --threads 1 --time 00:05:00 --out "$work/val" \
    > "$work/val.txt" 2>&1 || fail "validate --backend slurm --wait: $(cat "$work/val.txt" "$work"/val/logs/* 2>/dev/null)"
grep -q "collected 2 targets at quick scale" "$work/val.txt" || fail "validate: $(cat "$work/val.txt")"
python3 - "$work/val/quick.json" <<'PY' || fail "validate: quick.json: $(cat "$work/val.txt")"
import json, sys
r = json.load(open(sys.argv[1]))
assert sorted(r["targets"]) == ["V2", "V23"], sorted(r["targets"])
assert all(c["verdict"] != "not_run" for t in r["targets"].values() for c in t["checks"]), r
PY
[[ $(find "$work/val/logs" -name '*.out' | wc -l) == 2 ]] || fail "validate: expected 2 array-task logs: $(ls "$work/val/logs")"

# The two other templates, as documented in slurm/README.md; the MPI one
# with two ranks on the one node.
check_run() { # check_run DIR SENDERS THREADS RANKS: a complete run of the incast with that many senders
    python3 - "$1/manifest.json" "$2" "$3" "$4" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
senders, threads, ranks = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
assert m["complete"] is True, "not complete"
assert m["flows_started"] == senders and m["flows_finished"] == senders, (m["flows_started"], m["flows_finished"])
assert m["threads"] == threads and m["ranks"] == ranks, (m["threads"], m["ranks"])
PY
}
PSIM=$psim sbatch --wait --cpus-per-task=1 --time=00:05:00 --output="$work/single.out" \
    slurm/single_node.sbatch "$repo/scenarios/small/ndp_incast_k4.toml" "$work/single" --set traffic.0.senders=3 \
    > /dev/null || fail "single_node.sbatch: $(cat "$work/single.out")"
check_run "$work/single" 3 1 1 || fail "single_node.sbatch: $(cat "$work/single.out")"
if [[ $ranks == 2 ]]; then
    # Two ranks of one thread on the node's (at least) two CPUs; OpenMPI
    # under srun needs the PMIx plugin.
    PSIM=$work/psim-mpi SRUN_MPI=pmix sbatch --wait --nodes=1 --ntasks-per-node=2 --cpus-per-task=1 --time=00:05:00 \
        --output="$work/mpi.out" slurm/multi_node_mpi.sbatch "$repo/scenarios/small/ndp_incast_k4.toml" "$work/mpi" \
        --set traffic.0.senders=5 > /dev/null || fail "multi_node_mpi.sbatch: $(cat "$work/mpi.out")"
    check_run "$work/mpi" 5 1 2 || fail "multi_node_mpi.sbatch, 2 ranks: $(cat "$work/mpi.out")"
    # The same flows as one process.
    "$psim" run "$repo/scenarios/small/ndp_incast_k4.toml" --out "$work/one" --set traffic.0.senders=5 -q \
        || fail "one-process run"
    cmp -s <("$psim" flows "$work/mpi") <("$psim" flows "$work/one") || fail "2 ranks under srun differ from one process"
else
    echo "slurm: no mpicc: multi_node_mpi.sbatch runs one rank"
    PSIM=$psim sbatch --wait --nodes=1 --cpus-per-task=1 --time=00:05:00 --output="$work/mpi.out" \
        slurm/multi_node_mpi.sbatch "$repo/scenarios/small/ndp_incast_k4.toml" "$work/mpi" --set traffic.0.senders=5 \
        > /dev/null || fail "multi_node_mpi.sbatch: $(cat "$work/mpi.out")"
    check_run "$work/mpi" 5 1 1 || fail "multi_node_mpi.sbatch: $(cat "$work/mpi.out")"
fi

# ---------------------------------------------------------------------------
# Time limits (docs/checkpoint.md): a single_node.sbatch job, a one-task
# sweep and (with mpicc) a two-rank multi_node_mpi.sbatch job, at once (the
# node declares at least 4 CPUs; the runs mostly sleep), each limited to one
# minute and asking for USR1 20 s before it, are
# signalled by SLURM (not by this script), checkpoint, requeue themselves,
# resume and finish, with the flows of an uninterrupted run.
#
# slurmctld checks time limits every 30 s and sends the signal at the first
# check within 20 + 30 s of the limit (sbatch(1): "up to 60 seconds earlier"),
# so 10 to 40 s after the job starts. The runs must still be running then, on
# any machine: they checkpoint at every window (--checkpoint-every 0s) and
# pause PSIM_CKPT_PAUSE_MS in each checkpoint (a test hook), so they take at
# least windows x 200 ms > 50 s of wall time whatever the CPU, and so does a
# resumed run's remainder: a job may be signalled and requeued more than once
# before it finishes. The outputs depend on neither. Here a requeued job
# starts again about 12 s later (cred_expire=10 above); a cluster started
# elsewhere may wait 120 s, hence the long timeouts.
limit_scn=$repo/scenarios/small/cbr_permutation_k4.toml
"$psim" run "$limit_scn" --out "$work/limit-ref" -q 2> "$work/limit-ref.err" || fail "time limits: uninterrupted run: $(cat "$work/limit-ref.err")"
windows=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["packets"]["windows"])' "$work/limit-ref/manifest.json")
[[ $windows -ge 250 ]] || fail "time limits: $limit_scn has $windows windows, expected at least 250 (pick a longer scenario)"
grep -q "^seed = 7$" "$limit_scn" || fail "time limits: the sweep's one task must be the scenario itself (seed 7)"
cat > "$work/limit-sweep.toml" <<TOML
base = "$limit_scn"
out = "limit-sweep"
checkpoint_every = "0s"
[slurm]
time = "00:01:00"
cpus_per_task = 1
sbatch_args = ["--signal=B:USR1@20"]
[grid]
seed = [7]
TOML
export PSIM_CKPT_PAUSE_MS=200
timeout 900 "$psim" sweep "$work/limit-sweep.toml" --backend slurm --wait > "$work/limit-sweep.txt" 2>&1 &
sweep_pid=$!
job=$(PSIM=$psim sbatch --parsable --cpus-per-task=1 --time=00:01:00 --signal=B:USR1@20 \
    --output="$work/limit.out" slurm/single_node.sbatch "$limit_scn" "$work/limit" --checkpoint-every 0s --quiet) \
    || fail "time limits: sbatch single_node.sbatch"
if [[ $ranks == 2 ]]; then
    mpi_job=$(PSIM=$work/psim-mpi SRUN_MPI=pmix sbatch --parsable --nodes=1 --ntasks-per-node=2 --cpus-per-task=1 \
        --time=00:01:00 --signal=B:USR1@20 --output="$work/limit-mpi.out" slurm/multi_node_mpi.sbatch \
        "$limit_scn" "$work/limit-mpi" --checkpoint-every 0s --quiet) || fail "time limits: sbatch multi_node_mpi.sbatch"
fi
unset PSIM_CKPT_PAUSE_MS
job_field() { scontrol show job -o "$1" 2>/dev/null | grep -o "$2=[A-Z0-9_]*" | cut -d= -f2; }
# check_limit_job NAME JOB LOG DIR: JOB completed after requeueing itself at
# least once, each requeued start resumed, and its flows are those of the
# uninterrupted run.
check_limit_job() {
    local name=$1 job=$2 log=$3 dir=$4 state="" restarts
    for _ in $(seq 900); do
        state=$(job_field "$job" JobState)
        [[ $state =~ ^(COMPLETED|FAILED|TIMEOUT|CANCELLED|NODE_FAIL|OUT_OF_MEMORY|BOOT_FAIL|DEADLINE)$ ]] && break
        sleep 1
    done
    [[ $state == COMPLETED ]] || fail "time limits: $name job $job is '$state' after 900 s, not COMPLETED: $(cat "$log")"
    restarts=$(job_field "$job" Restarts)
    [[ $restarts -ge 1 ]] || fail "time limits: $name job $job was never requeued (Restarts=$restarts): $(cat "$log")"
    grep -q "requeueing job $job" "$log" || fail "time limits: $name did not requeue itself: $(cat "$log")"
    python3 - "$dir/manifest.json" "$restarts" <<'PY' || fail "time limits: $name manifest: $(cat "$log")"
import json, sys
m = json.load(open(sys.argv[1]))
assert m["complete"] is True, "not complete"
# Each requeued start resumed from the checkpoint its predecessor wrote.
assert m.get("resumes") == int(sys.argv[2]), ("resumes", m.get("resumes"), "restarts", sys.argv[2])
assert m.get("resumed_from_ps", 0) > 0, "resumed_from_ps"
PY
    [[ ! -e $dir/checkpoint ]] || fail "time limits: $name: the finished run kept its checkpoint folder"
    cmp -s <("$psim" flows "$dir") <("$psim" flows "$work/limit-ref") \
        || fail "time limits: the requeued $name job's flows differ from an uninterrupted run"
    echo "slurm: $name signalled before its time limit: requeued $restarts time(s), resumed, flows identical"
}
check_limit_job single_node.sbatch "$job" "$work/limit.out" "$work/limit"
if [[ $ranks == 2 ]]; then
    check_limit_job "multi_node_mpi.sbatch (2 ranks)" "$mpi_job" "$work/limit-mpi.out" "$work/limit-mpi"
fi

wait "$sweep_pid" || fail "time limits: psim sweep --wait: $(cat "$work/limit-sweep.txt" "$work"/limit-sweep/logs/* 2>/dev/null)"
grep -q "ran 1, skipped 0, failed 0" "$work/limit-sweep.txt" \
    || fail "time limits: sweep summary: $(cat "$work/limit-sweep.txt")"
task_log=$(find "$work/limit-sweep/logs" -name '*.out' | head -1)
grep -q "task 0 stopped before the time limit; requeueing" "$task_log" \
    || fail "time limits: the sweep task did not requeue itself: $(cat "$task_log")"
python3 - "$work/limit-sweep/seed=7/manifest.json" <<'PY' || fail "time limits: sweep task manifest: $(cat "$task_log")"
import json, sys
m = json.load(open(sys.argv[1]))
assert m["complete"] is True, "not complete"
assert m.get("resumes", 0) >= 1, ("resumes", m.get("resumes"))
PY
cmp -s <("$psim" flows "$work/limit-sweep/seed=7") <("$psim" flows "$work/limit-ref") \
    || fail "time limits: the requeued sweep task's flows differ from an uninterrupted run"
echo "slurm: sweep_array.sbatch task signalled before its time limit: requeued, resumed, flows identical"

echo "slurm: 1 passed, 0 failed"
