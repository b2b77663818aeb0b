// The BLAS (OpenBLAS, through its C interface) as quant/ and verify/ use it: always single-threaded inside
// oneTBB tasks, so there is one thread pool and every call sums in one order whatever the thread count.
#pragma once

#include <cblas.h>

namespace rdrr::quant {

// Sets OpenBLAS to one thread (once per process; cheap to call again). Call before the first BLAS call.
void use_single_threaded_blas();

}  // namespace rdrr::quant
