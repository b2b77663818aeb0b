#include "quant/dtype.h"

#include "quant/blocks.h"
#include "quant/legacy_blocks.h"

namespace rdrr::quant {

std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::kF32: return "F32";
    case DType::kF16: return "F16";
    case DType::kBF16: return "BF16";
    case DType::kQ8_0: return "Q8_0";
    case DType::kQ4_K: return "Q4_K";
    case DType::kQ6_K: return "Q6_K";
    case DType::kQ4_0: return "Q4_0";
    case DType::kQ5_0: return "Q5_0";
    case DType::kQ5_K: return "Q5_K";
  }
  return "?";
}

std::optional<DType> parse_dtype(std::string_view name) {
  for (DType t : {DType::kF32, DType::kF16, DType::kBF16, DType::kQ8_0, DType::kQ4_K, DType::kQ6_K, DType::kQ4_0,
                  DType::kQ5_0, DType::kQ5_K}) {
    if (dtype_name(t) == name) return t;
  }
  return std::nullopt;
}

std::string_view layout_name(Layout l) {
  switch (l) {
    case Layout::kFlat: return "flat";
    case Layout::kRowWise: return "row_wise";
    case Layout::kColumnWise: return "column_wise";
  }
  return "?";
}

std::optional<Layout> parse_layout(std::string_view name) {
  for (Layout l : {Layout::kFlat, Layout::kRowWise, Layout::kColumnWise}) {
    if (layout_name(l) == name) return l;
  }
  return std::nullopt;
}

bool is_block_quantized(DType t) {
  return t == DType::kQ8_0 || t == DType::kQ4_K || t == DType::kQ6_K || is_pass_through(t);
}

bool is_pass_through(DType t) { return t == DType::kQ4_0 || t == DType::kQ5_0 || t == DType::kQ5_K; }

int64_t block_elems(DType t) {
  switch (t) {
    case DType::kQ8_0:
    case DType::kQ4_0:
    case DType::kQ5_0: return kQK8_0;
    case DType::kQ4_K:
    case DType::kQ6_K:
    case DType::kQ5_K: return kQK_K;
    default: return 1;
  }
}

int64_t block_bytes(DType t) {
  switch (t) {
    case DType::kF32: return 4;
    case DType::kF16:
    case DType::kBF16: return 2;
    case DType::kQ8_0: return sizeof(BlockQ8_0);
    case DType::kQ4_K: return sizeof(BlockQ4K);
    case DType::kQ6_K: return sizeof(BlockQ6K);
    case DType::kQ4_0: return sizeof(BlockQ4_0);
    case DType::kQ5_0: return sizeof(BlockQ5_0);
    case DType::kQ5_K: return sizeof(BlockQ5K);
  }
  return 0;
}

}  // namespace rdrr::quant
