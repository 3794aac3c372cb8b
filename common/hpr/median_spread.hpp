#pragma once
// Percentiles, the median, and the median and spread of repeated measurements. Kept apart from hpr/stats.hpp
// (whose `hpr::Summary` would clash with pipeline/summary.hpp's) so that the pipeline can use it.
#include <algorithm>
#include <cmath>
#include <limits>
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

// Median and spread of repeated measurements (architecture.md convention 13: a measurement the scheduler acts
// on is repeated until its spread is known). The spread is the median absolute deviation,
// MAD = median(|x_i - median(x)|), unscaled: a robust half-width (half of the samples lie within median ± MAD
// for a symmetric distribution), which, unlike half the range, one outlier cannot inflate and which can shrink
// as more samples come. For normal noise MAD ≈ 0.67 σ, about the standard error of the median of 3-7 samples
// (1.25 σ / √n). Empty input gives {0, 0}; one sample gives spread 0.
struct MedianSpread {
  double median = 0, spread = 0;
  // spread / |median|; 0 when the spread is 0, infinity when only the median is 0.
  double relative() const {
    if (spread == 0) return 0;
    return median != 0 ? spread / std::fabs(median) : std::numeric_limits<double>::infinity();
  }
};

inline MedianSpread median_spread(const std::vector<double>& v) {
  MedianSpread r;
  if (v.empty()) return r;
  r.median = median(v);
  std::vector<double> dev;
  dev.reserve(v.size());
  for (double x : v) dev.push_back(std::fabs(x - r.median));
  r.spread = median(dev);
  return r;
}

}  // namespace hpr
