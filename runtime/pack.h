// A loaded RDRR pack: the validated manifest and every tensor uploaded, exactly as stored (never
// dequantized), into device-local sub-allocations of the device's MemoryPool through the staging ring.
// Tensors whose bytes span several shards are gathered in order. The executor (runtime/executor.h) binds
// these ranges directly; lookups are by manifest tensor name.
//
//   RDRR_ASSIGN_OR_RETURN(auto pack, Pack::load(device, "out/tiny-llama-q4_k_m", {}));
//   RDRR_ASSIGN_OR_RETURN(PackTensor t, pack->tensor("model.layers.0.self_attn.q_proj.weight"));
//   record_gemv(rec, {.w = t.range, .dtype = t.entry->dtype, ...});
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "quant/status.h"
#include "rdrr/manifest.h"
#include "runtime/memory.h"

namespace rdrr::runtime {

class Device;

struct PackLoadOptions {
  // SHA-256 of every listed file (shards, tokenizer files, goldens) against the manifest before anything is
  // uploaded (kIntegrity naming the file on a mismatch). Reads every byte twice; off by default.
  bool verify_hashes = false;
  // Files in the pack folder that the manifest does not list are an error (validate_pack's rule).
  bool reject_unlisted_files = true;
  // Use this manifest instead of reading PACK/manifest.json (tools that edit a manifest in memory, tests).
  // It is validated against the folder like the one on disk.
  std::optional<Manifest> manifest;
};

// One uploaded tensor. `entry` points into Pack::manifest() (valid while the Pack lives); `range` covers
// exactly entry->size_bytes bytes, starting at a binding-aligned offset.
struct PackTensor {
  const TensorEntry* entry = nullptr;
  BufferRange range;
};

class Pack {
 public:
  // read_manifest_file (unless options.manifest), validate_pack (sizes; hashes with verify_hashes), map
  // the shards (rdrr/shard_reader.h), allocate and upload every tensor. Errors carry the pack folder and,
  // where one is involved, the shard / tensor: kNotFound, kParse, kSchema, kValidation, kIntegrity, kIo
  // (validation and reading), kDevice (allocation or upload).
  static Result<std::unique_ptr<Pack>> load(Device& device, const std::filesystem::path& dir,
                                            const PackLoadOptions& options = {});
  ~Pack();
  Pack(const Pack&) = delete;
  Pack& operator=(const Pack&) = delete;

  const Manifest& manifest() const { return manifest_; }
  const std::filesystem::path& dir() const { return dir_; }
  Device& device() const { return device_; }

  // kNotFound "pack <dir>: tensor <name> is not in the manifest".
  Result<PackTensor> tensor(std::string_view name) const;
  // nullptr when absent.
  const PackTensor* find(std::string_view name) const;
  size_t tensor_count() const { return tensors_.size(); }

  // Sum of the tensors' manifest sizes (bytes uploaded) and of their device allocations (sizes rounded up
  // to the binding alignment): the device memory the weights use, about the pack's shard bytes.
  uint64_t tensor_bytes() const { return tensor_bytes_; }
  uint64_t device_bytes() const { return device_bytes_; }
  double upload_seconds() const { return upload_seconds_; }

 private:
  Pack(Device& device, std::filesystem::path dir, Manifest manifest)
      : device_(device), dir_(std::move(dir)), manifest_(std::move(manifest)) {}
  Status upload_all();

  Device& device_;
  std::filesystem::path dir_;
  Manifest manifest_;
  std::vector<Buffer> buffers_;                        // one sub-allocation per tensor
  std::map<std::string, PackTensor, std::less<>> tensors_;
  uint64_t tensor_bytes_ = 0;
  uint64_t device_bytes_ = 0;
  double upload_seconds_ = 0.0;
};

}  // namespace rdrr::runtime
