#include "runtime/pack.h"

#include <chrono>
#include <string>
#include <utility>

#include "rdrr/manifest_json.h"
#include "rdrr/placement.h"
#include "rdrr/shard_reader.h"
#include "rdrr/validate.h"
#include "runtime/device.h"

namespace rdrr::runtime {
namespace {

constexpr uint64_t kAllocationAlignment = 256;  // Device::allocate's alignment

uint64_t round_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

}  // namespace

Pack::~Pack() = default;

Result<std::unique_ptr<Pack>> Pack::load(Device& device, const std::filesystem::path& dir,
                                         const PackLoadOptions& options) {
  const std::string where = "pack " + dir.string();
  Manifest manifest;
  if (options.manifest) {
    manifest = *options.manifest;
  } else {
    Result<Manifest> read = read_manifest_file(dir);
    if (!read.ok()) return read.status().context(where);
    manifest = std::move(read).value();
  }
  ValidateOptions vopts;
  vopts.reject_unlisted_files = options.reject_unlisted_files;
  vopts.check_sha256 = options.verify_hashes;
  if (Status s = validate_pack(manifest, dir, vopts); !s.ok()) return s.context(where);
  std::unique_ptr<Pack> pack(new Pack(device, dir, std::move(manifest)));
  if (Status s = pack->upload_all(); !s.ok()) return s.context(where);
  return pack;
}

Status Pack::upload_all() {
  const auto t0 = std::chrono::steady_clock::now();
  RDRR_ASSIGN_OR_RETURN(ShardReader reader, ShardReader::open(dir_, manifest_.shards));
  RDRR_RETURN_IF_ERROR(reader.check_sizes());
  buffers_.reserve(manifest_.tensors.size());
  for (const TensorEntry& t : manifest_.tensors) {
    const std::string ctx = "tensor " + t.name;
    Result<std::vector<std::span<const std::byte>>> spans = reader.tensor_spans(t.name, t.placement);
    if (!spans.ok()) return spans.status();
    uint64_t total = 0;
    for (const auto& s : *spans) total += s.size();
    if (total != t.size_bytes) {
      return error(StatusCode::kValidation, ctx + ": spans hold " + std::to_string(total) + " bytes, manifest size " +
                                                std::to_string(t.size_bytes));
    }
    Result<Buffer> buf = device_.allocate(t.size_bytes, t.name);
    if (!buf.ok()) return buf.status().context(ctx);
    const BufferRange range = buf->range().sub(0, t.size_bytes);
    uint64_t offset = 0;
    for (size_t i = 0; i < spans->size(); ++i) {
      const std::span<const std::byte> bytes = (*spans)[i];
      const Status s = device_.upload(range.sub(offset, bytes.size()), bytes);
      if (!s.ok()) {
        return s.context(ctx + ": span " + std::to_string(i) + " (shard " +
                         shard_filename(t.placement.spans[i].shard_index) + ")");
      }
      offset += bytes.size();
    }
    reader.release_tensor(t.placement);  // uploaded: its mapped pages leave the process's RSS
    buffers_.push_back(std::move(buf).value());
    tensors_.emplace(t.name, PackTensor{&t, range});
    tensor_bytes_ += t.size_bytes;
    device_bytes_ += round_up(t.size_bytes, kAllocationAlignment);
  }
  upload_seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return Status::Ok();
}

Result<PackTensor> Pack::tensor(std::string_view name) const {
  const PackTensor* t = find(name);
  if (t == nullptr) {
    return error(StatusCode::kNotFound, "pack " + dir_.string() + ": tensor " + std::string(name) +
                                            " is not in the manifest");
  }
  return *t;
}

const PackTensor* Pack::find(std::string_view name) const {
  const auto it = tensors_.find(name);
  return it == tensors_.end() ? nullptr : &it->second;
}

}  // namespace rdrr::runtime
