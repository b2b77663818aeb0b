// Runtime core on a real Vulkan device (lavapipe in CI): device choice and feature errors, the
// sub-allocator, staging uploads/downloads, pipeline cache, dispatch validation, barriers only where data
// flows, timestamps.
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>

#include "runtime/ops.h"
#include "rdrr/test_temp_dir.h"
#include "runtime/pipeline.h"
#include "runtime/pipeline_cache_file.h"
#include "runtime/vk_test_fixture.h"

namespace rdrr::runtime {
namespace {

using testing::VulkanTest;

class DeviceTest : public VulkanTest {};

TEST_F(DeviceTest, CapsAreSane) {
  const DeviceCaps& c = dev().caps();
  EXPECT_GE(c.desc.api_version, kMinApiVersion);
  EXPECT_TRUE(c.storage_buffer_16bit);
  EXPECT_GT(c.subgroup_size, 0u);
  EXPECT_EQ(c.subgroup_size & (c.subgroup_size - 1), 0u) << "power of two";
  EXPECT_GE(c.max_storage_buffer_range, 1u << 27);
  EXPECT_GE(dev().binding_alignment(), 4u);
}

TEST_F(DeviceTest, OverrideThatMatchesNothingIsAnError) {
  DeviceOptions o = testing::test_device_options();
  o.device_spec = "no-such-gpu-xyz";
  Result<std::unique_ptr<Device>> d = Device::create(o);
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), StatusCode::kNotFound);
  EXPECT_NE(d.status().message().find("RDRR_DEVICE=no-such-gpu-xyz: no device name contains it; devices: 0: '"),
            std::string::npos)
      << d.status().message();
}

TEST_F(DeviceTest, MissingRequirementIsNamed) {
  DeviceOptions o = testing::test_device_options();
  o.required.min_workgroup_invocations = 1u << 24;
  Result<std::unique_ptr<Device>> d = Device::create(o);
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(d.status().message().find("maxComputeWorkGroupInvocations"), std::string::npos) << d.status().message();
  EXPECT_NE(d.status().message().find("< required 16777216"), std::string::npos) << d.status().message();
}

TEST_F(DeviceTest, SubAllocatorSharesBlocksAndRecycles) {
  const MemoryPoolStats before = dev().device_memory().stats();
  std::vector<Buffer> small;
  for (int i = 0; i < 100; ++i) small.push_back(alloc(1000 + 13 * i, "small"));
  const MemoryPoolStats during = dev().device_memory().stats();
  EXPECT_LE(during.blocks, before.blocks + 1) << "100 small tensors must share a block";
  for (size_t i = 0; i < small.size(); ++i) {
    EXPECT_EQ(small[i].range().offset % 256, 0u);
    for (size_t j = 0; j < i; ++j) {
      const BufferRange& a = small[i].range();
      const BufferRange& b = small[j].range();
      if (a.buffer == b.buffer) {
        EXPECT_TRUE(a.offset + a.size <= b.offset || b.offset + b.size <= a.offset);
      }
    }
  }
  Buffer big = alloc(dev().options().block_bytes + 4096, "big");  // dedicated block
  EXPECT_EQ(dev().device_memory().stats().blocks, during.blocks + 1);
  big = Buffer{};
  EXPECT_EQ(dev().device_memory().stats().blocks, during.blocks) << "a dedicated block is freed with its tensor";
  small.clear();
  EXPECT_EQ(dev().device_memory().stats().used_bytes, before.used_bytes);
}

TEST_F(DeviceTest, AllocationErrorNamesTheTensorAndSize) {
  Result<Buffer> b = dev().allocate(uint64_t{1} << 50, "blk.3.ffn_up.weight");
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), StatusCode::kDevice);
  EXPECT_NE(b.status().message().find("vkAllocateMemory(blk.3.ffn_up.weight, 1125899906842624 bytes)"),
            std::string::npos)
      << b.status().message();
}

TEST_F(DeviceTest, UploadDownloadRoundTripAcrossManyStagingChunks) {
  std::mt19937 rng(3);
  std::vector<std::byte> data(3 * (1 << 20) + 12345);  // staging ring is 1 MiB: 7 half-ring chunks
  for (std::byte& b : data) b = static_cast<std::byte>(rng() & 0xff);
  Buffer buf = alloc(data.size() + 100);
  ASSERT_TRUE(dev().upload(buf.range().sub(100, data.size()), data).ok());
  std::vector<std::byte> back(data.size());
  ASSERT_TRUE(dev().download(buf.range().sub(100, data.size()), back).ok());
  EXPECT_EQ(std::memcmp(back.data(), data.data(), data.size()), 0);
  std::vector<std::byte> part(777);
  ASSERT_TRUE(dev().download(buf.range().sub(100 + 5000, part.size()), part).ok());
  EXPECT_EQ(std::memcmp(part.data(), data.data() + 5000, part.size()), 0);
}

TEST_F(DeviceTest, TransferSizeMismatchAndFillAlignment) {
  Buffer buf = alloc(256);
  std::vector<std::byte> four(4);
  Status s = dev().upload(buf.range(), four);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("upload: 4 host bytes into a range of 256 bytes"), std::string::npos) << s.message();
  s = dev().fill(buf.range().sub(2, 8), 0);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("not a non-empty multiple of 4 bytes"), std::string::npos) << s.message();
  ASSERT_TRUE(dev().fill(buf.range(), 0x3f800000u).ok());
  const std::vector<float> ones = download_f32(buf.range());
  for (float f : ones) EXPECT_EQ(f, 1.0f);
}

TEST_F(DeviceTest, PipelineCacheReusesAndValidatesSpecialization) {
  PipelineCache& pc = dev().pipelines();
  Result<const Pipeline*> a = pc.get("add");
  Result<const Pipeline*> b = pc.get("add");
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(*a, *b);
  const SpecValue wg64[] = {{0, 64}};
  Result<const Pipeline*> c = pc.get("add", wg64);
  ASSERT_TRUE(c.ok());
  EXPECT_NE(*a, *c);
  EXPECT_EQ((*c)->local_size()[0], 64u);
  const SpecValue bad[] = {{9, 1}};
  Result<const Pipeline*> d = pc.get("add", bad);
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(d.status().message().find("kernel add: no specialization constant with id 9"), std::string::npos);
  const SpecValue huge[] = {{0, 1u << 20}};
  Result<const Pipeline*> e = pc.get("add", huge);
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(e.status().message().find("pipeline add|0=1048576: local size[0] = 1048576 outside 1.."),
            std::string::npos)
      << e.status().message();
  Result<const Pipeline*> f = pc.get("no_such_kernel");
  EXPECT_EQ(f.status().code(), StatusCode::kNotFound);
  Result<std::vector<std::byte>> blob = pc.serialize();
  ASSERT_TRUE(blob.ok());
  EXPECT_GT(blob->size(), 16u);
}

TEST_F(DeviceTest, DispatchValidationNamesKernelLabelAndBinding) {
  Result<const Pipeline*> p = dev().pipelines().get("add");
  ASSERT_TRUE(p.ok());
  Buffer buf = alloc(1024);
  const uint32_t push[2] = {4, 1};
  const BufferRange two[] = {buf.range(), buf.range()};
  Status s = rec().dispatch(**p, two, push, {1, 1, 1}, "resid");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("dispatch add (resid): 2 bindings, kernel has 3"), std::string::npos) << s.message();
  const BufferRange misaligned[] = {buf.range(), buf.range().sub(4, 64), buf.range()};
  s = rec().dispatch(**p, misaligned, push, {1, 1, 1}, "resid");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("binding 1 'b': offset"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("not a multiple of minStorageBufferOffsetAlignment"), std::string::npos) << s.message();
  const BufferRange three[] = {buf.range(), buf.range(), buf.range()};
  const uint32_t short_push[1] = {4};
  s = rec().dispatch(**p, three, short_push, {1, 1, 1}, "resid");
  EXPECT_NE(s.message().find("push constants of 4 bytes, kernel takes 8"), std::string::npos) << s.message();
  s = rec().dispatch(**p, three, push, {0, 1, 1}, "resid");
  EXPECT_NE(s.message().find("group count[0] = 0"), std::string::npos) << s.message();
  EXPECT_EQ(rec().dispatch_count(), 0u);
}

// Two independent adds, then one that consumes both, then one independent of all: exactly one barrier.
TEST_F(DeviceTest, BarriersOnlyWhereDataFlowsAndTimestamps) {
  RecorderOptions timed_opts;
  timed_opts.timestamps = true;
  Result<std::unique_ptr<Recorder>> timed = Recorder::create(dev(), timed_opts);
  ASSERT_TRUE(timed.ok()) << timed.status().to_string();
  const uint32_t n = 1000;
  std::vector<float> a(n), b(n);
  for (uint32_t i = 0; i < n; ++i) {
    a[i] = float(i);
    b[i] = 0.5f * float(i);
  }
  Buffer ab = upload(a), bb = upload(b);
  Buffer c = poisoned_f32(n), d = poisoned_f32(n), e = poisoned_f32(n), f = poisoned_f32(n);
  Recorder& r = **timed;
  ASSERT_TRUE(record_add(r, ab.range(), bb.range(), c.range(), n, "c=a+b").ok());
  ASSERT_TRUE(record_add(r, ab.range(), ab.range(), d.range(), n, "d=a+a").ok());
  EXPECT_EQ(r.barrier_count(), 0u);
  ASSERT_TRUE(record_add(r, c.range(), d.range(), e.range(), n, "e=c+d").ok());
  EXPECT_EQ(r.barrier_count(), 1u);
  ASSERT_TRUE(record_add(r, bb.range(), bb.range(), f.range(), n, "f=b+b").ok());
  EXPECT_EQ(r.barrier_count(), 1u);
  Result<SubmitResult> res = r.submit_and_wait();
  ASSERT_TRUE(res.ok()) << res.status().to_string();
  EXPECT_EQ(res->dispatches, 4u);
  EXPECT_EQ(res->barriers, 1u);
  ASSERT_EQ(res->timings.size(), 4u);
  EXPECT_EQ(res->timings[2].label, "e=c+d");
  for (const DispatchTiming& t : res->timings) EXPECT_GE(t.gpu_ms, 0.0);
  const std::vector<float> ev = download_f32(e.range());
  const std::vector<float> fv = download_f32(f.range());
  for (uint32_t i = 0; i < n; ++i) {
    ASSERT_EQ(ev[i], 3.5f * float(i)) << i;
    ASSERT_EQ(fv[i], float(i)) << i;
  }
  // The recorder is reusable after a submit.
  ASSERT_TRUE(record_add(r, e.range(), ab.range(), e.range(), n, "e+=a").ok());
  ASSERT_TRUE(r.submit_and_wait().ok());
  EXPECT_EQ(download_f32(e.range())[10], 45.0f);
}

// Compiler statistics only exist when the device was created to capture them (bench_kernels --stats).
TEST_F(DeviceTest, PipelineStatisticsNeedCapture) {
  Result<const Pipeline*> p = dev().pipelines().get("add");
  ASSERT_TRUE(p.ok()) << p.status().to_string();
  ASSERT_FALSE(dev().options().capture_pipeline_statistics);
  const Result<std::string> st = pipeline_statistics(dev(), **p);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.status().code(), StatusCode::kUnsupported);
  bool listed = false;
  for (const auto& [key, pipe] : dev().pipelines().list()) listed = listed || pipe == *p;
  EXPECT_TRUE(listed);
}

// The pipeline cache file: written when the device goes away, loaded by the next one; a file that is corrupt,
// truncated or another device's is ignored with a note (the pipelines are compiled again, nothing fails).
TEST_F(DeviceTest, PipelineCacheFilePersistsAndRejectsBadFiles) {
  test::TempDir dir;
  DeviceOptions o = testing::test_device_options();
  o.pipeline_cache_dir = dir.path() / "cache";
  const std::filesystem::path file = o.pipeline_cache_dir / pipeline_cache_file_name(dev().caps());
  {
    Result<std::unique_ptr<Device>> first = Device::create(o);
    ASSERT_TRUE(first.ok()) << first.status().to_string();
    EXPECT_EQ((*first)->pipeline_cache_loaded_bytes(), 0u);
    ASSERT_TRUE((*first)->pipelines().get("add").ok());
    ASSERT_TRUE((*first)->pipelines().get("rms_norm").ok());
  }
  ASSERT_TRUE(std::filesystem::exists(file));
  const uint64_t size = std::filesystem::file_size(file);
  {
    Result<std::unique_ptr<Device>> second = Device::create(o);
    ASSERT_TRUE(second.ok());
    EXPECT_EQ((*second)->pipeline_cache_loaded_bytes(), size - 80);  // the 80-byte rdrr prefix
    EXPECT_EQ((*second)->pipeline_cache_note(), "");
    EXPECT_TRUE((*second)->pipelines().get("add").ok());
  }
  auto reopen_note = [&](const std::string& bytes) {
    std::ofstream(file, std::ios::binary | std::ios::trunc) << bytes;
    Result<std::unique_ptr<Device>> d = Device::create(o);
    EXPECT_TRUE(d.ok());
    if (!d.ok()) return std::string();
    EXPECT_EQ((*d)->pipeline_cache_loaded_bytes(), 0u);
    EXPECT_TRUE((*d)->pipelines().get("add").ok());  // compiled again
    return (*d)->pipeline_cache_note();
  };
  std::ifstream in(file, std::ios::binary);
  const std::string good((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::string flipped = good;
  flipped.back() = static_cast<char>(flipped.back() ^ 1);
  EXPECT_NE(reopen_note(flipped).find("ignored (checksum differs)"), std::string::npos);
  EXPECT_NE(reopen_note(good.substr(0, 40)).find("ignored (bad size)"), std::string::npos);
  EXPECT_NE(reopen_note("not a cache file at all, long enough to pass the size check for the prefix bytes: "
                        "0123456789012345678901234567890123456789")
                .find("not an rdrr pipeline cache"),
            std::string::npos);
  // Another device's blob with a valid checksum: the Vulkan header's device id differs.
  DeviceCaps other = dev().caps();
  other.device_id ^= 1;
  std::vector<std::byte> blob(reinterpret_cast<const std::byte*>(good.data() + 80),
                              reinterpret_cast<const std::byte*>(good.data() + good.size()));
  ASSERT_TRUE(write_pipeline_cache_file(file, blob).ok());
  EXPECT_TRUE(read_pipeline_cache_file(file, dev().caps()).note.empty());
  EXPECT_NE(read_pipeline_cache_file(file, other).note.find("made on another device"), std::string::npos);
}

// span_timestamps: one GPU time for the whole submission and no per-dispatch timings; exclusive with
// per-dispatch timestamps.
TEST_F(DeviceTest, SpanTimestampsTimeTheWholeSubmission) {
  RecorderOptions both;
  both.timestamps = true;
  both.span_timestamps = true;
  Result<std::unique_ptr<Recorder>> bad = Recorder::create(dev(), both);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  RecorderOptions span_opts;
  span_opts.span_timestamps = true;
  Result<std::unique_ptr<Recorder>> span = Recorder::create(dev(), span_opts);
  ASSERT_TRUE(span.ok()) << span.status().to_string();
  const uint32_t n = 4096;
  std::vector<float> a(n, 1.0f);
  Buffer ab = upload(a);
  Buffer c = poisoned_f32(n);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(record_add(**span, ab.range(), c.range(), c.range(), n, "c+=a").ok());
  ASSERT_TRUE(record_add(**span, ab.range(), ab.range(), c.range(), n, "c=a+a").ok());
  Result<SubmitResult> res = (*span)->submit_and_wait();
  ASSERT_TRUE(res.ok()) << res.status().to_string();
  EXPECT_TRUE(res->timings.empty());
  EXPECT_GT(res->span_ms, 0.0);
  EXPECT_EQ(res->dispatches, 4u);
  EXPECT_EQ(download_f32(c.range())[7], 2.0f);
}

// submit() / wait(): two recorders chained through one buffer run in submission order (the second reads what
// the first wrote without any host wait between them); recording into a recorder whose submission is pending
// is an error; wait() with nothing pending returns an empty result.
TEST_F(DeviceTest, SubmitWithoutWaitingChainsInQueueOrder) {
  Result<std::unique_ptr<Recorder>> other = Recorder::create(dev(), {});
  ASSERT_TRUE(other.ok()) << other.status().to_string();
  const uint32_t n = 4096;
  std::vector<float> a(n, 1.0f);
  Buffer ab = upload(a);
  Buffer c = poisoned_f32(n);
  Recorder& r1 = rec();
  Recorder& r2 = **other;
  ASSERT_TRUE(record_add(r1, ab.range(), ab.range(), c.range(), n, "c=a+a").ok());
  ASSERT_TRUE(r1.submit().ok());
  EXPECT_TRUE(r1.pending());
  const Status busy = record_add(r1, ab.range(), c.range(), c.range(), n, "c+=a");
  EXPECT_EQ(busy.code(), StatusCode::kInternal);
  EXPECT_NE(busy.message().find("pending (wait first)"), std::string::npos) << busy.message();
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(record_add(r2, ab.range(), c.range(), c.range(), n, "c+=a").ok());
  ASSERT_TRUE(r2.submit().ok());
  Result<SubmitResult> second = r2.wait();
  ASSERT_TRUE(second.ok()) << second.status().to_string();
  EXPECT_EQ(second->dispatches, 5u);
  Result<SubmitResult> first = r1.wait();
  ASSERT_TRUE(first.ok()) << first.status().to_string();
  EXPECT_EQ(first->dispatches, 1u);
  EXPECT_FALSE(r1.pending());
  const std::vector<float> cv = download_f32(c.range());
  EXPECT_EQ(cv[0], 7.0f);
  EXPECT_EQ(cv[n - 1], 7.0f);
  Result<SubmitResult> none = r1.wait();
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->dispatches, 0u);
}

}  // namespace
}  // namespace rdrr::runtime
