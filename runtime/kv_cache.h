// A model's KV cache: one device allocation holding, per layer, K then V, each [n_kv_heads][capacity]
// [head_dim] of F16 or F32 (the layout kernels/kv_append.comp and kernels/attention.comp read). Each range
// starts at a multiple of the device's binding alignment, so any layer binds on its own.
#pragma once

#include <cstdint>
#include <string_view>

#include "quant/dtype.h"
#include "quant/status.h"
#include "runtime/memory.h"
#include "runtime/ops_attention.h"

namespace rdrr::runtime {

class Device;

struct KvCacheShape {
  uint32_t n_layers = 0;
  uint32_t n_kv_heads = 0;
  uint32_t head_dim = 0;  // even
  uint32_t capacity = 0;  // positions (context length)
  quant::DType dtype = quant::DType::kF16;  // F16 or F32
};

class KvCache {
 public:
  // Errors: kInvalidArgument (zero or odd sizes, dtype not F16/F32, a range beyond the binding limit), plus
  // the allocator's errors; messages name `name`.
  static Result<KvCache> create(Device& device, const KvCacheShape& shape, std::string_view name = "kv_cache");

  const KvCacheShape& shape() const { return shape_; }
  // Layer l's K and V ranges with the shape (l < n_layers).
  KvLayer layer(uint32_t l) const;
  uint64_t range_bytes() const { return range_bytes_; }   // one of K / V, one layer
  uint64_t stride_bytes() const { return stride_bytes_; } // between consecutive ranges (aligned)
  const BufferRange& range() const { return buffer_.range(); }

 private:
  KvCacheShape shape_;
  uint64_t range_bytes_ = 0;
  uint64_t stride_bytes_ = 0;
  Buffer buffer_;
};

}  // namespace rdrr::runtime
