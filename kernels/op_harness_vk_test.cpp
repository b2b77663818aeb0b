// The op-test harness (op_test_util.h) fails where it should: an output over its tolerance (naming the worst
// element), an unwritten output, a stray write past a range or into an input's lead-in, a bit mismatch; and
// passes a correct case, returning its error and dispatch count.
#include <gtest/gtest-spi.h>

#include <functional>
#include <string>
#include <vector>

#include "kernels/op_test_util.h"
#include "runtime/ops.h"
#include "runtime/vk_test_fixture.h"

namespace rdrr::kernels {
namespace {

using runtime::testing::VulkanTest;
using testing::OpBindings;
using testing::OpCase;
using testing::Tolerance;

// The failure messages `f` produces (intercepted: they do not fail this test).
std::vector<std::string> failures_of(const std::function<void()>& f) {
  ::testing::TestPartResultArray results;
  {
    ::testing::ScopedFakeTestPartResultReporter reporter(
        ::testing::ScopedFakeTestPartResultReporter::INTERCEPT_ONLY_CURRENT_THREAD, &results);
    f();
  }
  std::vector<std::string> out;
  for (int i = 0; i < results.size(); ++i) out.emplace_back(results.GetTestPartResult(i).message());
  return out;
}

bool any_contains(const std::vector<std::string>& msgs, const std::string& fragment) {
  for (const std::string& m : msgs) {
    if (m.find(fragment) != std::string::npos) return true;
  }
  return false;
}

std::string joined(const std::vector<std::string>& msgs) {
  std::string s;
  for (const std::string& m : msgs) s += m + "\n";
  return s;
}

// out = a + b over 8 values, a 32 bytes into its buffer; `ref` and the recording are the test's.
OpCase add_case(std::vector<double> ref, Tolerance tol,
                std::function<Status(runtime::Recorder&, const OpBindings&)> record) {
  const std::vector<float> a = {1, 2, 3, 4, 5, 6, 7, 8};
  const std::vector<float> b = {0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f};
  OpCase oc;
  oc.name = "add harness check";
  oc.inputs = {testing::f32_input("a", {8}, a), testing::f32_input("b", {8}, b)};
  oc.inputs[0].offset = 32;
  oc.outputs = {testing::f32_output("out", {2, 4}, std::move(ref), tol)};
  oc.record = std::move(record);
  return oc;
}

const std::vector<double> kSum = {1.5, 2.5, 3.5, 4.5, 5.5, 6.5, 7.5, 8.5};

Status plain_add(runtime::Recorder& rec, const OpBindings& b) {
  return runtime::record_add(rec, b["a"], b["b"], b["out"], 8);
}

class OpHarness : public VulkanTest {};

TEST_F(OpHarness, PassesACorrectCaseAndReturnsItsError) {
  const testing::OpOutcome o = testing::run_op_case(dev(), rec(), add_case(kSum, Tolerance::bit_exact(), plain_add));
  EXPECT_TRUE(o.ran);
  EXPECT_EQ(o.dispatches, 1u);
  ASSERT_EQ(o.errors.size(), 1u);
  EXPECT_EQ(o.errors[0], 0.0);
}

TEST_F(OpHarness, NamesTheWorstElementOverTheBound) {
  std::vector<double> ref = kSum;
  ref[6] = 7.0;  // out[1, 2]: off by 0.5
  ref[1] = 2.4;  // off by 0.1
  for (Tolerance tol : {Tolerance::nmse(1e-6), Tolerance::max_abs(0.2)}) {
    const auto msgs = failures_of([&] { testing::run_op_case(dev(), rec(), add_case(ref, tol, plain_add)); });
    EXPECT_EQ(msgs.size(), 1u) << joined(msgs);
    EXPECT_TRUE(any_contains(msgs, "add harness check out: ")) << joined(msgs);
    EXPECT_TRUE(any_contains(msgs, "worst element out[1, 2]: got 7.5, reference 7")) << joined(msgs);
  }
  const auto exact = failures_of([&] { testing::run_op_case(dev(), rec(), add_case(ref, Tolerance::bit_exact(), plain_add)); });
  EXPECT_TRUE(any_contains(exact, "2 of 8 elements differ in bits from the reference; first out[0, 1]")) << joined(exact);
}

TEST_F(OpHarness, UnwrittenOutputsFail) {
  const auto msgs = failures_of([&] {
    testing::run_op_case(dev(), rec(), add_case(kSum, Tolerance::nmse(1e-6), [](runtime::Recorder&, const OpBindings&) {
                           return Status();
                         }));
  });
  EXPECT_TRUE(any_contains(msgs, "unwritten or non-finite outputs")) << joined(msgs);
  EXPECT_TRUE(any_contains(msgs, "NMSE inf over the bound")) << joined(msgs);
}

TEST_F(OpHarness, StrayWritesPastARangeOrIntoALeadInFail) {
  // 12 sums of the last 4 lead-in words and the 8 values of a, written 4 words past out: into its guard (ranges
  // start on 16-byte boundaries: minStorageBufferOffsetAlignment).
  const auto past = failures_of([&] {
    testing::run_op_case(dev(), rec(), add_case(kSum, Tolerance::nmse(1e-6), [](runtime::Recorder& rec, const OpBindings& b) {
                           const runtime::BufferRange a = b["a"], out = b["out"];
                           const runtime::BufferRange lead_and_a{a.buffer, a.offset - 16, a.size + 16};
                           const runtime::BufferRange wide_out{out.buffer, out.offset, out.size + 16};
                           return runtime::record_add(rec, lead_and_a, lead_and_a, wide_out, 12);
                         }));
  });
  EXPECT_TRUE(any_contains(past, "add harness check output out: stray write at guard word 0")) << joined(past);
  // The correct sum, and 4 words written just before a (into its lead-in).
  const auto lead = failures_of([&] {
    testing::run_op_case(dev(), rec(), add_case(kSum, Tolerance::nmse(1e-6), [](runtime::Recorder& rec, const OpBindings& b) {
                           RDRR_RETURN_IF_ERROR(plain_add(rec, b));
                           const runtime::BufferRange a = b["a"];
                           return runtime::record_add(rec, b["b"], b["b"], {a.buffer, a.offset - 16, 16}, 4);
                         }));
  });
  EXPECT_EQ(lead.size(), 1u) << joined(lead);
  EXPECT_TRUE(any_contains(lead, "add harness check input a: stray write at byte 16 of the lead-in")) << joined(lead);
}

}  // namespace
}  // namespace rdrr::kernels
