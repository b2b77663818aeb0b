#include "kernels/kernel_choice.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

namespace rdrr::kernels {
namespace {

using quant::DType;
using quant::Layout;

std::string_view pinned(MatmulPass p, DType d, Layout l, uint64_t k) {
  const KernelInfo* info = pinned_matmul_kernel(p, d, l, k);
  return info == nullptr ? std::string_view("none") : info->name;
}

TEST(KernelChoice, CompanionsAndVariantsAreRegistryKernels) {
  size_t with = 0;
  for (const KernelInfo& k : all_kernels()) {
    for (std::string_view c : kernel_companions(k.name)) {
      ++with;
      EXPECT_NE(find_kernel(c), nullptr) << k.name << " -> " << c;
      EXPECT_NE(c, k.name);
    }
    // A device choice is a companion or an optional variant: pinned with the kernel.
    for (const DeviceChoice& c : device_choices(k.name)) {
      const auto comp = kernel_companions(k.name);
      const auto vars = kernel_variants(k.name);
      EXPECT_TRUE(std::find(comp.begin(), comp.end(), c.kernel) != comp.end() ||
                  std::find(vars.begin(), vars.end(), c.kernel) != vars.end())
          << k.name << " -> " << c.kernel;
      EXPECT_FALSE(c.when.empty());
    }
  }
  EXPECT_GT(with, 0u);
  EXPECT_TRUE(kernel_companions("gemv_f32").empty());
  EXPECT_TRUE(kernel_companions("no_such_kernel").empty());
  ASSERT_EQ(kernel_companions("gemv_q4_k_col_split").size(), 1u);
  EXPECT_EQ(kernel_companions("gemv_q4_k_col_split")[0], "gemv_reduce");
  // Every gemm kernel but f32 has a cooperative-matrix variant of the same dtypes, layouts and bindings.
  for (const KernelInfo& k : all_kernels()) {
    if (k.op != Op::kGemm || is_coopmat_kernel(k.name)) continue;
    const auto variants = kernel_variants(k.name);
    if (k.name == "gemm_f32") {
      EXPECT_TRUE(variants.empty());
      continue;
    }
    ASSERT_EQ(variants.size(), 1u) << k.name;
    const KernelInfo* v = find_kernel(variants[0]);
    ASSERT_NE(v, nullptr) << variants[0];
    EXPECT_EQ(v->name, std::string(k.name) + "_cm");
    EXPECT_TRUE(is_optional_variant(v->name));
    EXPECT_EQ(v->op, Op::kGemm);
    EXPECT_TRUE(std::equal(v->dtypes.begin(), v->dtypes.end(), k.dtypes.begin(), k.dtypes.end())) << v->name;
    EXPECT_TRUE(std::equal(v->layouts.begin(), v->layouts.end(), k.layouts.begin(), k.layouts.end())) << v->name;
    EXPECT_EQ(v->bindings.size(), k.bindings.size()) << v->name;
    EXPECT_EQ(v->push_constant_bytes, k.push_constant_bytes) << v->name;
  }
  EXPECT_TRUE(kernel_variants("gemv_q4_k").empty());
  EXPECT_FALSE(is_optional_variant("gemm_q4_k"));
}

// Expert steps: the vectorized expert GEMVs of Q4_K / Q5_K / Q6_K where rows are whole blocks and K % 4 == 0,
// else the generic kernel of the dtype.
TEST(KernelChoice, PinnedMoeKernel) {
  const auto name = [](Op op, DType dt, Layout l, uint64_t k) {
    const KernelInfo* info = pinned_moe_kernel(op, dt, l, k);
    return info == nullptr ? std::string("none") : std::string(info->name);
  };
  EXPECT_EQ(name(Op::kMoeGemv, DType::kQ4_K, Layout::kRowWise, 512), "moe_gemv_q4_k_vec");
  EXPECT_EQ(name(Op::kMoeGemv, DType::kQ5_K, Layout::kRowWise, 512), "moe_gemv_q5_k_vec");
  EXPECT_EQ(name(Op::kMoeGemvCombine, DType::kQ5_K, Layout::kRowWise, 300), "moe_gemv_combine_q5_k_vec");
  EXPECT_EQ(name(Op::kMoeGemvCombine, DType::kQ6_K, Layout::kFlat, 512), "moe_gemv_combine_q6_k_vec");
  EXPECT_EQ(name(Op::kMoeGemv, DType::kQ5_K, Layout::kRowWise, 30), "moe_gemv_q5_k");  // K % 4 != 0
  EXPECT_EQ(name(Op::kMoeGemv, DType::kQ5_K, Layout::kFlat, 300), "moe_gemv_q5_k");    // rows cross blocks
  EXPECT_EQ(name(Op::kMoeGemv, DType::kQ8_0, Layout::kRowWise, 512), "moe_gemv_q8_0");
}

TEST(KernelChoice, PinnedMatmulKernel) {
  const auto D = MatmulPass::kDecode;
  const auto P = MatmulPass::kPrefill;
  EXPECT_EQ(pinned(D, DType::kQ4_K, Layout::kColumnWise, 4096), "gemv_q4_k_col_split");
  EXPECT_EQ(pinned(D, DType::kQ4_K, Layout::kRowWise, 100), "gemv_q4_k_vec");  // padded rows: whole blocks
  EXPECT_EQ(pinned(D, DType::kQ4_K, Layout::kFlat, 512), "gemv_q4_k_vec");
  EXPECT_EQ(pinned(D, DType::kQ4_K, Layout::kFlat, 300), "gemv_q4_k");         // rows cross blocks
  EXPECT_EQ(pinned(D, DType::kQ6_K, Layout::kRowWise, 64), "gemv_q6_k_vec");
  EXPECT_EQ(pinned(D, DType::kQ5_K, Layout::kRowWise, 100), "gemv_q5_k_vec");  // padded rows: whole blocks
  EXPECT_EQ(pinned(D, DType::kQ5_K, Layout::kFlat, 512), "gemv_q5_k_vec");
  EXPECT_EQ(pinned(D, DType::kQ5_K, Layout::kFlat, 300), "gemv_q5_k");         // rows cross blocks
  EXPECT_EQ(pinned(D, DType::kQ6_K, Layout::kRowWise, 30), "gemv_q6_k");       // K % 4 != 0
  EXPECT_EQ(pinned(D, DType::kQ6_K, Layout::kFlat, 300), "gemv_q6_k");
  EXPECT_EQ(pinned(D, DType::kQ6_K, Layout::kColumnWise, 256), "none");
  EXPECT_EQ(pinned(D, DType::kF16, Layout::kRowWise, 64), "gemv_f16");
  EXPECT_EQ(pinned(D, DType::kQ8_0, Layout::kRowWise, 64), "gemv_q8_0");
  EXPECT_EQ(pinned(D, DType::kBF16, Layout::kRowWise, 64), "none");
  EXPECT_EQ(pinned(P, DType::kQ4_K, Layout::kRowWise, 4096), "gemm_q4_k");
  EXPECT_EQ(pinned(P, DType::kQ4_K, Layout::kColumnWise, 4096), "gemm_q4_k_col");
  EXPECT_EQ(pinned(P, DType::kF32, Layout::kRowWise, 7), "gemm_f32");
  // What the planner pins, the fit rule accepts.
  for (const DType d : {DType::kF32, DType::kF16, DType::kQ8_0, DType::kQ6_K, DType::kQ4_K}) {
    for (const Layout l : {Layout::kFlat, Layout::kRowWise, Layout::kColumnWise}) {
      for (const uint64_t k : {30u, 64u, 300u, 512u}) {
        const KernelInfo* info = pinned_matmul_kernel(D, d, l, k);
        if (info != nullptr) {
          EXPECT_TRUE(matmul_kernel_fits(*info, l, k)) << info->name << " K=" << k;
        }
      }
    }
  }
  std::string_view why;
  EXPECT_FALSE(matmul_kernel_fits(*find_kernel("gemv_q6_k_vec"), Layout::kRowWise, 30, &why));
  EXPECT_EQ(why, "rows not whole blocks or K not a multiple of 4");
  EXPECT_FALSE(matmul_kernel_fits(*find_kernel("gemv_q4_k_dot"), Layout::kFlat, 300, &why));
  EXPECT_TRUE(matmul_kernel_fits(*find_kernel("gemv_q4_k"), Layout::kFlat, 300));
}

TEST(KernelChoice, DeviceGemvKernel) {
  const KernelInfo& vec = *find_kernel("gemv_q4_k_vec");
  const DeviceFacts none;
  const DeviceFacts dot{.int_dot_usable = true, .int_dot_fast = true};
  const DeviceFacts slow_dot{.int_dot_usable = true, .int_dot_fast = false};
  auto run = [&](const KernelInfo& k, uint32_t kk, const DeviceFacts& f, Q4KDecode m) {
    Result<const KernelInfo*> r = device_gemv_kernel(k, kk, f, m);
    return r.ok() ? (*r)->name : std::string_view("error");
  };
  EXPECT_EQ(run(vec, 8192, dot, Q4KDecode::kAuto), "gemv_q4_k_dot");
  EXPECT_EQ(run(vec, 8191, dot, Q4KDecode::kAuto), "gemv_q4_k_vec");
  EXPECT_EQ(run(vec, 8192, slow_dot, Q4KDecode::kAuto), "gemv_q4_k_vec");
  EXPECT_EQ(run(vec, 8192, none, Q4KDecode::kAuto), "gemv_q4_k_vec");
  EXPECT_EQ(run(vec, 8192, dot, Q4KDecode::kF32), "gemv_q4_k_vec");
  EXPECT_EQ(run(vec, 64, slow_dot, Q4KDecode::kIntDot), "gemv_q4_k_dot");
  EXPECT_EQ(run(vec, 64, none, Q4KDecode::kIntDot), "error");
  EXPECT_EQ(run(*find_kernel("gemv_q4_k_dot"), 64, none, Q4KDecode::kAuto), "error");
  // Nothing else is ever swapped.
  EXPECT_EQ(run(*find_kernel("gemv_q4_k"), 8192, dot, Q4KDecode::kIntDot), "gemv_q4_k");
  EXPECT_EQ(run(*find_kernel("gemv_q6_k_vec"), 8192, dot, Q4KDecode::kAuto), "gemv_q6_k_vec");
}

TEST(KernelChoice, DeviceGemmKernel) {
  const KernelInfo& base = *find_kernel("gemm_q4_k");
  const DeviceFacts cm{.coopmat_f16 = true};
  auto yes = [](std::string_view) { return true; };
  auto no = [](std::string_view) { return false; };
  EXPECT_EQ(device_gemm_kernel(base, kCoopmatAboveRows + 1, cm, true, yes)->name, "gemm_q4_k_cm");
  EXPECT_EQ(device_gemm_kernel(base, kCoopmatAboveRows, cm, true, yes)->name, "gemm_q4_k");
  EXPECT_EQ(device_gemm_kernel(base, 512, cm, true, no)->name, "gemm_q4_k");    // not pinned
  EXPECT_EQ(device_gemm_kernel(base, 512, cm, false, yes)->name, "gemm_q4_k");  // tuned / switched off
  EXPECT_EQ(device_gemm_kernel(base, 512, DeviceFacts{}, true, yes)->name, "gemm_q4_k");
  EXPECT_EQ(device_gemm_kernel(*find_kernel("gemm_f32"), 512, cm, true, yes)->name, "gemm_f32");
  EXPECT_EQ(rope_kernel(true), "rope_freqs");
  EXPECT_EQ(rope_kernel(false), "rope");
}

}  // namespace
}  // namespace rdrr::kernels
