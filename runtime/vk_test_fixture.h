// Test-only helpers for tests that run on a real Vulkan device (lavapipe in CI). Not part of rdrr_runtime.
//
// Tests derive from VulkanTest: SetUp skips (GTEST_SKIP) only when the machine has no Vulkan driver or no
// physical device at all; any other failure to create the device fails the test. The device is shared by
// the whole test binary (pipelines compile once). The validation layer is enabled when installed (set
// RDRR_VK_VALIDATION=0 to turn it off) and TearDown fails a test that produced validation errors.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "runtime/device.h"
#include "runtime/memory.h"
#include "runtime/recorder.h"

namespace rdrr::runtime::testing {

inline constexpr uint32_t kPoisonBits = 0x7fc00bad;  // a quiet NaN: unwritten outputs stay NaN

// The shared device, created on first use with the given options key (tests needing different options,
// e.g. a small binding cap, pass their own). nullptr and *skip set when no Vulkan device exists.
Device* shared_device(const DeviceOptions& opts, std::string* skip, Status* failure);
DeviceOptions test_device_options();

class VulkanTest : public ::testing::Test {
 protected:
  void SetUp() override;
  void TearDown() override;
  // Override to change device options (cached per distinct max_binding_bytes).
  virtual DeviceOptions options() const { return test_device_options(); }

  Device& dev() { return *device_; }
  Recorder& rec() { return *recorder_; }

  Buffer alloc(uint64_t bytes, std::string_view name = "test");
  Buffer upload_bytes(std::span<const std::byte> bytes, std::string_view name = "test");
  template <typename T>
  Buffer upload(const std::vector<T>& v, std::string_view name = "test") {
    return upload_bytes(std::as_bytes(std::span<const T>(v)), name);
  }
  // A buffer of n f32 filled with kPoisonBits.
  Buffer poisoned_f32(uint64_t n, std::string_view name = "out");
  std::vector<float> download_f32(const BufferRange& r);
  // Submits the recorder and waits; fails the test on error.
  void run();

  Device* device_ = nullptr;
  std::unique_ptr<Recorder> recorder_;
};

// sum((got - ref)^2) / sum(ref^2) over all elements (llama.cpp test-backend-ops' NMSE).
double nmse(std::span<const float> got, std::span<const double> ref);
// Number of NaN / Inf elements.
size_t count_non_finite(std::span<const float> v);
std::vector<float> random_f32(std::mt19937& rng, size_t n, float lo = -1.0f, float hi = 1.0f);

}  // namespace rdrr::runtime::testing
