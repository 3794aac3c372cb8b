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

size_t median_interval_rank(size_t n) {
  // P(Binomial(n, 1/2) < k) summed term by term; n is small (tens of samples).
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
  std::sort(v.begin(), v.end());
  size_t k = median_interval_rank(v.size());
  s.spread = (v[v.size() - k] - v[k - 1]) / 2;
  return s;
}

bool better_beyond_spread(const SampleStats& a, const SampleStats& b, double min_gain) {
  double gain = a.median - b.median;
  return gain > a.spread + b.spread && gain > min_gain * std::fabs(b.median);
}

}  // namespace hpr::sched
