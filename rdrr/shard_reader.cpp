#include "rdrr/shard_reader.h"

#include <tbb/parallel_for.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <utility>

#include "rdrr/sha256.h"

namespace rdrr {
namespace {

constexpr uint64_t kVerifyChunkBytes = 16u << 20;

bool is_plain_filename(const std::string& name) {
  return !name.empty() && name != "." && name != ".." && name.find('/') == std::string::npos &&
         name.find('\\') == std::string::npos && name.find('\0') == std::string::npos;
}

std::string tensor_prefix(std::string_view name) {
  std::string p = "tensor ";
  p.append(name);
  return p;
}

}  // namespace

Result<ShardReader> ShardReader::open(const std::filesystem::path& dir, std::vector<ShardInfo> shards) {
  ShardReader reader;
  reader.dir_ = dir;
  reader.files_.reserve(shards.size());
  for (size_t i = 0; i < shards.size(); ++i) {
    ShardInfo& info = shards[i];
    if (info.index != i) {
      return error(StatusCode::kValidation, "shard list entry " + std::to_string(i) + ": index " +
                                                std::to_string(info.index) + " != position " + std::to_string(i));
    }
    if (info.filename.empty()) info.filename = shard_filename(info.index);
    if (!is_plain_filename(info.filename)) {
      return error(StatusCode::kValidation,
                   "shard " + std::to_string(i) + ": filename \"" + info.filename + "\" is not a plain file name");
    }
    Result<MappedFile> file = MappedFile::open(dir / info.filename);
    if (!file.ok()) return file.status().context("shard " + info.filename);
    reader.files_.push_back(std::move(file).value());
  }
  reader.shards_ = std::move(shards);
  return reader;
}

Status ShardReader::check_sizes() const {
  for (size_t i = 0; i < files_.size(); ++i) {
    if (files_[i].size_bytes() != shards_[i].size_bytes) {
      return error(StatusCode::kValidation, shards_[i].filename + ": file size " +
                                                std::to_string(files_[i].size_bytes()) + " != expected size " +
                                                std::to_string(shards_[i].size_bytes));
    }
  }
  return Status::Ok();
}

Result<std::span<const std::byte>> ShardReader::span_bytes(const Span& span) const {
  if (span.shard_index >= files_.size()) {
    return error(StatusCode::kValidation, "shard index " + std::to_string(span.shard_index) +
                                              " >= shard count " + std::to_string(files_.size()));
  }
  const MappedFile& file = files_[span.shard_index];
  const std::string& name = shards_[span.shard_index].filename;
  if (span.size_bytes > std::numeric_limits<uint64_t>::max() - span.offset_bytes) {
    return error(StatusCode::kValidation, "offset " + std::to_string(span.offset_bytes) + " + size " +
                                              std::to_string(span.size_bytes) + " overflows");
  }
  const uint64_t end = span.offset_bytes + span.size_bytes;
  if (end > file.size_bytes()) {
    return error(StatusCode::kValidation, "offset end " + std::to_string(end) + " > " + name + " size " +
                                              std::to_string(file.size_bytes()));
  }
  return file.bytes().subspan(span.offset_bytes, span.size_bytes);
}

Result<std::vector<std::span<const std::byte>>> ShardReader::tensor_spans(std::string_view name,
                                                                          const TensorPlacement& placement) const {
  if (placement.spans.empty()) return error(StatusCode::kValidation, tensor_prefix(name) + ": no spans");
  std::vector<std::span<const std::byte>> out;
  out.reserve(placement.spans.size());
  for (size_t i = 0; i < placement.spans.size(); ++i) {
    Result<std::span<const std::byte>> bytes = span_bytes(placement.spans[i]);
    if (!bytes.ok()) {
      return bytes.status().context(tensor_prefix(name) + ": span " + std::to_string(i));
    }
    out.push_back(*bytes);
  }
  return out;
}

Result<TensorBytes> ShardReader::tensor_bytes(std::string_view name, const TensorPlacement& placement) const {
  RDRR_ASSIGN_OR_RETURN(std::vector<std::span<const std::byte>> spans, tensor_spans(name, placement));
  if (spans.size() == 1) return TensorBytes::view(spans.front());
  std::vector<std::byte> gathered(placement.total_bytes());
  size_t pos = 0;
  for (const auto& s : spans) {
    if (!s.empty()) std::memcpy(gathered.data() + pos, s.data(), s.size());
    pos += s.size();
  }
  return TensorBytes::owned(std::move(gathered));
}

Status ShardReader::read_tensor(std::string_view name, const TensorPlacement& placement,
                                std::span<std::byte> out) const {
  RDRR_ASSIGN_OR_RETURN(std::vector<std::span<const std::byte>> spans, tensor_spans(name, placement));
  if (out.size() != placement.total_bytes()) {
    return error(StatusCode::kInvalidArgument, tensor_prefix(name) + ": output buffer " + std::to_string(out.size()) +
                                                   " bytes != tensor size " +
                                                   std::to_string(placement.total_bytes()));
  }
  size_t pos = 0;
  for (const auto& s : spans) {
    if (!s.empty()) std::memcpy(out.data() + pos, s.data(), s.size());
    pos += s.size();
  }
  return Status::Ok();
}

Result<std::string> ShardReader::tensor_sha256(std::string_view name, const TensorPlacement& placement) const {
  RDRR_ASSIGN_OR_RETURN(std::vector<std::span<const std::byte>> spans, tensor_spans(name, placement));
  Sha256 h;
  for (const auto& s : spans) h.update(s);
  return h.finish_hex();
}

void ShardReader::release_tensor(const TensorPlacement& placement) const {
  for (const Span& s : placement.spans) {
    if (s.shard_index < files_.size()) files_[s.shard_index].release(s.offset_bytes, s.size_bytes);
  }
}

Status ShardReader::verify_shard(uint32_t index, std::string_view expected_sha256) const {
  if (index >= files_.size()) {
    return error(StatusCode::kInvalidArgument,
                 "verify: shard index " + std::to_string(index) + " >= shard count " + std::to_string(files_.size()));
  }
  const MappedFile& file = files_[index];
  const std::span<const std::byte> all = file.bytes();
  Sha256 h;
  for (uint64_t pos = 0; pos < all.size(); pos += kVerifyChunkBytes) {
    const uint64_t n = std::min<uint64_t>(kVerifyChunkBytes, all.size() - pos);
    file.will_need(pos, n);
    h.update(all.subspan(pos, n));
    file.release(pos, n);
  }
  const std::string actual = h.finish_hex();
  if (actual != expected_sha256) {
    return error(StatusCode::kIntegrity, shards_[index].filename + ": sha256 mismatch: expected " +
                                             std::string(expected_sha256) + ", actual " + actual);
  }
  return Status::Ok();
}

Status ShardReader::verify_shard(uint32_t index) const {
  if (index < files_.size() && files_[index].size_bytes() != shards_[index].size_bytes) {
    return error(StatusCode::kIntegrity, shards_[index].filename + ": size " +
                                             std::to_string(files_[index].size_bytes()) + " bytes, expected " +
                                             std::to_string(shards_[index].size_bytes));
  }
  return verify_shard(index, index < shards_.size() ? shards_[index].sha256_hex : std::string());
}

namespace {

std::vector<Status> verify_each(const ShardReader& reader) {
  std::vector<Status> results(reader.shard_count());
  tbb::parallel_for(size_t{0}, results.size(),
                    [&](size_t i) { results[i] = reader.verify_shard(static_cast<uint32_t>(i)); });
  return results;
}

}  // namespace

std::vector<uint32_t> ShardReader::bad_shards() const {
  const std::vector<Status> results = verify_each(*this);
  std::vector<uint32_t> bad;
  for (size_t i = 0; i < results.size(); ++i) {
    if (!results[i].ok()) bad.push_back(static_cast<uint32_t>(i));
  }
  return bad;
}

Status ShardReader::verify_all() const {
  const std::vector<Status> results = verify_each(*this);
  const Status* first = nullptr;
  size_t bad_count = 0;
  for (const Status& s : results) {
    if (s.ok()) continue;
    if (first == nullptr) first = &s;
    ++bad_count;
  }
  if (first == nullptr) return Status::Ok();
  if (bad_count == 1) return *first;
  return error(first->code(), first->message() + " (" + std::to_string(bad_count) + " of " +
                                  std::to_string(results.size()) + " shards bad)");
}

std::vector<std::string> tensors_overlapping(std::span<const TensorRef> tensors, uint32_t shard_index,
                                             uint64_t begin_bytes, uint64_t end_bytes) {
  std::vector<std::string> names;
  for (const TensorRef& t : tensors) {
    if (t.placement == nullptr) continue;
    for (const Span& s : t.placement->spans) {
      if (s.shard_index != shard_index || s.size_bytes == 0) continue;
      const uint64_t s_end = s.offset_bytes + s.size_bytes;
      if (s.offset_bytes < end_bytes && begin_bytes < s_end) {
        names.emplace_back(t.name);
        break;
      }
    }
  }
  return names;
}

}  // namespace rdrr
