#!/usr/bin/env bash
# Tests tools/check_layering.sh on a copy of the module folders (sources, READMEs, CMake files; no build
# folders, no fixtures): the copy passes; a planted `#include "runtime/device.h"` in quant/dtype.cpp, a
# planted rdrr_runtime link in quant/CMakeLists.txt and a README without its rule line each fail, naming
# the file and the edge.
# Usage: check_layering_test.sh [SOURCE_ROOT]     (ctest `layering_check_rejects_planted_include`)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="${1:-$here/..}"
checker="$here/check_layering.sh"
tmp="$(mktemp -d "${TMPDIR:-/tmp}/rdrr-layering.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
fail() { echo "check_layering_test: $*" >&2; exit 1; }

# A copy of the module folders' checked files.
mkdir -p "$tmp/base"
(
  cd "$root"
  for m in quant rdrr tokenizer kernels graph runtime convert verify tools bench tests; do
    [ -d "$m" ] || continue
    find "$m" \( -type d \( -name build -o -name 'build-*' -o -name 'build_*' -o -name 'cmake-build-*' \) -prune \) \
      -o -type f \( -name '*.h' -o -name '*.hpp' -o -name '*.cpp' -o -name '*.cc' -o -name '*.inc' -o -name '*.comp' \
                    -o -name '*.glsl' -o -name CMakeLists.txt -o -name '*.cmake' -o -name README.md \) -print0 |
      xargs -0 -r cp --parents -t "$tmp/base"
  done
)
[ -f "$tmp/base/quant/dtype.cpp" ] && [ -f "$tmp/base/quant/CMakeLists.txt" ] || fail "copy of the tree is incomplete"

# run_case NAME: runs the checker on $tmp/NAME; sets rc and out.
run_case() {
  set +e
  out="$(bash "$checker" "$tmp/$1" 2>&1)"
  rc=$?
  set -e
}
fresh() { rm -rf "${tmp:?}/$1"; cp -a "$tmp/base" "$tmp/$1"; }

# 1. The unmodified copy passes.
fresh clean
run_case clean
[ "$rc" -eq 0 ] || { printf '%s\n' "$out"; fail "the unmodified tree fails (exit $rc)"; }
grep -q '^layering: OK (' <<<"$out" || { printf '%s\n' "$out"; fail "no 'layering: OK' line"; }

# 2. quant/ may not include runtime/.
fresh include
sed -i '1a #include "runtime/device.h"' "$tmp/include/quant/dtype.cpp"
run_case include
[ "$rc" -eq 1 ] || { printf '%s\n' "$out"; fail "a planted runtime/ include in quant/dtype.cpp: exit $rc, expected 1"; }
grep 'quant/dtype.cpp:2' <<<"$out" | grep -q 'runtime' ||
  { printf '%s\n' "$out"; fail "the report does not name quant/dtype.cpp:2 and runtime"; }

# 3. quant/ may not link rdrr_runtime.
fresh link
printf 'target_link_libraries(rdrr_quant PUBLIC\n  rdrr_runtime)\n' >> "$tmp/link/quant/CMakeLists.txt"
run_case link
[ "$rc" -eq 1 ] || { printf '%s\n' "$out"; fail "a planted rdrr_runtime link in quant/CMakeLists.txt: exit $rc, expected 1"; }
grep 'quant/CMakeLists.txt' <<<"$out" | grep -q 'rdrr_runtime' ||
  { printf '%s\n' "$out"; fail "the report does not name quant/CMakeLists.txt and rdrr_runtime"; }

# 4. A test file gets no more than its module's `Tests may also use:` line (quant/ has none).
fresh testfile
printf '#include "rdrr/manifest.h"\n' > "$tmp/testfile/quant/planted_test.cpp"
run_case testfile
[ "$rc" -eq 1 ] && grep -q 'quant/planted_test.cpp:1 includes "rdrr/manifest.h"' <<<"$out" ||
  { printf '%s\n' "$out"; fail "a planted rdrr/ include in a quant/ test was not reported"; }

# 5. A README without its rule line is an error.
fresh readme
sed -i '/^Allowed dependencies:/d' "$tmp/readme/rdrr/README.md"
run_case readme
[ "$rc" -eq 1 ] && grep -q 'rdrr/README.md has no line beginning' <<<"$out" ||
  { printf '%s\n' "$out"; fail "a README without 'Allowed dependencies:' was not reported"; }

echo "check_layering_test: OK"
