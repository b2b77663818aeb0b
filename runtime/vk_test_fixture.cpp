#include "runtime/vk_test_fixture.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>

#include "runtime/instance.h"

namespace rdrr::runtime::testing {

DeviceOptions test_device_options() {
  DeviceOptions o = device_options_from_env();
  const char* v = std::getenv("RDRR_VK_VALIDATION");
  o.instance.validation = v == nullptr || std::strcmp(v, "0") != 0;  // on by default in tests
  o.block_bytes = 16ull << 20;
  o.host_block_bytes = 8ull << 20;
  o.staging_bytes = 1ull << 20;
  o.pipeline_cache_dir.clear();  // tests compile their pipelines and write nothing outside their folders
  return o;
}

namespace {

// Keyed by max_binding_bytes. Destroyed by DeviceEnvironment::TearDown, i.e. before static destruction,
// when the Vulkan loader and layers may already be gone.
std::map<uint64_t, std::unique_ptr<Device>>& devices() {
  static std::map<uint64_t, std::unique_ptr<Device>> d;
  return d;
}

class DeviceEnvironment : public ::testing::Environment {
 public:
  void TearDown() override { devices().clear(); }
};

[[maybe_unused]] ::testing::Environment* const kDeviceEnvironment =
    ::testing::AddGlobalTestEnvironment(new DeviceEnvironment);

}  // namespace

Device* shared_device(const DeviceOptions& opts, std::string* skip, Status* failure) {
  static std::string no_device;
  if (!no_device.empty()) {
    *skip = no_device;
    return nullptr;
  }
  auto it = devices().find(opts.max_binding_bytes);
  if (it != devices().end()) return it->second.get();
  Result<std::unique_ptr<Instance>> inst = Instance::create(opts.instance);
  if (!inst.ok()) {
    no_device = "no Vulkan driver: " + inst.status().to_string();
    *skip = no_device;
    return nullptr;
  }
  if ((*inst)->physical_devices().empty()) {
    no_device = "no Vulkan physical device";
    *skip = no_device;
    return nullptr;
  }
  Result<std::unique_ptr<Device>> dev = Device::create(std::move(inst).value(), opts);
  if (!dev.ok()) {
    *failure = dev.status();
    return nullptr;
  }
  Device* d = dev->get();
  devices().emplace(opts.max_binding_bytes, std::move(dev).value());
  static bool printed = false;
  if (!printed) {
    printed = true;
    std::printf("%s\nvalidation layer: %s\n", describe_caps(d->caps()).c_str(),
                d->instance().validation_enabled() ? "on" : "off");
  }
  return d;
}

void VulkanTest::SetUp() {
  std::string skip;
  Status failure;
  device_ = shared_device(options(), &skip, &failure);
  if (device_ == nullptr && !skip.empty()) GTEST_SKIP() << skip;
  ASSERT_NE(device_, nullptr) << "Vulkan device creation failed: " << failure.to_string();
  Result<std::unique_ptr<Recorder>> r = Recorder::create(*device_, {});
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  recorder_ = std::move(r).value();
}

void VulkanTest::TearDown() {
  recorder_.reset();
  if (device_ != nullptr) {
    const Status s = device_->validation_status();
    EXPECT_TRUE(s.ok()) << s.to_string();
  }
}

Buffer VulkanTest::alloc(uint64_t bytes, std::string_view name) {
  Result<Buffer> b = dev().allocate(bytes, name);
  EXPECT_TRUE(b.ok()) << b.status().to_string();
  return b.ok() ? std::move(b).value() : Buffer{};
}

Buffer VulkanTest::upload_bytes(std::span<const std::byte> bytes, std::string_view name) {
  Buffer b = alloc(bytes.size(), name);
  if (b) {
    const Status s = dev().upload(b.range(), bytes);
    EXPECT_TRUE(s.ok()) << s.to_string();
  }
  return b;
}

Buffer VulkanTest::poisoned_f32(uint64_t n, std::string_view name) {
  Buffer b = alloc(n * 4, name);
  if (b) {
    const Status s = dev().fill(b.range(), kPoisonBits);
    EXPECT_TRUE(s.ok()) << s.to_string();
  }
  return b;
}

std::vector<float> VulkanTest::download_f32(const BufferRange& r) {
  std::vector<float> out(r.size / 4);
  const Status s = dev().download(r, std::as_writable_bytes(std::span<float>(out)));
  EXPECT_TRUE(s.ok()) << s.to_string();
  return out;
}

void VulkanTest::run() {
  Result<SubmitResult> r = rec().submit_and_wait();
  ASSERT_TRUE(r.ok()) << r.status().to_string();
}

double nmse(std::span<const float> got, std::span<const double> ref) {
  double num = 0.0;
  double den = 0.0;
  for (size_t i = 0; i < got.size() && i < ref.size(); ++i) {
    const double d = static_cast<double>(got[i]) - ref[i];
    num += d * d;
    den += ref[i] * ref[i];
  }
  if (got.size() != ref.size()) return INFINITY;
  return den > 0.0 ? num / den : num;
}

size_t count_non_finite(std::span<const float> v) {
  size_t n = 0;
  for (float f : v) n += std::isfinite(f) ? 0 : 1;
  return n;
}

std::vector<float> random_f32(std::mt19937& rng, size_t n, float lo, float hi) {
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float& f : v) f = dist(rng);
  return v;
}

}  // namespace rdrr::runtime::testing
