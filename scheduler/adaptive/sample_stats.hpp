#pragma once
// Median and spread of repeated samples: one sample is not a measurement (docs/scheduler.md, "Measurements
// worth trusting"). Spread = half the range of the samples, so median ± spread covers every sample. Two sets differ
// only where their medians are further apart than their spreads together (better_beyond_spread). With 4 samples
// a side, two sets drawn from the same noise pass that test about 3 % of the time; the median absolute deviation,
// tried first, passed it 25-30 % of the time at 3-4 samples (simulated: docs/scheduler.md, "Learning mode").
#include <cstddef>
#include <span>

namespace hpr::sched {

struct SampleStats {
  double median = 0;
  double spread = 0;  // (max - min) / 2
  size_t n = 0;
  // spread / |median| (0 when the median is 0 and so is the spread; infinity when only the median is 0).
  double relative_spread() const;
};

SampleStats sample_stats(std::span<const double> samples);

// Whether `a` is above `b` by more than both spreads together and by more than min_gain × |b.median|.
bool better_beyond_spread(const SampleStats& a, const SampleStats& b, double min_gain);

}  // namespace hpr::sched
