#!/usr/bin/env bash
# rdrr setup: installs every Debian 12 package the project needs (idempotent, safe to re-run),
# then configures and builds. Usage: tools/setup.sh [--no-build] [--build-dir DIR] [--sanitize]
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir="$here/build"
do_build=1
sanitize=OFF
while [ $# -gt 0 ]; do
  case "$1" in
    --no-build) do_build=0 ;;
    --build-dir) build_dir="$2"; shift ;;
    --sanitize) sanitize=ON ;;
    *) echo "setup.sh: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done

packages=(
  build-essential cmake ninja-build pkg-config git ca-certificates
  libvulkan-dev glslc mesa-vulkan-drivers vulkan-tools spirv-tools vulkan-validationlayers
  libtbb-dev libzstd-dev libssl-dev nlohmann-json3-dev libarchive-dev libcli11-dev
  libgtest-dev libgmock-dev googletest libbenchmark-dev time
  libsentencepiece-dev libpcre2-dev libicu-dev libopenblas-dev
  # The fuzz build (tools/fuzz.sh): clang 14, libFuzzer and the sanitizer runtimes, llvm-symbolizer.
  clang libclang-rt-14-dev llvm
  slurm-wlm munge
)
# Only the Slurm end-to-end test (tests/slurm_e2e.sh) needs these; if their installation fails (e.g. a
# container whose init refuses to start services), setup goes on without them and that test is skipped.
optional=(slurm-wlm munge)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo_cmd=""
  [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  echo "setup: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $sudo_cmd apt-get update -qq
  if ! $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}"; then
    required=()
    for p in "${missing[@]}"; do
      [[ " ${optional[*]} " == *" $p "* ]] || required+=("$p")
    done
    echo "setup: installing everything failed; retrying without the optional ${optional[*]}" >&2
    [ ${#required[@]} -eq 0 ] || $sudo_cmd apt-get install -y -qq --no-install-recommends "${required[@]}"
  fi
fi

if [ "$do_build" -eq 1 ]; then
  werror=OFF
  [ "${CI:-}" = "true" ] && werror=ON
  cmake -S "$here" -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DRDRR_WERROR="$werror" -DRDRR_SANITIZE="$sanitize"
  cmake --build "$build_dir" -j "$(nproc)"
fi
