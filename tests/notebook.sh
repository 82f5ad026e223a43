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
if python3 notebooks/analysis.py "$work/run" "$work/report"; then
    echo "notebook: 1 passed, 0 failed"
else
    echo "notebook: 0 passed, 1 failed"
    exit 1
fi
