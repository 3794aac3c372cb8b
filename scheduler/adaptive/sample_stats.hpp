#pragma once
// Median and spread of repeated samples: one sample is not a measurement (docs/scheduler.md, "Measurements
// worth trusting"). Spread = half the width of the distribution-free confidence interval of the median: with the n
// samples sorted, [x(k), x(n+1-k)] for the largest k whose coverage 1 - 2 P(Binomial(n, 1/2) < k) is at least
// 87.5 % (k = 1, the whole range, up to 6 samples; k = 2 for 7-9; 3 for 10-12). It narrows as samples come in
// and one wild sample (a transient after a change) does not widen it. Two sets differ only where their medians are
// further apart than their spreads together (better_beyond_spread): simulated with two sets from the same noise,
// 4-12 samples each and the learner's stopping rule, that happens 2-4 % of the time; half the range as the spread
// was as safe but missed a 30 % gain under outliers twice as often, and the median absolute deviation passed
// equal sets 25-30 % of the time (docs/scheduler.md, "Learning mode").
#include <cstddef>
#include <span>

namespace hpr::sched {

struct SampleStats {
  double median = 0;
  double spread = 0;  // half the width of the median's confidence interval
  size_t n = 0;
  // spread / |median| (0 when the median is 0 and so is the spread; infinity when only the median is 0).
  double relative_spread() const;
};

SampleStats sample_stats(std::span<const double> samples);
// k of the interval [x(k), x(n+1-k)] above (1 for n < 7).
size_t median_interval_rank(size_t n);

// Whether `a` is above `b` by more than both spreads together and by more than min_gain × |b.median|.
bool better_beyond_spread(const SampleStats& a, const SampleStats& b, double min_gain);

}  // namespace hpr::sched
