// GLSL block layout vs quant/blocks.h: the GPU decodes random Q4_K / Q6_K / Q8_0 blocks (and F16 values)
// and must reproduce the CPU decode bit for bit. Each case is an OpCase (op_test_util.h) with the bit-exact
// metric; the blocks start 256 bytes into their buffer (the tensor does not start the allocation).
#include <span>
#include <string>

#include "kernels/kernel_test_ref.h"
#include "kernels/op_test_util.h"
#include "quant/f16.h"
#include "runtime/ops.h"
#include "runtime/vk_test_fixture.h"

namespace rdrr::kernels {
namespace {

using quant::DType;
using runtime::testing::VulkanTest;
using testing::OpBindings;
using testing::OpCase;

// Decoding n_blocks of `bytes`; the reference is the CPU decode `cpu`, compared bit for bit.
OpCase dequant_case(DType dtype, std::span<const std::byte> bytes, uint32_t n_blocks, std::span<const float> cpu) {
  const uint64_t elems = uint64_t{n_blocks} * static_cast<uint64_t>(quant::block_elems(dtype));
  OpCase oc;
  const std::string type(quant::dtype_name(dtype));
  oc.name = std::string("dequant ") + type + " blocks=" + std::to_string(n_blocks);
  oc.inputs = {testing::raw_input("blocks", type, {n_blocks}, bytes, 256, std::byte{0x5a})};
  oc.outputs = {testing::f32_output("out", {n_blocks, elems / n_blocks}, testing::to_double(cpu),
                                    testing::Tolerance::bit_exact())};
  oc.record = [dtype, n_blocks](runtime::Recorder& rec, const OpBindings& b) {
    return runtime::record_dequant(rec, dtype, b["blocks"], b["out"], n_blocks);
  };
  return oc;
}

class DequantTest : public VulkanTest {};

TEST_F(DequantTest, Q4KMatchesCpuBitForBit) {
  std::mt19937 rng(41);
  const auto blocks = testing::random_q4k_blocks(rng, 37);
  std::vector<float> cpu(blocks.size() * 256);
  testing::decode_q4k(blocks, cpu);
  testing::run_op_case(dev(), rec(), dequant_case(DType::kQ4_K, std::as_bytes(std::span(blocks)), 37, cpu));
}

TEST_F(DequantTest, Q6KMatchesCpuBitForBit) {
  std::mt19937 rng(42);
  const auto blocks = testing::random_q6k_blocks(rng, 23);
  std::vector<float> cpu(blocks.size() * 256);
  testing::decode_q6k(blocks, cpu);
  testing::run_op_case(dev(), rec(), dequant_case(DType::kQ6_K, std::as_bytes(std::span(blocks)), 23, cpu));
}

TEST_F(DequantTest, Q80MatchesCpuBitForBit) {
  std::mt19937 rng(43);
  const auto blocks = testing::random_q80_blocks(rng, 101);  // odd count: 34-byte blocks end unaligned
  std::vector<float> cpu(blocks.size() * 32);
  testing::decode_q80(blocks, cpu);
  testing::run_op_case(dev(), rec(), dequant_case(DType::kQ8_0, std::as_bytes(std::span(blocks)), 101, cpu));
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
  testing::run_op_case(dev(), rec(), dequant_case(DType::kF16, std::as_bytes(std::span(h)), 1001, cpu));
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
