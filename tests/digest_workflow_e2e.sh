#!/usr/bin/env bash
# The digest-regeneration workflow, end to end with the real tools:
#   edit a kernel include -> `rdrr-digests check` fails naming the kernels -> `rdrr-digests sync` -> check
#   passes; packs pinned to other kernel digests fail `rdrr-verify`'s kernel gate -> `rdrr-digests repin`
#   on the folder of packs -> `rdrr-batch --verify-only` re-verifies them all.
# The compiled digests of this build cannot change inside a test, so "packs pinned to an older build" are
# made by rewriting their pinned digests (what a pack converted before a kernel edit looks like).
# Usage: digest_workflow_e2e.sh BIN_DIR KERNELS_DIR FIXTURES_DIR
set -euo pipefail
bin="$1"
kernels="$2"
fixtures="$3"
tmp="$(mktemp -d /tmp/rdrr-digests.XXXXXX)"
trap 'rm -rf "$tmp"' EXIT
fail() { echo "digest_workflow_e2e: $*" >&2; exit 1; }

# 1. Edit a shared include in a copy of the kernel sources.
cp -r "$kernels" "$tmp/kernels"
"$bin/rdrr-digests" check --kernels-dir "$tmp/kernels" > /dev/null || fail "a fresh copy of kernels/ is not up to date"
echo "// edited by digest_workflow_e2e" >> "$tmp/kernels/include/common.glsl"
set +e
"$bin/rdrr-digests" check --kernels-dir "$tmp/kernels" > "$tmp/check.txt" 2>&1
rc=$?
set -e
[ "$rc" -ne 0 ] || fail "rdrr-digests check passed after an include edit"
grep -q "include/common.glsl" "$tmp/check.txt" || { cat "$tmp/check.txt"; fail "check did not name the edited file"; }
"$bin/rdrr-digests" sync --kernels-dir "$tmp/kernels" > /dev/null
"$bin/rdrr-digests" check --kernels-dir "$tmp/kernels" > /dev/null || fail "check still fails after sync"

# 2. A folder of packs, converted and verified by rdrr-batch.
cat > "$tmp/jobs.txt" <<JOBS
$fixtures/tiny-llama/hf packs/llama-q8_0 --quantize q8_0
$fixtures/tiny-qwen2/hf packs/qwen2-q4_k_m --quantize q4_k_m --q4k-layout row_wise
JOBS
"$bin/rdrr-batch" "$tmp/jobs.txt" --work-dir "$tmp/work" > "$tmp/batch1.txt" || { cat "$tmp/batch1.txt"; fail "first batch failed"; }

# 3. Pin both packs to digests this build does not have (as after a kernel edit + sync + rebuild).
for p in "$tmp"/packs/*/manifest.json; do
  sed -i -E '0,/"digest": "sha256:[0-9a-f]{64}"/s//"digest": "sha256:0000000000000000000000000000000000000000000000000000000000000000"/' "$p"
done
set +e
"$bin/rdrr-verify" "$tmp/packs/llama-q8_0" > "$tmp/verify_stale.txt" 2>&1
rc=$?
set -e
[ "$rc" -ne 0 ] || { cat "$tmp/verify_stale.txt"; fail "rdrr-verify passed a pack with a stale kernel pin"; }
grep -q "repin" "$tmp/verify_stale.txt" || { cat "$tmp/verify_stale.txt"; fail "the kernel gate did not name the fix"; }
set +e
"$bin/rdrr-batch" "$tmp/jobs.txt" --work-dir "$tmp/work" --verify-only --retries 0 > "$tmp/batch_stale.txt" 2>&1
rc=$?
set -e
[ "$rc" -eq 30 ] || { cat "$tmp/batch_stale.txt"; fail "batch --verify-only on stale packs exited $rc, expected 30"; }

# 4. Repin the folder (dry run first: nothing changes), then re-verify everything.
before="$(sha256sum "$tmp"/packs/*/manifest.json)"
"$bin/rdrr-digests" repin --dry-run "$tmp/packs" > "$tmp/dry.txt"
[ "$before" = "$(sha256sum "$tmp"/packs/*/manifest.json)" ] || fail "repin --dry-run changed a manifest"
"$bin/rdrr-digests" repin "$tmp/packs" > "$tmp/repin.txt" || { cat "$tmp/repin.txt"; fail "repin failed"; }
grep -q "kernelRepins" "$tmp/packs/llama-q8_0/manifest.json" || fail "repin did not record the event in the provenance"
"$bin/rdrr-batch" "$tmp/jobs.txt" --work-dir "$tmp/work" --verify-only > "$tmp/batch2.txt" || { cat "$tmp/batch2.txt"; fail "re-verification failed"; }
[ "$(grep -c verified "$tmp/batch2.txt")" -eq 2 ] || { cat "$tmp/batch2.txt"; fail "expected 2 verified packs"; }

# 5. Ship a pack as one file: rdrr-pack, then every reader takes the archive where it takes a folder.
"$bin/rdrr-pack" "$tmp/packs/llama-q8_0" "$tmp/llama-q8_0.rdrr.tar.zst" > /dev/null
"$bin/rdrr-pack" "$tmp/packs/llama-q8_0" "$tmp/again.rdrr.tar.zst" > /dev/null
cmp -s "$tmp/llama-q8_0.rdrr.tar.zst" "$tmp/again.rdrr.tar.zst" || fail "rdrr-pack is not reproducible"
"$bin/rdrr-verify" "$tmp/llama-q8_0.rdrr.tar.zst" > "$tmp/verify_archive.txt" 2>&1 || { cat "$tmp/verify_archive.txt"; fail "rdrr-verify failed on the archive"; }
"$bin/rdrr-inspect" "$tmp/llama-q8_0.rdrr.tar.zst" > "$tmp/inspect.txt" || fail "rdrr-inspect failed on the archive"
grep -q "model.embed_tokens.weight" "$tmp/inspect.txt" || fail "rdrr-inspect's summary of the archive lacks the embedding"
"$bin/rdrr-run" "$tmp/llama-q8_0.rdrr.tar.zst" --tokens 1,2,3 -n 2 > "$tmp/run_archive.txt" 2>&1 || { cat "$tmp/run_archive.txt"; fail "rdrr-run failed on the archive"; }
echo "digest_workflow_e2e: check failed on the edit, sync fixed it; 2 stale packs repinned and re-verified; archive read by verify/inspect/run"
