// GLSL block layout vs quant/blocks.h: the GPU decodes random Q4_K / Q6_K / Q8_0 blocks (and F16 values)
// and must reproduce the CPU decode bit for bit.
#include <cstring>

#include "kernels/kernel_test_ref.h"
#include "quant/f16.h"
#include "runtime/ops.h"
#include "runtime/vk_test_fixture.h"

namespace rdrr::kernels {
namespace {

using quant::DType;
using runtime::testing::VulkanTest;

class DequantTest : public VulkanTest {
 protected:
  // Uploads `bytes` after a 256-byte lead-in (the tensor does not start the allocation), decodes n_blocks
  // on the GPU and returns the f32 results.
  std::vector<float> gpu_decode(DType dtype, std::span<const std::byte> bytes, uint32_t n_blocks) {
    std::vector<std::byte> padded(256 + bytes.size(), std::byte{0x5a});
    std::memcpy(padded.data() + 256, bytes.data(), bytes.size());
    runtime::Buffer src = upload_bytes(padded, "blocks");
    const uint64_t elems = uint64_t{n_blocks} * static_cast<uint64_t>(quant::block_elems(dtype));
    runtime::Buffer dst = poisoned_f32(elems);
    const Status s = runtime::record_dequant(rec(), dtype, src.range().sub(256, bytes.size()), dst.range(), n_blocks);
    EXPECT_TRUE(s.ok()) << s.to_string();
    run();
    return download_f32(dst.range());
  }

  static void expect_bit_identical(std::span<const float> gpu, std::span<const float> cpu) {
    ASSERT_EQ(gpu.size(), cpu.size());
    size_t mismatches = 0;
    for (size_t i = 0; i < gpu.size(); ++i) {
      if (std::memcmp(&gpu[i], &cpu[i], 4) != 0 && mismatches++ < 5) {
        ADD_FAILURE() << "element " << i << " (block " << i / 256 << ", index " << i % 256 << "): gpu " << gpu[i]
                      << " cpu " << cpu[i];
      }
    }
    EXPECT_EQ(mismatches, 0u);
  }
};

TEST_F(DequantTest, Q4KMatchesCpuBitForBit) {
  std::mt19937 rng(41);
  const auto blocks = testing::random_q4k_blocks(rng, 37);
  std::vector<float> cpu(blocks.size() * 256);
  testing::decode_q4k(blocks, cpu);
  const auto gpu = gpu_decode(DType::kQ4_K, std::as_bytes(std::span(blocks)), 37);
  expect_bit_identical(gpu, cpu);
}

TEST_F(DequantTest, Q6KMatchesCpuBitForBit) {
  std::mt19937 rng(42);
  const auto blocks = testing::random_q6k_blocks(rng, 23);
  std::vector<float> cpu(blocks.size() * 256);
  testing::decode_q6k(blocks, cpu);
  const auto gpu = gpu_decode(DType::kQ6_K, std::as_bytes(std::span(blocks)), 23);
  expect_bit_identical(gpu, cpu);
}

TEST_F(DequantTest, Q80MatchesCpuBitForBit) {
  std::mt19937 rng(43);
  const auto blocks = testing::random_q80_blocks(rng, 101);  // odd count: 34-byte blocks end unaligned
  std::vector<float> cpu(blocks.size() * 32);
  testing::decode_q80(blocks, cpu);
  const auto gpu = gpu_decode(DType::kQ8_0, std::as_bytes(std::span(blocks)), 101);
  expect_bit_identical(gpu, cpu);
}

TEST_F(DequantTest, F16MatchesCpuBitForBit) {
  std::mt19937 rng(44);
  std::vector<uint16_t> h(1001);
  for (uint16_t& v : h) {
    v = static_cast<uint16_t>(rng() & 0xffffu);
    if ((v & 0x7c00u) == 0x7c00u) v = static_cast<uint16_t>(v & 0x3fffu);  // no inf / nan
  }
  std::vector<float> cpu(h.size());
  for (size_t i = 0; i < h.size(); ++i) cpu[i] = quant::f16_to_f32(h[i]);
  const auto gpu = gpu_decode(DType::kF16, std::as_bytes(std::span(h)), 1001);
  expect_bit_identical(gpu, cpu);
}

TEST_F(DequantTest, RejectsUnsupportedDtypeAndShortRanges) {
  runtime::Buffer a = alloc(4096);
  Status s = runtime::record_dequant(rec(), DType::kBF16, a.range(), a.range(), 4);
  EXPECT_EQ(s.code(), StatusCode::kUnsupported);
  EXPECT_NE(s.message().find("no dequant kernel"), std::string::npos) << s.message();
  s = runtime::record_dequant(rec(), DType::kQ4_K, a.range().sub(0, 144), a.range(), 2);
  EXPECT_EQ(s.code(), StatusCode::kValidation);
  EXPECT_NE(s.message().find("src range of 144 bytes < required 288"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace rdrr::kernels
