#!/usr/bin/env bash
# Fault injection with the real tools (issue 26): rdrr-convert killed with SIGKILL at several points of a
# conversion that replaces a previous pack (the previous pack stays intact) and of one that has none (no output);
# the next run removes the scratch folders the killed ones left; two converters on one output; disk full
# (RLIMIT_FSIZE through `ulimit -f` in a subshell) for rdrr-convert --force and rdrr-pack; rdrr-batch killed
# with its whole process group, then resumed.
# The model is a ~64 MB synthetic checkpoint (rdrr-make-synthetic-model) so that each phase lasts long enough
# to be hit. Usage: fault_injection_e2e.sh BIN_DIR FIXTURES_DIR
set -euo pipefail
bin="$(cd "$1" && pwd)"
fixtures="$(cd "$2" && pwd)"
tmp="$(mktemp -d /tmp/rdrr-faults.XXXXXX)"
trap '[ -n "${KEEP_TMP:-}" ] || rm -rf "$tmp"' EXIT
fail() { echo "fault_injection_e2e: $*" >&2; exit 1; }
# One digest of every file of a pack (relative names and contents).
pack_digest() { (cd "$1" && find . -type f | LC_ALL=C sort | xargs sha256sum | sha256sum | cut -c1-64); }
scratch_of() { find "$(dirname "$1")" -maxdepth 1 -name "$(basename "$1").tmp-*" -o -maxdepth 1 -name "$(basename "$1").old-*"; }

"$bin/rdrr-make-synthetic-model" --shape tiny --hidden-size 512 --num-layers 8 --num-heads 8 \
  --intermediate-size 1536 --vocab-size 8000 --out "$tmp/src" --threads 2 > /dev/null
convert=("$bin/rdrr-convert" "$tmp/src")
flags=(--quantize q8_0 --no-sync --quiet --threads 2)
"${convert[@]}" "$tmp/ref" "${flags[@]}" || fail "the reference conversion failed"
ref="$(pack_digest "$tmp/ref")"
shard_bytes="$(stat -c %s "$tmp/ref/shard_00000.bin")"

# Starts a conversion into $1 (extra flags after), waits for phase $2 of it, kills it with SIGKILL.
# Phases: start (50 ms after the start), scratch (its .tmp- folder exists), shard (a shard byte is written),
# written (the shard has its full size: goldens are being computed). Prints "killed" or "finished" (it ended
# before the phase was seen).
kill_at() {
  local out="$1" phase="$2"
  shift 2
  "${convert[@]}" "$out" "${flags[@]}" "$@" & local pid=$!
  local seen=0 scratch
  for _ in $(seq 1 3000); do
    scratch="$(find "$(dirname "$out")" -maxdepth 1 -name "$(basename "$out").tmp-$pid-*" | head -1)"
    case "$phase" in
      start) sleep 0.05; seen=1 ;;
      scratch) [ -n "$scratch" ] && seen=1 ;;
      shard) [ -n "$scratch" ] && [ -s "$scratch/shard_00000.bin" ] && seen=1 ;;
      written) [ -n "$scratch" ] && [ "$(stat -c %s "$scratch/shard_00000.bin" 2>/dev/null || echo 0)" -ge "$shard_bytes" ] &&
          seen=1 ;;
    esac
    { [ "$seen" -eq 1 ] || ! kill -0 "$pid" 2>/dev/null; } && break
    sleep 0.01
  done
  if kill -9 "$pid" 2>/dev/null; then
    wait "$pid" || true
    echo killed
  else
    wait "$pid" || true
    echo finished
  fi
}

# 1. Replacing a previous pack: killed at every phase, the previous pack is intact (or, had the swap happened,
#    the identical new one: conversion is deterministic).
cp -r "$tmp/ref" "$tmp/out"
killed=0
for phase in start scratch shard written; do
  r="$(kill_at "$tmp/out" "$phase" --force)"
  [ "$r" = killed ] && killed=$((killed + 1))
  [ "$(pack_digest "$tmp/out")" = "$ref" ] || fail "kill -9 at phase $phase ($r) changed the previous pack"
done
[ "$killed" -ge 3 ] || fail "only $killed of 4 kills hit a running conversion"
[ -n "$(scratch_of "$tmp/out")" ] || fail "the killed conversions left no scratch folder (nothing was tested)"
"${convert[@]}" "$tmp/out" "${flags[@]}" --force || fail "the conversion after the kills failed"
[ "$(pack_digest "$tmp/out")" = "$ref" ] || fail "the conversion after the kills differs from the reference"
[ -z "$(scratch_of "$tmp/out")" ] || fail "scratch folders of killed conversions left: $(scratch_of "$tmp/out")"

# 2. No previous pack: a killed conversion leaves no output; the next one cleans up.
for phase in shard written; do
  r="$(kill_at "$tmp/fresh" "$phase")"
  [ "$r" = finished ] || [ ! -e "$tmp/fresh" ] || fail "kill -9 at phase $phase left an output folder"
  rm -rf "$tmp/fresh"
done
"${convert[@]}" "$tmp/fresh" "${flags[@]}" || fail "the conversion after the kills failed"
[ -z "$(scratch_of "$tmp/fresh")" ] || fail "scratch folders left: $(scratch_of "$tmp/fresh")"
rm -rf "$tmp/fresh"

# 3. Two converters on one output: without --force one wins and the other exits 7; with --force both succeed.
#    Either way the output is the reference pack and no scratch folder is left.
for force in "" --force; do
  rm -rf "$tmp/two"
  [ -z "$force" ] || cp -r "$tmp/ref" "$tmp/two"
  set +e
  "${convert[@]}" "$tmp/two" "${flags[@]}" $force 2> "$tmp/one.err" & p1=$!
  "${convert[@]}" "$tmp/two" "${flags[@]}" $force 2> "$tmp/two.err" & p2=$!
  wait "$p1"; rc1=$?
  wait "$p2"; rc2=$?
  set -e
  codes="$(printf '%s\n' "$rc1" "$rc2" | sort | paste -sd' ')"
  if [ -z "$force" ]; then
    [ "$codes" = "0 7" ] || fail "two converters without --force exited $codes, expected 0 and 7"
  else
    [ "$codes" = "0 0" ] || fail "two converters with --force exited $codes, expected 0 and 0"
  fi
  [ "$(pack_digest "$tmp/two")" = "$ref" ] || fail "two converters (${force:-no force}) left a different pack"
  [ -z "$(scratch_of "$tmp/two")" ] || fail "two converters left scratch folders: $(scratch_of "$tmp/two")"
done

# 4. Disk full (RLIMIT_FSIZE 4 MiB, the 34 MB shard cannot be written): exit 6, the previous pack intact,
#    nothing left; rdrr-pack likewise leaves no archive.
set +e
(ulimit -f 4096; exec "${convert[@]}" "$tmp/out" "${flags[@]}" --force) 2> "$tmp/full.err"
rc=$?
set -e
[ "$rc" -eq 6 ] || { cat "$tmp/full.err" >&2; fail "convert on a full disk exited $rc, expected 6"; }
[ "$(pack_digest "$tmp/out")" = "$ref" ] || fail "convert on a full disk changed the previous pack"
[ -z "$(scratch_of "$tmp/out")" ] || fail "convert on a full disk left: $(scratch_of "$tmp/out")"
set +e
(ulimit -f 4096; exec "$bin/rdrr-pack" "$tmp/ref" "$tmp/ref.rdrr.tar.zst") 2> "$tmp/pack.err"
rc=$?
set -e
[ "$rc" -eq 6 ] || { cat "$tmp/pack.err" >&2; fail "rdrr-pack on a full disk exited $rc, expected 6"; }
[ -z "$(ls "$tmp" | grep rdrr.tar.zst)" ] || fail "rdrr-pack on a full disk left: $(ls "$tmp" | grep rdrr.tar.zst)"

# 5. rdrr-batch killed (with its converter: the whole process group, as a scheduler does) while converting its
#    second job, then resumed: the first job is skipped, the second converted and verified, nothing left over.
cat > "$tmp/jobs.json" <<JOBS
{"jobs": [
  {"source": "$fixtures/tiny-llama/hf", "output": "packs/a", "flags": ["--quantize", "f16", "--no-sync"],
   "verify_flags": ["--skip-gpu"]},
  {"source": "$tmp/src", "output": "packs/b", "flags": ["--quantize", "q8_0", "--no-sync"],
   "verify_flags": ["--skip-gpu"]}
]}
JOBS
setsid "$bin/rdrr-batch" "$tmp/jobs.json" --work-dir "$tmp/work" > "$tmp/batch1.txt" 2>&1 & bpid=$!
for _ in $(seq 1 6000); do
  [ -n "$(find "$tmp/packs" -maxdepth 1 -name 'b.tmp-*' 2>/dev/null | head -1)" ] && break
  kill -0 "$bpid" 2>/dev/null || break
  sleep 0.01
done
kill -9 -- "-$bpid" 2>/dev/null || fail "rdrr-batch ended before it could be killed: $(cat "$tmp/batch1.txt")"
wait "$bpid" || true
# Resume at once, as a retrying scheduler may: the killed converter may still be a zombie (init has not reaped it).
[ ! -e "$tmp/packs/b" ] || fail "the killed batch left an output for job b"
"$bin/rdrr-batch" "$tmp/jobs.json" --work-dir "$tmp/work" > "$tmp/batch2.txt" 2>&1 ||
  { cat "$tmp/batch2.txt" >&2; fail "the resumed batch failed"; }
grep -q "skipped" "$tmp/batch2.txt" || { cat "$tmp/batch2.txt" >&2; fail "the resumed batch did not skip job a"; }
[ -f "$tmp/packs/b/manifest.json" ] || fail "the resumed batch did not convert job b"
[ -z "$(find "$tmp/packs" -maxdepth 1 -name '*.tmp-*' -o -maxdepth 1 -name '*.old-*')" ] ||
  fail "scratch left after the resumed batch: $(ls "$tmp/packs")"
echo "fault_injection_e2e: all checks passed ($killed of 4 kills of a replacing conversion hit)"
