// Tensor element types and Q4_K layouts as recorded in RDRR manifests.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace rdrr::quant {

// Q4_0, Q5_0 and Q5_K are pass-through types: a GGUF's blocks are copied as they are (row_wise), decoded and
// run by the kernels, never encoded from floats by rdrr (quantize_rows refuses them).
enum class DType : uint8_t { kF32, kF16, kBF16, kQ8_0, kQ4_K, kQ6_K, kQ4_0, kQ5_0, kQ5_K };

// How the blocks of a 2-D block-quantized weight [N rows = outputs, K = inputs] are ordered.
//  flat:        W row-major, cut into consecutive blocks; only the tail is zero-padded.
//  row_wise:    each row has ceil(K/B) blocks; block (r, b) at r*ceil(K/B)+b (GGUF order when K%B==0).
//  column_wise: W^T [K, N] quantized row-wise; block (k, b) at k*ceil(N/B)+b.
enum class Layout : uint8_t { kFlat, kRowWise, kColumnWise };

std::string_view dtype_name(DType t);  // "F32", "F16", "BF16", "Q8_0", "Q4_K", "Q6_K", "Q4_0", "Q5_0", "Q5_K"
std::optional<DType> parse_dtype(std::string_view name);
std::string_view layout_name(Layout l);            // "flat", "row_wise", "column_wise"
std::optional<Layout> parse_layout(std::string_view name);

bool is_block_quantized(DType t);
bool is_pass_through(DType t);  // Q4_0, Q5_0, Q5_K: decoded, never encoded
int64_t block_elems(DType t);   // values per block (1 for plain float types)
int64_t block_bytes(DType t);   // bytes per block (element size for plain float types)

}  // namespace rdrr::quant
