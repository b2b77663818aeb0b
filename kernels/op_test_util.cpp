#include "kernels/op_test_util.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <iomanip>
#include <sstream>

#include "runtime/vk_test_fixture.h"

namespace rdrr::kernels::testing {

using runtime::testing::kPoisonBits;

namespace {

uint64_t elem_count(std::span<const uint64_t> shape) {
  uint64_t n = 1;
  for (uint64_t d : shape) n *= d;
  return n;
}

// "[1, 17]": flat index i as a multi-index of `shape`.
std::string index_text(std::span<const uint64_t> shape, uint64_t i) {
  std::vector<uint64_t> idx(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    const uint64_t extent = std::max<uint64_t>(shape[d], 1);
    idx[d] = i % extent;
    i /= extent;
  }
  std::string s = "[";
  for (size_t d = 0; d < idx.size(); ++d) {
    if (d > 0) s += ", ";
    s += std::to_string(idx[d]);
  }
  s += "]";
  return s;
}

// One device buffer: [offset lead-in bytes][size bytes: the bound range][pad to a word][kGuardWords words].
struct Slot {
  runtime::Buffer buffer;
  uint64_t offset = 0;
  uint64_t size = 0;
  std::byte lead_fill{0};
  uint64_t guard_start() const { return (offset + size + 3) / 4 * 4; }
  uint64_t total() const { return guard_start() + 4 * uint64_t{kGuardWords}; }
  runtime::BufferRange range() const { return buffer.range().sub(offset, size); }
};

void put_poison(std::vector<std::byte>& image, uint64_t from) {
  for (uint64_t at = from; at + 4 <= image.size(); at += 4) std::memcpy(image.data() + at, &kPoisonBits, 4);
}

// Allocates and uploads a slot whose range holds `bytes` (nullptr: poison words).
Slot make_slot(runtime::Device& dev, const std::string& name, const std::byte* bytes, uint64_t size, uint64_t offset,
               std::byte lead_fill) {
  Slot s;
  s.offset = offset;
  s.size = size;
  s.lead_fill = lead_fill;
  std::vector<std::byte> image(s.total(), lead_fill);
  put_poison(image, bytes != nullptr ? s.guard_start() : offset);
  if (bytes != nullptr && size > 0) std::memcpy(image.data() + offset, bytes, size);
  Result<runtime::Buffer> b = dev.allocate(image.size(), name);
  EXPECT_TRUE(b.ok()) << name << ": " << b.status().to_string();
  if (!b.ok()) return s;
  s.buffer = std::move(b).value();
  const Status st = dev.upload(s.buffer.range(), image);
  EXPECT_TRUE(st.ok()) << name << ": " << st.to_string();
  return s;
}

std::vector<std::byte> read_back(runtime::Device& dev, const Slot& s) {
  std::vector<std::byte> image(s.total());
  if (!s.buffer) return {};
  const Status st = dev.download(s.buffer.range(), image);
  EXPECT_TRUE(st.ok()) << st.to_string();
  return image;
}

// The lead-in and the guard words of a slot must be as uploaded.
void expect_margins_intact(const std::string& where, const Slot& s, std::span<const std::byte> image) {
  if (image.empty()) return;
  for (uint64_t i = 0; i < s.offset; ++i) {
    if (image[i] != s.lead_fill) {
      ADD_FAILURE() << where << ": stray write at byte " << i << " of the lead-in before the range";
      break;
    }
  }
  for (uint32_t w = 0; w < kGuardWords; ++w) {
    uint32_t bits = 0;
    std::memcpy(&bits, image.data() + s.guard_start() + 4 * w, 4);
    if (bits != kPoisonBits) {
      ADD_FAILURE() << where << ": stray write at guard word " << w << " past the range (0x" << std::hex << bits
                    << ")";
      break;
    }
  }
}

struct Comparison {
  double error = INFINITY;  // in the metric
  uint64_t worst = 0;       // the element farthest from its reference (kBitExact: the first mismatch)
  double worst_abs = 0.0;
  uint64_t mismatches = 0;  // kBitExact
};

Comparison compare(std::span<const float> got, std::span<const double> ref, Metric metric) {
  Comparison c;
  double num = 0.0, den = 0.0;
  uint64_t first_mismatch = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    double d = std::abs(double(got[i]) - ref[i]);
    if (std::isnan(d)) d = INFINITY;  // a NaN (an unwritten element) is the worst there is
    if (i == 0 || d > c.worst_abs) {
      c.worst_abs = d;
      c.worst = i;
    }
    num += d * d;
    den += ref[i] * ref[i];
    const float want = static_cast<float>(ref[i]);
    if (std::memcmp(&got[i], &want, 4) != 0 && c.mismatches++ == 0) first_mismatch = i;
  }
  if (metric == Metric::kBitExact && c.mismatches > 0) {  // -0 vs +0 differs in bits, not in value
    c.worst = first_mismatch;
    c.worst_abs = std::abs(double(got[first_mismatch]) - ref[first_mismatch]);
  }
  switch (metric) {
    case Metric::kNmse: c.error = den > 0.0 ? num / den : num; break;
    case Metric::kMaxAbs: c.error = c.worst_abs; break;
    case Metric::kBitExact: c.error = static_cast<double>(c.mismatches); break;
  }
  return c;
}

const char* metric_name(Metric m) {
  switch (m) {
    case Metric::kNmse: return "NMSE";
    case Metric::kMaxAbs: return "max |err|";
    case Metric::kBitExact: return "bit mismatches";
  }
  return "?";
}

bool within(const Comparison& c, const Tolerance& t) {
  switch (t.metric) {
    case Metric::kNmse: return c.error < t.bound;
    case Metric::kMaxAbs: return c.error <= t.bound;
    case Metric::kBitExact: return c.mismatches == 0;
  }
  return false;
}

// Compares one output's values; returns its error in its metric.
double check_output(const OpCase& c, const OpOutput& o, std::span<const float> got, uint32_t dispatches) {
  const std::string where = c.name + " " + o.name;
  if (o.ref.size() != got.size() || got.empty()) {
    ADD_FAILURE() << where << ": reference has " << o.ref.size() << " elements, shape " << shape_text(o.shape)
                  << " has " << got.size();
    return INFINITY;
  }
  size_t non_finite = 0;
  for (float f : got) non_finite += std::isfinite(f) ? 0 : 1;
  EXPECT_EQ(non_finite, 0u) << where << ": unwritten or non-finite outputs";
  const Comparison cmp = compare(got, o.ref, o.tol.metric);
  const std::string worst = o.name + index_text(o.shape, cmp.worst);
  std::ostringstream at;
  at << std::setprecision(9) << worst << ": got " << got[cmp.worst] << ", reference " << o.ref[cmp.worst] << " (|err| " << cmp.worst_abs << ")";
  if (o.tol.metric == Metric::kBitExact) {
    std::printf("  %s: %llu of %zu elements differ in bits; %u dispatch(es)\n", where.c_str(),
                static_cast<unsigned long long>(cmp.mismatches), got.size(), dispatches);
  } else {
    std::printf("  %s: %s %.3e (bound %.0e), worst %s; %u dispatch(es)\n", where.c_str(), metric_name(o.tol.metric),
                cmp.error, o.tol.bound, at.str().c_str(), dispatches);
  }
  if (!within(cmp, o.tol)) {
    if (o.tol.metric == Metric::kBitExact) {
      ADD_FAILURE() << where << ": " << cmp.mismatches << " of " << got.size()
                    << " elements differ in bits from the reference; first " << at.str();
    } else {
      ADD_FAILURE() << where << ": " << metric_name(o.tol.metric) << " " << cmp.error << " over the bound "
                    << o.tol.bound << "; worst element " << at.str();
    }
  }
  if (o.check) o.check(got);
  return cmp.error;
}

std::vector<float> floats_at(std::span<const std::byte> image, uint64_t offset, uint64_t n) {
  std::vector<float> v(n);
  if (image.size() >= offset + n * 4) std::memcpy(v.data(), image.data() + offset, n * 4);
  return v;
}

const OpInput* find_input(const OpCase& c, std::string_view name) {
  for (const OpInput& in : c.inputs) {
    if (in.name == name) return &in;
  }
  return nullptr;
}

}  // namespace

runtime::BufferRange OpBindings::operator[](std::string_view name) const {
  for (const auto& [n, r] : ranges_) {
    if (n == name) return r;
  }
  ADD_FAILURE() << "op case binds no buffer named '" << name << "'";
  return {};
}

OpOutcome run_op_case(runtime::Device& dev, runtime::Recorder& rec, const OpCase& c) {
  SCOPED_TRACE(c.name);
  OpOutcome outcome;
  outcome.errors.assign(c.outputs.size(), INFINITY);
  OpBindings bind;
  std::vector<Slot> in_slots, out_slots;
  for (const OpInput& in : c.inputs) {
    in_slots.push_back(make_slot(dev, in.name, in.bytes.data(), in.bytes.size(), in.offset, in.lead_fill));
    bind.add(in.name, in_slots.back().range());
  }
  for (const OpOutput& o : c.outputs) {
    const bool own = o.in_place_of.empty();
    EXPECT_TRUE(own || find_input(c, o.in_place_of) != nullptr) << o.name << ": no input " << o.in_place_of;
    out_slots.push_back(own ? make_slot(dev, o.name, nullptr, elem_count(o.shape) * 4, 0, std::byte{0}) : Slot{});
    if (own) bind.add(o.name, out_slots.back().range());
  }
  for (const OpOutput& o : c.outputs) {
    if (!o.in_place_of.empty()) bind.add(o.name, bind[o.in_place_of]);
  }
  const Status s = c.record(rec, bind);
  EXPECT_TRUE(s.ok()) << c.name << ": " << s.to_string();
  Result<runtime::SubmitResult> r = rec.submit_and_wait();
  EXPECT_TRUE(r.ok()) << c.name << ": " << r.status().to_string();
  if (!s.ok() || !r.ok()) return outcome;
  outcome.ran = true;
  outcome.dispatches = r->dispatches;
  std::vector<std::vector<std::byte>> in_images;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    in_images.push_back(read_back(dev, in_slots[i]));
    expect_margins_intact(c.name + " input " + c.inputs[i].name, in_slots[i], in_images.back());
  }
  for (size_t i = 0; i < c.outputs.size(); ++i) {
    const OpOutput& o = c.outputs[i];
    std::vector<float> got;
    if (o.in_place_of.empty()) {
      const std::vector<std::byte> image = read_back(dev, out_slots[i]);
      expect_margins_intact(c.name + " output " + o.name, out_slots[i], image);
      got = floats_at(image, 0, elem_count(o.shape));
    } else {
      const size_t k = static_cast<size_t>(find_input(c, o.in_place_of) - c.inputs.data());
      got = floats_at(in_images[k], in_slots[k].offset, elem_count(o.shape));
    }
    outcome.errors[i] = check_output(c, o, got, outcome.dispatches);
  }
  return outcome;
}

OpInput f32_input(std::string name, std::vector<uint64_t> shape, std::span<const float> values) {
  EXPECT_EQ(elem_count(shape), values.size()) << name << ": shape " << shape_text(shape);
  const auto b = std::as_bytes(values);
  return {std::move(name), "f32", std::move(shape), {b.begin(), b.end()}};
}

OpInput i32_input(std::string name, std::span<const int32_t> values) {
  const auto b = std::as_bytes(values);
  return {std::move(name), "i32", {values.size()}, {b.begin(), b.end()}};
}

OpInput u32_input(std::string name, std::span<const uint32_t> values) {
  const auto b = std::as_bytes(values);
  return {std::move(name), "u32", {values.size()}, {b.begin(), b.end()}};
}

OpInput packed_input(std::string name, quant::DType dtype, quant::Layout layout, uint64_t rows, uint64_t cols,
                     std::span<const std::byte> bytes, uint32_t offset, std::byte lead_fill) {
  std::string type = std::string(quant::dtype_name(dtype)) + " " + std::string(quant::layout_name(layout));
  return raw_input(std::move(name), std::move(type), {rows, cols}, bytes, offset, lead_fill);
}

OpInput raw_input(std::string name, std::string type, std::vector<uint64_t> shape, std::span<const std::byte> bytes,
                  uint32_t offset, std::byte lead_fill) {
  return {std::move(name), std::move(type), std::move(shape), {bytes.begin(), bytes.end()}, offset, lead_fill};
}

OpInput poisoned_scratch(std::string name, uint64_t bytes) {
  std::vector<std::byte> b(bytes);
  put_poison(b, 0);
  return {std::move(name), "scratch", {bytes}, std::move(b)};
}

OpOutput f32_output(std::string name, std::vector<uint64_t> shape, std::vector<double> ref, Tolerance tol,
                    std::string in_place_of) {
  return {std::move(name), std::move(shape), std::move(ref), tol, std::move(in_place_of), {}};
}

std::vector<double> to_double(std::span<const float> v) { return {v.begin(), v.end()}; }

std::string shape_text(std::span<const uint64_t> shape) {
  std::string s;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (d > 0) s += "x";
    s += std::to_string(shape[d]);
  }
  return s;
}

}  // namespace rdrr::kernels::testing
