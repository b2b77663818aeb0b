#!/usr/bin/env bash
# Builds the libFuzzer targets of tests/fuzz/ (clang, ASan + UBSan, -DRDRR_FUZZ=ON) and runs each one, from a
# fresh clone. Usage:
#   tools/fuzz.sh [--seconds N] [--smoke] [--build-dir DIR] [--no-setup] [TARGET...]
#     --seconds N   fuzzing time per target (default 60)
#     --smoke       CI's short run: 5 s per target unless --seconds says otherwise
#     TARGET        names without the fuzz_ prefix (default: all, see tests/fuzz/README.md)
# Prints one JSON line per target: {"target", "seconds", "executions", "exec_per_s", "corpus", "findings",
# "artifacts"}; executions are libFuzzer's final stat::number_of_executed_units. Exits 1 when any target found
# something (the reproducers are under BUILD_DIR/fuzz-artifacts/), 0 otherwise.
# Corpora grow in BUILD_DIR/fuzz-corpus/<target> across runs; seeds are rebuilt from fixtures/ every run; logs go to
# BUILD_DIR/fuzz-logs/<run>/, reproducers to BUILD_DIR/fuzz-artifacts/<target>/<run>-crash-...
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir="$here/build-fuzz"
seconds=""
smoke=0
setup=1
targets=()
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) seconds="$2"; shift ;;
    --smoke) smoke=1 ;;
    --build-dir) build_dir="$2"; shift ;;
    --no-setup) setup=0 ;;
    -h|--help) sed -n '2,12p' "${BASH_SOURCE[0]}"; exit 0 ;;
    -*) echo "fuzz.sh: unknown option $1" >&2; exit 2 ;;
    *) targets+=("$1") ;;
  esac
  shift
done
[ -n "$seconds" ] || { [ "$smoke" -eq 1 ] && seconds=5 || seconds=60; }
all_targets=(safetensors safetensors_index gguf manifest archive hf_config chat_template
             tokenizer_json tokenizer_model tokenizer_gguf_json)
[ ${#targets[@]} -gt 0 ] || targets=("${all_targets[@]}")

[ "$setup" -eq 0 ] || bash "$here/tools/setup.sh" --no-build
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
cmake -S "$here" -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER=clang++ \
  -DRDRR_FUZZ=ON "${launcher[@]}" >/dev/null
cmake --build "$build_dir" -j "${RDRR_FUZZ_BUILD_JOBS:-$(nproc)}"

fuzz_bin="$build_dir/tests/fuzz"
# This run's names (logs, reproducers) and private folders: several fuzz.sh may share a build folder at once.
run_id="$(date -u +%Y%m%d-%H%M%S)-$$"
# Each input is written to a file: a tmpfs (/dev/shm) makes that about 3x faster than a disk.
tmp_root="$build_dir/fuzz-tmp/$run_id"
[ -d /dev/shm ] && [ -w /dev/shm ] && tmp_root="/dev/shm/rdrr-fuzz-$run_id"
trap 'rm -rf "$tmp_root"' EXIT
seeds="$tmp_root/seeds"
"$fuzz_bin/make_seeds" "$here/fixtures" "$here/tests/fuzz/seeds" "$seeds"
cp -r "$here/tests/fuzz/seeds/." "$seeds/"

export ASAN_OPTIONS="${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
findings_total=0
for t in "${targets[@]}"; do
  bin="$fuzz_bin/fuzz_$t"
  [ -x "$bin" ] || { echo "fuzz.sh: no target $t (have: ${all_targets[*]})" >&2; exit 2; }
  corpus="$build_dir/fuzz-corpus/$t"
  artifacts="$build_dir/fuzz-artifacts/$t"
  scratch="$tmp_root/scratch-$t"
  log="$build_dir/fuzz-logs/$run_id/$t.log"
  mkdir -p "$corpus" "$artifacts" "$scratch" "$(dirname "$log")" "$seeds/$t"
  set +e
  TMPDIR="$scratch" "$bin" -max_total_time="$seconds" -print_final_stats=1 -timeout=20 -rss_limit_mb=2560 \
    -artifact_prefix="$artifacts/$run_id-" "$corpus" "$seeds/$t" >"$log" 2>&1
  rc=$?
  set -e
  rm -rf "$scratch"
  execs="$(sed -n 's/^stat::number_of_executed_units: *\([0-9]*\).*/\1/p' "$log" | tail -1)"
  execs="${execs:-0}"
  new_artifacts="$(find "$artifacts" -type f -name "$run_id-*" | sort)"
  found="$(printf '%s' "$new_artifacts" | grep -c . || true)"
  [ "$rc" -eq 0 ] || [ "$found" -gt 0 ] || found=1   # a failure that left no reproducer still counts
  findings_total=$((findings_total + found))
  list="$(printf '%s' "$new_artifacts" | sed 's/.*/"&"/' | paste -sd, -)"
  printf '{"target":"%s","seconds":%s,"executions":%s,"exec_per_s":%s,"corpus":%s,"findings":%s,"exit":%s,"artifacts":[%s]}\n' \
    "$t" "$seconds" "$execs" "$((execs / (seconds > 0 ? seconds : 1)))" "$(find "$corpus" -type f | wc -l)" \
    "$found" "$rc" "$list"
  [ "$rc" -eq 0 ] || { echo "fuzz.sh: fuzz_$t failed (exit $rc); the end of $log:" >&2; tail -40 "$log" >&2; }
done
[ "$findings_total" -eq 0 ]
