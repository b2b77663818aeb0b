// Command recording: a sequence of dispatches recorded into one command buffer with barriers only where
// data flows (hazard.h), submitted once and waited on with a fence; optional GPU timestamps per dispatch.
//
//   RDRR_ASSIGN_OR_RETURN(auto rec, Recorder::create(device, {}));
//   RDRR_RETURN_IF_ERROR(record_gemv(*rec, args));      // runtime/ops.h, or rec->dispatch(...)
//   RDRR_ASSIGN_OR_RETURN(auto timings, rec->submit_and_wait());
//
// After submit_and_wait the recorder is empty and can record again.
#pragma once

#include <vulkan/vulkan.h>

#include <array>
#include <cstddef>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "quant/status.h"
#include "runtime/handles.h"
#include "runtime/hazard.h"
#include "runtime/memory.h"
#include "runtime/pipeline.h"

namespace rdrr::runtime {

class Device;

struct RecorderOptions {
  bool timestamps = false;        // GPU time per dispatch (needs timestampValidBits on the compute queue)
  uint32_t sets_per_pool = 256;   // descriptor sets per pool; more pools are added as needed
  uint32_t max_timed_dispatches = 1024;
  bool span_timestamps = false;   // one GPU time for a whole submission (SubmitResult::span_ms), no per-dispatch ones
  // Fail-closed pinning: when set, dispatching a kernel whose registry name is not in the set fails with
  // kIntegrity naming the kernel and the label (the executor passes the kernels its pack's graph pins).
  std::shared_ptr<const std::set<std::string, std::less<>>> allowed_kernels;
};

struct DispatchTiming {
  std::string label;
  double gpu_ms = 0.0;  // from the previous timestamp (end of the previous dispatch) to the end of this one
};

struct SubmitResult {
  std::vector<DispatchTiming> timings;  // empty without RecorderOptions::timestamps
  uint32_t dispatches = 0;
  uint32_t barriers = 0;
  double span_ms = 0.0;  // RecorderOptions::span_timestamps: start of the submission to the end of its last dispatch
};

class Recorder {
 public:
  static Result<std::unique_ptr<Recorder>> create(Device& device, const RecorderOptions& opts = {});
  ~Recorder();
  Recorder(const Recorder&) = delete;
  Recorder& operator=(const Recorder&) = delete;

  Device& device() { return device_; }

  // Records one dispatch. bindings[i] binds the kernel's binding i; its access (registry) drives barriers.
  // push must be exactly the kernel's push-constant size. Errors name the kernel, label and binding.
  Status dispatch(const Pipeline& pipeline, std::span<const BufferRange> bindings, std::span<const std::byte> push,
                  std::array<uint32_t, 3> groups, std::string_view label);
  template <typename Push>
  Status dispatch(const Pipeline& pipeline, std::span<const BufferRange> bindings, const Push& push,
                  std::array<uint32_t, 3> groups, std::string_view label) {
    return dispatch(pipeline, bindings, std::as_bytes(std::span<const Push>(&push, 1)), groups, label);
  }

  // Ends, submits, waits for the fence; resets for reuse (also after an error).
  Result<SubmitResult> submit_and_wait();
  // The two halves: submit() ends and submits the recording without waiting (nothing recorded: no-op); the
  // recorder must not record again until wait() has returned (wait() with nothing pending returns an empty
  // result). Submissions on the device's queue run in order, each after the previous one's writes (the
  // barrier that ends every recording), so a second recorder can record and submit the next step meanwhile.
  Status submit();
  Result<SubmitResult> wait();
  bool pending() const { return pending_.has_value(); }

  // Per-recording marks (cleared at submit): lets an op initialise state once per recording, e.g. the
  // split-K GEMV tickets of a scratch range (note_use after the initialising dispatch was recorded).
  bool used_before(VkBuffer buffer, uint64_t offset) const { return noted_uses_.count({buffer, offset}) != 0; }
  void note_use(VkBuffer buffer, uint64_t offset) { noted_uses_.insert({buffer, offset}); }

  // Whether dispatching `kernel_name` passes RecorderOptions::allowed_kernels (always, when unset).
  bool allows(std::string_view kernel_name) const {
    return opts_.allowed_kernels == nullptr || opts_.allowed_kernels->count(kernel_name) != 0;
  }

  uint32_t dispatch_count() const { return dispatches_; }
  uint32_t barrier_count() const { return barriers_; }

 private:
  Recorder(Device& device, const RecorderOptions& opts) : device_(device), opts_(opts) {}
  Status init();
  Status begin_if_needed();
  Result<VkDescriptorSet> allocate_set(VkDescriptorSetLayout layout);
  void reset_state();

  Device& device_;
  RecorderOptions opts_;
  UniqueCommandPool pool_;
  UniqueCommandBuffer cmd_;
  UniqueFence fence_;
  UniqueQueryPool queries_;
  std::vector<UniqueDescriptorPool> set_pools_;
  uint32_t sets_in_last_pool_ = 0;
  HazardTracker hazards_;
  bool recording_ = false;
  uint32_t dispatches_ = 0;
  uint32_t barriers_ = 0;
  std::vector<std::string> labels_;
  std::set<std::pair<VkBuffer, uint64_t>> noted_uses_;
  struct Pending {
    SubmitResult out;
    std::vector<std::string> labels;
    uint32_t timed = 0;
    std::string site;
  };
  std::optional<Pending> pending_;  // submitted, not yet waited for
};

}  // namespace rdrr::runtime
