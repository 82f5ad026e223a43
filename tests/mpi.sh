#!/usr/bin/env bash
# Multi-rank checks (issue 5): every small scenario under mpirun with 2 and 4
# ranks x 1 and 2 threads gives a flow table byte-identical to one process;
# a rank that crashes or rejects its input ends the whole job, non-zero, with
# no manifest. Needs OpenMPI (Debian: libopenmpi-dev openmpi-bin libclang-dev).
# Without mpirun it skips, unless PSIM_REQUIRE_MPI=1 (CI sets it).
set -uo pipefail
cd "$(dirname "$0")/.."

if ! command -v mpirun >/dev/null 2>&1; then
    if [[ "${PSIM_REQUIRE_MPI:-0}" == 1 ]]; then
        echo "mpirun not found and PSIM_REQUIRE_MPI=1" >&2
        exit 1
    fi
    echo "mpi: skipped (no mpirun on PATH)"
    exit 0
fi
# OpenMPI refuses root unless told; CI runs as root. More ranks than cores need --oversubscribe.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
MPIRUN=(mpirun --oversubscribe)

cargo build -q -p psim --features mpi || exit 1
# The feature's code is in the library and the binary; the README's clippy run
# has linted every test and bench already.
cargo clippy -q -p psim --features mpi --lib --bins -- -D warnings || exit 1
PSIM=target/debug/psim
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
passed=0
failed=0
pass() { passed=$((passed + 1)); }
fail() { failed=$((failed + 1)); echo "FAILED: $*"; }

for scenario in scenarios/small/*.toml; do
    name=$(basename "$scenario" .toml)
    "$PSIM" run "$scenario" --out "$work/$name-1" --shards 1 --threads 1 -q </dev/null || { fail "$name: single process"; continue; }
    "$PSIM" flows "$work/$name-1" > "$work/$name-1.csv"
    for ranks in 2 4; do
        for threads in 1 2; do
            out="$work/$name-$ranks-$threads"
            if ! timeout 300 "${MPIRUN[@]}" -n "$ranks" "$PSIM" run "$scenario" --out "$out" --threads "$threads" -q </dev/null >"$out.log" 2>&1; then
                fail "$name: $ranks ranks x $threads threads: $(tail -3 "$out.log")"
                continue
            fi
            # An MPI binary started by another MPI's launcher runs as N size-1 jobs: check the rank count.
            if ! grep -q "\"ranks\": $ranks," "$out/manifest.json"; then
                fail "$name: manifest does not record $ranks ranks"
                continue
            fi
            if "$PSIM" flows "$out" | cmp -s - "$work/$name-1.csv"; then
                pass
            else
                fail "$name: $ranks ranks x $threads threads differs from one process"
            fi
        done
    done
done

# Traces: with the same shard count, every packets/queues part written under
# 2 ranks is byte-identical to the one process's (each part is one shard's rows, sorted).
trace_sets=(--set trace.packets.enabled=true --set trace.packets.sample=0.5 --set trace.queues.enabled=true)
if "$PSIM" run scenarios/small/ndp_incast_k4.toml --out "$work/trace-1" --shards 4 -q "${trace_sets[@]}" </dev/null &&
    timeout 300 "${MPIRUN[@]}" -n 2 "$PSIM" run scenarios/small/ndp_incast_k4.toml --out "$work/trace-2" --shards 4 -q "${trace_sets[@]}" </dev/null >"$work/trace-2.log" 2>&1; then
    same=1
    for part in "$work"/trace-1/packets/part-*.parquet "$work"/trace-1/queues/part-*.parquet; do
        rel=${part#"$work/trace-1/"}
        cmp -s "$part" "$work/trace-2/$rel" || { same=0; fail "trace part $rel differs under 2 ranks"; }
    done
    [[ $(ls "$work"/trace-1/packets/part-*.parquet | wc -l) == 4 ]] || { same=0; fail "expected 4 packets parts"; }
    [[ $same == 1 ]] && pass
else
    fail "traced run: $(tail -3 "$work/trace-2.log" 2>/dev/null)"
fi
# The trace row limit is judged on the run's total: every rank stops, no manifest.
out="$work/trace-limit"
if timeout 120 "${MPIRUN[@]}" -n 2 "$PSIM" run scenarios/small/ndp_incast_k4.toml --out "$out" -q "${trace_sets[@]}" --set trace.packets.max_rows=100 </dev/null >"$out.log" 2>&1; then
    fail "a trace over max_rows must fail under mpirun"
elif [[ -e "$out/manifest.json" ]] || ! grep -q "trace.packets.max_rows = 100" "$out.log"; then
    fail "trace limit under mpirun: $(tail -3 "$out.log")"
else
    pass
fi

# A rank that dies mid-run ends the job: non-zero exit, no hang, no manifest.
out="$work/fault"
if PSIM_FAULT_RANK=1 timeout 120 "${MPIRUN[@]}" -n 2 -x PSIM_FAULT_RANK "$PSIM" run scenarios/small/ndp_incast_k4.toml --out "$out" -q </dev/null >"$out.log" 2>&1; then
    fail "a crashed rank must fail the job"
elif [[ $? == 124 ]]; then
    fail "a crashed rank made the job hang"
elif [[ -e "$out/manifest.json" ]]; then
    fail "a crashed run left a manifest"
elif ! grep -q "rank 1: injected failure" "$out.log"; then
    fail "the crashed rank did not say why: $(tail -3 "$out.log")"
else
    pass
fi

# Bad input: every rank reports it, one line each, and the job fails.
out="$work/bad"
if timeout 120 "${MPIRUN[@]}" -n 2 "$PSIM" run scenarios/small/ndp_incast_k4.toml --out "$out" --set topology.k=5 -q </dev/null >"$out.log" 2>&1; then
    fail "bad input must fail under mpirun"
elif [[ $(grep -o "topology.k = 5" "$out.log" | wc -l) -lt 2 ]]; then
    fail "each rank must name the bad key: $(cat "$out.log")"
else
    pass
fi

# Checkpoint and resume (docs/checkpoint.md): 2 ranks x 4 shards, traced, stopped after
# checkpoint N (every window) and resumed under 2 ranks: every part byte-identical to the
# uninterrupted 2-rank run; resuming under another rank count is refused.
ckpt_sets=(--set trace.packets.enabled=true --set trace.queues.enabled=true)
if timeout 300 "${MPIRUN[@]}" -n 2 "$PSIM" run scenarios/small/ndp_incast_k4.toml --out "$work/ckpt-ref" --shards 4 -q "${ckpt_sets[@]}" </dev/null >"$work/ckpt-ref.log" 2>&1; then
    for n in 2 9; do
        out="$work/ckpt-$n"
        PSIM_CKPT_EXIT_AFTER=$n timeout 300 "${MPIRUN[@]}" -n 2 -x PSIM_CKPT_EXIT_AFTER "$PSIM" run scenarios/small/ndp_incast_k4.toml --out "$out" --shards 4 -q --checkpoint-every 0s "${ckpt_sets[@]}" </dev/null >"$out.log" 2>&1
        rc=$?
        if [[ $rc != 75 ]] || [[ ! -e "$out/checkpoint/current" ]] || [[ -e "$out/manifest.json" ]]; then
            fail "checkpoint after $n under 2 ranks: status $rc: $(tail -3 "$out.log")"
            continue
        fi
        if timeout 120 "$PSIM" resume "$out" -q </dev/null >"$out.one.log" 2>&1 || ! grep -q "MPI rank" "$out.one.log"; then
            fail "resuming a 2-rank checkpoint in one process must be refused: $(cat "$out.one.log")"
        fi
        if ! timeout 300 "${MPIRUN[@]}" -n 2 "$PSIM" resume "$out" -q --checkpoint-every 1h </dev/null >"$out.resume.log" 2>&1; then
            fail "resume after $n under 2 ranks: $(tail -3 "$out.resume.log")"
            continue
        fi
        same=1
        for part in "$work"/ckpt-ref/flows/part-*.parquet "$work"/ckpt-ref/packets/part-*.parquet "$work"/ckpt-ref/queues/part-*.parquet; do
            rel=${part#"$work/ckpt-ref/"}
            cmp -s "$part" "$out/$rel" || { same=0; fail "checkpoint after $n: $rel differs from the uninterrupted run"; }
        done
        [[ $same == 1 ]] && pass
    done
else
    fail "checkpoint reference run: $(tail -3 "$work/ckpt-ref.log")"
fi

echo "mpi: $passed passed, $failed failed"
[[ $failed == 0 ]]
