#!/usr/bin/env bash
# Sets everything up and runs the main job on the bundled default model (fixtures/tiny-llama):
#   1. rdrr-convert --quantize q4_k_m --q4k-layout column_wise into out/tiny-llama-q4_k_m (execution graph
#      pinned to this build's kernels, goldens from the pack's tokenizer, committed atomically);
#   2. rdrr-verify on Vulkan (a GPU when present, else lavapipe), also against the HF transformers goldens,
#      printing the gate table and writing out/tiny-llama-q4_k_m.verify.json;
#   3. rdrr-run: greedy text from the pack.
# Exit status: rdrr-verify's (0 only when every gate passes).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir="${RDRR_BUILD_DIR:-$here/build}"
model="${1:-$here/fixtures/tiny-llama}"
out="${2:-$here/out/$(basename "$model")-q4_k_m}"
bash "$here/tools/setup.sh" --build-dir "$build_dir"
mkdir -p "$(dirname "$out")"
echo "== rdrr-convert $model/hf -> $out"
"$build_dir/tools/rdrr-convert" "$model/hf" "$out" --quantize q4_k_m --q4k-layout column_wise --force
echo "== rdrr-verify $out"
golden=()
[ -f "$model/golden/hf-f32.json" ] && golden=(--golden "$model/golden/hf-f32.json")
set +e
"$build_dir/tools/rdrr-verify" "$out" "${golden[@]}" --json "$out.verify.json"
rc=$?
set -e
echo "== rdrr-run $out --prompt 'Once upon a time' -n 24"
"$build_dir/tools/rdrr-run" "$out" --prompt "Once upon a time" -n 24 || true
echo
exit "$rc"
