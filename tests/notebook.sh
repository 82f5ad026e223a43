#!/usr/bin/env bash
# Runs the analysis end to end on a small run: psim-analyze (markdown, CSV,
# plots) and the Python polars notebook, which checks that it computes the
# same numbers. Needs python3 with polars (`pip install polars`); without it
# this skips, unless PSIM_REQUIRE_NOTEBOOK=1 (CI sets it).
set -uo pipefail
cd "$(dirname "$0")/.."

if ! python3 -c "import polars" >/dev/null 2>&1; then
    if [[ "${PSIM_REQUIRE_NOTEBOOK:-0}" == 1 ]]; then
        echo "python3 polars not importable and PSIM_REQUIRE_NOTEBOOK=1" >&2
        exit 1
    fi
    echo "notebook: skipped (python3 -c 'import polars' failed)"
    exit 0
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cargo build -q -p psim -p analysis || exit 1
./target/debug/psim run scenarios/small/ndp_incast_k4.toml --out "$work/run" --quiet --set trace.queues.enabled=true || exit 1
./target/debug/psim-analyze "$work/run" --out "$work/report" > "$work/report.md" || exit 1
for plot in fct_cdf slowdown_vs_size goodput_sorted queue_occupancy; do
    for ext in png svg; do
        [[ -s "$work/report/$plot.$ext" ]] || { echo "missing plot $plot.$ext"; echo "notebook: 0 passed, 1 failed"; exit 1; }
    done
done
./target/debug/psim-analyze "$work/run" --format csv --out "$work/report" --no-plots || exit 1
python3 notebooks/analysis.py "$work/run" "$work/report" || { echo "notebook: 0 passed, 1 failed"; exit 1; }
# A damaged run is refused naming the part (one line, non-zero exit), and
# read with warnings under --allow-incomplete.
cp -r "$work/run" "$work/bad"
part="$work/bad/flows/part-00000.parquet"
python3 - "$part" <<'PY'
import sys
p = sys.argv[1]
b = bytearray(open(p, "rb").read())
b[len(b) // 3] ^= 1
open(p, "wb").write(b)
PY
if python3 notebooks/analysis.py "$work/bad" > /dev/null 2> "$work/bad.err"; then
    echo "the notebook read a bit-flipped part"; echo "notebook: 1 passed, 1 failed"; exit 1
fi
if [[ $(wc -l < "$work/bad.err") != 1 ]] || ! grep -q "part $part does not match the manifest: crc32" "$work/bad.err"; then
    echo "unexpected message: $(cat "$work/bad.err")"; echo "notebook: 1 passed, 1 failed"; exit 1
fi
rm "$part"
if ! python3 notebooks/analysis.py "$work/bad" --allow-incomplete > /dev/null 2> "$work/bad.err" \
    || ! grep -q "warning: part $part is listed in the manifest but missing" "$work/bad.err"; then
    echo "--allow-incomplete failed: $(cat "$work/bad.err")"; echo "notebook: 1 passed, 1 failed"; exit 1
fi
echo "notebook: 2 passed, 0 failed"
