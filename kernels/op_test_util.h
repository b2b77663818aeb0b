// Op-test harness of the kernel differential tests (*_vk_test.cpp), in the spirit of llama.cpp's
// test-backend-ops: a test describes one op case as an OpCase (its inputs with shapes and types, the function
// that records the op on device buffers, and per output a double-precision reference, a metric and a
// tolerance), and run_op_case does the rest the same way for every kernel:
//   1. allocates one buffer per input, the tensor `offset` bytes in (lead-in of `lead_fill`), followed by
//      kGuardWords words of kPoisonBits, and uploads it;
//   2. allocates one buffer per output (unless it is written in place of an input) filled with kPoisonBits
//      (a NaN: an element the op never writes stays NaN), guard words included;
//   3. records the op on the bound ranges (OpBindings, by name), submits and waits;
//   4. reads every buffer back: lead-ins and guards must be unchanged (a stray write before or past a range
//      fails, naming the buffer and the word), outputs must be finite and within their tolerance of the
//      reference; a failure names the case, the output, the metric and the worst element (multi-index, got,
//      reference). Each output's error is printed (`  <case> <output>: NMSE ...`) and returned.
// Test-only: linked into kernels_vk_tests (kernels/ tests may use runtime/).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "quant/dtype.h"
#include "quant/status.h"
#include "runtime/device.h"
#include "runtime/memory.h"
#include "runtime/recorder.h"

namespace rdrr::kernels::testing {

// How an output is compared to its reference.
//   kNmse:     sum((got - ref)^2) / sum(ref^2) < bound (llama.cpp test-backend-ops' NMSE; runtime/vk_test_fixture.h)
//   kMaxAbs:   max |got - ref| <= bound
//   kBitExact: every float bit for bit equal to float(ref) (bound unused; the error is the mismatch count)
enum class Metric { kNmse, kMaxAbs, kBitExact };

struct Tolerance {
  Metric metric = Metric::kNmse;
  double bound = 0.0;

  static constexpr Tolerance nmse(double bound) { return {Metric::kNmse, bound}; }
  static constexpr Tolerance max_abs(double bound) { return {Metric::kMaxAbs, bound}; }
  static constexpr Tolerance bit_exact() { return {Metric::kBitExact, 0.0}; }
};

inline constexpr uint32_t kGuardWords = 8;  // poisoned words after every buffer's range

// A buffer the op reads (or a scratch it uses): uploaded as given.
struct OpInput {
  std::string name;                // the binding name (OpBindings)
  std::string type;                // element type / packing, for messages: "f32", "u32", "Q4_K row_wise", ...
  std::vector<uint64_t> shape;     // logical shape, outermost first, for messages
  std::vector<std::byte> bytes;    // the bound range's contents
  uint32_t offset = 0;             // bytes before the range in its buffer (the op must not need offset 0)
  std::byte lead_fill{0x5a};       // those bytes' value
};

// An f32 result compared to a double reference.
struct OpOutput {
  std::string name;                // the binding name
  std::vector<uint64_t> shape;     // f32 elements, outermost first
  std::vector<double> ref;         // the double-precision reference, shape's element count
  Tolerance tol;
  std::string in_place_of;         // empty: an own NaN-poisoned buffer; else the input the op overwrites
  std::function<void(std::span<const float>)> check;  // optional further expectations on the result
};

// The ranges an op case is recorded on, by input / output name.
class OpBindings {
 public:
  // The named range; a test failure (and an empty range) for an unknown name.
  runtime::BufferRange operator[](std::string_view name) const;
  void add(std::string name, const runtime::BufferRange& r) { ranges_.emplace_back(std::move(name), r); }

 private:
  std::vector<std::pair<std::string, runtime::BufferRange>> ranges_;
};

struct OpCase {
  std::string name;                // op and parameters, e.g. "rms_norm rows=3 d=301": messages and printed lines
  std::vector<OpInput> inputs;
  std::vector<OpOutput> outputs;
  // Records the op (one call or several) on the bound ranges; run_op_case submits.
  std::function<Status(runtime::Recorder&, const OpBindings&)> record;
};

struct OpOutcome {
  bool ran = false;                // recorded and submitted without error
  uint32_t dispatches = 0;         // of the submission
  std::vector<double> errors;      // per output, in its metric (INFINITY when not run)
};

// Runs one case on `dev` through `rec` (see the top of this file). Failures are gtest failures naming the case.
OpOutcome run_op_case(runtime::Device& dev, runtime::Recorder& rec, const OpCase& c);

// Input builders.
OpInput f32_input(std::string name, std::vector<uint64_t> shape, std::span<const float> values);
OpInput i32_input(std::string name, std::span<const int32_t> values);
OpInput u32_input(std::string name, std::span<const uint32_t> values);
// A packed [rows, cols] weight (the bytes of testing::PackedWeight) at `offset` in its buffer.
OpInput packed_input(std::string name, quant::DType dtype, quant::Layout layout, uint64_t rows, uint64_t cols,
                     std::span<const std::byte> bytes, uint32_t offset, std::byte lead_fill);
// Any bytes (e.g. quantized blocks) of the given type and shape at `offset` in their buffer.
OpInput raw_input(std::string name, std::string type, std::vector<uint64_t> shape, std::span<const std::byte> bytes,
                  uint32_t offset, std::byte lead_fill);
// `bytes` bytes of kPoisonBits words (a split-K scratch: a partial the op forgets to write stays NaN).
OpInput poisoned_scratch(std::string name, uint64_t bytes);

// An output (`in_place_of` an input, or empty for an own NaN-poisoned buffer); set `check` on the result if needed.
OpOutput f32_output(std::string name, std::vector<uint64_t> shape, std::vector<double> ref, Tolerance tol,
                    std::string in_place_of = {});

std::vector<double> to_double(std::span<const float> v);
// "3x301": a shape for case names.
std::string shape_text(std::span<const uint64_t> shape);

}  // namespace rdrr::kernels::testing
