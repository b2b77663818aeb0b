// Tests of an op's argument rules: each case's call returns its StatusCode with a message naming the field, and a
// rejected call records nothing (kernels/ops_errors_vk_test.cpp, kernels/moe_vk_test.cpp).
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "quant/status.h"
#include "runtime/vk_test_fixture.h"

namespace rdrr::kernels::testing {

struct ErrorCase {
  const char* what;
  std::function<Status()> call;
  StatusCode code;
  const char* fragment;
};

class ErrorCasesTest : public runtime::testing::VulkanTest {
 protected:
  void expect_all(const std::vector<ErrorCase>& cases) {
    for (const ErrorCase& c : cases) {
      SCOPED_TRACE(c.what);
      const Status s = c.call();
      EXPECT_EQ(s.code(), c.code) << s.to_string();
      EXPECT_NE(s.message().find(c.fragment), std::string::npos) << s.message();
    }
    EXPECT_EQ(rec().dispatch_count(), 0u);
  }
};

}  // namespace rdrr::kernels::testing
