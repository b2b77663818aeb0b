// Run-time CPU feature selection for the quant/ SIMD paths (shared by every codec).
//
// Every SIMD path must produce output byte-identical to its scalar path; the switch only trades speed.
// The scalar path is forced by the environment variable RDRR_NO_SIMD=1 (read once, at first use) or by
// set_simd_enabled(false) (tests, benchmarks). Thread-safe.
#pragma once

namespace rdrr::quant {

// True when the CPU (and OS) support AVX2 and F16C.
bool cpu_has_avx2();

// True when the AVX2 paths should run: the CPU has them, RDRR_NO_SIMD is not set to a non-empty value other
// than "0", and set_simd_enabled(false) is not in effect.
bool simd_enabled();

// Overrides the environment: false forces the scalar paths, true uses SIMD where the CPU has it.
void set_simd_enabled(bool enabled);

}  // namespace rdrr::quant
