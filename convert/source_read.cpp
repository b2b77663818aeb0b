// Row access to source tensors: decoding to float32 (quant/legacy_dequant.h decodes every stored type),
// the GGUF q/k row permutation, raw block copies and page release.
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "convert/source.h"
#include "quant/layout.h"
#include "quant/uninitialized.h"
#include "rdrr/mapped_file.h"

namespace rdrr::convert {
namespace {

Status check_range(const StoredMatrix& m, int64_t r0, int64_t r1, uint64_t out_elems, uint64_t elem_size_per_row) {
  if (r0 < 0 || r1 < r0 || r1 > m.rows) {
    return error(StatusCode::kInvalidArgument, "tensor " + m.name + ": rows [" + std::to_string(r0) + ", " +
                                                   std::to_string(r1) + ") outside " + std::to_string(m.rows) + " rows");
  }
  if (out_elems != static_cast<uint64_t>(r1 - r0) * elem_size_per_row) {
    return error(StatusCode::kInvalidArgument, "tensor " + m.name + ": output buffer of " + std::to_string(out_elems) +
                                                   ", expected " + std::to_string((r1 - r0) * elem_size_per_row));
  }
  return Status::Ok();
}

// Stored bytes read per piece: small enough that a piece is still in cache when it is decoded.
constexpr uint64_t kReadPieceBytes = uint64_t{256} << 10;

// Rows [r0, r1) decoded to f32: read from the file (copy_mapped_bytes) a piece of whole rows at a time into a
// buffer of this call (not per thread: the decode's parallel loop may run another read on this thread while it
// waits), then decoded (f32 rows are read straight into dst).
Status decode_rows(const StoredMatrix& m, int64_t r0, int64_t r1, std::span<float> dst) {
  const auto rows = static_cast<uint64_t>(r1 - r0), cols = static_cast<uint64_t>(m.cols);
  const std::span<const std::byte> src = m.bytes.subspan(static_cast<uint64_t>(r0) * m.row_bytes, rows * m.row_bytes);
  if (m.type == quant::GgmlBlockType::kF32) {  // (dst holds rows * cols values: read_part_rows checked)
    const Status st = copy_mapped_bytes(src, std::as_writable_bytes(dst));
    return st.ok() ? st : st.context("tensor " + m.name);
  }
  quant::UninitVector<std::byte> piece;
  const uint64_t per = std::max<uint64_t>(1, kReadPieceBytes / m.row_bytes);
  for (uint64_t r = 0; r < rows; r += per) {
    const uint64_t n = std::min(per, rows - r);
    piece.resize(n * m.row_bytes);
    Status st = copy_mapped_bytes(src.subspan(r * m.row_bytes, n * m.row_bytes), piece);
    if (st.ok()) st = quant::dequantize_ggml_blocks(m.type, piece, dst.subspan(r * cols, n * cols));
    if (!st.ok()) return st.context("tensor " + m.name);
  }
  return Status::Ok();
}

// Stored rows [s0, s1) that hold output rows [r0, r1) (whole heads when permuted).
void stored_span(const StoredMatrix& m, int64_t r0, int64_t r1, int64_t* s0, int64_t* s1) {
  if (m.permute_heads == 0) {
    *s0 = r0;
    *s1 = r1;
    return;
  }
  const int64_t d = m.rows / m.permute_heads;
  *s0 = r0 / d * d;
  *s1 = std::min(m.rows, (r1 + d - 1) / d * d);
}

uintptr_t page_bytes() {
  static const auto kPage = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  return kPage;
}

}  // namespace

int64_t permuted_source_row(int64_t r, int64_t rows, int64_t n_heads) {
  const int64_t d = rows / n_heads;
  const int64_t half = d / 2;
  const int64_t h = r / d;
  const int64_t rem = r % d;
  return h * d + 2 * (rem % half) + rem / half;
}

Status read_part_rows(const SourcePart& p, int64_t r0, int64_t r1, std::span<float> out, std::vector<float>& scratch) {
  const StoredMatrix& m = p.stored;
  RDRR_RETURN_IF_ERROR(check_range(m, r0, r1, out.size(), static_cast<uint64_t>(m.cols)));
  if (r0 == r1) return Status::Ok();
  if (m.permute_heads == 0) return decode_rows(m, r0, r1, out);
  int64_t s0 = 0;
  int64_t s1 = 0;
  stored_span(m, r0, r1, &s0, &s1);
  const auto cols = static_cast<size_t>(m.cols);
  const size_t need = static_cast<size_t>(s1 - s0) * cols;
  if (scratch.size() < need) scratch.resize(need);
  RDRR_RETURN_IF_ERROR(decode_rows(m, s0, s1, std::span<float>(scratch.data(), need)));
  for (int64_t r = r0; r < r1; ++r) {
    const int64_t s = permuted_source_row(r, m.rows, m.permute_heads);
    std::memcpy(out.data() + static_cast<size_t>(r - r0) * cols, scratch.data() + static_cast<size_t>(s - s0) * cols,
                cols * sizeof(float));
  }
  return Status::Ok();
}

Status read_rows(const SourceTensor& t, int64_t r0, int64_t r1, std::span<float> out, std::vector<float>& scratch) {
  const int64_t cols = t.cols();
  if (r0 < 0 || r1 < r0 || r1 > t.rows() || out.size() != static_cast<uint64_t>((r1 - r0) * cols)) {
    return error(StatusCode::kInvalidArgument, "tensor " + t.name + ": bad row range [" + std::to_string(r0) + ", " +
                                                   std::to_string(r1) + ") or output size");
  }
  for (const SourcePart& p : t.parts) {
    const int64_t a = std::max(r0, p.row_begin);
    const int64_t b = std::min(r1, p.row_begin + p.stored.rows);
    if (a >= b) continue;
    const std::span<float> dst = out.subspan(static_cast<size_t>((a - r0) * cols), static_cast<size_t>((b - a) * cols));
    RDRR_RETURN_IF_ERROR(read_part_rows(p, a - p.row_begin, b - p.row_begin, dst, scratch));
  }
  return Status::Ok();
}

bool raw_copy_possible(const StoredMatrix& m, quant::DType dtype, std::optional<quant::Layout> layout) {
  const std::optional<quant::DType> stored = dtype_of(m.type);
  return stored && *stored == dtype && quant::is_block_quantized(dtype) && layout == quant::Layout::kRowWise &&
         m.cols % quant::block_elems(dtype) == 0;
}

Status copy_raw_rows(const SourcePart& p, int64_t r0, int64_t r1, std::span<std::byte> out) {
  const StoredMatrix& m = p.stored;
  RDRR_RETURN_IF_ERROR(check_range(m, r0, r1, out.size(), m.row_bytes));
  if (m.permute_heads == 0) {
    const Status st = copy_mapped_bytes(m.bytes.subspan(static_cast<uint64_t>(r0) * m.row_bytes, out.size()), out);
    return st.ok() ? st : st.context("tensor " + m.name);
  }
  for (int64_t r = r0; r < r1; ++r) {
    const auto s = static_cast<uint64_t>(permuted_source_row(r, m.rows, m.permute_heads));
    const Status st = copy_mapped_bytes(m.bytes.subspan(s * m.row_bytes, m.row_bytes),
                                        out.subspan(static_cast<uint64_t>(r - r0) * m.row_bytes, m.row_bytes));
    if (!st.ok()) return st.context("tensor " + m.name);
  }
  return Status::Ok();
}

void release_rows(const SourceTensor& t, int64_t r0, int64_t r1, bool to_end) {
  const uintptr_t page = page_bytes();
  for (const SourcePart& p : t.parts) {
    const int64_t a = std::max(r0, p.row_begin) - p.row_begin;
    const int64_t b = std::min(r1, p.row_begin + p.stored.rows) - p.row_begin;
    if (a >= b) continue;
    int64_t s0 = 0;
    int64_t s1 = 0;
    stored_span(p.stored, a, b, &s0, &s1);
    const bool last = to_end || s1 == p.stored.rows;
    const auto begin = reinterpret_cast<uintptr_t>(p.stored.bytes.data() + static_cast<uint64_t>(s0) * p.stored.row_bytes);
    const auto end = reinterpret_cast<uintptr_t>(p.stored.bytes.data() + static_cast<uint64_t>(s1) * p.stored.row_bytes);
    // Pages that start before `end`; the page holding `end` stays unless this is the part's end.
    const uintptr_t b_page = begin / page * page;
    const uintptr_t e_page = last ? (end + page - 1) / page * page : end / page * page;
    if (e_page > b_page) madvise(reinterpret_cast<void*>(b_page), e_page - b_page, MADV_DONTNEED);
  }
}

}  // namespace rdrr::convert
