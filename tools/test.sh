#!/usr/bin/env bash
# Sets everything up (packages, configure, build) and runs every test with ctest.
# This is the command .ci/run calls. Extra arguments go to ctest (e.g. -R quant, -L gpu).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir="${RDRR_BUILD_DIR:-$here/build}"
bash "$here/tools/setup.sh" --build-dir "$build_dir"
jobs="$(nproc)"
# GPU-labelled tests need a real GPU; on lavapipe-only machines they are excluded unless asked for.
ctest --test-dir "$build_dir" --output-on-failure -j "$jobs" --timeout 900 "$@"
