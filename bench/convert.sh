#!/usr/bin/env bash
# Converter throughput: rdrr-convert SRC OUT --quantize q4_k_m --q4k-layout column_wise under /usr/bin/time -v,
# at 1 thread and at all threads; one JSON object per run on stdout (logs on stderr).
#
#   bench/convert.sh MODEL_DIR                  an existing HF folder (e.g. from rdrr-make-synthetic-model)
#   bench/convert.sh --shape llama-3.2-1b       generate a random-weight checkpoint into a temp dir first
# Options: --threads N (the "all threads" run; default nproc), --no-single (skip the 1-thread run),
#          --dtype bf16|f16|f32 and --seed N (generation), --build-dir DIR (default: $RDRR_BUILD_DIR or build/),
#          --out-dir DIR (where packs are written; default: a temp dir), --keep (keep model and packs).
# JSON fields: shape, threads, wall_s, source_bytes (sum of the *.safetensors), source_gb_per_s, peak_rss_bytes
# ("Maximum resident set size"), user_s, sys_s, exit_code. The source is read from the page cache when it
# was just generated (warm cache); numbers on a shared machine vary with its load.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir="${RDRR_BUILD_DIR:-$here/build}"
model="" shape="" threads="$(nproc)" single=1 dtype=bf16 seed=0 keep=0 out_root=""

usage() { sed -n '2,13p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2; exit 2; }
while [ $# -gt 0 ]; do
  case "$1" in
    --shape) shape="$2"; shift ;;
    --threads) threads="$2"; shift ;;
    --no-single) single=0 ;;
    --dtype) dtype="$2"; shift ;;
    --seed) seed="$2"; shift ;;
    --build-dir) build_dir="$2"; shift ;;
    --out-dir) out_root="$2"; shift ;;
    --keep) keep=1 ;;
    -h|--help) usage ;;
    -*) echo "convert.sh: unknown option $1" >&2; usage ;;
    *) [ -z "$model" ] || usage; model="$1" ;;
  esac
  shift
done
if [ -z "$model" ] && [ -z "$shape" ]; then usage; fi
if [ -n "$model" ] && [ -n "$shape" ]; then echo "convert.sh: give MODEL_DIR or --shape, not both" >&2; exit 2; fi
case "$threads" in ''|*[!0-9]*|0) echo "convert.sh: --threads wants a positive integer" >&2; exit 2 ;; esac

convert="$build_dir/tools/rdrr-convert"
make_model="$build_dir/tools/rdrr-make-synthetic-model"
[ -x "$convert" ] || { echo "convert.sh: $convert not built (cmake --build $build_dir --target rdrr-convert)" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "convert.sh: /usr/bin/time missing (apt-get install time)" >&2; exit 2; }

work="$(mktemp -d "${TMPDIR:-/tmp}/rdrr-bench-convert.XXXXXX")"
cleanup() { if [ "$keep" -eq 0 ]; then rm -rf "$work"; else echo "convert.sh: kept $work" >&2; fi; }
trap cleanup EXIT
[ -n "$out_root" ] || out_root="$work"
mkdir -p "$out_root"

if [ -n "$shape" ]; then
  [ -x "$make_model" ] || { echo "convert.sh: $make_model not built" >&2; exit 2; }
  model="$work/model-$shape"
  echo "convert.sh: generating $shape ($dtype, seed $seed) into $model" >&2
  "$make_model" --shape "$shape" --dtype "$dtype" --seed "$seed" --out "$model" >&2
  label="$shape"
else
  [ -d "$model" ] || { echo "convert.sh: $model is not a folder" >&2; exit 2; }
  label="$(basename "$(cd "$model" && pwd)")"
fi

source_bytes=0
for f in "$model"/*.safetensors; do
  [ -e "$f" ] || { echo "convert.sh: no .safetensors in $model" >&2; exit 2; }
  source_bytes=$((source_bytes + $(stat -c %s "$f")))
done

# "h:mm:ss" or "m:ss.cc" -> seconds
to_seconds() { awk -F: '{ s = 0; for (i = 1; i <= NF; i++) s = s * 60 + $i; printf "%.2f", s }' <<<"$1"; }
field() { sed -n "s/^[[:space:]]*$1: //p" "$2" | head -n 1; }

run() {
  local n="$1" out="$out_root/pack-t$1" tv="$work/time-t$1.txt" log="$work/convert-t$1.log" rc=0
  echo "convert.sh: rdrr-convert at $n thread(s) -> $out" >&2
  # Goldens (the CPU reference forward pass) are measured separately: this times the conversion itself.
  /usr/bin/time -v -o "$tv" "$convert" "$model" "$out" --quantize q4_k_m --q4k-layout column_wise \
    --threads "$n" --force --golden-prompts "${GOLDEN_PROMPTS:-none}" >"$log" 2>&1 || rc=$?
  if [ "$rc" -ne 0 ]; then echo "convert.sh: exit $rc; last lines of $log:" >&2; tail -n 20 "$log" >&2; fi
  local wall user sys rss_kb
  wall="$(to_seconds "$(field 'Elapsed (wall clock) time (h:mm:ss or m:ss)' "$tv")")"
  user="$(field 'User time (seconds)' "$tv")"
  sys="$(field 'System time (seconds)' "$tv")"
  rss_kb="$(field 'Maximum resident set size (kbytes)' "$tv")"
  awk -v shape="$label" -v t="$n" -v wall="$wall" -v src="$source_bytes" -v rss="${rss_kb:-0}" \
      -v user="${user:-0}" -v sys="${sys:-0}" -v rc="$rc" 'BEGIN {
    gbps = wall > 0 ? src / 1e9 / wall : 0
    printf "{\"shape\":\"%s\",\"threads\":%d,\"wall_s\":%.2f,\"source_bytes\":%.0f,\"source_gb_per_s\":%.4f,", shape, t, wall, src, gbps
    printf "\"peak_rss_bytes\":%.0f,\"user_s\":%.2f,\"sys_s\":%.2f,\"exit_code\":%d}\n", rss * 1024, user, sys, rc
  }'
  [ "$keep" -eq 1 ] || rm -rf "$out"
}

if [ "$single" -eq 1 ]; then run 1; fi
if [ "$threads" -ne 1 ] || [ "$single" -eq 0 ]; then run "$threads"; fi
