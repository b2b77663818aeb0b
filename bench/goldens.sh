#!/usr/bin/env bash
# Goldens and CPU verification at real sizes (the streaming reference engine, verify/stream_reference.h), each
# step under /usr/bin/time -v; one JSON object per step on stdout (logs on stderr):
#   convert_no_goldens  rdrr-convert SRC P --quantize q4_k_m --q4k-layout column_wise --golden-prompts none
#                       --calibration none (plain rounding: the converter alone)
#   make_goldens        rdrr-verify P --make-goldens SRC --skip-gpu --structure-only --quiet: the default goldens
#                       (4 prompts x 16 tokens, 8 greedy steps; source and pack references) added to P, then
#                       the CPU gates (the pack reference again)
#   verify_cpu          rdrr-verify P --skip-gpu (gates 5-6 on the streaming reference of the pack)
#   convert_default     rdrr-convert SRC P2 --quantize q4_k_m --q4k-layout column_wise (calibration and goldens
#                       included: the defaults)
#   verify_gpu, run_64  with --gpu only: rdrr-verify P2 (Vulkan) and rdrr-run P2 --tokens 1,...,8 -n 64
#   batch_2             with --batch only: rdrr-batch -j 2 --retries 0 of two jobs (SRC to two packs, default
#                       flags, verify --skip-gpu); peak_rss_bytes is the largest sum over its process tree
#                       (sampled every 0.2 s), not one process's
#
#   bench/goldens.sh --shape llama-3.2-1b        generate a random-weight checkpoint into a temp dir first
#   bench/goldens.sh MODEL_DIR                   an existing HF folder
# Options: --threads N (default nproc), --steps LIST (comma-separated subset of the steps above, default all
#          but the --gpu and --batch ones), --gpu (add verify_gpu and run_64), --batch (add batch_2),
#          --build-dir DIR (default $RDRR_BUILD_DIR or build/), --keep.
# JSON fields: shape, step, threads, wall_s, peak_rss_bytes ("Maximum resident set size"), user_s, exit_code.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir="${RDRR_BUILD_DIR:-$here/build}"
model="" shape="" threads="$(nproc)" keep=0 steps="convert_no_goldens,make_goldens,verify_cpu,convert_default"

usage() { sed -n '2,22p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2; exit 2; }
while [ $# -gt 0 ]; do
  case "$1" in
    --shape) shape="$2"; shift ;;
    --threads) threads="$2"; shift ;;
    --steps) steps="$2"; shift ;;
    --build-dir) build_dir="$2"; shift ;;
    --keep) keep=1 ;;
    --gpu) steps="$steps,verify_gpu,run_64" ;;
    --batch) steps="$steps,batch_2" ;;
    -h|--help) usage ;;
    -*) echo "goldens.sh: unknown option $1" >&2; usage ;;
    *) [ -z "$model" ] || usage; model="$1" ;;
  esac
  shift
done
if [ -z "$model" ] && [ -z "$shape" ]; then usage; fi
convert="$build_dir/tools/rdrr-convert" verify="$build_dir/tools/rdrr-verify"
for b in "$convert" "$verify"; do [ -x "$b" ] || { echo "goldens.sh: $b not built" >&2; exit 2; }; done
[ -x /usr/bin/time ] || { echo "goldens.sh: /usr/bin/time missing (apt-get install time)" >&2; exit 2; }

work="$(mktemp -d "${TMPDIR:-/tmp}/rdrr-bench-goldens.XXXXXX")"
cleanup() { if [ "$keep" -eq 0 ]; then rm -rf "$work"; else echo "goldens.sh: kept $work" >&2; fi; }
trap cleanup EXIT
if [ -n "$shape" ]; then
  model="$work/model-$shape"
  echo "goldens.sh: generating $shape into $model" >&2
  "$build_dir/tools/rdrr-make-synthetic-model" --shape "$shape" --dtype bf16 --out "$model" >&2
  label="$shape"
else
  model="$(cd "$model" && pwd)"  # absolute: rdrr-batch reads paths relative to the jobs file
  label="$(basename "$model")"
fi

to_seconds() { awk -F: '{ s = 0; for (i = 1; i <= NF; i++) s = s * 60 + $i; printf "%.2f", s }' <<<"$1"; }
field() { sed -n "s/^[[:space:]]*$1: //p" "$2" | head -n 1; }

# The summed VmRSS (kB) of PID and its descendants, now.
tree_rss_kb() {
  local pids="$1" all="$1" next p
  while [ -n "$pids" ]; do
    next=""
    for p in $pids; do next="$next $(cat /proc/"$p"/task/*/children 2>/dev/null || true)"; done
    pids="$(echo $next)"
    all="$all $pids"
  done
  for p in $all; do sed -n 's/^VmRSS:[[:space:]]*\([0-9]*\) kB/\1/p' /proc/"$p"/status 2>/dev/null || true; done |
    awk '{ s += $1 } END { print s + 0 }'
}

timed() {  # timed STEP COMMAND...
  local step="$1" tv="$work/time-$1.txt" log="$work/$1.log" rc=0
  shift
  case ",$steps," in *",$step,"*) ;; *) return 0 ;; esac
  echo "goldens.sh: $step: $*" >&2
  if [ "$step" = batch_2 ]; then  # peak of the whole process tree, sampled
    local peak=0 now pid
    /usr/bin/time -v -o "$tv" "$@" >"$log" 2>&1 &
    pid=$!
    while kill -0 "$pid" 2>/dev/null; do
      now="$(tree_rss_kb "$pid")" || now=0
      if [ "$now" -gt "$peak" ]; then peak="$now"; fi
      sleep 0.2
    done
    wait "$pid" || rc=$?
    sed -i "s/^\([[:space:]]*Maximum resident set size (kbytes): \).*/\1$peak/" "$tv"
  else
    /usr/bin/time -v -o "$tv" "$@" >"$log" 2>&1 || rc=$?
  fi
  if [ "$rc" -ne 0 ]; then echo "goldens.sh: $step exit $rc; last lines of $log:" >&2; tail -n 20 "$log" >&2; fi
  awk -v shape="$label" -v step="$step" -v t="$threads" -v rc="$rc" \
      -v wall="$(to_seconds "$(field 'Elapsed (wall clock) time (h:mm:ss or m:ss)' "$tv")")" \
      -v rss="$(field 'Maximum resident set size (kbytes)' "$tv")" -v user="$(field 'User time (seconds)' "$tv")" \
      'BEGIN { printf "{\"shape\":\"%s\",\"step\":\"%s\",\"threads\":%d,\"wall_s\":%.2f,\"peak_rss_bytes\":%.0f,\"user_s\":%.2f,\"exit_code\":%d}\n", shape, step, t, wall, rss * 1024, user, rc }'
}

pack="$work/pack" pack2="$work/pack-default"
timed convert_no_goldens "$convert" "$model" "$pack" --quantize q4_k_m --q4k-layout column_wise --threads "$threads" \
  --force --golden-prompts none --calibration none
timed make_goldens "$verify" "$pack" --make-goldens "$model" --skip-gpu --structure-only --quiet
timed verify_cpu "$verify" "$pack" --skip-gpu
timed convert_default "$convert" "$model" "$pack2" --quantize q4_k_m --q4k-layout column_wise --threads "$threads" \
  --force
timed verify_gpu "$verify" "$pack2"
timed run_64 "$build_dir/tools/rdrr-run" "$pack2" --tokens 1,2,3,4,5,6,7,8 -n 64
if [[ ",$steps," == *",batch_2,"* ]]; then
  printf '{"jobs": [{"source": "%s", "output": "%s", "verify_flags": ["--skip-gpu"]},\n  {"source": "%s", "output": "%s", "verify_flags": ["--skip-gpu"]}]}\n' \
    "$model" "$work/batch-a" "$model" "$work/batch-b" > "$work/jobs.json"
  timed batch_2 "$build_dir/tools/rdrr-batch" "$work/jobs.json" -j 2 --retries 0 --work-dir "$work/batch-work"
fi
