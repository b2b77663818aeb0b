// SPIR-V modules compiled from kernels/*.comp at build time (glslc) and embedded into the library.
// kernels/CMakeLists.txt lists each module (name, file, defines); the table is generated from that list.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

namespace rdrr::kernels {

struct SpirvBlob {
  std::string_view name;     // kernel name (KernelInfo::name)
  std::string_view file;     // source, relative to kernels/: "gemv.comp"
  std::string_view defines;  // as passed to glslc, space-separated: "W_Q4_K COLUMN_WISE"
  std::span<const uint32_t> words;
  std::string_view sha256;   // hex digest of the module bytes
};

std::span<const SpirvBlob> spirv_blobs();
const SpirvBlob* find_spirv(std::string_view name);

}  // namespace rdrr::kernels
