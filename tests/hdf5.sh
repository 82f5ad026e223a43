#!/usr/bin/env bash
# The optional HDF5 output (`[trace.queues] format = "hdf5"`, cargo feature
# `hdf5` of psim): lints the feature build and runs psim/tests/hdf5.rs, which
# checks queues.h5 against the Parquet long format of the same run. Needs the
# HDF5 library (Debian: libhdf5-dev); without it this skips, unless
# PSIM_REQUIRE_HDF5=1 (CI sets it). `--workspace` keeps the dependency
# features those of the main build, so only psim and the HDF5 crates rebuild.
set -uo pipefail
cd "$(dirname "$0")/.."

if ! pkg-config --exists hdf5 >/dev/null 2>&1; then
    if [[ "${PSIM_REQUIRE_HDF5:-0}" == 1 ]]; then
        echo "HDF5 not found by pkg-config (apt-get install libhdf5-dev) and PSIM_REQUIRE_HDF5=1" >&2
        exit 1
    fi
    echo "hdf5: skipped (pkg-config --exists hdf5 failed)"
    exit 0
fi
# Only the targets the feature changes (libraries, binaries, psim/tests/hdf5.rs):
# the README's clippy run has linted every test and bench already.
cargo clippy -q --workspace --lib --bins --test hdf5 --features psim/hdf5 -- -D warnings || exit 1
if cargo test -q --workspace --features psim/hdf5 --test hdf5; then
    echo "hdf5: 1 passed, 0 failed"
else
    echo "hdf5: 0 passed, 1 failed"
    exit 1
fi
