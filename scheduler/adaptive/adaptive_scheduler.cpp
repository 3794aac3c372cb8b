#include "scheduler/adaptive/adaptive_scheduler.hpp"

#include <algorithm>
#include <cmath>

#include "hpr/median_spread.hpp"

namespace hpr::sched {

Status validate(const AdaptiveParams& p) {
  if (!(p.lambda >= 1)) return error(Code::kInvalidArgument, "adaptive: lambda = {} must be >= 1", p.lambda);
  if (!(p.delta > 0 && p.delta < 1))
    return error(Code::kInvalidArgument, "adaptive: delta = {} must be in (0,1)", p.delta);
  if (!(p.alpha > 1)) return error(Code::kInvalidArgument, "adaptive: alpha = {} must be > 1", p.alpha);
  if (!(p.beta > 1)) return error(Code::kInvalidArgument, "adaptive: beta = {} must be > 1", p.beta);
  if (p.min_batch < 1 || p.min_batch > p.max_batch)
    return error(Code::kInvalidArgument, "adaptive: need 1 <= min_batch ({}) <= max_batch ({})", p.min_batch,
                 p.max_batch);
  if (!(p.headroom >= 0)) return error(Code::kInvalidArgument, "adaptive: headroom = {} must be >= 0", p.headroom);
  if (p.samples < 1 || p.samples > 64)
    return error(Code::kInvalidArgument, "adaptive: samples = {} must be in 1..64", p.samples);
  if (p.policy == Policy::kLatencyTarget && !(p.latency_target_ns > 0))
    return error(Code::kInvalidArgument, "adaptive: policy latency-target needs latency_target_ns > 0");
  return Status::ok();
}

const char* reason_name(Reason r) {
  switch (r) {
    case Reason::kInitial:
      return "initial";
    case Reason::kStay:
      return "stay";
    case Reason::kSwitchBetter:
      return "switch-better";
    case Reason::kSwitchCannotSustain:
      return "switch-cannot-sustain";
    case Reason::kBatchGrow:
      return "batch-grow";
    case Reason::kBatchShrink:
      return "batch-shrink";
    case Reason::kTuned:
      return "tuned";
  }
  return "?";
}

Result<AdaptiveScheduler> AdaptiveScheduler::create(const AdaptiveParams& p, std::vector<ConfigStore*> stores) {
  HPR_RETURN_IF_ERROR(validate(p));
  if (stores.empty()) return error(Code::kInvalidArgument, "adaptive: no configuration store given");
  for (size_t i = 0; i < stores.size(); ++i) {
    if (stores[i] == nullptr) return error(Code::kInvalidArgument, "adaptive: store for traffic class {} is null", i);
    if (stores[i]->size() == 0)
      return error(Code::kInvalidArgument,
                   "adaptive: the configuration table for traffic class {} is empty (run `hpr profile` first)", i);
  }
  return AdaptiveScheduler(p, std::move(stores));
}

uint32_t AdaptiveScheduler::lead_batch() const {
  uint32_t b = 0;
  for (int d = 0; d < kMaxDevices; ++d)
    if (running_.uses(d)) b = std::max(b, running_.batch[d]);
  return b;
}

void AdaptiveScheduler::apply_config(const ConfigStore& s, ConfigId id, Reason why, uint64_t now_ns) {
  const Configuration& c = s.get(id);
  bool devices_changed = c.device_mask != running_.device_mask;
  running_ = c;
  running_id_ = id;
  tuning_ = false;
  settled_ = false;
  last_dir_ = 0;
  if (devices_changed && started_) ++device_switches_;
  dec_.now_ns = now_ns;
  ++dec_.epoch;
  dec_.config = id;
  dec_.device_mask = c.device_mask;
  dec_.batch = c.batch;
  dec_.weight = c.split;
  dec_.reason = why;
  dec_.devices_changed = devices_changed;
  dec_.changed = true;
}

void AdaptiveScheduler::apply_batch_scale(double factor, Reason why, uint64_t now_ns) {
  for (int d = 0; d < kMaxDevices; ++d) {
    if (!running_.uses(d)) continue;
    double b = std::round(running_.batch[d] * factor);
    running_.batch[d] = static_cast<uint32_t>(std::clamp(b, double(p_.min_batch), double(p_.max_batch)));
  }
  running_id_ = stores_[class_]->find_setup(running_).value_or(kNoConfig);
  dec_.now_ns = now_ns;
  ++dec_.epoch;
  dec_.config = running_id_;
  dec_.batch = running_.batch;
  dec_.reason = why;
  dec_.devices_changed = false;
  dec_.changed = true;
}

bool AdaptiveScheduler::take_sample(const Measurement& m) {
  if (m.epoch != window_epoch_ || class_ != window_class_) {  // a new setup: this quantum still held the old one's
    window_.clear();
    window_epoch_ = m.epoch;
    window_class_ = class_;
    return false;
  }
  window_.push_back(m);
  if (window_.size() > p_.samples) window_.erase(window_.begin());
  if (window_.size() < p_.samples) return false;
  figures_ = window_figures();
  return true;
}

Configuration AdaptiveScheduler::window_figures() {
  // Power only from (near-)saturated quanta: a table power must be comparable between configurations.
  auto figure = [&](auto value_of, bool saturated_only) {
    scratch_.clear();
    for (const Measurement& q : window_)
      if (!saturated_only || q.achieved_bps >= (1 - p_.delta) * q.capacity_bps) scratch_.push_back(value_of(q));
    return median_spread_in_place(scratch_);
  };
  Configuration c = running_;
  MedianSpread t = figure([](const Measurement& q) { return q.capacity_bps; }, false);
  MedianSpread l = figure([](const Measurement& q) { return q.latency_ns; }, false);
  MedianSpread l99 = figure([](const Measurement& q) { return q.latency_p99_ns; }, false);
  MedianSpread w = figure([](const Measurement& q) { return q.power_w; }, true);
  // power_w = 0 when no quantum was saturated (w.n = 0): record() keeps the power it had then.
  c.set_figures(t, l, l99, w, static_cast<uint32_t>(window_.size()));
  c.power_source = window_.back().power_source;
  return c;
}

void AdaptiveScheduler::record(ConfigStore& s) {
  Configuration c = figures_;
  bool saturated_power = c.power_w > 0;
  if (running_id_ == kNoConfig) {  // a new batch of a stored setup
    if (!saturated_power) {        // keep the power of the entry the setup was derived from, and its spread
      c.power_w = running_.power_w;
      c.power_spread_w = running_.power_spread_w;
      c.power_source = running_.power_source;
    }
    auto id = s.insert(c);
    if (id) {
      running_id_ = *id;
      dec_.config = *id;
      ++table_updates_;
    }
    return;
  }
  const Configuration& stored = s.get(running_id_);
  if (!saturated_power) {
    c.power_w = stored.power_w;
    c.power_spread_w = stored.power_spread_w;
    c.power_source = stored.power_source;
  }
  double gap = std::fabs(c.throughput_bps - stored.throughput_bps);
  bool capacity_drift =
      gap > p_.delta * stored.throughput_bps && gap > c.throughput_spread_bps + stored.throughput_spread_bps;
  if (s.update(running_id_, c)) {
    ++table_updates_;
    if (capacity_drift) settled_ = false;  // the device got slower or faster: search the batch again
  }
}

bool AdaptiveScheduler::should_switch(const ConfigStore& s, ConfigId cand, ConfigId cur, double rate_bps) const {
  if (cand == kNoConfig || cand == cur) return false;
  if (cur == kNoConfig) return true;
  const Configuration& c = s.get(cand);
  const Configuration& u = s.get(cur);
  // The candidate's figure beats the running one's by the factor and by more than both spreads.
  auto less = [](double cand, double cand_spread, double run, double run_spread, double factor) {
    return cand * factor < run && run - cand > cand_spread + run_spread;
  };
  auto more = [](double cand, double cand_spread, double run, double run_spread, double factor) {
    return cand > run * factor && cand - run > cand_spread + run_spread;
  };
  const double ct = c.throughput_bps, cs = c.throughput_spread_bps, ut = u.throughput_bps, us = u.throughput_spread_bps;
  if (ut < rate_bps)  // running one cannot carry R: any candidate that does better
    return ct >= rate_bps || more(ct, cs, ut, us, 1 + p_.delta);
  switch (p_.policy) {
    case Policy::kEnergyCritical:
      return less(c.power_w, c.power_spread_w, u.power_w, u.power_spread_w, p_.lambda);
    case Policy::kLatencyCritical:
      return less(c.latency_ns, c.latency_spread_ns, u.latency_ns, u.latency_spread_ns, p_.lambda);
    case Policy::kThroughputCritical:
      return more(ct, cs, ut, us, p_.lambda);
    case Policy::kLatencyTarget:
      if (u.latency_p99_ns > p_.latency_target_ns)
        return less(c.latency_p99_ns, c.latency_p99_spread_ns, u.latency_p99_ns, u.latency_p99_spread_ns, p_.lambda);
      return c.latency_p99_ns <= p_.latency_target_ns &&
             less(c.power_w, c.power_spread_w, u.power_w, u.power_spread_w, p_.lambda);
  }
  return false;
}

void AdaptiveScheduler::settle(uint32_t lead, uint64_t now_ns, double rate_bps) {
  tuning_ = false;
  settled_ = true;
  settled_rate_bps_ = rate_bps;
  last_dir_ = 0;
  uint32_t cur = lead_batch();
  if (lead != 0 && lead != cur) {
    apply_batch_scale(double(lead) / cur, Reason::kTuned, now_ns);
  } else {
    dec_.reason = Reason::kTuned;
  }
}

void AdaptiveScheduler::tune(const Measurement& m, double rate_bps) {
  uint32_t b = lead_batch();
  const Configuration& w = figures_;
  // Below R, or above R(1 + δ), only beyond the spread: inside it the batch carries R as far as can be told.
  bool lower = w.throughput_bps + w.throughput_spread_bps < rate_bps;
  bool higher = w.throughput_bps - w.throughput_spread_bps > rate_bps * (1 + p_.delta);
  if (!lower && (best_good_batch_ == 0 || b < best_good_batch_)) best_good_batch_ = b;
  if (!lower && !higher) return settle(0, m.now_ns, rate_bps);
  int dir = lower ? +1 : -1;
  if (last_dir_ != 0 && dir != last_dir_) step_log_ /= 2;  // reversal: α = β/2 (or β = α/2)
  last_dir_ = dir;
  if (step_log_ < std::log1p(p_.delta) / 2) return settle(best_good_batch_, m.now_ns, rate_bps);
  double target = b * std::exp(dir * step_log_);
  target = std::clamp(target, double(p_.min_batch), double(p_.max_batch));
  if (std::lround(target) == b) return settle(lower ? 0 : best_good_batch_, m.now_ns, rate_bps);
  apply_batch_scale(target / b, lower ? Reason::kBatchGrow : Reason::kBatchShrink, m.now_ns);
}

const Decision& AdaptiveScheduler::step(const Measurement& m) {
  dec_.changed = false;
  dec_.devices_changed = false;
  dec_.now_ns = m.now_ns;
  if (m.traffic_class < stores_.size() && m.traffic_class != class_) {
    class_ = m.traffic_class;
    running_id_ = started_ ? stores_[class_]->find_setup(running_).value_or(kNoConfig) : kNoConfig;
    settled_ = false;
    tuning_ = false;
  }
  ConfigStore& s = *stores_[class_];
  double rate = m.offered_bps * (1 + p_.headroom);
  if (!started_) {
    apply_config(s, s.best(query(rate)), Reason::kInitial, m.now_ns);
    started_ = true;
    return dec_;
  }
  // Step 3 acts on `samples` quanta of the running setup; meanwhile Step 1 still answers traffic changes.
  bool fresh = m.epoch == dec_.epoch && m.capacity_bps > 0 && take_sample(m);
  if (fresh) record(s);  // Step 3: the table learns what the running setup does now
  // Step 1, every quantum: a traffic change is answered by switching, without waiting for a batch search.
  // While the batch search (Step 3 loop) runs, candidates on the same devices are left to it; once it has
  // settled, so is another batch of the same devices and split while the running setup sustains R (switching
  // to it would only restart the search: a flap between two batches).
  ConfigId cand = s.best(query(rate));
  bool same_devices = cand != kNoConfig && s.get(cand).device_mask == running_.device_mask;
  if (running_id_ == kNoConfig && !tuning_ && !settled_) {  // settled on a new batch: record() stores it
    apply_config(s, cand, Reason::kSwitchCannotSustain, m.now_ns);
    return dec_;
  }
  bool sustains = running_id_ != kNoConfig && s.get(running_id_).throughput_bps >= rate;
  bool batch_only = same_devices && s.get(cand).split == running_.split;
  bool left_to_step3 = (tuning_ && same_devices) || (settled_ && batch_only && sustains);
  if (running_id_ != kNoConfig && !left_to_step3 && should_switch(s, cand, running_id_, rate)) {
    apply_config(s, cand, sustains ? Reason::kSwitchBetter : Reason::kSwitchCannotSustain, m.now_ns);
    return dec_;
  }
  if (!fresh) {
    dec_.reason = Reason::kStay;
    return dec_;
  }
  if (tuning_) {
    tune(m, rate);  // Step 3 loop
    return dec_;
  }
  // Step 3 entry: search the batch when the rate moved by more than δ since we converged (or the table changed).
  bool rate_moved = !settled_ || std::fabs(rate - settled_rate_bps_) > p_.delta * settled_rate_bps_;
  if (rate_moved) {
    tuning_ = true;
    step_log_ = std::log(figures_.throughput_bps < rate ? p_.alpha : p_.beta);
    last_dir_ = 0;
    best_good_batch_ = 0;
    tune(m, rate);
    return dec_;
  }
  dec_.reason = Reason::kStay;
  return dec_;
}

}  // namespace hpr::sched
