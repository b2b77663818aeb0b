// Registry vs embedded SPIR-V: every entry has a module built from the file and defines it claims, and the
// module's descriptor bindings and specialization ids are exactly the ones the registry documents.
#include "kernels/registry.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

namespace rdrr::kernels {
namespace {

struct ModuleFacts {
  std::set<uint32_t> bindings;  // descriptor set 0
  std::set<uint32_t> spec_ids;
  std::set<std::string> entry_points;
};

// Minimal SPIR-V walk: OpEntryPoint (15), OpDecorate (71) with Binding (33) / DescriptorSet (34) / SpecId (1).
ModuleFacts parse_module(std::span<const uint32_t> w) {
  ModuleFacts f;
  std::map<uint32_t, uint32_t> binding_of, set_of;
  for (size_t i = 5; i < w.size();) {
    const uint32_t count = w[i] >> 16;
    const uint32_t opcode = w[i] & 0xffffu;
    if (count == 0 || i + count > w.size()) {
      ADD_FAILURE() << "malformed instruction at word " << i;
      break;
    }
    if (opcode == 15 && count >= 4) {
      const char* name = reinterpret_cast<const char*>(&w[i + 3]);
      f.entry_points.insert(std::string(name));
    } else if (opcode == 71 && count >= 4) {
      const uint32_t target = w[i + 1];
      if (w[i + 2] == 33) binding_of[target] = w[i + 3];
      if (w[i + 2] == 34) set_of[target] = w[i + 3];
      if (w[i + 2] == 1) f.spec_ids.insert(w[i + 3]);
    }
    i += count;
  }
  for (const auto& [target, binding] : binding_of) {
    EXPECT_EQ(set_of.count(target), 1u) << "binding " << binding << " without a descriptor set";
    EXPECT_EQ(set_of[target], 0u) << "binding " << binding << " not in set 0";
    f.bindings.insert(binding);
  }
  return f;
}

TEST(Registry, EveryKernelHasMatchingSpirv) {
  ASSERT_FALSE(all_kernels().empty());
  for (const KernelInfo& k : all_kernels()) {
    SCOPED_TRACE(std::string(k.name));
    const SpirvBlob* blob = kernel_spirv(k);
    ASSERT_NE(blob, nullptr) << "no embedded SPIR-V: add rdrr_kernel(" << k.name << ") to kernels/CMakeLists.txt";
    EXPECT_EQ(blob->file, k.file);
    EXPECT_EQ(blob->defines, k.defines);
    ASSERT_GT(blob->words.size(), 5u);
    EXPECT_EQ(blob->words[0], 0x07230203u) << "SPIR-V magic";
    EXPECT_EQ(blob->sha256.size(), 64u);

    const ModuleFacts facts = parse_module(blob->words);
    EXPECT_EQ(facts.entry_points.count(std::string(k.entry)), 1u);
    std::set<uint32_t> documented_bindings;
    for (size_t i = 0; i < k.bindings.size(); ++i) {
      EXPECT_EQ(k.bindings[i].binding, i) << "bindings must be listed in order 0..n-1";
      documented_bindings.insert(k.bindings[i].binding);
    }
    EXPECT_EQ(facts.bindings, documented_bindings);
    std::set<uint32_t> documented_spec;
    bool has_local_x = false;
    for (const SpecInfo& s : k.spec) {
      documented_spec.insert(s.id);
      has_local_x = has_local_x || s.role == SpecRole::kLocalSizeX;
    }
    EXPECT_EQ(facts.spec_ids, documented_spec);
    EXPECT_TRUE(has_local_x) << "local_size_x must be a specialization constant";
    EXPECT_EQ(k.push_constant_bytes % 4, 0u);
    EXPECT_LE(k.push_constant_bytes, 128u) << "the portable push-constant minimum";
    EXPECT_FALSE(k.dtypes.empty());
    EXPECT_FALSE(k.grid.empty());
  }
}

TEST(Registry, EveryModuleIsRegisteredOnce) {
  std::set<std::string_view> names;
  for (const KernelInfo& k : all_kernels()) EXPECT_TRUE(names.insert(k.name).second) << "duplicate " << k.name;
  for (const SpirvBlob& b : spirv_blobs()) EXPECT_NE(find_kernel(b.name), nullptr) << "unregistered module " << b.name;
}

TEST(Registry, GemvLookupByDtypeAndLayout) {
  using quant::DType;
  using quant::Layout;
  EXPECT_EQ(find_kernel(Op::kGemv, DType::kQ4_K, Layout::kRowWise)->name, "gemv_q4_k");
  EXPECT_EQ(find_kernel(Op::kGemv, DType::kQ4_K, Layout::kFlat)->name, "gemv_q4_k");
  EXPECT_EQ(find_kernel(Op::kGemv, DType::kQ4_K, Layout::kColumnWise)->name, "gemv_q4_k_col");
  // The vectorized Q4_K kernels are picked by record_gemv by name, never by dtype / layout lookup.
  ASSERT_NE(find_kernel("gemv_q4_k_vec"), nullptr);
  ASSERT_NE(find_kernel("gemv_q4_k_col_split"), nullptr);
  EXPECT_EQ(find_kernel("gemv_reduce")->op, Op::kGemvReduce);
  EXPECT_EQ(op_name(Op::kGemvReduce), "gemv_reduce");
  EXPECT_EQ(op_name(Op::kGemm), "gemm");
  EXPECT_EQ(find_kernel(Op::kGemm, DType::kQ4_K, Layout::kColumnWise)->name, "gemm_q4_k_col");
  EXPECT_EQ(find_kernel(Op::kGemm, DType::kQ6_K, Layout::kFlat)->name, "gemm_q6_k");
  EXPECT_EQ(find_kernel(Op::kGemm, DType::kQ8_0, Layout::kColumnWise), nullptr);
  EXPECT_EQ(find_kernel(Op::kGemv, DType::kQ6_K, Layout::kRowWise)->name, "gemv_q6_k");
  EXPECT_EQ(find_kernel(Op::kGemv, DType::kQ6_K, Layout::kColumnWise), nullptr);
  EXPECT_EQ(find_kernel(Op::kGemv, DType::kBF16, Layout::kRowWise), nullptr);
  EXPECT_EQ(find_kernel("no_such_kernel"), nullptr);
}

TEST(Registry, EmbedAndCacheLookups) {
  using quant::DType;
  using quant::Layout;
  EXPECT_EQ(find_kernel(Op::kEmbed, DType::kF16, Layout::kRowWise)->name, "embed_f16");
  EXPECT_EQ(find_kernel(Op::kEmbed, DType::kQ6_K, Layout::kRowWise)->name, "embed_q6_k");
  EXPECT_EQ(find_kernel(Op::kEmbed, DType::kQ4_K, Layout::kFlat)->name, "embed_q4_k");
  EXPECT_EQ(find_kernel(Op::kEmbed, DType::kQ4_K, Layout::kColumnWise)->name, "embed_q4_k_col");
  EXPECT_EQ(find_kernel(Op::kEmbed, DType::kQ8_0, Layout::kColumnWise), nullptr);
  EXPECT_EQ(find_kernel(Op::kEmbed, DType::kBF16, Layout::kRowWise), nullptr);
  EXPECT_EQ(find_kernel(Op::kKvAppend, DType::kF16, Layout::kFlat)->name, "kv_append_f16");
  EXPECT_EQ(find_kernel(Op::kAttention, DType::kF32, Layout::kFlat)->name, "attention_f32");
  EXPECT_EQ(find_kernel(Op::kKvAppend, DType::kQ8_0, Layout::kFlat), nullptr);
  EXPECT_EQ(op_name(Op::kAttentionMerge), "attention_merge");
  EXPECT_EQ(op_name(Op::kSample), "sample");
}

}  // namespace
}  // namespace rdrr::kernels
