#!/usr/bin/env bash
# Layering check: every cross-module `#include "X/..."` and every rdrr_* library a module's CMake files
# link must be an edge its README.md allows. Run by ctest (`layering_check`); CI fails on a violation.
#
# Usage: check_layering.sh [SOURCE_ROOT]     (default: the checkout this script is in)
#
# Modules are the top-level folders below (a missing folder is skipped). The one home of a module's rule
# is the line of its README.md that begins with `Allowed dependencies:`; every backticked module name with
# a trailing slash on that line (e.g. `quant/`) is an allowed dependency, anything else on the line is
# commentary (so name forbidden modules there without backticks). An optional line `Tests may also use:`
# (same format) adds edges for test code only: files named *_test.cpp (*_vk_test.cpp), *test_util*,
# *testutil*, *_test_*.h, and CMake lines inside if(RDRR_BUILD_TESTS) blocks or rdrr_add_test(...) calls.
# A module may always use itself. The non-test edges must not form a cycle.
# Checked: .h/.hpp/.cpp/.cc/.inc/.comp/.glsl files (`#include "X/..."` and `#include <X/...>`), and in
# CMakeLists.txt / *.cmake: rdrr_* libraries in target_link_libraries(...) and rdrr_add_test(...), and
# sources of another module compiled in (${PROJECT_SOURCE_DIR}/X/file.cpp). Build folders are skipped.
# Exit: 0 OK, 1 violations (all are printed), 2 usage.
set -euo pipefail

if [ $# -gt 1 ] || [ "${1:-}" = "-h" ] || [ "${1:-}" = "--help" ]; then
  echo "usage: check_layering.sh [SOURCE_ROOT]" >&2
  exit 2
fi
root="${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}"
if [ ! -d "$root" ]; then
  echo "check_layering: no such folder: $root" >&2
  exit 2
fi
cd "$root"

all_modules="quant rdrr tokenizer kernels graph runtime convert verify tools bench tests"
# Library -> module. Libraries found as add_library(rdrr_...) in a module's CMake files are added below.
libmap="rdrr_quant=quant rdrr_format=rdrr rdrr_tokenizer=tokenizer rdrr_kernels=kernels rdrr_graph=graph
rdrr_runtime=runtime rdrr_vk_testing=runtime rdrr_convert=convert rdrr_verify=verify
rdrr_synthetic_model=tools rdrr_batch=tools rdrr_text_generation=tools rdrr_pack_inspect=tools"

is_module() { case " $all_modules " in *" $1 "*) return 0 ;; esac; return 1; }

# The module names backticked on the first README line that begins with $2.
readme_modules() {
  local line tok out=""
  line="$(grep -m1 -E "^$2" "$1" || true)"
  for tok in $(printf '%s\n' "$line" | grep -oE '`[A-Za-z0-9_]+/`' | tr -d '`/' || true); do
    if is_module "$tok"; then
      case " $out " in *" $tok "*) ;; *) out="$out $tok" ;; esac
    fi
  done
  printf '%s' "${out# }"
}

# Files of a module, NUL-separated, build folders pruned.
module_files() {
  find "$1" \( -type d \( -name build -o -name 'build-*' -o -name 'build_*' -o -name 'cmake-build-*' \) -prune \) \
    -o -type f \( "${@:2}" \) -print0 | sort -z
}

modules=()
errors=()
declare -A allowed tests_allowed
for m in $all_modules; do
  [ -d "$m" ] || continue
  modules+=("$m")
  if [ ! -f "$m/README.md" ]; then
    errors+=("layering: $m/README.md is missing (it must state the module's rule on a line beginning 'Allowed dependencies:')")
    continue
  fi
  if ! grep -q -E '^Allowed dependencies:' "$m/README.md"; then
    errors+=("layering: $m/README.md has no line beginning 'Allowed dependencies:' (the module's rule)")
    continue
  fi
  allowed[$m]="$(readme_modules "$m/README.md" 'Allowed dependencies:')"
  tests_allowed[$m]="$(readme_modules "$m/README.md" 'Tests may also use:')"
  while IFS= read -r lib; do
    [ -n "$lib" ] && libmap="$libmap $lib=$m"
  done < <(module_files "$m" -name CMakeLists.txt -o -name '*.cmake' | xargs -0 -r cat |
           sed -n -E 's/^[[:space:]]*add_library[[:space:]]*\([[:space:]]*(rdrr_[A-Za-z0-9_]+).*/\1/p')
done

# No cycle among the non-test edges (a back edge would make the direction meaningless).
edges=""
for m in "${modules[@]}"; do
  [ -n "${allowed[$m]+x}" ] || continue
  for d in ${allowed[$m]}; do
    [ "$d" = "$m" ] || edges="$edges$m $d"$'\n'
  done
done
cycle="$(printf '%s' "$edges" | awk '
  { n[$1]++; adj[$1, n[$1]] = $2 }
  function visit(v, path,   i, w, r) {
    if (state[v] == 1) return path " -> " v
    if (state[v] == 2) return ""
    state[v] = 1
    for (i = 1; i <= n[v]; i++) { w = adj[v, i]; r = visit(w, path == "" ? v : path " -> " v); if (r != "") return r }
    state[v] = 2
    return ""
  }
  END { for (v in n) { r = visit(v, ""); if (r != "") { print r; exit } } }')"
if [ -n "$cycle" ]; then
  errors+=("layering: the README 'Allowed dependencies:' lines form a cycle: $cycle")
fi

nfiles=0
violations=""
for m in "${modules[@]}"; do
  [ -n "${allowed[$m]+x}" ] || continue
  ok="$m ${allowed[$m]}"
  tok="$ok ${tests_allowed[$m]}"
  desc="${allowed[$m]// /, }"
  desc="${desc:-nothing of ours}"
  if [ -n "${tests_allowed[$m]}" ]; then
    tdesc="$desc (tests also: ${tests_allowed[$m]// /, })"
  else
    tdesc="$desc"
  fi

  mapfile -d '' srcs < <(module_files "$m" -name '*.h' -o -name '*.hpp' -o -name '*.cpp' -o -name '*.cc' \
                                        -o -name '*.inc' -o -name '*.comp' -o -name '*.glsl')
  mapfile -d '' cmakes < <(module_files "$m" -name CMakeLists.txt -o -name '*.cmake')
  nfiles=$((nfiles + ${#srcs[@]} + ${#cmakes[@]}))

  if [ ${#srcs[@]} -gt 0 ]; then
    violations+="$(printf '%s\0' "${srcs[@]}" | xargs -0 awk -v self="$m" -v mods="$all_modules" \
        -v ok="$ok" -v tok="$tok" -v desc="$desc" -v tdesc="$tdesc" '
      BEGIN {
        n = split(mods, a, " "); for (i = 1; i <= n; i++) ismod[a[i]] = 1
        n = split(ok, a, " "); for (i = 1; i <= n; i++) okm[a[i]] = 1
        n = split(tok, a, " "); for (i = 1; i <= n; i++) tokm[a[i]] = 1
      }
      FNR == 1 {
        base = FILENAME; sub(/.*\//, "", base)
        istest = (base ~ /_test\.cpp$/ || base ~ /test_util/ || base ~ /testutil/ || base ~ /_test_.*\.h$/)
      }
      /^[ \t]*#[ \t]*include[ \t]*["<][A-Za-z0-9_]+\// {
        path = $0; sub(/^[ \t]*#[ \t]*include[ \t]*["<]/, "", path); sub(/[">].*/, "", path)
        dep = path; sub(/\/.*/, "", dep)
        if (!(dep in ismod)) next
        if (istest ? (dep in tokm) : (dep in okm)) next
        printf "layering: %s:%d includes \"%s\" but %s/README.md allows only: %s\n", \
               FILENAME, FNR, path, self, (istest ? tdesc : desc)
      }')"$'\n'
  fi

  if [ ${#cmakes[@]} -gt 0 ]; then
    violations+="$(printf '%s\0' "${cmakes[@]}" | xargs -0 awk -v self="$m" -v mods="$all_modules" \
        -v ok="$ok" -v tok="$tok" -v desc="$desc" -v tdesc="$tdesc" -v libmap="$libmap" '
      BEGIN {
        n = split(mods, a, " "); for (i = 1; i <= n; i++) ismod[a[i]] = 1
        n = split(ok, a, " "); for (i = 1; i <= n; i++) okm[a[i]] = 1
        n = split(tok, a, " "); for (i = 1; i <= n; i++) tokm[a[i]] = 1
        n = split(libmap, a, /[ \t\n]+/)
        for (i = 1; i <= n; i++) if (split(a[i], kv, "=") == 2) lib[kv[1]] = kv[2]
      }
      function intest(   i) {
        if (incmd && cmdtest) return 1
        for (i = 1; i <= depth; i++) if (t[i]) return 1
        return 0
      }
      function report(what, dep, test) {
        if (test ? (dep in tokm) : (dep in okm)) return
        printf "layering: %s:%d %s (%s/) but %s/README.md allows only: %s\n", \
               FILENAME, FNR, what, dep, self, (test ? tdesc : desc)
      }
      # if() condition: 1 = RDRR_BUILD_TESTS, 2 = NOT RDRR_BUILD_TESTS (its else() is the test branch), 0 = other.
      function cond(s) {
        if (s ~ /NOT[ \t]+RDRR_BUILD_TESTS/) return 2
        return (s ~ /RDRR_BUILD_TESTS/) ? 1 : 0
      }
      function opens(s,   c) { c = s; return gsub(/\(/, "", c) }
      function closes(s,   c) { c = s; return gsub(/\)/, "", c) }
      FNR == 1 { depth = 0; incmd = 0 }
      {
        line = $0; sub(/#.*/, "", line)
        if (!incmd) {
          if (line ~ /^[ \t]*if[ \t]*\(/) {
            depth++; cnd[depth] = cond(line); t[depth] = (cnd[depth] == 1)
          } else if (line ~ /^[ \t]*else[ \t]*\(/) {
            if (depth > 0) { if (cnd[depth] == 1) cnd[depth] = 2; else if (cnd[depth] == 2) cnd[depth] = 1; t[depth] = (cnd[depth] == 1) }
          } else if (line ~ /^[ \t]*elseif[ \t]*\(/) {
            if (depth > 0) { cnd[depth] = cond(line); t[depth] = (cnd[depth] == 1) }
          } else if (line ~ /^[ \t]*endif[ \t]*\(/) {
            if (depth > 0) depth--
          }
          if (line ~ /^[ \t]*(target_link_libraries|rdrr_add_test)[ \t]*\(/) {
            incmd = 1; bal = 0; skipfirst = 1; firstline = 1
            cmdtest = (line ~ /^[ \t]*rdrr_add_test/)
          }
        }
        test = intest()
        # Another module s source compiled in: ${PROJECT_SOURCE_DIR}/X/file.cpp
        s = line
        while (match(s, /\$\{(PROJECT|CMAKE)_SOURCE_DIR\}\/[A-Za-z0-9_]+\/[^ \t")]*\.(cpp|cc|h|hpp|inc)/)) {
          ref = substr(s, RSTART, RLENGTH); s = substr(s, RSTART + RLENGTH)
          dep = ref; sub(/^[^}]*\}\//, "", dep); sub(/\/.*/, "", dep)
          if ((dep in ismod) && dep != self) report("compiles " ref, dep, test)
        }
        if (incmd) {
          body = line
          if (firstline) { sub(/^[^(]*\(/, "", body); firstline = 0 }
          n = split(body, w, /[ \t()"]+/)
          for (i = 1; i <= n; i++) {
            if (w[i] == "") continue
            if (skipfirst) { skipfirst = 0; continue }
            if ((w[i] in lib) && lib[w[i]] != self) report("links " w[i], lib[w[i]], test)
          }
          bal += opens(line) - closes(line)
          if (bal <= 0) incmd = 0
        }
      }')"$'\n'
  fi
done

violations="$(printf '%s' "$violations" | sed '/^$/d')"
status=0
if [ ${#errors[@]} -gt 0 ]; then
  printf '%s\n' "${errors[@]}"
  status=1
fi
if [ -n "$violations" ]; then
  printf '%s\n' "$violations"
  status=1
fi
if [ "$status" -ne 0 ]; then
  echo "layering: FAILED (rules: the 'Allowed dependencies:' / 'Tests may also use:' lines of each module's README.md)"
  exit 1
fi
echo "layering: OK ($nfiles files, ${#modules[@]} modules)"
