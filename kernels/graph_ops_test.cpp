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
  EXPECT_EQ(kernel_companions("gemv_q4_k_col_split")[0], "gemv_reduce");
}

}  // namespace
}  // namespace rdrr::kernels
