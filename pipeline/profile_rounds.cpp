#include "pipeline/profile_rounds.hpp"

#include <cmath>

#include "hpr/median_spread.hpp"

namespace hpr {

Status validate(const SampleRule& r) {
  if (r.min_samples < 1) return error(Code::kInvalidArgument, "--min-samples {}: at least 1", r.min_samples);
  if (r.max_samples < r.min_samples)
    return error(Code::kInvalidArgument, "--max-samples {}: below --min-samples {}", r.max_samples, r.min_samples);
  if (r.max_samples > 1000) return error(Code::kInvalidArgument, "--max-samples {}: at most 1000", r.max_samples);
  if (!std::isfinite(r.spread_delta) || r.spread_delta < 0)
    return error(Code::kInvalidArgument, "--spread {}: a relative spread >= 0 (0.05: 5 %)", r.spread_delta);
  return Status::ok();
}

sched::Configuration summarize(const sched::Configuration& setup, const std::vector<PointSample>& samples) {
  sched::Configuration c = setup;
  auto of = [&](double PointSample::*field) {
    std::vector<double> v;
    v.reserve(samples.size());
    for (const auto& s : samples) v.push_back(s.*field);
    return median_spread(v);
  };
  auto thr = of(&PointSample::throughput_bps), lat = of(&PointSample::latency_ns),
       p99 = of(&PointSample::latency_p99_ns), pw = of(&PointSample::power_w);
  c.set_figures(thr, lat, p99, pw, static_cast<uint32_t>(samples.size()));
  return c;
}

bool within_spread(const sched::Configuration& p, double delta) {
  return MedianSpread{p.throughput_bps, p.throughput_spread_bps}.relative() <= delta &&
         MedianSpread{p.power_w, p.power_spread_w}.relative() <= delta;
}

std::vector<std::pair<size_t, size_t>> profile_blocks(const std::vector<sched::Configuration>& grid) {
  auto same_block = [](const sched::Configuration& a, sched::Configuration b) {
    b.batch = a.batch;  // the same setup but for the batch sizes
    return a.same_setup(b);
  };
  std::vector<std::pair<size_t, size_t>> out;
  for (size_t i = 0; i < grid.size();) {
    size_t j = i + 1;
    while (j < grid.size() && same_block(grid[i], grid[j])) ++j;
    out.emplace_back(i, j);
    i = j;
  }
  return out;
}

BlockRounds::BlockRounds(const std::vector<sched::Configuration>& grid, size_t first, size_t last, SampleRule rule)
    : setups_(grid.begin() + static_cast<ptrdiff_t>(first), grid.begin() + static_cast<ptrdiff_t>(last)),
      samples_(last - first),
      first_(first),
      rule_(rule) {}

void BlockRounds::record(const PointSample& s) {
  if (done_) return;
  samples_[pos_].push_back(s);
  if (++pos_ < samples_.size()) return;
  pos_ = 0;
  ++rounds_;
  if (rounds_ >= rule_.max_samples) {
    done_ = true;
    return;
  }
  if (rounds_ < rule_.min_samples) return;
  done_ = true;
  for (size_t i = 0; i < samples_.size() && done_; ++i)
    done_ = within_spread(summarize(setups_[i], samples_[i]), rule_.spread_delta);
}

std::vector<sched::Configuration> BlockRounds::points(uint32_t min_count) const {
  std::vector<sched::Configuration> out;
  for (size_t i = 0; i < samples_.size(); ++i)
    if (!samples_[i].empty() && samples_[i].size() >= min_count) out.push_back(summarize(setups_[i], samples_[i]));
  return out;
}

}  // namespace hpr
