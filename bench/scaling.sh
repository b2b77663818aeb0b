#!/usr/bin/env bash
# Tensor-count scaling (#26 finding 6): time spent on inputs with N entries, which must grow linearly in N.
#   safetensors: a header of N tiny F32 tensors named model.layers.{0,1}.mlp.experts.{j}.gate_proj.weight beside
#                tiny-llama's config; `rdrr-convert SRC --dry-run` parses the header, then refuses the names
#                (exit 9): the time is the header parse.
#   manifest:    tiny-llama's f32 pack with "tensors" replaced by N empty objects; `rdrr-verify PACK --skip-gpu`
#                says invalid (exit 20) after parsing it.
#   planned:     rdrr-make-synthetic-model with N/9 layers (hidden 32: 9 tensors a layer + 3; at most 4096
#                layers, kMaxLayers), `rdrr-convert --dry-run` (header parse, planning, graph); exit 0.
# Usage: bench/scaling.sh [N ...]   (default 25000 50000 100000; --build-dir DIR, default $RDRR_BUILD_DIR or build/)
# One JSON object per run on stdout: case, entries, wall_s, exit_code.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir="${RDRR_BUILD_DIR:-$here/build}"
sizes=()
while [ $# -gt 0 ]; do
  case "$1" in
    --build-dir) build_dir="$2"; shift ;;
    -h|--help) sed -n '2,12p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
    *) case "$1" in ''|*[!0-9]*) echo "scaling.sh: N must be a positive integer" >&2; exit 2 ;; esac; sizes+=("$1") ;;
  esac
  shift
done
[ ${#sizes[@]} -gt 0 ] || sizes=(25000 50000 100000)
convert="$build_dir/tools/rdrr-convert" verify="$build_dir/tools/rdrr-verify" make_model="$build_dir/tools/rdrr-make-synthetic-model"
for b in "$convert" "$verify" "$make_model"; do [ -x "$b" ] || { echo "scaling.sh: $b not built" >&2; exit 2; }; done
fixture="$here/fixtures/tiny-llama/hf"
work="$(mktemp -d "${TMPDIR:-/tmp}/rdrr-bench-scaling.XXXXXX")"
trap 'rm -rf "$work"' EXIT

# Runs "$@", prints {"case","entries","wall_s","exit_code"}.
timed() {
  local label="$1" n="$2" rc=0 t0 t1
  shift 2
  t0="$(date +%s.%N)"
  "$@" >/dev/null 2>&1 || rc=$?
  t1="$(date +%s.%N)"
  awk -v c="$label" -v n="$n" -v a="$t0" -v b="$t1" -v rc="$rc" \
    'BEGIN { printf "{\"case\":\"%s\",\"entries\":%d,\"wall_s\":%.2f,\"exit_code\":%d}\n", c, n, b - a, rc }'
}

# model.safetensors with N F32 [1] tensors (header padded to 8 bytes, little-endian u64 length first).
write_safetensors() {
  local n="$1" dir="$2" header pad len
  header="$(awk -v n="$n" 'BEGIN { printf "{"; for (k = 0; k < n; k++) {
    printf "%s\"model.layers.%d.mlp.experts.%d.gate_proj.weight\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[%d,%d]}",
      (k ? "," : ""), k % 2, int(k / 2), 4 * k, 4 * k + 4 } printf "}" }')"
  pad=$(( (8 - ${#header} % 8) % 8 )); header="$header$(printf '%*s' "$pad" '')"; len=${#header}
  { printf "$(printf '\\x%02x' $((len & 255)) $((len >> 8 & 255)) $((len >> 16 & 255)) $((len >> 24 & 255)) 0 0 0 0)"
    printf '%s' "$header"; head -c $((4 * n)) /dev/zero; } >"$dir/model.safetensors"
}

"$convert" "$fixture" "$work/pack" --quantize f32 --golden-prompts none --quiet --no-sync >&2
for n in "${sizes[@]}"; do
  src="$work/st$n"; mkdir -p "$src"; cp "$fixture"/*.json "$fixture"/tokenizer.model "$src"/
  write_safetensors "$n" "$src"
  timed safetensors_header_dry_run "$n" "$convert" "$src" --dry-run --quiet
  pack="$work/m$n"; cp -r "$work/pack" "$pack"
  sed -e '/^  "tensors": {/,/^  },$/d' "$work/pack/manifest.json" \
    | awk -v n="$n" '/^  "tokenizer": / { printf "  \"tensors\": {"; for (i = 0; i < n; i++) printf "%s\"t%07d\": {}", (i ? ", " : ""), i; print "}," } 1' \
    >"$pack/manifest.json"
  timed manifest_verify "$n" "$verify" "$pack" --skip-gpu --quiet
  layers=$(( n / 9 > 4096 ? 4096 : n / 9 ))
  "$make_model" --hidden-size 32 --num-layers "$layers" --num-heads 1 --intermediate-size 32 --vocab-size 258 \
    --out "$work/syn$n" >/dev/null 2>&1
  timed planned_dry_run "$((layers * 9 + 3))" "$convert" "$work/syn$n" --dry-run --quiet
  rm -rf "$src" "$pack" "$work/syn$n"
done
