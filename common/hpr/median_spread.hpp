#pragma once
// Percentiles, the median, and the median and spread of repeated measurements. Kept apart from hpr/stats.hpp
// (whose `hpr::Summary` would clash with pipeline/summary.hpp's) so that the pipeline can use it.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <vector>

namespace hpr {

// p in [0,100]; linear interpolation between the nearest ranks, on a copy. Empty input gives 0.
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

// k of the distribution-free confidence interval [x(k), x(n+1-k)] of the median of n sorted samples: the largest k
// whose coverage 1 - 2 P(Binomial(n, 1/2) < k) is at least 87.5 % (k = 1, the whole range, for n <= 6; 2 for 7-9;
// 3 for 10-12; 4 for 13-14; …).
inline size_t median_interval_rank(size_t n) {
  size_t k = 1;
  while (2 * (k + 1) <= n) {
    double below = 0, term = std::ldexp(1.0, -static_cast<int>(n));  // C(n, 0) / 2^n
    for (size_t i = 0; i <= k; ++i) {
      below += term;
      term = term * static_cast<double>(n - i) / static_cast<double>(i + 1);
    }
    if (1 - 2 * below < 0.875) break;
    ++k;
  }
  return k;
}

// Median and spread of repeated measurements (architecture.md convention 13: a measurement the scheduler acts on
// is repeated until its spread is known). The spread is half the width of the median's confidence interval above:
// it narrows as samples come in (about as 1/√n), and one wild sample (a transient after a change) does not widen
// it once there are 7. Simulated with the learner's stopping rule (docs/scheduler.md, "Measurements worth
// trusting"): two sets from the same noise, 4-12 samples each, differ beyond their spreads 2-4 % of the time; the
// median absolute deviation (tried first) did so 25-30 % of the time at 3-4 samples, and half the range, as safe,
// missed a 30 % gain under outliers twice as often. Empty input gives {0, 0, 0}; one sample gives spread 0.
struct MedianSpread {
  double median = 0, spread = 0;
  size_t n = 0;
  // spread / |median|; 0 when the spread is 0, infinity when only the median is 0.
  double relative() const {
    if (spread == 0) return 0;
    return median != 0 ? spread / std::fabs(median) : std::numeric_limits<double>::infinity();
  }
};

// As median_spread below, sorting `v` in place (no copy: for callers on a hot path that keep a scratch vector).
inline MedianSpread median_spread_in_place(std::vector<double>& v) {
  MedianSpread r;
  r.n = v.size();
  if (v.empty()) return r;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  r.median = n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;  // = median(v)
  size_t k = median_interval_rank(n);
  r.spread = (v[n - k] - v[k - 1]) / 2;
  return r;
}

inline MedianSpread median_spread(std::vector<double> v) { return median_spread_in_place(v); }

// Whether `a` is above `b` by more than both spreads together and by more than min_gain × |b.median|.
inline bool better_beyond_spread(const MedianSpread& a, const MedianSpread& b, double min_gain) {
  double gain = a.median - b.median;
  return gain > a.spread + b.spread && gain > min_gain * std::fabs(b.median);
}

}  // namespace hpr
