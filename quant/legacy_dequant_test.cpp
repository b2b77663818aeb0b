// Decoders of the other GGUF block types: hand-built blocks with hand-computed values, independently written
// packers (per value, straight from the documented layout) with random codes covering every bit position and
// scale index, code recovery by inverting the formula, agreement with the existing Q8_0/Q4_K/Q6_K decoders,
// the byte-level entry (unaligned input, parallel path) and its errors.
#include "quant/legacy_dequant.h"

#include <gtest/gtest.h>

#include <array>
#include <bit>
#include <cstring>
#include <random>
#include <vector>

#include "quant/f16.h"
#include "quant/q4_k.h"
#include "quant/q6_k.h"
#include "quant/q8_0.h"

namespace rdrr::quant {
namespace {

uint16_t h(float v) {
  const uint16_t bits = f32_to_f16(v);
  EXPECT_EQ(f16_to_f32(bits), v) << "test value not exact in f16";
  return bits;
}

void expect_same_bits(std::span<const float> got, std::span<const float> want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(std::bit_cast<uint32_t>(got[i]), std::bit_cast<uint32_t>(want[i]))
        << "value " << i << ": got " << got[i] << ", want " << want[i];
  }
}

// ---- independent per-value packers --------------------------------------------------------------------------

template <typename Block>
void pack_nibbles32(const std::array<int, 32>& q, Block& b) {
  for (int i = 0; i < 32; ++i) {
    const int l = i % 16;
    b.qs[l] = static_cast<uint8_t>(b.qs[l] | ((q[i] & 15) << (i < 16 ? 0 : 4)));
  }
}

template <typename Block>
void pack_q5_high(const std::array<int, 32>& q, Block& b) {
  for (int i = 0; i < 32; ++i) {
    if (q[i] & 16) b.qh[i / 8] = static_cast<uint8_t>(b.qh[i / 8] | (1 << (i % 8)));
  }
}

// Q2_K / Q3_K value i -> (qs byte, shift): h = i / 128, j = (i % 128) / 32, l = i % 32.
int k2_byte(int i) { return 32 * (i / 128) + i % 32; }
int k2_shift(int i) { return 2 * ((i % 128) / 32); }

BlockQ2K pack_q2k(float d, float dmin, const std::array<int, 16>& sc, const std::array<int, 16>& m,
                  const std::array<int, 256>& q) {
  BlockQ2K b{};
  b.d = h(d);
  b.dmin = h(dmin);
  for (int g = 0; g < 16; ++g) b.scales[g] = static_cast<uint8_t>(sc[g] | (m[g] << 4));
  for (int i = 0; i < 256; ++i) b.qs[k2_byte(i)] = static_cast<uint8_t>(b.qs[k2_byte(i)] | (q[i] << k2_shift(i)));
  return b;
}

// Q3_K scale codes 0..63 (value = code - 32), q in -4..3.
BlockQ3K pack_q3k(float d, const std::array<int, 16>& code, const std::array<int, 256>& q) {
  BlockQ3K b{};
  b.d = h(d);
  for (int g = 0; g < 16; ++g) {
    if (g < 8) {
      b.scales[g] = static_cast<uint8_t>(b.scales[g] | (code[g] & 15));
    } else {
      b.scales[g - 8] = static_cast<uint8_t>(b.scales[g - 8] | ((code[g] & 15) << 4));
    }
    b.scales[8 + g % 4] = static_cast<uint8_t>(b.scales[8 + g % 4] | ((code[g] >> 4) << (2 * (g / 4))));
  }
  for (int i = 0; i < 256; ++i) {
    const int high = q[i] >= 0 ? 1 : 0;
    const int low = high ? q[i] : q[i] + 4;
    b.qs[k2_byte(i)] = static_cast<uint8_t>(b.qs[k2_byte(i)] | (low << k2_shift(i)));
    const int bit = 4 * (i / 128) + (i % 128) / 32;
    if (high) b.hmask[i % 32] = static_cast<uint8_t>(b.hmask[i % 32] | (1 << bit));
  }
  return b;
}

BlockQ5K pack_q5k(float d, float dmin, const Q4KScales& codes, const std::array<int, 256>& q) {
  BlockQ5K b{};
  b.d = h(d);
  b.dmin = h(dmin);
  pack_q4k_scales(codes, std::span<uint8_t, 12>(b.scales));
  for (int i = 0; i < 256; ++i) {
    const int chunk = i / 64;
    const bool high_nibble = (i % 64) >= 32;
    const int l = i % 32;
    b.qs[32 * chunk + l] = static_cast<uint8_t>(b.qs[32 * chunk + l] | ((q[i] & 15) << (high_nibble ? 4 : 0)));
    if (q[i] & 16) b.qh[l] = static_cast<uint8_t>(b.qh[l] | (1 << (i / 32)));
  }
  return b;
}

template <size_t N>
std::array<int, N> random_codes(std::mt19937& rng, int lo, int hi) {
  std::uniform_int_distribution<int> dist(lo, hi);
  std::array<int, N> a{};
  for (int& v : a) v = dist(rng);
  return a;
}

// ---- hand-built blocks, hand-computed values ----------------------------------------------------------------

TEST(LegacyDequant, Q4_0HandBuilt) {
  BlockQ4_0 b{};
  b.d = h(0.5f);
  for (int l = 0; l < 16; ++l) b.qs[l] = static_cast<uint8_t>(l | ((15 - l) << 4));
  std::array<float, 32> y{};
  dequantize_q4_0({&b, 1}, y);
  EXPECT_EQ(y[0], -4.0f);   // (0 - 8) * 0.5
  EXPECT_EQ(y[8], 0.0f);    // (8 - 8) * 0.5
  EXPECT_EQ(y[15], 3.5f);   // (15 - 8) * 0.5
  EXPECT_EQ(y[16], 3.5f);   // high nibble of qs[0] = 15
  EXPECT_EQ(y[31], -4.0f);  // high nibble of qs[15] = 0
  b.d = h(-2.0f);           // a negative scale flips every sign
  dequantize_q4_0({&b, 1}, y);
  EXPECT_EQ(y[0], 16.0f);
  EXPECT_EQ(y[16], -14.0f);
}

TEST(LegacyDequant, Q4_1HandBuilt) {
  BlockQ4_1 b{};
  b.d = h(0.25f);
  b.m = h(-1.5f);
  b.qs[3] = 0xA3;
  std::array<float, 32> y{};
  dequantize_q4_1({&b, 1}, y);
  EXPECT_EQ(y[3], -0.75f);  // 3 * 0.25 - 1.5
  EXPECT_EQ(y[19], 1.0f);   // 10 * 0.25 - 1.5
  EXPECT_EQ(y[0], -1.5f);
  EXPECT_EQ(y[31], -1.5f);
}

TEST(LegacyDequant, Q5_0HandBuilt) {
  BlockQ5_0 b{};
  b.d = h(1.0f);
  b.qh[0] = 0x01;  // value 0
  b.qh[2] = 0x01;  // value 16
  b.qh[3] = 0x80;  // value 31
  b.qs[0] = 0x50;  // value 0: 0, value 16: 5
  b.qs[15] = 0xF0; // value 15: 0, value 31: 15
  std::array<float, 32> y{};
  dequantize_q5_0({&b, 1}, y);
  EXPECT_EQ(y[0], 0.0f);    // 16 - 16
  EXPECT_EQ(y[1], -16.0f);  // 0 - 16
  EXPECT_EQ(y[15], -16.0f);
  EXPECT_EQ(y[16], 5.0f);   // (5 | 16) - 16
  EXPECT_EQ(y[17], -16.0f);
  EXPECT_EQ(y[31], 15.0f);  // (15 | 16) - 16
}

TEST(LegacyDequant, Q5_1HandBuilt) {
  BlockQ5_1 b{};
  b.d = h(0.5f);
  b.m = h(0.25f);
  b.qs[9] = 0x0F;
  b.qh[1] = 0x02;  // value 9
  b.qh[3] = 0x02;  // value 25 (qs[9] high nibble 0)
  std::array<float, 32> y{};
  dequantize_q5_1({&b, 1}, y);
  EXPECT_EQ(y[9], 15.75f);   // 31 * 0.5 + 0.25
  EXPECT_EQ(y[25], 8.25f);   // 16 * 0.5 + 0.25
  EXPECT_EQ(y[0], 0.25f);
}

TEST(LegacyDequant, Q2_KHandBuilt) {
  BlockQ2K b{};
  b.d = h(1.0f);
  b.dmin = h(0.5f);
  b.scales[5] = 0x32;      // group 5 (values 80..95): scale 2, min 3
  b.scales[15] = 0xF1;     // group 15 (values 240..255): scale 1, min 15
  b.qs[16] = 0x30;         // value 80 = half 0, plane 2, byte 16: q = 3
  b.qs[63] = 0xC0;         // value 255 = half 1, plane 3, byte 32 + 31: q = 3
  std::array<float, 256> y{};
  dequantize_q2_k({&b, 1}, y);
  EXPECT_EQ(y[80], 4.5f);    // (1*2)*3 - 0.5*3
  EXPECT_EQ(y[81], -1.5f);   // q = 0
  EXPECT_EQ(y[255], -4.5f);  // (1*1)*3 - 0.5*15
  EXPECT_EQ(y[0], 0.0f);     // scale 0, min 0
}

TEST(LegacyDequant, Q3_KHandBuilt) {
  BlockQ3K b{};
  b.d = h(0.5f);
  // Group 9 (values 144..159) gets code 40 (scale +8): low nibble 8 in byte 1's high nibble, high bits 2 in
  // byte 9 bits 4-5. Every other group has code 0 (scale -32).
  b.scales[1] = 0x80;
  b.scales[9] = 0x20;
  b.qs[48] = 0x03;    // value 144 = half 1, plane 0, l = 16: low bits 3
  b.hmask[16] = 0x10; // ... high bit (bit 4 = 4*1 + 0) set: q = 3
  std::array<float, 256> y{};
  dequantize_q3_k({&b, 1}, y);
  EXPECT_EQ(y[144], 12.0f);  // (0.5*8)*3
  EXPECT_EQ(y[145], -16.0f); // high bit clear, low 0: q = -4
  EXPECT_EQ(y[0], 64.0f);    // (0.5*-32)*-4
  EXPECT_EQ(y[16], 64.0f);   // hmask[16] bit 0 is clear (bit 4 belongs to value 144)
  const Q3KScales s = unpack_q3k_scales(std::span<const uint8_t, 12>(b.scales));
  EXPECT_EQ(s.sc[9], 8);
  EXPECT_EQ(s.sc[1], -32);
}

TEST(LegacyDequant, Q5_KHandBuilt) {
  Q4KScales codes{};
  codes.sc[5] = 3;
  codes.m[5] = 2;
  codes.sc[7] = 63;
  codes.m[7] = 63;
  std::array<int, 256> q{};
  q[167] = 25;  // sub-block 5 (chunk 2, high nibble), l = 7
  q[255] = 31;
  const BlockQ5K b = pack_q5k(1.0f, 0.5f, codes, q);
  EXPECT_EQ(b.qs[64 + 7], 0x90);
  EXPECT_EQ(b.qh[7], 0x20);
  std::array<float, 256> y{};
  dequantize_q5_k({&b, 1}, y);
  EXPECT_EQ(y[167], 74.0f);     // (1*3)*25 - 0.5*2
  EXPECT_EQ(y[160], -1.0f);     // q = 0
  EXPECT_EQ(y[255], 1921.5f);   // 63*31 - 0.5*63
  EXPECT_EQ(y[0], 0.0f);
}

// ---- random codes: every bit position and scale index --------------------------------------------------------

TEST(LegacyDequant, Q4AndQ5RandomCodes) {
  std::mt19937 rng(1234);
  for (int iter = 0; iter < 50; ++iter) {
    const auto q4 = random_codes<32>(rng, 0, 15);
    const auto q5 = random_codes<32>(rng, 0, 31);
    const float d = iter % 2 ? 0.125f : -4.0f;
    const float m = iter % 3 ? -0.75f : 2.5f;
    BlockQ4_0 b40{};
    BlockQ4_1 b41{};
    BlockQ5_0 b50{};
    BlockQ5_1 b51{};
    b40.d = b41.d = b50.d = b51.d = h(d);
    b41.m = b51.m = h(m);
    pack_nibbles32(q4, b40);
    pack_nibbles32(q4, b41);
    pack_nibbles32(q5, b50);
    pack_q5_high(q5, b50);
    pack_nibbles32(q5, b51);
    pack_q5_high(q5, b51);
    std::array<float, 32> y40{}, y41{}, y50{}, y51{};
    dequantize_q4_0({&b40, 1}, y40);
    dequantize_q4_1({&b41, 1}, y41);
    dequantize_q5_0({&b50, 1}, y50);
    dequantize_q5_1({&b51, 1}, y51);
    for (int i = 0; i < 32; ++i) {
      ASSERT_EQ(y40[i], static_cast<float>(q4[i] - 8) * d) << i;
      ASSERT_EQ(y41[i], static_cast<float>(q4[i]) * d + m) << i;
      ASSERT_EQ(y50[i], static_cast<float>(q5[i] - 16) * d) << i;
      ASSERT_EQ(y51[i], static_cast<float>(q5[i]) * d + m) << i;
      // Encode-free round trip: the codes come back by inverting the formula (exact for these d, m).
      ASSERT_EQ(static_cast<int>(y40[i] / d) + 8, q4[i]);
      ASSERT_EQ(static_cast<int>((y51[i] - m) / d), q5[i]);
    }
  }
}

TEST(LegacyDequant, Q2_KRandomCodes) {
  std::mt19937 rng(99);
  for (int iter = 0; iter < 20; ++iter) {
    const auto sc = random_codes<16>(rng, 1, 15);  // nonzero so codes can be recovered
    const auto m = random_codes<16>(rng, 0, 15);
    const auto q = random_codes<256>(rng, 0, 3);
    const float d = 0.25f, dmin = iter % 2 ? 0.5f : -0.5f;
    const BlockQ2K b = pack_q2k(d, dmin, sc, m, q);
    std::array<float, 256> y{};
    dequantize_q2_k({&b, 1}, y);
    for (int i = 0; i < 256; ++i) {
      const int g = i / 16;
      const float dl = d * static_cast<float>(sc[g]);
      const float ml = dmin * static_cast<float>(m[g]);
      ASSERT_EQ(y[i], dl * static_cast<float>(q[i]) - ml) << i;
      ASSERT_EQ(static_cast<int>((y[i] + ml) / dl), q[i]) << i;
    }
  }
}

TEST(LegacyDequant, Q3_KRandomCodes) {
  std::mt19937 rng(7);
  for (int iter = 0; iter < 20; ++iter) {
    auto code = random_codes<16>(rng, 0, 63);
    code[iter % 16] = 63;  // extremes: every scale bit set somewhere, and -32
    code[(iter + 5) % 16] = 0;
    const auto q = random_codes<256>(rng, -4, 3);
    const float d = iter % 2 ? 0.0625f : -2.0f;
    const BlockQ3K b = pack_q3k(d, code, q);
    const Q3KScales s = unpack_q3k_scales(std::span<const uint8_t, 12>(b.scales));
    for (int g = 0; g < 16; ++g) ASSERT_EQ(s.sc[g], code[g] - 32) << g;
    std::array<float, 256> y{};
    dequantize_q3_k({&b, 1}, y);
    for (int i = 0; i < 256; ++i) {
      const float dl = d * static_cast<float>(code[i / 16] - 32);
      ASSERT_EQ(y[i], dl * static_cast<float>(q[i])) << i;
      if (dl != 0.0f) {
        ASSERT_EQ(static_cast<int>(y[i] / dl), q[i]) << i;
      }
    }
  }
}

TEST(LegacyDequant, Q5_KRandomCodes) {
  std::mt19937 rng(55);
  for (int iter = 0; iter < 20; ++iter) {
    Q4KScales codes{};
    const auto sc = random_codes<8>(rng, 1, 63);
    const auto mn = random_codes<8>(rng, 0, 63);
    for (int j = 0; j < 8; ++j) {
      codes.sc[j] = static_cast<uint8_t>(sc[j]);
      codes.m[j] = static_cast<uint8_t>(mn[j]);
    }
    const auto q = random_codes<256>(rng, 0, 31);
    const float d = 0.125f, dmin = 0.25f;
    const BlockQ5K b = pack_q5k(d, dmin, codes, q);
    std::array<float, 256> y{};
    dequantize_q5_k({&b, 1}, y);
    for (int i = 0; i < 256; ++i) {
      const float dl = d * static_cast<float>(sc[i / 32]);
      const float ml = dmin * static_cast<float>(mn[i / 32]);
      ASSERT_EQ(y[i], dl * static_cast<float>(q[i]) - ml) << i;
      ASSERT_EQ(static_cast<int>((y[i] + ml) / dl), q[i]) << i;
    }
  }
}

// Q5_K without high bits is exactly Q4_K with the same fields.
TEST(LegacyDequant, Q5_KWithoutHighBitsMatchesQ4_K) {
  std::mt19937 rng(3);
  std::uniform_int_distribution<int> byte(0, 255);
  BlockQ4K b4{};
  BlockQ5K b5{};
  b4.d = b5.d = h(0.01171875f);
  b4.dmin = b5.dmin = h(0.0048828125f);
  for (int i = 0; i < 12; ++i) b4.scales[i] = b5.scales[i] = static_cast<uint8_t>(byte(rng));
  for (int i = 0; i < 128; ++i) b4.qs[i] = b5.qs[i] = static_cast<uint8_t>(byte(rng));
  std::array<float, 256> y4{}, y5{};
  dequantize_q4_k({&b4, 1}, y4);
  dequantize_q5_k({&b5, 1}, y5);
  expect_same_bits(y5, y4);
}

// ---- the byte-level entry ---------------------------------------------------------------------------------

// Random blocks of `block_bytes` with finite f16 scales at the given field offsets.
std::vector<std::byte> random_blocks(size_t n_blocks, size_t block_bytes, std::initializer_list<size_t> f16_offsets,
                                     uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_real_distribution<float> scale(-0.05f, 0.05f);
  std::vector<std::byte> v(n_blocks * block_bytes);
  for (auto& b : v) b = static_cast<std::byte>(byte(rng));
  for (size_t i = 0; i < n_blocks; ++i) {
    for (size_t off : f16_offsets) {
      const uint16_t bits = f32_to_f16(scale(rng));
      std::memcpy(v.data() + i * block_bytes + off, &bits, 2);
    }
  }
  return v;
}

template <typename Block, size_t kElems, typename Fn>
void check_entry(GgmlBlockType t, std::initializer_list<size_t> f16_offsets, Fn typed_decoder, size_t n_blocks) {
  SCOPED_TRACE(std::string(ggml_block_type_name(t)));
  ASSERT_EQ(ggml_block_bytes(t), static_cast<int64_t>(sizeof(Block)));
  ASSERT_EQ(ggml_block_elems(t), static_cast<int64_t>(kElems));
  const auto bytes = random_blocks(n_blocks, sizeof(Block), f16_offsets, static_cast<uint32_t>(t) + 17);
  std::vector<Block> blocks(n_blocks);
  std::memcpy(blocks.data(), bytes.data(), bytes.size());
  std::vector<float> want(n_blocks * kElems);
  typed_decoder(std::span<const Block>(blocks), std::span<float>(want));
  // Unaligned source: one byte into a larger buffer.
  std::vector<std::byte> shifted(bytes.size() + 1);
  std::memcpy(shifted.data() + 1, bytes.data(), bytes.size());
  std::vector<float> got(n_blocks * kElems);
  const Status s = dequantize_ggml_blocks(t, std::span<const std::byte>(shifted).subspan(1), got);
  ASSERT_TRUE(s.ok()) << s.to_string();
  expect_same_bits(got, want);
}

TEST(LegacyDequant, ByteEntryMatchesTypedDecoders) {
  // 1000 blocks of 256 (or 8000 of 32) values: above the parallel grain, so the TBB path runs too.
  check_entry<BlockQ4_0, 32>(GgmlBlockType::kQ4_0, {0}, dequantize_q4_0, 8000);
  check_entry<BlockQ4_1, 32>(GgmlBlockType::kQ4_1, {0, 2}, dequantize_q4_1, 8000);
  check_entry<BlockQ5_0, 32>(GgmlBlockType::kQ5_0, {0}, dequantize_q5_0, 8000);
  check_entry<BlockQ5_1, 32>(GgmlBlockType::kQ5_1, {0, 2}, dequantize_q5_1, 8000);
  check_entry<BlockQ8_0, 32>(GgmlBlockType::kQ8_0, {0}, dequantize_q8_0, 8000);
  check_entry<BlockQ2K, 256>(GgmlBlockType::kQ2_K, {80, 82}, dequantize_q2_k, 1000);
  check_entry<BlockQ3K, 256>(GgmlBlockType::kQ3_K, {108}, dequantize_q3_k, 1000);
  check_entry<BlockQ4K, 256>(GgmlBlockType::kQ4_K, {0, 2}, dequantize_q4_k, 1000);
  check_entry<BlockQ5K, 256>(GgmlBlockType::kQ5_K, {0, 2}, dequantize_q5_k, 1000);
  check_entry<BlockQ6K, 256>(GgmlBlockType::kQ6_K, {208}, dequantize_q6_k, 1000);
  check_entry<BlockQ5K, 256>(GgmlBlockType::kQ5_K, {0, 2}, dequantize_q5_k, 3);  // serial path
}

TEST(LegacyDequant, ByteEntryPlainTypes) {
  const std::vector<float> values = {0.0f, -1.5f, 3.140625f, 65504.0f, -0.0f, 1e-3f, 2.5e-7f};
  std::vector<std::byte> f32(values.size() * 4 + 1), f16(values.size() * 2 + 1), bf16(values.size() * 2 + 1);
  std::vector<float> want16(values.size()), wantb16(values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    const uint16_t hb = f32_to_f16(values[i]);
    const uint16_t bb = f32_to_bf16(values[i]);
    want16[i] = f16_to_f32(hb);
    wantb16[i] = bf16_to_f32(bb);
    std::memcpy(f32.data() + 1 + 4 * i, &values[i], 4);
    std::memcpy(f16.data() + 1 + 2 * i, &hb, 2);
    std::memcpy(bf16.data() + 1 + 2 * i, &bb, 2);
  }
  std::vector<float> got(values.size());
  ASSERT_TRUE(dequantize_ggml_blocks(GgmlBlockType::kF32, std::span<const std::byte>(f32).subspan(1), got).ok());
  expect_same_bits(got, values);
  ASSERT_TRUE(dequantize_ggml_blocks(GgmlBlockType::kF16, std::span<const std::byte>(f16).subspan(1), got).ok());
  expect_same_bits(got, want16);
  ASSERT_TRUE(dequantize_ggml_blocks(GgmlBlockType::kBF16, std::span<const std::byte>(bf16).subspan(1), got).ok());
  expect_same_bits(got, wantb16);
}

TEST(LegacyDequant, TypeIds) {
  EXPECT_EQ(ggml_block_type_from_id(2), GgmlBlockType::kQ4_0);
  EXPECT_EQ(ggml_block_type_from_id(6), GgmlBlockType::kQ5_0);
  EXPECT_EQ(ggml_block_type_from_id(13), GgmlBlockType::kQ5_K);
  EXPECT_EQ(ggml_block_type_from_id(30), GgmlBlockType::kBF16);
  EXPECT_FALSE(ggml_block_type_from_id(9).has_value());   // Q8_1: never stored in files
  EXPECT_FALSE(ggml_block_type_from_id(15).has_value());  // Q8_K
  EXPECT_FALSE(ggml_block_type_from_id(16).has_value());  // IQ2_XXS
  EXPECT_EQ(ggml_block_type_name(GgmlBlockType::kQ3_K), "Q3_K");
  EXPECT_EQ(ggml_block_elems(static_cast<GgmlBlockType>(4)), 0);
  EXPECT_EQ(ggml_block_bytes(GgmlBlockType::kQ5_1), 24);
}

TEST(LegacyDequant, ByteEntryErrors) {
  std::vector<std::byte> src(2 * sizeof(BlockQ5_0));
  std::vector<float> dst(64);
  Status s = dequantize_ggml_blocks(GgmlBlockType::kQ5_0, std::span<const std::byte>(src).first(43), dst);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("Q5_0: source size 43 bytes is not a multiple of 22-byte blocks"), std::string::npos)
      << s.message();
  s = dequantize_ggml_blocks(GgmlBlockType::kQ5_0, src, std::span<float>(dst).first(63));
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("destination holds 63 values, expected 64 (2 blocks)"), std::string::npos)
      << s.message();
  s = dequantize_ggml_blocks(static_cast<GgmlBlockType>(9), src, dst);
  EXPECT_EQ(s.code(), StatusCode::kUnsupported);
  EXPECT_NE(s.message().find("ggml type id 9 is not decodable"), std::string::npos) << s.message();
  // Empty input is fine.
  EXPECT_TRUE(dequantize_ggml_blocks(GgmlBlockType::kQ2_K, {}, {}).ok());
}

}  // namespace
}  // namespace rdrr::quant
