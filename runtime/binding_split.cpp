#include "runtime/binding_split.h"

#include <algorithm>
#include <string>

namespace rdrr::runtime {

Result<std::vector<BindingRange>> split_binding(const BindingSplitRequest& req) {
  const uint64_t a = req.offset_alignment;
  if (req.total_bytes == 0) return error(StatusCode::kInvalidArgument, "split_binding: total_bytes is 0");
  if (req.granule_bytes == 0) return error(StatusCode::kInvalidArgument, "split_binding: granule_bytes is 0");
  if (req.max_range_bytes == 0) return error(StatusCode::kInvalidArgument, "split_binding: max_range_bytes is 0");
  if (a == 0 || (a & (a - 1)) != 0) {
    return error(StatusCode::kInvalidArgument,
                 "split_binding: offset_alignment " + std::to_string(a) + " is not a power of two");
  }
  const uint64_t granules = (req.total_bytes + req.granule_bytes - 1) / req.granule_bytes;
  const uint64_t end = req.base_offset_bytes + req.total_bytes;
  std::vector<BindingRange> out;
  uint64_t g = 0;
  while (g < granules) {
    BindingRange r;
    const uint64_t start = req.base_offset_bytes + g * req.granule_bytes;
    r.bind_offset_bytes = start & ~(a - 1);
    r.skip_bytes = start - r.bind_offset_bytes;
    r.first_granule = g;
    const uint64_t room = req.max_range_bytes > r.skip_bytes ? req.max_range_bytes - r.skip_bytes : 0;
    const uint64_t fit = room / req.granule_bytes;
    const uint64_t remaining_bytes = end - start;
    if (fit == 0 && remaining_bytes > room) {
      return error(StatusCode::kUnsupported,
                   "split_binding: granule " + std::to_string(g) + " (" + std::to_string(req.granule_bytes) +
                       " bytes + " + std::to_string(r.skip_bytes) + " alignment skip) exceeds maxStorageBufferRange " +
                       std::to_string(req.max_range_bytes));
    }
    r.granule_count = std::min(granules - g, std::max<uint64_t>(fit, 1));
    const uint64_t data_end = std::min(end, start + r.granule_count * req.granule_bytes);
    r.bind_size_bytes = data_end - r.bind_offset_bytes;
    out.push_back(r);
    g += r.granule_count;
  }
  return out;
}

}  // namespace rdrr::runtime
