#pragma once
// Small statistics helpers for benchmarks and telemetry: median, percentiles, spread (percentile, median and
// median_spread live in hpr/median_spread.hpp, which code that has its own `Summary` — pipeline/ — includes alone).
#include <algorithm>
#include <vector>

#include "hpr/median_spread.hpp"

namespace hpr {

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
