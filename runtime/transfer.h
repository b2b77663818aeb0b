// Host <-> device copies through a host-visible staging ring split in two halves: while the GPU copies one
// half, the CPU fills (upload) or drains (download) the other. Calls are synchronous: they return once the
// data has landed. Each command buffer ends with a barrier that makes the copy visible to later compute
// dispatches (and to the host for downloads).
#pragma once

#include <vulkan/vulkan.h>

#include <array>
#include <cstddef>
#include <memory>
#include <span>

#include "quant/status.h"
#include "runtime/handles.h"
#include "runtime/memory.h"

namespace rdrr::runtime {

class Device;

class Transfer {
 public:
  static Result<std::unique_ptr<Transfer>> create(Device& device, uint64_t staging_bytes);
  ~Transfer();
  Transfer(const Transfer&) = delete;
  Transfer& operator=(const Transfer&) = delete;

  // Errors: kInvalidArgument when the span and range sizes differ; kDevice from Vulkan.
  Status upload(const BufferRange& dst, std::span<const std::byte> src);
  Status download(const BufferRange& src, std::span<std::byte> dst);
  // vkCmdFillBuffer: offset and size must be multiples of 4.
  Status fill(const BufferRange& dst, uint32_t pattern);

 private:
  struct Slot {
    UniqueCommandBuffer cmd;
    UniqueFence fence;
    bool pending = false;
    uint64_t staging_offset = 0;     // start of this slot's half of the ring
    std::byte* drain_to = nullptr;   // download: host destination once the copy completes
    uint64_t drain_bytes = 0;
  };

  explicit Transfer(Device& device) : device_(device) {}
  Status begin(Slot& s);
  Status submit(Slot& s, std::string_view what);
  Status wait(Slot& s, std::string_view what);  // waits, then drains a pending download

  Device& device_;
  UniqueCommandPool pool_;
  Buffer staging_;
  uint64_t half_bytes_ = 0;
  std::array<Slot, 2> slots_;
};

}  // namespace rdrr::runtime
