// A read-only view of one input tensor (SafeTensors or GGUF) living in a memory-mapped file.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "quant/dtype.h"
#include "quant/status.h"

namespace rdrr::convert {

struct TensorView {
  std::string name;
  quant::DType dtype = quant::DType::kF32;
  std::vector<int64_t> shape;        // row-major (PyTorch order); the last dim is the row length
  std::span<const std::byte> bytes;  // into the mapping of the owning file; no alignment guaranteed

  int64_t numel() const;  // product of shape (1 for a scalar)
};

// Converts an F32/F16/BF16 tensor to f32 (F16/BF16 through quant/f16.h bulk conversions).
// out.size() must equal t.numel() (kInvalidArgument); block-quantized dtypes give kUnsupported.
Status read_as_f32(const TensorView& t, std::span<float> out);

// Convenience: allocates and returns the f32 copy.
Result<std::vector<float>> read_as_f32(const TensorView& t);

}  // namespace rdrr::convert
