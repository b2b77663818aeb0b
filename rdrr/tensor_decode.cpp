#include "rdrr/tensor_decode.h"

#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "quant/f16.h"
#include "quant/layout.h"
#include "rdrr/mapped_file.h"

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

// F32 / F16 / BF16 values (out.size() of them) from the start of `bytes`.
void decode_plain(const TensorEntry& e, std::span<const std::byte> bytes, std::span<float> out) {
  if (e.dtype == quant::DType::kF32) {
    std::memcpy(out.data(), bytes.data(), out.size() * sizeof(float));
    return;
  }
  std::vector<uint16_t> half(out.size());
  std::memcpy(half.data(), bytes.data(), half.size() * sizeof(uint16_t));
  if (e.dtype == quant::DType::kF16) {
    quant::f16_to_f32(half, out);
  } else {
    quant::bf16_to_f32(half, out);
  }
}

Status decode_unchecked(const TensorEntry& e, std::span<const std::byte> bytes, std::span<float> out) {
  switch (e.dtype) {
    case quant::DType::kF32:
    case quant::DType::kF16:
    case quant::DType::kBF16:
      decode_plain(e, bytes, out);
      return Status::Ok();
    case quant::DType::kQ8_0:
    case quant::DType::kQ4_K:
    case quant::DType::kQ6_K:
    case quant::DType::kQ4_0:
    case quant::DType::kQ5_0:
    case quant::DType::kQ5_K: {
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

// Size of `bytes` vs the entry's dtype / shape / layout.
Status check_tensor_bytes(const TensorEntry& entry, std::span<const std::byte> bytes, const std::string& ctx) {
  Result<uint64_t> want = expected_tensor_size_bytes(entry.dtype, entry.shape, entry.layout);
  if (!want.ok()) return want.status().context(ctx);
  if (bytes.size() != *want) {
    return error(StatusCode::kValidation, ctx + ": " + std::to_string(bytes.size()) + " bytes, expected " +
                                              std::to_string(*want) + " for " +
                                              std::string(quant::dtype_name(entry.dtype)) + " " +
                                              shape_to_string(entry.shape));
  }
  return Status::Ok();
}

// Rows and row length of a tensor seen as a matrix: [shape[0], product of the rest]; a 1-D tensor is one row.
std::pair<uint64_t, uint64_t> matrix_view(const TensorEntry& e) {
  if (e.shape.size() < 2) return {1, e.shape.empty() ? 0 : e.shape[0]};
  uint64_t cols = 1;
  for (size_t i = 1; i < e.shape.size(); ++i) cols *= e.shape[i];
  return {e.shape[0], cols};
}

}  // namespace

uint64_t tensor_row_alignment(const TensorEntry& entry) {
  if (!quant::is_block_quantized(entry.dtype) || !entry.layout) return 1;
  const auto [n, k] = matrix_view(entry);
  const uint64_t b = static_cast<uint64_t>(quant::block_elems(entry.dtype));
  if (*entry.layout == quant::Layout::kColumnWise) return b;
  if (*entry.layout == quant::Layout::kFlat && k % b != 0) return n;
  return 1;
}

Status decode_tensor_f32(const TensorEntry& entry, std::span<const std::byte> bytes, std::span<float> out) {
  const std::string ctx = "tensor " + entry.name;
  RDRR_ASSIGN_OR_RETURN(const uint64_t n, tensor_elem_count(entry));
  RDRR_RETURN_IF_ERROR(check_tensor_bytes(entry, bytes, ctx));
  if (out.size() != n) {
    return error(StatusCode::kInvalidArgument,
                 ctx + ": output of " + std::to_string(out.size()) + " floats, expected " + std::to_string(n));
  }
  return decode_unchecked(entry, bytes, out).context(ctx);
}

namespace {

std::string range_text(uint64_t row_begin, uint64_t rows, uint64_t n, uint64_t align) {
  return "rows [" + std::to_string(row_begin) + ", " + std::to_string(row_begin + rows) + ") of " + std::to_string(n) +
         " are not a range aligned to " + std::to_string(align) + " rows";
}

}  // namespace

Result<std::vector<TensorByteRange>> tensor_row_byte_ranges(const TensorEntry& entry, uint64_t row_begin,
                                                            uint64_t rows) {
  const std::string ctx = "tensor " + entry.name;
  RDRR_RETURN_IF_ERROR(tensor_elem_count(entry).status().context(ctx));
  const auto [n, k] = matrix_view(entry);
  const uint64_t align = tensor_row_alignment(entry);
  if (rows == 0 || row_begin > n || rows > n - row_begin || row_begin % align != 0 ||
      (rows % align != 0 && row_begin + rows != n)) {
    return error(StatusCode::kInvalidArgument, ctx + ": " + range_text(row_begin, rows, n, align));
  }
  if (!quant::is_block_quantized(entry.dtype)) {
    const uint64_t elem = quant::block_bytes(entry.dtype);
    return std::vector<TensorByteRange>{{row_begin * k * elem, rows * k * elem}};
  }
  if (!entry.layout) return error(StatusCode::kValidation, ctx + ": a block-quantized tensor without a layout");
  const uint64_t b = static_cast<uint64_t>(quant::block_elems(entry.dtype));
  const uint64_t bb = static_cast<uint64_t>(quant::block_bytes(entry.dtype));
  if (*entry.layout == quant::Layout::kColumnWise) {
    // Block (input i, group g) holds rows g*B .. g*B+B-1 of input i: groups [r0/B, r0/B + c) of every input.
    const uint64_t per_input = (n + b - 1) / b, c = (rows + b - 1) / b, g0 = row_begin / b;
    std::vector<TensorByteRange> out(k);
    for (uint64_t i = 0; i < k; ++i) out[i] = {(i * per_input + g0) * bb, c * bb};
    return out;
  }
  if (*entry.layout == quant::Layout::kFlat && k % b != 0) {  // aligned to every row: the whole tensor
    return std::vector<TensorByteRange>{{0, quant::quantized_size_bytes(entry.dtype, quant::Layout::kFlat,
                                                                        static_cast<int64_t>(n),
                                                                        static_cast<int64_t>(k))}};
  }
  const uint64_t row_bytes = (k + b - 1) / b * bb;  // row_wise, or flat with whole-block rows (the same bytes)
  return std::vector<TensorByteRange>{{row_begin * row_bytes, rows * row_bytes}};
}

Status decode_packed_rows_f32(const TensorEntry& entry, std::span<const std::byte> packed, uint64_t row_begin,
                              uint64_t rows, std::span<float> out) {
  const std::string ctx = "tensor " + entry.name;
  RDRR_ASSIGN_OR_RETURN(const std::vector<TensorByteRange> ranges, tensor_row_byte_ranges(entry, row_begin, rows));
  uint64_t want = 0;
  for (const TensorByteRange& r : ranges) want += r.size;
  const auto [n, k] = matrix_view(entry);
  if (packed.size() != want || out.size() != rows * k) {
    return error(StatusCode::kInvalidArgument, ctx + ": " + std::to_string(packed.size()) + " packed bytes and " +
                                                   std::to_string(out.size()) + " floats, expected " +
                                                   std::to_string(want) + " and " + std::to_string(rows * k));
  }
  if (!quant::is_block_quantized(entry.dtype)) {
    decode_plain(entry, packed, out);
    return Status::Ok();
  }
  quant::DequantizeParams p{.dtype = entry.dtype, .layout = *entry.layout,
                            .src = {reinterpret_cast<const uint8_t*>(packed.data()), packed.size()},
                            .n_rows = static_cast<int64_t>(rows), .k_cols = static_cast<int64_t>(k), .dst = out};
  // The packed bytes of a row range are a row_wise matrix of those rows (or a column_wise one of the row groups,
  // or for an unaligned flat layout the whole tensor).
  if (*entry.layout == quant::Layout::kFlat && k % static_cast<uint64_t>(quant::block_elems(entry.dtype)) == 0) {
    p.layout = quant::Layout::kRowWise;
  }
  return quant::dequantize_matrix(p).context(ctx);
}

Status decode_tensor_rows_f32(const TensorEntry& entry, std::span<const std::byte> bytes, uint64_t row_begin,
                              uint64_t rows, std::span<float> out, std::vector<uint8_t>* scratch) {
  RDRR_RETURN_IF_ERROR(check_tensor_bytes(entry, bytes, "tensor " + entry.name));
  RDRR_ASSIGN_OR_RETURN(const std::vector<TensorByteRange> ranges, tensor_row_byte_ranges(entry, row_begin, rows));
  // The ranges are copied out first (from the file where `bytes` is a mapping: copy_mapped_bytes), then decoded.
  std::vector<uint8_t> local;
  std::vector<uint8_t>& packed = scratch != nullptr ? *scratch : local;
  uint64_t total = 0;
  for (const TensorByteRange& r : ranges) total += r.size;
  packed.resize(total);
  uint64_t pos = 0;
  for (const TensorByteRange& r : ranges) {
    const Status st = copy_mapped_bytes(bytes.subspan(r.offset, r.size),
                                        std::as_writable_bytes(std::span(packed)).subspan(pos, r.size));
    if (!st.ok()) return st.context("tensor " + entry.name);
    pos += r.size;
  }
  return decode_packed_rows_f32(entry, std::as_bytes(std::span(packed)), row_begin, rows, out);
}

Result<std::vector<float>> read_tensor_f32(const ShardReader& reader, const TensorEntry& entry) {
  RDRR_ASSIGN_OR_RETURN(const uint64_t n, tensor_elem_count(entry));
  RDRR_ASSIGN_OR_RETURN(const TensorBytes bytes, reader.tensor_bytes(entry.name, entry.placement));
  std::vector<float> out(n);
  RDRR_RETURN_IF_ERROR(decode_tensor_f32(entry, bytes.bytes(), out));
  return out;
}

}  // namespace rdrr
