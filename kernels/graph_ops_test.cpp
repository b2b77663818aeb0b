#include "kernels/graph_ops.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

namespace rdrr::kernels {
namespace {

TEST(GraphOps, SortedUniqueAndFindable) {
  const auto ops = all_graph_ops();
  ASSERT_FALSE(ops.empty());
  for (size_t i = 1; i < ops.size(); ++i) EXPECT_LT(ops[i - 1].name, ops[i].name) << ops[i].name;
  for (const GraphOpInfo& o : ops) {
    EXPECT_EQ(find_graph_op(o.name), &o) << o.name;
    EXPECT_FALSE(o.kernel_ops.empty()) << o.name;
    EXPECT_FALSE(o.semantics.empty()) << o.name;
    for (char c : o.name) EXPECT_TRUE((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_') << o.name;
  }
  EXPECT_EQ(find_graph_op("matmul"), nullptr);
  EXPECT_EQ(find_graph_op(""), nullptr);
}

TEST(GraphOps, EveryOpHasARegistryKernel) {
  for (const GraphOpInfo& o : all_graph_ops()) {
    const bool any = std::any_of(all_kernels().begin(), all_kernels().end(), [&](const KernelInfo& k) {
      return std::find(o.kernel_ops.begin(), o.kernel_ops.end(), k.op) != o.kernel_ops.end();
    });
    EXPECT_TRUE(any) << o.name;
  }
}

TEST(GraphOps, CompanionsAreRegistryKernels) {
  size_t with = 0;
  for (const KernelInfo& k : all_kernels()) {
    for (std::string_view c : kernel_companions(k.name)) {
      ++with;
      EXPECT_NE(find_kernel(c), nullptr) << k.name << " -> " << c;
      EXPECT_NE(c, k.name);
    }
  }
  EXPECT_GT(with, 0u);
  EXPECT_TRUE(kernel_companions("gemv_f32").empty());
  EXPECT_TRUE(kernel_companions("no_such_kernel").empty());
  ASSERT_EQ(kernel_companions("gemv_q4_k_col_split").size(), 1u);
  // Every gemm kernel but f32 has a cooperative-matrix variant of the same dtypes, layouts and bindings.
  for (const KernelInfo& k : all_kernels()) {
    if (k.op != Op::kGemm || k.name.ends_with("_cm")) continue;
    const auto variants = kernel_variants(k.name);
    if (k.name == "gemm_f32") {
      EXPECT_TRUE(variants.empty());
      continue;
    }
    ASSERT_EQ(variants.size(), 1u) << k.name;
    const KernelInfo* v = find_kernel(variants[0]);
    ASSERT_NE(v, nullptr) << variants[0];
    EXPECT_EQ(v->name, std::string(k.name) + "_cm");
    EXPECT_EQ(v->op, Op::kGemm);
    EXPECT_TRUE(std::equal(v->dtypes.begin(), v->dtypes.end(), k.dtypes.begin(), k.dtypes.end())) << v->name;
    EXPECT_TRUE(std::equal(v->layouts.begin(), v->layouts.end(), k.layouts.begin(), k.layouts.end())) << v->name;
    EXPECT_EQ(v->bindings.size(), k.bindings.size()) << v->name;
    EXPECT_EQ(v->push_constant_bytes, k.push_constant_bytes) << v->name;
  }
  EXPECT_TRUE(kernel_variants("gemv_q4_k").empty());
  EXPECT_EQ(kernel_companions("gemv_q4_k_col_split")[0], "gemv_reduce");
}

}  // namespace
}  // namespace rdrr::kernels
