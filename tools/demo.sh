#!/usr/bin/env bash
# Sets everything up and runs the main job on the bundled default model (fixtures/tiny-llama):
# rdrr-convert with --quantize q4_k_m --q4k-layout column_wise into out/tiny-llama-q4_k_m (validated before it
# is committed atomically), then the quantizer report: our Q4_K/Q6_K error vs llama.cpp's blocks per tensor.
# (rdrr-verify, the Vulkan gate, comes with its own issue; until then this is the most complete job.)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir="${RDRR_BUILD_DIR:-$here/build}"
model="${1:-$here/fixtures/tiny-llama}"
out="${2:-$here/out/$(basename "$model")-q4_k_m}"
bash "$here/tools/setup.sh" --build-dir "$build_dir"
mkdir -p "$(dirname "$out")"
"$build_dir/tools/rdrr-convert" "$model/hf" "$out" --quantize q4_k_m --q4k-layout column_wise --force
"$build_dir/tools/rdrr-quant-report" "$model"
