// Splits one tensor binding into descriptor ranges that respect maxStorageBufferRange and
// minStorageBufferOffsetAlignment, cutting only at granule boundaries (a granule is the smallest unit a
// kernel can process on its own: a row of blocks, the blocks of one input column, ...). Pure; unit-tested.
//
// Each range binds [bind_offset_bytes, bind_offset_bytes + bind_size_bytes) of the buffer; the kernel skips
// skip_bytes (< alignment) to reach its first granule, because the granule start need not be aligned.
#pragma once

#include <cstdint>
#include <vector>

#include "quant/status.h"

namespace rdrr::runtime {

struct BindingSplitRequest {
  uint64_t base_offset_bytes = 0;   // tensor start inside the buffer
  uint64_t total_bytes = 0;         // tensor size; the last granule may be short
  uint64_t granule_bytes = 0;       // > 0
  uint64_t max_range_bytes = 0;     // maxStorageBufferRange (or a smaller cap)
  uint64_t offset_alignment = 0;    // minStorageBufferOffsetAlignment, a power of two
};

struct BindingRange {
  uint64_t bind_offset_bytes = 0;  // multiple of offset_alignment
  uint64_t bind_size_bytes = 0;    // <= max_range_bytes
  uint64_t skip_bytes = 0;         // first granule starts at bind_offset_bytes + skip_bytes
  uint64_t first_granule = 0;
  uint64_t granule_count = 0;
};

// Errors: kInvalidArgument (zero sizes, alignment not a power of two),
// kUnsupported (one granule plus its alignment skip does not fit in max_range_bytes).
Result<std::vector<BindingRange>> split_binding(const BindingSplitRequest& req);

}  // namespace rdrr::runtime
