#include "convert/tensor_view.h"

#include <algorithm>
#include <array>
#include <cstring>

#include "quant/f16.h"

namespace rdrr::convert {

int64_t TensorView::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

Status read_as_f32(const TensorView& t, std::span<float> out) {
  const int64_t n = t.numel();
  if (static_cast<uint64_t>(n) != out.size()) {
    return error(StatusCode::kInvalidArgument, "tensor " + t.name + ": output has " + std::to_string(out.size()) +
                                                   " floats, expected numel " + std::to_string(n));
  }
  const uint64_t elem_bytes = t.dtype == quant::DType::kF32 ? 4u : 2u;
  if (quant::is_block_quantized(t.dtype)) {
    return error(StatusCode::kUnsupported, "tensor " + t.name + ": read_as_f32 does not dequantize " +
                                               std::string(quant::dtype_name(t.dtype)));
  }
  if (t.bytes.size() != static_cast<uint64_t>(n) * elem_bytes) {
    return error(StatusCode::kInternal, "tensor " + t.name + ": byte span " + std::to_string(t.bytes.size()) +
                                            " != numel * " + std::to_string(elem_bytes));
  }
  if (t.dtype == quant::DType::kF32) {
    if (n > 0) std::memcpy(out.data(), t.bytes.data(), t.bytes.size());
    return Status::Ok();
  }
  // The mapping gives no alignment guarantee: copy through an aligned staging buffer in chunks.
  constexpr size_t kChunkElems = 16384;
  std::array<uint16_t, kChunkElems> staging;
  const bool is_f16 = t.dtype == quant::DType::kF16;
  for (size_t done = 0; done < out.size();) {
    const size_t count = std::min(kChunkElems, out.size() - done);
    std::memcpy(staging.data(), t.bytes.data() + done * 2, count * 2);
    const std::span<const uint16_t> src(staging.data(), count);
    if (is_f16) {
      quant::f16_to_f32(src, out.subspan(done, count));
    } else {
      quant::bf16_to_f32(src, out.subspan(done, count));
    }
    done += count;
  }
  return Status::Ok();
}

Result<std::vector<float>> read_as_f32(const TensorView& t) {
  std::vector<float> out(static_cast<size_t>(t.numel()));
  RDRR_RETURN_IF_ERROR(read_as_f32(t, out));
  return out;
}

}  // namespace rdrr::convert
