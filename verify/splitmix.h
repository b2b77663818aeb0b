// SplitMix64 (Steele, Lea, Flood 2014): the fixed-seed stream behind golden prompt ids and calibration samples.
// The same numbers on every platform (integer arithmetic only; the unit value is an exact 53-bit fraction).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <span>
#include <vector>

namespace rdrr::verify {

inline uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// Uniform in [0, 1).
inline double splitmix64_unit(uint64_t& state) { return static_cast<double>(splitmix64(state) >> 11) * 0x1.0p-53; }

// A token drawn at temperature 1 from `logits` (softmax in double) with one uniform of `state`.
inline int32_t sample_token(std::span<const double> logits, uint64_t& state) {
  double mx = -INFINITY;
  for (double l : logits) mx = std::max(mx, l);
  std::vector<double> p(logits.size());
  double z = 0;
  for (size_t i = 0; i < p.size(); ++i) z += (p[i] = std::exp(logits[i] - mx));
  double u = splitmix64_unit(state) * z;
  size_t pick = 0;
  while (pick + 1 < p.size() && (u -= p[pick]) >= 0) ++pick;
  return static_cast<int32_t>(pick);
}

}  // namespace rdrr::verify
