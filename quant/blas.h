// The BLAS (OpenBLAS, through its C interface) as quant/ and verify/ use it: always single-threaded inside
// oneTBB tasks, so there is one thread pool and every call sums in one order whatever the thread count.
#pragma once

#include <cblas.h>

namespace rdrr::quant {

// Sets OpenBLAS to one thread (once per process; cheap to call again) and, where OpenBLAS's own table does not
// know the CPU and chose older kernels than its features allow, the newer kernels (blas.cpp). Call before the
// first BLAS call.
void use_single_threaded_blas();

// The name of the kernel set in use (e.g. "SkylakeX", "Haswell"), after use_single_threaded_blas().
const char* blas_kernels();

}  // namespace rdrr::quant
