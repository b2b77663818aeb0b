// rdrr-inspect --tensor NAME --dequantize OUT.f32: one tensor decoded to raw little-endian f32.
#include <algorithm>
#include <bit>
#include <system_error>
#include <utility>

#include "rdrr/file_io.h"
#include "rdrr/shard_reader.h"
#include "rdrr/tensor_decode.h"
#include "tools/pack_inspect.h"

namespace rdrr::tools {
namespace {

size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

}  // namespace

std::vector<std::string> close_tensor_names(const Manifest& m, std::string_view name, size_t max_names) {
  std::vector<std::pair<size_t, std::string>> scored;
  scored.reserve(m.tensors.size());
  for (const TensorEntry& e : m.tensors) scored.emplace_back(edit_distance(name, e.name), e.name);
  const size_t n = std::min(max_names, scored.size());
  std::partial_sort(scored.begin(), scored.begin() + static_cast<std::ptrdiff_t>(n), scored.end());
  std::vector<std::string> out;
  for (size_t i = 0; i < n; ++i) out.push_back(std::move(scored[i].second));
  return out;
}

Result<uint64_t> dequantize_tensor_to_file(const Manifest& m, const std::filesystem::path& pack_dir,
                                           std::string_view name, const std::filesystem::path& out_path) {
  const TensorEntry* e = find_tensor(m, name);
  if (e == nullptr) {
    std::string msg = "tensor " + std::string(name) + ": not in the pack";
    const std::vector<std::string> close = close_tensor_names(m, name);
    for (size_t i = 0; i < close.size(); ++i) msg += (i ? ", " : "; close names: ") + close[i];
    return error(StatusCode::kNotFound, msg);
  }
  RDRR_ASSIGN_OR_RETURN(const ShardReader reader, ShardReader::open(pack_dir, m.shards));
  RDRR_ASSIGN_OR_RETURN(std::vector<float> values, read_tensor_f32(reader, *e));
  static_assert(std::endian::native == std::endian::little, "raw f32 output assumes a little-endian host");
  const std::span<const std::byte> bytes = std::as_bytes(std::span<const float>(values));
  // Written beside the destination under a temporary name, renamed into place once complete.
  std::filesystem::path tmp = out_path;
  tmp += ".tmp-" + random_hex_suffix();
  Result<FileDigest> written = write_new_file(tmp, out_path.filename().string(), bytes, /*sync_to_disk=*/false);
  std::error_code ec;
  if (!written.ok()) {
    std::filesystem::remove(tmp, ec);
    return written.status();
  }
  std::filesystem::rename(tmp, out_path, ec);
  if (ec) {
    std::error_code ignored;
    std::filesystem::remove(tmp, ignored);
    return error(StatusCode::kIo, out_path.string() + ": rename from " + tmp.filename().string() + ": " + ec.message());
  }
  return static_cast<uint64_t>(values.size());
}

}  // namespace rdrr::tools
