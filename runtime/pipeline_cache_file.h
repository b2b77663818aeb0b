// The Vulkan pipeline cache on disk, so that a process's first prefill does not pay for compiling its pipelines.
// File (one per device and driver build, named by pipeline_cache_file_name):
//   bytes 0-7    "RDRRPC1\n"
//   bytes 8-15   payload size, uint64 little-endian
//   bytes 16-79  SHA-256 of the payload, lowercase hex
//   payload      the driver's vkGetPipelineCacheData blob
// A file that is missing, short, of another format, whose checksum differs or whose Vulkan header (header
// version 1, vendor id, device id, pipelineCacheUUID) is not this device's is ignored with a note: the cache
// starts empty and the pipelines are compiled. Writes go to a temporary name in the same folder, then rename:
// a reader sees the old file or the new one, never half of one.
#pragma once

#include <cstddef>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "quant/status.h"
#include "runtime/caps.h"

namespace rdrr::runtime {

// "pipelines-<vendor>-<device>-<pipelineCacheUUID>.bin" (hex).
std::string pipeline_cache_file_name(const DeviceCaps& caps);

struct PipelineCacheLoad {
  std::vector<std::byte> blob;  // empty when nothing usable was found
  std::string note;             // why a present file was ignored (empty: loaded, or no file)
};
PipelineCacheLoad read_pipeline_cache_file(const std::filesystem::path& file, const DeviceCaps& caps);

// Creates the folder if needed. Errors: kIo (naming the path).
Status write_pipeline_cache_file(const std::filesystem::path& file, std::span<const std::byte> blob);

}  // namespace rdrr::runtime
