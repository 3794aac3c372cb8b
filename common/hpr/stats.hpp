#pragma once
// Small statistics helpers for benchmarks and telemetry: median, percentiles, spread.
#include <algorithm>
#include <cmath>
#include <vector>

namespace hpr {

// p in [0,100]; nearest-rank on a copy. Empty input gives 0.
inline double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  double rank = p / 100.0 * static_cast<double>(v.size() - 1);
  auto lo = static_cast<size_t>(std::floor(rank));
  auto hi = static_cast<size_t>(std::ceil(rank));
  double frac = rank - static_cast<double>(lo);
  return v[lo] + (v[hi] - v[lo]) * frac;
}

inline double median(const std::vector<double>& v) { return percentile(v, 50.0); }

struct Summary {
  double median = 0, p1 = 0, p99 = 0, min = 0, max = 0;
  // Relative spread: (p90 - p10) / median, as used in bench reports.
  double spread = 0;
};

inline Summary summarize(const std::vector<double>& v) {
  Summary s;
  if (v.empty()) return s;
  s.median = median(v);
  s.p1 = percentile(v, 1);
  s.p99 = percentile(v, 99);
  s.min = *std::min_element(v.begin(), v.end());
  s.max = *std::max_element(v.begin(), v.end());
  s.spread = s.median != 0 ? (percentile(v, 90) - percentile(v, 10)) / s.median : 0;
  return s;
}

}  // namespace hpr
