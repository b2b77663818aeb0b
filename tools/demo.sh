#!/usr/bin/env bash
# Sets everything up and runs the main job on the bundled default model (fixtures/tiny-llama).
# Until rdrr-convert lands, the main job is the quantizer report: our Q4_K/Q6_K vs llama.cpp's blocks for
# every 2-D weight of the model (relative RMSE vs the F32 source, ratio ours/llama.cpp).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir="${RDRR_BUILD_DIR:-$here/build}"
model="${1:-$here/fixtures/tiny-llama}"
bash "$here/tools/setup.sh" --build-dir "$build_dir"
"$build_dir/tools/rdrr-quant-report" "$model"
