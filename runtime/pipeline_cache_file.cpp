#include "runtime/pipeline_cache_file.h"

#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <system_error>

#include "rdrr/sha256.h"

namespace rdrr::runtime {
namespace {

constexpr char kMagic[8] = {'R', 'D', 'R', 'R', 'P', 'C', '1', '\n'};
constexpr size_t kPrefixBytes = 8 + 8 + 64;
constexpr uint64_t kMaxPayloadBytes = uint64_t{1} << 30;

uint32_t u32_at(std::span<const std::byte> b, size_t at) {
  uint32_t v = 0;
  std::memcpy(&v, b.data() + at, 4);
  return v;
}

std::string hex(std::span<const uint8_t> bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (uint8_t b : bytes) {
    out += kDigits[b >> 4];
    out += kDigits[b & 15];
  }
  return out;
}

// The Vulkan header of the blob (VkPipelineCacheHeaderVersionOne) against this device; "" when it matches.
std::string header_mismatch(std::span<const std::byte> blob, const DeviceCaps& caps) {
  if (blob.size() < 32) return "payload shorter than a Vulkan pipeline cache header";
  if (u32_at(blob, 0) < 32 || u32_at(blob, 0) > blob.size()) return "bad Vulkan header size";
  if (u32_at(blob, 4) != VK_PIPELINE_CACHE_HEADER_VERSION_ONE) return "Vulkan header version is not 1";
  if (u32_at(blob, 8) != caps.vendor_id || u32_at(blob, 12) != caps.device_id) return "made on another device";
  if (std::memcmp(blob.data() + 16, caps.pipeline_cache_uuid.data(), VK_UUID_SIZE) != 0) {
    return "made by another driver build (pipelineCacheUUID differs)";
  }
  return "";
}

}  // namespace

std::string pipeline_cache_file_name(const DeviceCaps& caps) {
  char ids[32];
  std::snprintf(ids, sizeof ids, "%04x-%04x", caps.vendor_id, caps.device_id);
  return "pipelines-" + std::string(ids) + "-" + hex(caps.pipeline_cache_uuid) + ".bin";
}

PipelineCacheLoad read_pipeline_cache_file(const std::filesystem::path& file, const DeviceCaps& caps) {
  PipelineCacheLoad out;
  std::error_code ec;
  if (!std::filesystem::exists(file, ec)) return out;
  auto ignored = [&](const std::string& why) {
    out.blob.clear();
    out.note = file.string() + ": ignored (" + why + ")";
    return out;
  };
  const uint64_t size = std::filesystem::file_size(file, ec);
  if (ec || size < kPrefixBytes || size - kPrefixBytes > kMaxPayloadBytes) return ignored("bad size");
  std::ifstream in(file, std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (!in.good() && !in.eof()) return ignored("unreadable");
  if (bytes.size() != size || std::memcmp(bytes.data(), kMagic, 8) != 0) return ignored("not an rdrr pipeline cache");
  uint64_t payload = 0;
  std::memcpy(&payload, bytes.data() + 8, 8);
  if (payload != size - kPrefixBytes) return ignored("payload size " + std::to_string(payload) + " != the file's");
  const std::string want(bytes.data() + 16, 64);
  const auto* p = reinterpret_cast<const std::byte*>(bytes.data() + kPrefixBytes);
  const std::span<const std::byte> blob(p, payload);
  if (sha256_hex(blob) != want) return ignored("checksum differs");
  if (const std::string why = header_mismatch(blob, caps); !why.empty()) return ignored(why);
  out.blob.assign(blob.begin(), blob.end());
  return out;
}

Status write_pipeline_cache_file(const std::filesystem::path& file, std::span<const std::byte> blob) {
  std::error_code ec;
  std::filesystem::create_directories(file.parent_path(), ec);
  if (ec) return error(StatusCode::kIo, file.parent_path().string() + ": cannot create (" + ec.message() + ")");
  static std::atomic<uint64_t> serial{0};  // two devices of one process may save at once
  const std::filesystem::path tmp =
      file.string() + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(serial.fetch_add(1));
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    const uint64_t size = blob.size();
    const std::string sum = sha256_hex(blob);
    out.write(kMagic, 8);
    out.write(reinterpret_cast<const char*>(&size), 8);
    out.write(sum.data(), static_cast<std::streamsize>(sum.size()));
    out.write(reinterpret_cast<const char*>(blob.data()), static_cast<std::streamsize>(blob.size()));
    out.flush();
    if (!out.good()) {
      std::filesystem::remove(tmp, ec);
      return error(StatusCode::kIo, tmp.string() + ": write failed");
    }
  }
  std::filesystem::rename(tmp, file, ec);
  if (ec) {
    std::filesystem::remove(tmp, ec);
    return error(StatusCode::kIo, file.string() + ": cannot replace (" + ec.message() + ")");
  }
  return Status::Ok();
}

}  // namespace rdrr::runtime
