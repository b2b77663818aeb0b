#include "runtime/kv_cache.h"

#include <string>

#include "runtime/device.h"

namespace rdrr::runtime {

uint64_t kv_layer_bytes(quant::DType dtype, uint32_t n_kv_heads, uint32_t head_dim, uint32_t capacity) {
  const uint64_t elem = dtype == quant::DType::kF32 ? 4 : 2;
  return uint64_t{n_kv_heads} * capacity * head_dim * elem;
}

Result<KvCache> KvCache::create(Device& device, const KvCacheShape& s, std::string_view name) {
  const std::string ctx = "kv cache " + std::string(name) + " [layers=" + std::to_string(s.n_layers) +
                          " kv_heads=" + std::to_string(s.n_kv_heads) + " head_dim=" + std::to_string(s.head_dim) +
                          " capacity=" + std::to_string(s.capacity) + "]";
  if (s.n_layers == 0 || s.n_kv_heads == 0 || s.head_dim == 0 || s.capacity == 0) {
    return error(StatusCode::kInvalidArgument, ctx + ": empty shape");
  }
  if (s.head_dim % 2 != 0) return error(StatusCode::kInvalidArgument, ctx + ": head_dim must be even");
  if (s.dtype != quant::DType::kF16 && s.dtype != quant::DType::kF32) {
    return error(StatusCode::kInvalidArgument,
                 ctx + ": dtype " + std::string(quant::dtype_name(s.dtype)) + " is not F16 or F32");
  }
  KvCache c;
  c.shape_ = s;
  c.range_bytes_ = kv_layer_bytes(s.dtype, s.n_kv_heads, s.head_dim, s.capacity);
  if (c.range_bytes_ > device.binding_limit_bytes()) {
    return error(StatusCode::kInvalidArgument, ctx + ": one layer's K range of " + std::to_string(c.range_bytes_) +
                                                   " bytes > binding limit " +
                                                   std::to_string(device.binding_limit_bytes()));
  }
  const uint64_t align = device.binding_alignment();
  c.stride_bytes_ = (c.range_bytes_ + align - 1) / align * align;
  Result<Buffer> b = device.allocate(c.stride_bytes_ * 2 * s.n_layers, name);
  if (!b.ok()) return b.status().context(ctx);
  c.buffer_ = std::move(b).value();
  return c;
}

KvLayer KvCache::layer(uint32_t l) const {
  KvLayer out;
  out.k = buffer_.range().sub(stride_bytes_ * 2 * l, range_bytes_);
  out.v = buffer_.range().sub(stride_bytes_ * (2 * l + 1), range_bytes_);
  out.dtype = shape_.dtype;
  out.n_kv_heads = shape_.n_kv_heads;
  out.head_dim = shape_.head_dim;
  out.capacity = shape_.capacity;
  return out;
}

}  // namespace rdrr::runtime
