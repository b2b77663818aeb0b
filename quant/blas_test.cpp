#include "quant/blas.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <set>
#include <string>

namespace rdrr::quant {
namespace {

// use_single_threaded_blas() leaves OpenBLAS on kernels at least as new as the CPU's features allow (where the
// library's own model table does not know the CPU it picks older ones: quant/blas.cpp). A user's
// OPENBLAS_CORETYPE is theirs to choose, so with it set there is nothing of ours to check.
TEST(Blas, KernelsMatchTheCpuFeatures) {
  if (std::getenv("OPENBLAS_CORETYPE") != nullptr) GTEST_SKIP() << "OPENBLAS_CORETYPE is set: the user's choice";
  const std::string kernels = blas_kernels();
  std::printf("OpenBLAS kernels: %s\n", kernels.c_str());
#if defined(__x86_64__)
  __builtin_cpu_init();
  const std::set<std::string> avx512 = {"SkylakeX", "Cooperlake", "SapphireRapids"};
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512cd") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl")) {
    EXPECT_TRUE(avx512.count(kernels) == 1) << kernels;
  } else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    const std::set<std::string> older = {"Prescott", "Core2", "Penryn", "Dunnington", "Nehalem", "Sandybridge",
                                         "Atom", "Barcelona", "Bobcat", "Bulldozer", "Piledriver", "Steamroller",
                                         "Excavator"};
    EXPECT_EQ(older.count(kernels), 0U) << kernels;
  }
#endif
}

}  // namespace
}  // namespace rdrr::quant
