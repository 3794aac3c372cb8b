#include "scheduler/adaptive/sample_stats.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace hpr::sched {
namespace {

double median_of(std::vector<double>& v) {
  size_t h = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(h), v.end());
  double hi = v[h];
  if (v.size() % 2 != 0) return hi;
  double lo = *std::max_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(h));
  return (lo + hi) / 2;
}

}  // namespace

double SampleStats::relative_spread() const {
  if (median != 0) return spread / std::fabs(median);
  return spread == 0 ? 0 : std::numeric_limits<double>::infinity();
}

SampleStats sample_stats(std::span<const double> samples) {
  SampleStats s;
  s.n = samples.size();
  if (samples.empty()) return s;
  std::vector<double> v(samples.begin(), samples.end());
  s.median = median_of(v);
  auto [lo, hi] = std::minmax_element(v.begin(), v.end());
  s.spread = (*hi - *lo) / 2;
  return s;
}

bool better_beyond_spread(const SampleStats& a, const SampleStats& b, double min_gain) {
  double gain = a.median - b.median;
  return gain > a.spread + b.spread && gain > min_gain * std::fabs(b.median);
}

}  // namespace hpr::sched
