#include "scheduler/adaptive/adaptive_scheduler.hpp"

#include <algorithm>
#include <cmath>

namespace hpr::sched {

Status validate(const AdaptiveParams& p) {
  if (!(p.lambda >= 1)) return error(Code::kInvalidArgument, "adaptive: lambda = {} must be >= 1", p.lambda);
  if (!(p.delta > 0 && p.delta < 1)) return error(Code::kInvalidArgument, "adaptive: delta = {} must be in (0,1)", p.delta);
  if (!(p.alpha > 1)) return error(Code::kInvalidArgument, "adaptive: alpha = {} must be > 1", p.alpha);
  if (!(p.beta > 1)) return error(Code::kInvalidArgument, "adaptive: beta = {} must be > 1", p.beta);
  if (p.min_batch < 1 || p.min_batch > p.max_batch)
    return error(Code::kInvalidArgument, "adaptive: need 1 <= min_batch ({}) <= max_batch ({})", p.min_batch,
                 p.max_batch);
  if (!(p.headroom >= 0)) return error(Code::kInvalidArgument, "adaptive: headroom = {} must be >= 0", p.headroom);
  if (p.policy == Policy::kLatencyTarget && !(p.latency_target_ns > 0))
    return error(Code::kInvalidArgument, "adaptive: policy latency-target needs latency_target_ns > 0");
  return Status::ok();
}

const char* reason_name(Reason r) {
  switch (r) {
    case Reason::kInitial: return "initial";
    case Reason::kStay: return "stay";
    case Reason::kSwitchBetter: return "switch-better";
    case Reason::kSwitchCannotSustain: return "switch-cannot-sustain";
    case Reason::kBatchGrow: return "batch-grow";
    case Reason::kBatchShrink: return "batch-shrink";
    case Reason::kTuned: return "tuned";
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

void AdaptiveScheduler::record(ConfigStore& s, const Measurement& m) {
  // Power only from (near-)saturated measurements: a table power must be comparable between configurations.
  bool saturated = m.achieved_bps >= (1 - p_.delta) * m.capacity_bps;
  if (running_id_ == kNoConfig) {
    Configuration c = running_;  // a new batch of a stored setup: its spreads are the best noise estimate there is
    c.samples = 1;
    c.throughput_bps = m.capacity_bps;
    c.latency_ns = m.latency_ns;
    c.latency_p99_ns = m.latency_p99_ns;
    if (saturated) {
      c.power_w = m.power_w;
      c.power_source = m.power_source;
    }  // else keep the power of the entry the setup was derived from
    auto id = s.insert(c);
    if (id) {
      running_id_ = *id;
      dec_.config = *id;
      ++table_updates_;
    }
    return;
  }
  const Configuration& c = s.get(running_id_);
  double power = saturated ? m.power_w : c.power_w;
  PowerSource src = saturated ? m.power_source : c.power_source;
  bool capacity_drift = std::fabs(m.capacity_bps - c.throughput_bps) > p_.delta * c.throughput_bps;
  if (s.update(running_id_, m.capacity_bps, m.latency_ns, m.latency_p99_ns, power, src)) {
    ++table_updates_;
    if (capacity_drift) settled_ = false;  // the device got slower or faster: search the batch again
  }
}

bool AdaptiveScheduler::should_switch(const ConfigStore& s, ConfigId cand, ConfigId cur, double rate_bps) const {
  if (cand == kNoConfig || cand == cur) return false;
  if (cur == kNoConfig) return true;
  const Configuration& c = s.get(cand);
  const Configuration& u = s.get(cur);
  if (u.throughput_bps < rate_bps)  // running one cannot carry R: any candidate that does better
    return c.throughput_bps >= rate_bps || c.throughput_bps > u.throughput_bps * (1 + p_.delta);
  switch (p_.policy) {
    case Policy::kEnergyCritical: return c.power_w * p_.lambda < u.power_w;
    case Policy::kLatencyCritical: return c.latency_ns * p_.lambda < u.latency_ns;
    case Policy::kThroughputCritical: return c.throughput_bps > u.throughput_bps * p_.lambda;
    case Policy::kLatencyTarget:
      if (u.latency_p99_ns > p_.latency_target_ns) return c.latency_p99_ns * p_.lambda < u.latency_p99_ns;
      return c.latency_p99_ns <= p_.latency_target_ns && c.power_w * p_.lambda < u.power_w;
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
  double cap = m.capacity_bps;
  bool lower = cap < rate_bps;
  bool higher = cap > rate_bps * (1 + p_.delta);
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
  bool fresh = m.epoch == dec_.epoch && m.capacity_bps > 0;
  if (fresh) record(s, m);  // Step 3: the table learns what the running setup does now
  // Step 1, every quantum: a traffic change is answered by switching, without waiting for a batch search.
  // While the batch search (Step 3 loop) runs, candidates on the same devices are left to it; once it has
  // settled, so is another batch of the same devices and split while the running setup sustains R (switching
  // to it would only restart the search: a flap between two batches).
  ConfigId cand = s.best(query(rate));
  bool same_devices = cand != kNoConfig && s.get(cand).device_mask == running_.device_mask;
  if (running_id_ == kNoConfig && !tuning_) {
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
    step_log_ = std::log(m.capacity_bps < rate ? p_.alpha : p_.beta);
    last_dir_ = 0;
    best_good_batch_ = 0;
    tune(m, rate);
    return dec_;
  }
  dec_.reason = Reason::kStay;
  return dec_;
}

}  // namespace hpr::sched
