#include "pipeline/profile.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "hpr/clock.hpp"
#include "hpr/median_spread.hpp"
#include "pipeline/adaptive_control.hpp"

namespace hpr {
namespace {

bool pow2(uint32_t x) { return x != 0 && (x & (x - 1)) == 0; }

// Compositions of `total` into `parts` positive integers.
void compositions(uint32_t total, uint32_t parts, std::vector<uint32_t>& cur, std::vector<std::vector<uint32_t>>& out) {
  if (parts == 1) {
    cur.push_back(total);
    out.push_back(cur);
    cur.pop_back();
    return;
  }
  for (uint32_t first = 1; first + (parts - 1) <= total; ++first) {
    cur.push_back(first);
    compositions(total - first, parts - 1, cur, out);
    cur.pop_back();
  }
}

}  // namespace

Result<std::vector<sched::Configuration>> profile_grid(size_t lanes, const ProfileOptions& o) {
  if (lanes == 0 || lanes > static_cast<size_t>(sched::kMaxDevices))
    return error(Code::kInvalidArgument, "profile: {} lanes (1..{} can be profiled)", lanes, sched::kMaxDevices);
  if (!pow2(o.min_batch) || !pow2(o.max_batch) || o.max_batch > 65536 || o.min_batch > o.max_batch)
    return error(Code::kInvalidArgument, "--min-batch {} / --max-batch {}: powers of two with min <= max <= 65536",
                 o.min_batch, o.max_batch);
  if (o.split_steps == 0) return error(Code::kInvalidArgument, "--splits: at least 1");
  if (!(o.quantum_ms > 0)) return error(Code::kInvalidArgument, "--quantum-ms: must be > 0");
  size_t max_set = o.max_set_size == 0 ? lanes : std::min<size_t>(o.max_set_size, lanes);
  std::vector<uint32_t> masks;
  for (uint32_t m = 1; m < (1U << lanes); ++m)
    if (static_cast<size_t>(__builtin_popcount(m)) <= max_set) masks.push_back(m);
  std::stable_sort(masks.begin(), masks.end(),
                   [](uint32_t a, uint32_t b) { return __builtin_popcount(a) < __builtin_popcount(b); });
  std::vector<sched::Configuration> grid;
  for (uint32_t m : masks) {
    std::vector<int> devs;
    for (int d = 0; d < static_cast<int>(lanes); ++d)
      if ((m >> d) & 1U) devs.push_back(d);
    std::vector<std::vector<uint32_t>> splits;
    std::vector<uint32_t> cur;
    // A set larger than split_steps gets the equal split only.
    uint32_t steps = std::max<uint32_t>(o.split_steps, static_cast<uint32_t>(devs.size()));
    compositions(steps, static_cast<uint32_t>(devs.size()), cur, splits);
    for (const auto& sp : splits) {
      for (uint32_t b = o.min_batch; b <= o.max_batch; b *= 2) {  // a block: the batch sizes of one set and split
        sched::Configuration c;
        c.device_mask = m;
        uint32_t tot = 0;
        for (auto x : sp) tot += x;
        for (size_t k = 0; k < devs.size(); ++k) {
          c.batch[devs[k]] = b;
          c.split[devs[k]] = static_cast<float>(sp[k]) / static_cast<float>(tot);
        }
        grid.push_back(c);
        if (b == 65536) break;
      }
    }
  }
  return grid;
}

Result<ProfileResult> run_profile(const ProfileOptions& o, const std::function<void(Pipeline*)>& on_start,
                                  const std::function<void(const ProfileProgress&)>& on_progress) {
  HPR_RETURN_IF_ERROR(validate(o.sampling));
  RunConfig rc = o.run;
  rc.input.gen_rate_pps = 0;  // saturation: the point's throughput is what the configuration sustains
  rc.input.gen_rate_steps.clear();
  rc.input.gen_packets = 0;
  rc.duration_s = 0;
  rc.backpressure = true;
  rc.batch = o.min_batch;
  rc.max_batch = std::max(rc.max_batch, o.max_batch);
  rc.queue = std::max(rc.queue, 2 * o.max_batch);
  double quantum_s = o.quantum_ms / 1e3;
  rc.status_interval_s = std::max(0.02, quantum_s / 2);  // two samples per quantum
  auto ctx = prepare_run(rc);
  if (!ctx) return ctx.status();
  auto& c = **ctx;
  Pipeline& p = *c.pipeline;
  auto grid = profile_grid(p.lane_count(), o);
  if (!grid) return grid.status();
  const auto blocks =
      o.interleave_grid ? std::vector<std::pair<size_t, size_t>>{{0, grid->size()}} : profile_blocks(*grid);
  prof::Fingerprint fp = machine_fingerprint(c.devices, rc.native_lanes, rc.app, traffic_description(rc.input));
  auto writer = prof::TableWriter::create(o.out_path, fp);
  if (!writer) return writer.status();
  auto power = RunPower::create(
      o.power, add_host_threads(power_lanes(c.devices, rc.native_lanes), 1, rc.run_to_completion), monotonic_ns());

  ProfileResult res;
  res.planned = grid->size();
  res.power_source = power->source();
  res.power_description = power->describe();
  Status write_error = Status::ok();
  // kWarm: every lane completes a few batches first (PoCL compiles kernels at the first launch).
  enum class Phase { kWarm, kApply, kSettle, kMeasure } phase = Phase::kWarm;
  size_t block = 0;  // index into blocks
  BlockRounds rounds(*grid, blocks[0].first, blocks[0].second, o.sampling);
  size_t finished_rounds = 0;  // over the finished blocks, for the estimate
  size_t finished_samples = 0;
  Summary prev, base;
  bool have_prev = false;
  uint64_t phase_ns = 0, t0 = monotonic_ns();
  int status_samples = 0;
  double energy0 = 0;
  std::vector<float> weights(p.lane_count(), 0.f);

  auto apply = [&](const sched::Configuration& cfg) {
    for (size_t i = 0; i < weights.size(); ++i) {
      weights[i] = cfg.uses(static_cast<int>(i)) ? cfg.split[i] : 0.f;
      if (cfg.uses(static_cast<int>(i))) p.set_lane_batch(i, cfg.batch[i]);
    }
    (void)p.set_lane_weights(weights);
  };
  auto write = [&](const std::vector<sched::Configuration>& points) {
    for (auto pt : points) {
      pt.traffic = fp.traffic;
      pt.power_source = power->power_source();
      if (Status w = writer->append(pt); !w.is_ok()) return w;
      ++res.measured;
    }
    return Status::ok();
  };
  // Samples still expected: this block's and the later blocks' points × the rounds a block takes (the mean of
  // the finished blocks, min_samples before any), the current block at least its rounds so far + 1.
  auto samples_expected = [&]() {
    double per_block = block > 0 ? static_cast<double>(finished_rounds) / static_cast<double>(block)
                                 : static_cast<double>(o.sampling.min_samples);
    per_block = std::max(per_block, static_cast<double>(o.sampling.min_samples));
    size_t later = grid->size() - blocks[std::min(block, blocks.size() - 1)].second;
    double cur_rounds = std::max(per_block, static_cast<double>(rounds.rounds() + 1));
    return finished_samples + static_cast<size_t>(std::lround(cur_rounds * static_cast<double>(rounds.size()) +
                                                              per_block * static_cast<double>(later)));
  };

  p.on_status([&](const Summary& s, double) {
    uint64_t now = monotonic_ns();
    if (!have_prev) {
      prev = s;
      have_prev = true;
    }
    IntervalStats st = interval_stats(prev, s);
    PowerSample ps = power->sample(power_util(st), now);
    prev = s;
    double elapsed = static_cast<double>(now - t0) / 1e9;
    if (p.stop_requested()) return;  // interrupted (SIGINT) or budget reached: no new sample while it drains
    if (o.budget_s > 0 && elapsed >= o.budget_s) {
      res.budget_hit = true;
      p.request_stop();
      return;
    }
    if (block >= blocks.size() || !write_error.is_ok()) {
      p.request_stop();
      return;
    }
    const sched::Configuration& cfg = (*grid)[rounds.next()];
    switch (phase) {
      case Phase::kWarm: {
        if (phase_ns == 0) phase_ns = now;
        bool warm = true;
        for (const auto& l : s.lanes) warm = warm && l.batches >= 3;
        if (warm || static_cast<double>(now - phase_ns) / 1e9 > 30) {
          t0 = now;  // the budget and the estimate count from here
          phase = Phase::kApply;
        }
        break;
      }
      case Phase::kApply:
        apply(cfg);
        phase = Phase::kSettle;
        phase_ns = now;
        break;
      case Phase::kSettle: {
        uint64_t total = 0, outside = 0;
        for (size_t i = 0; i < st.lane_packets.size(); ++i) {
          total += st.lane_packets[i];
          if (!cfg.uses(static_cast<int>(i))) outside += st.lane_packets[i];
        }
        double waited = static_cast<double>(now - phase_ns) / 1e9;
        bool clean = total > 0 && static_cast<double>(outside) <= 0.01 * static_cast<double>(total);
        if (waited >= quantum_s && (clean || waited >= 5 * quantum_s)) {
          base = s;
          energy0 = ps.energy_j;
          status_samples = 0;
          phase = Phase::kMeasure;
          phase_ns = now;
        }
        break;
      }
      case Phase::kMeasure: {
        ++status_samples;
        double waited = static_cast<double>(now - phase_ns) / 1e9;
        // A power meter whose counter moves in steps (NVML: every 100 ms or so) needs a window of several.
        const double window_s = std::max(quantum_s, static_cast<double>(power->min_window_ns()) / 1e9);
        if (waited < window_s || status_samples < 2) break;
        IntervalStats m = interval_stats(base, s);
        // Slow devices: extend the window until every lane of the set completed two batches (at most 25 quanta).
        bool enough = true;
        for (size_t i = 0; i < m.lane_batches.size(); ++i)
          if (cfg.uses(static_cast<int>(i)) && m.lane_batches[i] < 2) enough = false;
        if (!enough && waited < 25 * quantum_s) break;
        size_t measured_index = rounds.next();
        rounds.record({m.achieved_bps, static_cast<double>(m.latency_p50_ns), static_cast<double>(m.latency_p99_ns),
                       m.seconds > 0 ? (ps.energy_j - energy0) / m.seconds : 0});
        ++res.samples;
        sched::Configuration last = rounds.point(measured_index);
        last.power_source = power->power_source();
        if (rounds.done()) {
          finished_rounds += rounds.rounds();
          finished_samples += rounds.rounds() * rounds.size();
          if (Status w = write(rounds.points(1)); !w.is_ok()) {
            write_error = w;
            p.request_stop();
            return;
          }
          if (++block < blocks.size())
            rounds = BlockRounds(*grid, blocks[block].first, blocks[block].second, o.sampling);
        }
        if (on_progress) {
          size_t expected = block < blocks.size() ? samples_expected() : res.samples;
          double per = elapsed / static_cast<double>(res.samples);
          on_progress({res.measured, grid->size(), res.samples, expected, elapsed,
                       per * static_cast<double>(expected - std::min(expected, res.samples)), &last});
        }
        if (block >= blocks.size()) {
          p.request_stop();
          return;
        }
        apply((*grid)[rounds.next()]);
        phase = Phase::kSettle;
        phase_ns = now;
        break;
      }
    }
  });
  if (on_start) on_start(&p);
  (void)p.run();
  if (on_start) on_start(nullptr);
  HPR_RETURN_IF_ERROR(write_error);
  if (block < blocks.size()) {  // stopped mid-block: keep the points that have min_samples samples
    HPR_RETURN_IF_ERROR(write(rounds.points(o.sampling.min_samples)));
  }
  res.seconds = static_cast<double>(monotonic_ns() - t0) / 1e9;
  res.complete = res.measured == res.planned;
  if (res.complete)
    HPR_RETURN_IF_ERROR(writer->finish());
  else
    HPR_RETURN_IF_ERROR(writer->save());
  res.table = writer->table();
  std::vector<double> per_point;
  for (const auto& pt : res.table.points) {
    per_point.push_back(pt.samples);
    res.samples_max = std::max(res.samples_max, pt.samples);
    if (!within_spread(pt, o.sampling.spread_delta)) ++res.not_within;
  }
  res.samples_median = median(per_point);
  return res;
}

}  // namespace hpr
