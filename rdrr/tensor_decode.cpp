#include "rdrr/tensor_decode.h"

#include <cstring>
#include <string>

#include "quant/f16.h"
#include "quant/layout.h"

namespace rdrr {

Result<uint64_t> tensor_elem_count(const TensorEntry& entry) {
  if (entry.shape.empty()) return error(StatusCode::kValidation, "tensor " + entry.name + ": empty shape");
  uint64_t n = 1;
  for (uint64_t d : entry.shape) {
    if (d == 0 || n > kMaxJsonInteger / d) {
      return error(StatusCode::kValidation,
                   "tensor " + entry.name + ": shape " + shape_to_string(entry.shape) + " has a zero dimension or " +
                       "more than 2^53 elements");
    }
    n *= d;
  }
  return n;
}

namespace {

Status decode_unchecked(const TensorEntry& e, std::span<const std::byte> bytes, std::span<float> out) {
  switch (e.dtype) {
    case quant::DType::kF32:
      std::memcpy(out.data(), bytes.data(), out.size() * sizeof(float));
      return Status::Ok();
    case quant::DType::kF16:
    case quant::DType::kBF16: {
      std::vector<uint16_t> half(out.size());
      std::memcpy(half.data(), bytes.data(), half.size() * sizeof(uint16_t));
      if (e.dtype == quant::DType::kF16) {
        quant::f16_to_f32(half, out);
      } else {
        quant::bf16_to_f32(half, out);
      }
      return Status::Ok();
    }
    case quant::DType::kQ8_0:
    case quant::DType::kQ4_K:
    case quant::DType::kQ6_K: {
      const std::span<const uint8_t> src(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
      return quant::dequantize_matrix({.dtype = e.dtype,
                                       .layout = *e.layout,
                                       .src = src,
                                       .n_rows = static_cast<int64_t>(e.shape[0]),
                                       .k_cols = static_cast<int64_t>(e.shape[1]),
                                       .dst = out});
    }
  }
  return error(StatusCode::kUnsupported, "unknown dtype");
}

}  // namespace

Status decode_tensor_f32(const TensorEntry& entry, std::span<const std::byte> bytes, std::span<float> out) {
  const std::string ctx = "tensor " + entry.name;
  RDRR_ASSIGN_OR_RETURN(const uint64_t n, tensor_elem_count(entry));
  Result<uint64_t> want = expected_tensor_size_bytes(entry.dtype, entry.shape, entry.layout);
  if (!want.ok()) return want.status().context(ctx);
  if (bytes.size() != *want) {
    return error(StatusCode::kValidation, ctx + ": " + std::to_string(bytes.size()) + " bytes, expected " +
                                              std::to_string(*want) + " for " +
                                              std::string(quant::dtype_name(entry.dtype)) + " " +
                                              shape_to_string(entry.shape));
  }
  if (out.size() != n) {
    return error(StatusCode::kInvalidArgument,
                 ctx + ": output of " + std::to_string(out.size()) + " floats, expected " + std::to_string(n));
  }
  return decode_unchecked(entry, bytes, out).context(ctx);
}

Result<std::vector<float>> read_tensor_f32(const ShardReader& reader, const TensorEntry& entry) {
  RDRR_ASSIGN_OR_RETURN(const uint64_t n, tensor_elem_count(entry));
  RDRR_ASSIGN_OR_RETURN(const TensorBytes bytes, reader.tensor_bytes(entry.name, entry.placement));
  std::vector<float> out(n);
  RDRR_RETURN_IF_ERROR(decode_tensor_f32(entry, bytes.bytes(), out));
  return out;
}

}  // namespace rdrr
