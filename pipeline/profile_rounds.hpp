#pragma once
// Repeated, interleaved samples of `hpr profile` (issue 13; architecture.md convention 13: a measurement the
// scheduler acts on is repeated until its spread is known).
//
// The grid is measured in blocks of neighbouring points: the batch sizes of one device set and split
// (profile_blocks). Within a block, round after round, each point is visited once (set, settle, one quantum:
// one sample), in grid order, so that drift — another job starting on the machine, a clock ramping — hits every
// point of the block alike instead of the points measured last. A block ends after a round when every point has
// at least min_samples samples and a relative spread within δ on throughput and power, or after max_samples
// rounds. A point's figures are the medians of its samples, its spreads the half-widths of their medians' confidence intervals
// (hpr/median_spread.hpp). Latency median and p99 are summarised the same way but do not extend the sampling:
// throughput ("sustains R") and power are what every policy filters and ranks on first, and under saturation the
// latencies are queueing figures quantised to histogram buckets (docs/scheduler.md has the measured spreads).
//
// Pure bookkeeping, no pipeline: pipeline/profile.cpp drives it from the status callback.
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "hpr/status.hpp"
#include "scheduler/store/configuration.hpp"

namespace hpr {

// The sampling rule: at least min_samples, at most max_samples samples per point, stop when the relative spread
// (spread / median) of throughput and power is <= spread_delta.
struct SampleRule {
  uint32_t min_samples = 3;
  uint32_t max_samples = 7;
  double spread_delta = 0.05;
};

// Errors: kInvalidArgument naming the flag (--min-samples >= 1, --max-samples >= --min-samples and <= 1000,
// --spread finite and >= 0).
Status validate(const SampleRule& r);

// One sample of a grid point: one measured quantum.
struct PointSample {
  double throughput_bps = 0, latency_ns = 0, latency_p99_ns = 0, power_w = 0;
};

// `setup` with its figures set to the medians of `samples`, the spreads to the half-widths of their medians' confidence intervals and
// `samples` to their count (an empty `samples` gives zeros and a count of 0: not a valid table point).
sched::Configuration summarize(const sched::Configuration& setup, const std::vector<PointSample>& samples);

// Relative spread of throughput and of power within `delta` (a zero median with a non-zero spread is not).
bool within_spread(const sched::Configuration& point, double delta);

// [first, last) ranges of consecutive grid points with the same device set and split, in grid order.
std::vector<std::pair<size_t, size_t>> profile_blocks(const std::vector<sched::Configuration>& grid);

// The rounds of one block. next() names the point to measure, record() takes its sample and moves on.
class BlockRounds {
 public:
  // `grid[first, last)` is the block (first < last <= grid.size()).
  BlockRounds(const std::vector<sched::Configuration>& grid, size_t first, size_t last, SampleRule rule);
  size_t next() const { return first_ + pos_; }  // grid index of the point to measure now
  void record(const PointSample& s);             // the sample of next(); no-op once done()
  bool done() const { return done_; }
  uint32_t rounds() const { return rounds_; }  // completed rounds
  // The block's points summarised, in grid order, those with at least `min_count` samples (after an
  // interruption mid-round: a prefix of the block, since a round visits the points in order).
  std::vector<sched::Configuration> points(uint32_t min_count) const;
  // Grid point `index` of the block summarised from the samples so far.
  sched::Configuration point(size_t index) const {
    return summarize(setups_[index - first_], samples_[index - first_]);
  }
  size_t size() const { return samples_.size(); }

 private:
  std::vector<sched::Configuration> setups_;
  std::vector<std::vector<PointSample>> samples_;
  size_t first_ = 0, pos_ = 0;
  uint32_t rounds_ = 0;
  bool done_ = false;
  SampleRule rule_;
};

}  // namespace hpr
