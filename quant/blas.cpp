#include "quant/blas.h"

#include <dlfcn.h>

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

extern "C" {
void openblas_set_num_threads(int num_threads);
char* openblas_get_corename(void);
}

namespace rdrr::quant {
namespace {

// The kernel set this CPU's features allow, or nullptr: AVX-512 (F, CD, BW, DQ, VL) -> SkylakeX, AVX2 + FMA
// -> Haswell.
const char* core_for_features() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512cd") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl")) {
    return "SKYLAKEX";
  }
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return "HASWELL";
#endif
  return nullptr;
}

// OpenBLAS picks its kernels from a table of CPU models; CPUs newer than the library's table get an older set.
// Measured with Debian 12's 0.3.21, single-threaded sgemm: an Intel Xeon of family 6 model 207 (Emerald
// Rapids) falls back to "Prescott" (SSE3) kernels, 17 GFLOP/s instead of 84-130 with the AVX-512 ones; an AMD
// family 26 (Zen 5) gets "Haswell", 96 instead of 191 (bench/README.md). So when the chosen set is one of
// those older ones and the CPU's features allow a newer one, the choice is made again as OPENBLAS_CORETYPE
// would make it (a user's OPENBLAS_CORETYPE is left alone). Runs before any BLAS call of the process.
void choose_kernels() {
  // DYNAMIC_ARCH builds (Debian's) only: looked up, so another OpenBLAS still links and keeps its own choice.
  using Fn = void (*)();
  const auto init = reinterpret_cast<Fn>(dlsym(RTLD_DEFAULT, "gotoblas_dynamic_init"));
  const auto quit = reinterpret_cast<Fn>(dlsym(RTLD_DEFAULT, "gotoblas_dynamic_quit"));
  if (init == nullptr || quit == nullptr) return;
  if (std::getenv("OPENBLAS_CORETYPE") != nullptr) return;
  const char* name = openblas_get_corename();
  if (name == nullptr) return;
  const std::string core(name);
  const char* better = core_for_features();
  if (better == nullptr) return;
  const bool older = core == "Prescott" || core == "Core2" || core == "Penryn" || core == "Dunnington" ||
                     core == "Nehalem" || core == "Sandybridge" || core == "Atom" || core == "Barcelona" ||
                     core == "Bobcat" || core == "Bulldozer" || core == "Piledriver" || core == "Steamroller" ||
                     core == "Excavator" || ((core == "Haswell" || core == "Zen") && std::strcmp(better, "SKYLAKEX") == 0);
  if (!older) return;
  setenv("OPENBLAS_CORETYPE", better, 0);
  quit();
  init();
  unsetenv("OPENBLAS_CORETYPE");  // not passed on to child processes
}

}  // namespace

void use_single_threaded_blas() {
  static std::once_flag once;
  std::call_once(once, [] {
    choose_kernels();
    openblas_set_num_threads(1);
  });
}

const char* blas_kernels() {
  use_single_threaded_blas();
  return openblas_get_corename();
}

}  // namespace rdrr::quant
