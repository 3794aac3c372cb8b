#include "scheduler/adaptive/online_balancer.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>

namespace hpr::sched {
namespace {

// Scores below every carried one: a setup that does not carry the rate loses to any that does.
constexpr double kShort = -1e6;
// A lane is run alone in the solo phase only when its bits per busy second are at least 1/kSoloMargin of the best's.
constexpr int kSoloMargin = 4;
// A lane's bits per busy second are the median of its last kBusyWindow scored quanta with a share.
constexpr size_t kBusyWindow = 8;

// A lane's bits per busy second over the quantum; 0 when it was too little busy to tell.
double lane_rate(const QuantumFigures& q, size_t i) {
  if (i >= q.lane_bps.size() || i >= q.lane_util.size() || q.lane_util[i] <= 1e-4) return 0;
  return q.lane_bps[i] / q.lane_util[i];
}

void normalise(std::vector<float>& w) {
  for (float& x : w)
    if (x < 1e-6f) x = 0;
  float sum = std::accumulate(w.begin(), w.end(), 0.f);
  if (sum > 0)
    for (float& x : w) x /= sum;
}

}  // namespace

Status validate(const BalancerParams& p) {
  if (!(p.delta > 0 && p.delta < 1)) return error(Code::kInvalidArgument, "learning: delta must be in (0, 1)");
  if (!(p.min_gain >= 0 && p.min_gain < 1)) return error(Code::kInvalidArgument, "learning: min_gain must be in [0, 1)");
  if (p.min_samples < 1 || p.max_samples < p.min_samples)
    return error(Code::kInvalidArgument, "learning: need 1 <= min_samples <= max_samples");
  if (!(p.min_step > 0 && p.min_step <= p.first_step && p.first_step <= 1))
    return error(Code::kInvalidArgument, "learning: need 0 < min_step <= first_step <= 1");
  if (p.min_batch < 1) return error(Code::kInvalidArgument, "learning: need min_batch >= 1");
  if (!(p.hold_s > 0 && p.max_hold_s >= p.hold_s))
    return error(Code::kInvalidArgument, "learning: need 0 < hold_s <= max_hold_s");
  if (!(p.saved_hold_s > 0 && p.probe_s > 0))
    return error(Code::kInvalidArgument, "learning: saved_hold_s and probe_s must be > 0");
  if (!(p.place_recheck_hold_s >= 0))
    return error(Code::kInvalidArgument, "learning: place_recheck_hold_s must be >= 0");
  if (!(p.clear_loss >= 0 && p.clear_loss < 1))
    return error(Code::kInvalidArgument, "learning: clear_loss must be in [0, 1)");
  if (p.drift_quanta < 1 || p.rate_window < 1)
    return error(Code::kInvalidArgument, "learning: drift_quanta and rate_window must be >= 1");
  if (p.policy == Policy::kLatencyTarget && !(p.latency_target_ns > 0))
    return error(Code::kInvalidArgument, "learning: the latency-target policy needs a latency target > 0");
  return Status::ok();
}

std::string Setup::describe() const {
  std::string s = "w ";
  for (size_t i = 0; i < weight.size(); ++i) s += fmt::format("{}{:.2f}", i ? "/" : "", weight[i]);
  s += " b ";
  for (size_t i = 0; i < batch.size(); ++i) s += fmt::format("{}{}", i ? "/" : "", batch[i]);
  if (placed()) {
    s += " p ";
    for (size_t i = 0; i < place.size(); ++i)
      s += place[i] < 0 ? fmt::format("{}-", i ? "/" : "") : fmt::format("{}{}", i ? "/" : "", place[i]);
  }
  return s;
}

bool Setup::placed() const {
  return std::any_of(place.begin(), place.end(), [](int16_t l) { return l >= 0; });
}

bool Setup::takes(size_t i) const {
  return (i < weight.size() && weight[i] > 0) ||
         std::find(place.begin(), place.end(), static_cast<int16_t>(i)) != place.end();
}

Result<OnlineBalancer> OnlineBalancer::create(const BalancerParams& p, std::vector<uint32_t> batch,
                                              std::vector<uint32_t> batch_max, std::optional<Setup> start,
                                              std::vector<bool> placeable) {
  HPR_RETURN_IF_ERROR(validate(p));
  size_t n = batch.size();
  if (n == 0 || batch_max.size() != n)
    return error(Code::kInvalidArgument, "learning: {} lanes, {} largest batches", n, batch_max.size());
  for (size_t i = 0; i < n; ++i)
    if (batch_max[i] != 0 && batch_max[i] < p.min_batch)
      return error(Code::kInvalidArgument, "learning: lane {}'s largest batch {} is under min_batch {}", i,
                   batch_max[i], p.min_batch);
  OnlineBalancer b;
  b.p_ = p;
  b.batch_max_ = std::move(batch_max);
  b.placeable_ = std::move(placeable);
  b.alive_.assign(n, true);
  b.fallen_.assign(n, false);
  b.probe_s_ = p.probe_s;
  b.hold_s_ = p.hold_s;
  for (size_t i = 0; i < n; ++i)
    if (b.batch_max_[i] != 0) batch[i] = std::clamp(batch[i], p.min_batch, b.batch_max_[i]);
  b.inc_ = {std::vector<float>(n, 1.f / static_cast<float>(n)), batch, std::vector<int16_t>(b.placeable_.size(), -1)};
  if (start) {
    if (start->weight.size() != n || start->batch.size() != n)
      return error(Code::kInvalidArgument, "learning: the saved setup has {} lanes, this run {}",
                   start->weight.size(), n);
    for (float w : start->weight)
      if (!(w >= 0 && std::isfinite(w))) return error(Code::kInvalidArgument, "learning: saved weight {}", w);
    Setup s = *start;
    normalise(s.weight);
    if (std::accumulate(s.weight.begin(), s.weight.end(), 0.f) <= 0)
      return error(Code::kInvalidArgument, "learning: the saved setup gives no lane a share");
    for (size_t i = 0; i < n; ++i)
      if (b.batch_max_[i] != 0) s.batch[i] = std::clamp(s.batch[i], p.min_batch, b.batch_max_[i]);
    // A placement (from a policy change or the state file) is kept where it fits this run's services and lanes.
    s.place.resize(b.placeable_.size(), -1);
    for (size_t k = 0; k < s.place.size(); ++k)
      if (!b.placeable_[k] || s.place[k] >= static_cast<int16_t>(n)) s.place[k] = -1;
    b.inc_ = s;
    b.event_ = "start from the saved setup " + s.describe();
  }
  b.from_saved_ = start.has_value();
  if (start) b.hold_s_ = std::min(p.saved_hold_s, p.hold_s);
  b.running_ = b.inc_;
  // The first quanta of a run are not its steady state (empty queues, tables filling): a saved setup's reference
  // figures are taken after a warm-up.
  b.settle_ = start ? std::max(p.settle_quanta, p.warmup_quanta) : p.settle_quanta;
  return b;
}

double OnlineBalancer::score(const QuantumFigures& q) const {
  // The rate to carry is the quantum's own offered rate, unless that fell more than 2δ below the window's median:
  // under back-pressure a setup that does not keep up shows as a fall of the input, not as a loss. The median, not
  // the largest, of the window: offered rates jitter by a few % between quanta and a paced input catches up in
  // bursts, and against the largest every quantum of a setup that carried the load (DPI at 0.14 Gbit/s on the
  // native lane, achieved = offered) scored as a shortfall.
  double rate = q.offered_bps;
  if (!offered_.empty()) {
    const double ref = median(std::vector<double>(offered_.begin(), offered_.end()));
    if (rate < (1 - 2 * p_.delta) * ref) rate = ref;
  }
  // At a known pace, throughput beyond it is the input catching up after a slower quantum (a backlog of the setup
  // before), not the setup's: capped, every setup that carries the pace ties, and the p99 tie-break decides.
  double achieved = q.achieved_bps;
  if (q.pace_bps > 0 && p_.policy == Policy::kThroughputCritical) achieved = std::min(achieved, q.pace_bps);
  return policy_score(p_, achieved, rate, q.power_w, q.latency_p99_ns, q.lost_packets);
}

double policy_score(const BalancerParams& p, double achieved_bps, double rate_bps, double power_w,
                    double latency_p99_ns, uint64_t lost_packets) {
  bool carried = lost_packets == 0 && achieved_bps >= (1 - p.delta) * rate_bps;
  double shortfall = kShort * (2 - (rate_bps > 0 ? std::min(1.0, achieved_bps / rate_bps) : 0));
  double nj_per_bit = achieved_bps > 0 ? power_w / achieved_bps * 1e9 : 0;
  switch (p.policy) {
    case Policy::kThroughputCritical:
      return achieved_bps / 1e9;
    case Policy::kEnergyCritical:
      return carried && achieved_bps > 0 ? -nj_per_bit : shortfall;
    case Policy::kLatencyCritical:
      return carried ? -latency_p99_ns / 1e3 : shortfall;
    case Policy::kLatencyTarget:
      if (!carried) return shortfall;
      return latency_p99_ns <= p.latency_target_ns ? -nj_per_bit : kShort / 10 - latency_p99_ns / 1e3;
  }
  return 0;
}

const char* OnlineBalancer::phase_name() const {
  switch (phase_) {
    case Phase::kStart: return "start";
    case Phase::kSolo: return "solo";
    case Phase::kMix: return "mix";
    case Phase::kShift: return "shift";
    case Phase::kBatch: return "batch";
    case Phase::kPlace: return "place";
    case Phase::kHold: return "hold";
    case Phase::kProbe: return "probe";
    case Phase::kCheck: return "check";
  }
  return "?";
}

void OnlineBalancer::run(const Setup& s) {
  if (s == running_) return;
  running_ = s;
  changed_ = true;
  settle_ = p_.settle_quanta;
  if (quantum_ns_ > 0 && left_p99_ns_ > static_cast<double>(quantum_ns_))
    settle_ =
        std::max(settle_, std::min(p_.max_settle_quanta,
                                   static_cast<uint32_t>(std::ceil(left_p99_ns_ / static_cast<double>(quantum_ns_)))));
  left_p99_ns_ = 0;
}

std::vector<Setup> OnlineBalancer::candidates() const {
  std::vector<Setup> out;
  size_t n = inc_.weight.size();
  auto alone = [&](size_t i) {  // the incumbent's batches, every flow on lane i
    Setup c = inc_;
    std::fill(c.weight.begin(), c.weight.end(), 0.f);
    std::fill(c.place.begin(), c.place.end(), -1);
    c.weight[i] = 1;
    return c;
  };
  auto moved = [&](size_t a, size_t b, double step) {  // `step` of the share (at most lane a's) from lane a to b
    Setup c = inc_;
    float m = std::min(static_cast<float>(step), c.weight[a]);
    c.weight[a] -= m;
    c.weight[b] += m;
    normalise(c.weight);
    return c;
  };
  if (phase_ == Phase::kSolo) {
    std::vector<size_t> lanes;  // not those whose rate alone start_phase() already estimated
    for (size_t i = 0; i < n; ++i)
      if (alive_[i] && solo_rate_[i] <= 0) lanes.push_back(i);
    std::stable_sort(lanes.begin(), lanes.end(), [&](size_t a, size_t b) { return rank(a) > rank(b); });
    for (size_t i : lanes) out.push_back(alone(i));
  } else if (phase_ == Phase::kMix) {
    std::vector<size_t> lanes;
    for (size_t i = 0; i < n; ++i)
      if (alive_[i] && i < solo_rate_.size() && solo_rate_[i] > 0) lanes.push_back(i);
    std::stable_sort(lanes.begin(), lanes.end(), [&](size_t a, size_t b) { return solo_rate_[a] > solo_rate_[b]; });
    for (size_t k = 2; k <= lanes.size(); ++k) {
      Setup c = inc_;
      std::fill(c.weight.begin(), c.weight.end(), 0.f);
      std::fill(c.place.begin(), c.place.end(), -1);
      for (size_t j = 0; j < k; ++j) c.weight[lanes[j]] = static_cast<float>(solo_rate_[lanes[j]]);
      normalise(c.weight);
      out.push_back(c);
    }
  } else if (phase_ == Phase::kShift) {
    std::vector<std::pair<size_t, size_t>> moves;
    for (size_t a = 0; a < n; ++a)
      for (size_t b = 0; b < n; ++b)
        if (a != b && alive_[a] && alive_[b] && inc_.weight[a] > 0) moves.emplace_back(a, b);
    // Towards the lanes that deliver most per busy second first.
    std::stable_sort(moves.begin(), moves.end(), [&](auto x, auto y) {
      return rank(x.second) - rank(x.first) > rank(y.second) - rank(y.first);
    });
    for (auto [a, b] : moves) out.push_back(moved(a, b, step_));
  } else if (phase_ == Phase::kProbe) {
    for (size_t i = 0; i < n; ++i)
      if (probed(i)) out.push_back(alone(i));
  } else if (phase_ == Phase::kCheck && check_.to < n) {
    if (check_.alone) out.push_back(alone(check_.to));
    out.push_back(moved(check_.from, check_.to, p_.first_step));
  } else if (phase_ == Phase::kPlace && place_svc_ < inc_.place.size()) {
    // The service on each other live lane alone, the lanes that deliver most per busy second first: at the shares
    // as they are, and with that lane's share halved (it takes the service's load now; the shift passes after a win
    // tune the rest). Back among the shares where it is placed. Not what changes nothing: a lane that has every
    // share takes the service's flows already (a candidate equal to the incumbent never loses clearly, so its block
    // ran to the end: 0.5 s a service here).
    const size_t s = place_svc_;
    const int16_t at = inc_.place[s];
    auto only = [&](size_t i) { return inc_.weight[i] > 0.999f; };
    std::vector<size_t> lanes;
    for (size_t i = 0; i < n; ++i)
      if (alive_[i] && at != static_cast<int16_t>(i) && !(at < 0 && only(i))) lanes.push_back(i);
    std::stable_sort(lanes.begin(), lanes.end(), [&](size_t a, size_t b) { return rank(a) > rank(b); });
    for (size_t i : lanes) {
      Setup c = inc_;
      c.place[s] = static_cast<int16_t>(i);
      out.push_back(c);
      if (c.weight[i] > 0 && c.weight[i] < 0.999f) {
        c.weight[i] /= 2;
        normalise(c.weight);
        out.push_back(c);
      }
    }
    if (at >= 0 && !only(static_cast<size_t>(at))) {
      Setup c = inc_;
      c.place[s] = -1;
      out.push_back(c);
    }
  } else if (phase_ == Phase::kBatch) {
    for (size_t i = 0; i < n; ++i) {
      if (!alive_[i] || batch_max_[i] == 0 || !inc_.takes(i)) continue;
      for (uint32_t b : {inc_.batch[i] * 2, inc_.batch[i] / 2}) {
        if (b < p_.min_batch || b > batch_max_[i]) continue;
        Setup c = inc_;
        c.batch[i] = b;
        out.push_back(c);
      }
    }
  }
  return out;
}

void OnlineBalancer::start_phase(Phase ph) {
  const bool after_recheck = recheck_;
  if (ph == Phase::kSolo || ph == Phase::kHold) recheck_ = false;
  if (ph == Phase::kSolo || ph == Phase::kMix || ph == Phase::kHold) beaten_.reset();
  const bool after_probe = phase_ == Phase::kProbe;
  if (ph == Phase::kProbe || ph == Phase::kCheck) recheck_ = true;  // a win there searches again from solo
  if (ph == Phase::kPlace) place_svc_ = 0;
  phase_ = ph;
  won_in_pass_ = false;
  block_.clear();
  if (ph == Phase::kHold) {
    run(inc_);
    off_count_ = 0;
    for (size_t i = 0; i < fallen_.size(); ++i)
      if (inc_.takes(i)) fallen_[i] = false;
    if (after_probe) {
      probe_s_ = std::min(2 * probe_s_, p_.max_hold_s);  // nothing better: the next probe later
    } else {
      hold_until_ns_ = now_ns_ + static_cast<uint64_t>(hold_s_ * 1e9);
    }
    if (!after_recheck || after_probe)  // a re-check of batch and shares keeps the probes' own schedule
      probe_at_ns_ = now_ns_ + static_cast<uint64_t>(probe_s_ * 1e9);
    return;
  }
  if (ph == Phase::kSolo) skip_slow_solos();
  if (!next_block()) after(ph);
}

// A lane alone delivers at most its own bits per busy second. One whose rate per busy second is under 1/kSoloMargin
// of the best lane's is not run alone: that would cost a block of quanta at a fraction of the rate. The margin is
// wide because the figures are rough bounds: a lane that shares cores with another is measured at about half its
// speed alone (2 cores), and a native lane's busy time is the app's alone (not rx, parse, tx), which overstates what
// it delivers alone. A device that many workers share is the case in point: its rate per busy second is the
// device's, counted once, against all workers' native lanes (16 workers on one H200: md5 alone on the GPU ran at
// 0.12 of native only, and each quantum of it cost 88 % of the rate). Such a lane's rate alone is taken to be its
// rate per busy second; the mix phase gives it a share in proportion, and the shift phase moves load in steps.
size_t OnlineBalancer::fastest_lane() const {
  size_t top = inc_.weight.size();
  for (size_t i = 0; i < inc_.weight.size(); ++i)
    if (alive_[i] && rank(i) > 0 && (top == inc_.weight.size() || rank(i) > rank(top))) top = i;
  return top;
}

void OnlineBalancer::skip_slow_solos() {
  const size_t n = inc_.weight.size();
  solo_rate_.assign(n, 0.0);
  const size_t top = fastest_lane();
  const double best = rank(top);
  std::string skipped;
  for (size_t i = 0; i < n; ++i) {
    if (!alive_[i] || rank(i) <= 0 || rank(i) * kSoloMargin >= best) continue;
    solo_rate_[i] = order_[i];
    skipped += fmt::format("{}lane {} ({:.3g} Gbit/s)", skipped.empty() ? "" : ", ", i, order_[i] / 1e9);
  }
  if (!skipped.empty())
    event_ += fmt::format("{}not run alone, under 1/{} of lane {}'s {:.3g} Gbit/s per busy second: {}",
                          event_.empty() ? "" : "; ", kSoloMargin, top, best / 1e9, skipped);
}

bool OnlineBalancer::every_lane_alone_carried() const {
  if (p_.policy != Policy::kEnergyCritical) return false;
  for (size_t i = 0; i < alive_.size(); ++i) {
    if (!alive_[i]) continue;
    bool carried = false;
    for (size_t k = 0; k < block_.size() && k < samples_.size() && !carried; ++k)
      carried = block_[k].weight[i] > 0.999f && median_spread(samples_[k].score).median > kShort / 2;
    if (!carried) return false;
  }
  return true;
}

void OnlineBalancer::after(Phase ph) {
  switch (ph) {
    case Phase::kSolo:
      // Power adds up per busy lane (the models do; a meter measures the same), so a mix's energy per bit is a
      // blend of its lanes' and no mix beats the best lane alone where every lane alone carried the rate. A lane
      // that did not (more efficient, but too slow alone), or that was not run alone, keeps the mix block. The
      // hold's re-checks then skip their shift pass too (after(kBatch)).
      alone_best_ = every_lane_alone_carried();
      if (alone_best_) {
        event_ += fmt::format("{}every lane alone carries the rate: no mix tried (energy)", event_.empty() ? "" : "; ");
        local_shift_ = false;
        return start_phase(Phase::kBatch);
      }
      return start_phase(Phase::kMix);
    case Phase::kMix:
      return start_phase(Phase::kBatch);
    case Phase::kBatch:
      if (won_in_pass_) return start_phase(Phase::kBatch);
      if (!local_shift_ && !recheck_) return start_phase(after_local());
      // Nor the re-check's shift pass, for the same reason as the mix block: its moves make mixes. A lane whose cost
      // changed shows as drift or a moved rate (both search again from solo) or, fallen, in its probe.
      if (recheck_ && alone_best_) return start_phase(after_recheck());
      step_ = p_.first_step;  // a re-check too: 1/16 towards a lane that recovered gains too little to show
      return start_phase(Phase::kShift);
    case Phase::kProbe:
    case Phase::kCheck:
      return start_phase(Phase::kHold);
    case Phase::kShift:
      if (recheck_) return start_phase(after_recheck());  // one pass, place after a long hold (a win: search again)
      if (!won_in_pass_) step_ /= 2;
      return start_phase(step_ >= p_.min_step - 1e-9 ? Phase::kShift : after_local());
    case Phase::kPlace:  // after a win the shares are tuned again (shift), then another pass
      if (!won_in_pass_) return start_phase(Phase::kHold);
      if (!local_shift_) return start_phase(Phase::kPlace);
      step_ = p_.first_step;
      return start_phase(Phase::kShift);
    default:
      return start_phase(Phase::kHold);
  }
}

OnlineBalancer::Phase OnlineBalancer::after_local() const {
  return std::find(placeable_.begin(), placeable_.end(), true) != placeable_.end() ? Phase::kPlace : Phase::kHold;
}

bool OnlineBalancer::next_block() {
  confirming_ = false;
  fresh_inc_ = false;
  for (;;) {
    block_ = {inc_};
    if (phase_ != Phase::kPlace || (place_svc_ < placeable_.size() && placeable_[place_svc_]))
      for (auto& c : candidates())
        if (std::find(block_.begin(), block_.end(), c) == block_.end() && !(beaten_ && c == *beaten_))
          block_.push_back(std::move(c));
    if (block_.size() >= 2) break;
    if (phase_ != Phase::kPlace || ++place_svc_ >= placeable_.size()) {  // place: the next service
      block_.clear();
      return false;
    }
  }
  samples_.assign(block_.size(), {});
  visit_ = 1;  // the incumbent was running: candidates first
  left_ = p_.visit_quanta;
  run(block_[visit_]);
  return true;
}

bool OnlineBalancer::block_done() const {
  size_t lo = samples_[0].score.size();
  for (const auto& v : samples_) lo = std::min(lo, v.score.size());
  // A clear loss: once the incumbent has min_samples too (its figures are the reference of the hold's drift check).
  if (lo < p_.min_samples) return samples_[0].score.size() >= p_.min_samples && clear_loss();
  if (lo >= p_.max_samples) return true;
  MedianSpread inc = median_spread(samples_[0].score);
  bool all_lose = true, tight = inc.relative() <= p_.delta;
  for (size_t k = 1; k < block_.size(); ++k) {
    MedianSpread c = median_spread(samples_[k].score);
    if (better_beyond_spread(c, inc, p_.min_gain)) return true;
    all_lose = all_lose && better_beyond_spread(inc, c, p_.min_gain);
    tight = tight && c.relative() <= p_.delta;
  }
  return all_lose || tight;
}

size_t OnlineBalancer::latency_win(size_t fastest) const {
  // Only where setups that differ in kind are chosen between (solo, mix): in the local moves at saturation it took
  // setups up to the spreads slower for their p99 (from saved state, 0.95-0.96x of the rate without it).
  if (p_.policy != Policy::kThroughputCritical || (phase_ != Phase::kSolo && phase_ != Phase::kMix)) return 0;
  const MedianSpread inc = median_spread(samples_[0].score);
  const MedianSpread ref = median_spread(samples_[fastest].score), ref_p99 = median_spread(samples_[fastest].p99);
  if (!(ref_p99.median > 0)) return 0;
  size_t win = 0;
  double lowest = ref_p99.median;
  for (size_t k = 1; k < block_.size(); ++k) {
    const MedianSpread c = median_spread(samples_[k].score), l = median_spread(samples_[k].p99);
    if (k == fastest || (fastest != 0 && !better_beyond_spread(c, inc, p_.min_gain))) continue;
    const bool as_fast = !better_beyond_spread(ref, c, p_.min_gain);  // what would not count as a win over it
    const double gain = ref_p99.median - l.median;
    if (as_fast && l.median > 0 && gain > ref_p99.spread + l.spread && gain > 2 * p_.delta * ref_p99.median &&
        l.median < lowest) {
      win = k;
      lowest = l.median;
    }
  }
  return win;
}

bool OnlineBalancer::clear_loss() const {
  if (p_.clear_loss <= 0) return false;
  MedianSpread inc = median_spread(samples_[0].score);
  for (size_t k = 1; k < block_.size(); ++k) {
    if (samples_[k].score.size() < p_.visit_quanta) return false;  // not visited yet
    MedianSpread c = median_spread(samples_[k].score);
    double loss = inc.median - c.median;
    if (!(loss > inc.spread + c.spread && loss > p_.clear_loss * std::fabs(inc.median))) return false;
  }
  return true;
}

void OnlineBalancer::finish_block() {
  ++blocks_;
  for (size_t k = 0; k < block_.size(); ++k) {
    const Samples& x = samples_[k];
    measured_.push_back(
        {block_[k], median_spread(x.rate), median_spread(x.power), median_spread(x.p50), median_spread(x.p99)});
  }
  MedianSpread inc = median_spread(samples_[0].score), best = inc;
  size_t win = 0;
  bool all_lost = true;
  for (size_t k = 1; k < block_.size(); ++k) {
    MedianSpread c = median_spread(samples_[k].score);
    all_lost = all_lost && better_beyond_spread(inc, c, p_.min_gain);
    if (phase_ == Phase::kSolo) {
      size_t lane = static_cast<size_t>(std::max_element(block_[k].weight.begin(), block_[k].weight.end()) -
                                        block_[k].weight.begin());
      solo_rate_[lane] = median_spread(samples_[k].rate).median;
    }
    if (better_beyond_spread(c, inc, p_.min_gain) && (win == 0 || c.median > best.median)) {
      win = k;
      best = c;
    }
  }
  const size_t fastest = win, by_latency = latency_win(win);
  if (by_latency != 0) {
    win = by_latency;
    best = median_spread(samples_[win].score);
  }
  // A local move that won among several is confirmed by a block of its own against the incumbent: picking the best
  // of k raises the chance that noise alone wins about k-fold. (Solo and mix choose among setups that differ a lot,
  // once, at the start: their winner is taken at once so that the first decision comes early.)
  const bool local = phase_ == Phase::kShift || phase_ == Phase::kBatch || phase_ == Phase::kPlace;
  if (win != 0 && block_.size() > 2 && !confirming_ && local) {
    block_ = {inc_, block_[win]};
    samples_.assign(2, {});
    confirming_ = true;
    visit_ = 1;
    left_ = p_.visit_quanta;
    run(block_[1]);
    return;
  }
  confirming_ = false;
  inc_stats_ = best;
  ref_offered_ = recent_offered(p_.visit_quanta * 2);
  if (win != 0) {
    event_ = fmt::format("{}: {} beats {} ({:.4g} ± {:.2g} vs {:.4g} ± {:.2g}, {}+{} samples)", phase_name(),
                         block_[win].describe(), inc_.describe(), best.median, best.spread, inc.median, inc.spread,
                         best.n, inc.n);
    if (by_latency != 0) {
      MedianSpread a = median_spread(samples_[win].p99), b = median_spread(samples_[fastest].p99);
      event_ += fmt::format(": as fast as {}, p99 {:.4g} ± {:.2g} vs {:.4g} ± {:.2g} us",
                            fastest == 0 ? std::string("it") : block_[fastest].describe(), a.median / 1e3,
                            a.spread / 1e3, b.median / 1e3, b.spread / 1e3);
    }
    if (local) beaten_ = inc_;
    inc_ = block_[win];
    ++wins_;
    won_in_pass_ = true;
    hold_s_ = p_.hold_s;
  }
  // Lanes that lose even in proportion to their rates (cores shared): small moves towards them will not pay either.
  if (phase_ == Phase::kMix)
    local_shift_ = !(all_lost && std::count_if(inc_.weight.begin(), inc_.weight.end(), [](float w) { return w > 0; }) == 1);
  // A re-check that found something better: the machine or the traffic changed, search it all again.
  if (recheck_ && win != 0) {
    ++restarts_;
    event_ += "; search again";
    return start_phase(Phase::kSolo);
  }
  // Solo and mix are one block each; shift and batch go on from the (new) incumbent; place with the next service.
  if (phase_ == Phase::kPlace) ++place_svc_;
  const bool again = phase_ == Phase::kPlace || ((phase_ == Phase::kShift || phase_ == Phase::kBatch) && win != 0);
  if (!again || !next_block()) after(phase_);
}

bool OnlineBalancer::drifted(double s, const QuantumFigures& q, uint32_t quanta) {
  if (inc_stats_.n < p_.min_samples) return false;  // no reference yet
  double tol = 3 * inc_stats_.spread + 2 * p_.delta * std::fabs(inc_stats_.median);
  // Better than its figures: nothing to search for (the machine got faster), but the reference moves up once the
  // incumbent has been there for `quanta` samples, so that a fall back counts.
  if (s > inc_stats_.median + tol) {
    off_count_ = 0;
    up_.push_back(s);
    if (up_.size() >= quanta) {
      inc_stats_.median = median(up_);
      up_.clear();
    }
    return false;
  }
  up_.clear();
  if (s >= inc_stats_.median - tol) {
    off_count_ = 0;
    lane_ref_.resize(inc_.weight.size(), 0.0);
    for (size_t i = 0; i < lane_ref_.size(); ++i)
      if (double r = lane_rate(q, i); r > 0) lane_ref_[i] = r;
    return false;
  }
  return ++off_count_ >= quanta;
}

void OnlineBalancer::restart(double s, const QuantumFigures& q) {
  event_ = fmt::format("{}: {} quanta of the incumbent off its figures ({:.4g} vs {:.4g} ± {:.2g})", phase_name(),
                       off_count_, s, inc_stats_.median, inc_stats_.spread);
  off_count_ = 0;
  // A lane whose own rate (bits per busy second) fell by more than half loses its share at once.
  Setup next = inc_;
  std::vector<size_t> fell;
  bool fallen = false;
  for (size_t i = 0; i < next.weight.size() && i < lane_ref_.size(); ++i) {
    double r = lane_rate(q, i);
    // A lane with a share that delivered nothing at all hangs (busy or not): it fell to 0 %.
    const bool hung = i < q.lane_bps.size() && q.lane_bps[i] <= 0;
    if (!next.takes(i) || lane_ref_[i] <= 0 || (r <= 0 && !hung) || r >= 0.5 * lane_ref_[i]) continue;
    fallen_[i] = true;  // probed alone in hold until it has a share again (a lane alone keeps its share here)
    fallen = true;
    probe_s_ = p_.probe_s;
    for (int16_t& l : next.place)  // its services go back among the shares
      if (l == static_cast<int16_t>(i)) l = -1;
    if (next.weight[i] < 0.999f) {
      next.weight[i] = 0;
      fell.push_back(i);
      event_ += fmt::format("; lane {} fell to {:.0f} % of its rate: share {:.2f} -> 0", i, 100 * r / lane_ref_[i],
                            inc_.weight[i]);
    }
  }
  normalise(next.weight);
  if (std::accumulate(next.weight.begin(), next.weight.end(), 0.f) > 0) inc_ = next;  // else every lane fell: keep
  inc_stats_ = {};  // the next block measures the incumbent afresh
  for (size_t i : fell) {  // what it delivers now is not what it will when it recovers: it is tried alone
    order_[i] = 0;
    busy_rates_[i].clear();
  }
  if (const auto c = check_move(fallen)) {
    ++checks_;
    check_ = *c;
    event_ += fmt::format(": check it against {}a step from lane {} to lane {}",
                          c->alone ? fmt::format("lane {} alone and ", c->to) : "", c->from, c->to);
    return start_phase(Phase::kCheck);
  }
  ++restarts_;
  event_ += ": search again";
  start_phase(Phase::kSolo);
}

// A dip of the whole run where no lane's own rate halved: the machine may just have slowed (a shared VM's steal time,
// another process), which a search would only confirm at the cost of visiting every lane alone and the mixes. So under
// the throughput policy the incumbent first meets the two setups nearest to it that a search would go to first, in
// one block: the lane that delivers most per busy second apart from a one-lane incumbent's lane (of a mix: of all
// lanes) alone, and a step of first_step towards that lane from the incumbent's lane (of a mix: from its lane that
// delivers least per busy second); not the lane alone where the solo phase would not run it alone (its rate per busy
// second under 1/kSoloMargin of the best lane's: skip_slow_solos). A win there searches again from solo; a loss keeps
// the incumbent with its figures taken afresh.
std::optional<OnlineBalancer::CheckMove> OnlineBalancer::check_move(bool lane_fell) const {
  if (p_.policy != Policy::kThroughputCritical || lane_fell) return std::nullopt;
  const size_t n = inc_.weight.size();
  const bool one = std::count_if(inc_.weight.begin(), inc_.weight.end(), [](float w) { return w > 0; }) == 1;
  size_t to = n, from = n;
  for (size_t i = 0; i < n; ++i)
    if (alive_[i] && rank(i) > 0 && !(one && inc_.weight[i] > 0) && (to == n || rank(i) > rank(to))) to = i;
  if (to == n) return std::nullopt;
  for (size_t i = 0; i < n; ++i)
    if (i != to && inc_.weight[i] > 0 && (from == n || rank(i) < rank(from))) from = i;
  if (from == n) return std::nullopt;
  return CheckMove{from, to, rank(to) * kSoloMargin >= rank(fastest_lane())};
}

double OnlineBalancer::recent_offered(size_t n) const {
  n = std::min(n, offered_.size());
  return n == 0 ? 0 : median(std::vector<double>(offered_.end() - static_cast<std::ptrdiff_t>(n), offered_.end()));
}

bool OnlineBalancer::rate_moved() {
  if (p_.policy == Policy::kThroughputCritical || ref_offered_ <= 0) return false;
  const double now = recent_offered(p_.drift_quanta);
  if (std::fabs(now / ref_offered_ - 1) <= std::max(2 * p_.delta, 0.25)) return false;
  ++restarts_;
  event_ = fmt::format("{}: the offered rate moved from {:.4g} to {:.4g} Gbit/s: search again", phase_name(),
                       ref_offered_ / 1e9, now / 1e9);
  ref_offered_ = 0;
  // The rate to carry is the new one from now on: the window keeps only the quanta that showed the move. Kept whole,
  // its median stayed at the old rate for half a window after a step down (25 quanta, 1 s), and every quantum at
  // the new rate scored as a shortfall, equal for all setups: the search after the step was blind to energy.
  offered_.erase(offered_.begin(),
                 offered_.end() - static_cast<std::ptrdiff_t>(std::min<size_t>(p_.drift_quanta, offered_.size())));
  inc_stats_ = {};
  off_count_ = 0;
  start_phase(Phase::kSolo);
  return true;
}

void OnlineBalancer::hold_sample(double s, const QuantumFigures& q) {
  // Under a policy whose best setup depends on the load (energy, latency), a step of the offered rate is a reason to
  // search again, as the paper's Fig. 7 steps are; a fall of the score alone (drift) is another.
  if (rate_moved()) return;
  if (drifted(s, q, p_.drift_quanta)) return restart(s, q);
  if (now_ns_ >= hold_until_ns_) {
    recheck_place_ = hold_s_ >= p_.place_recheck_hold_s;
    hold_s_ = std::min(std::max(2 * hold_s_, p_.hold_s), p_.max_hold_s);  // after saved_hold_s: hold_s
    recheck_ = true;
    start_phase(Phase::kBatch);
  } else if (probe_due()) {
    start_phase(Phase::kProbe);
  }
}

bool OnlineBalancer::probed(size_t lane) const {
  return alive_[lane] && fallen_[lane] && !inc_.takes(lane);
}

bool OnlineBalancer::probe_due() const {
  if (now_ns_ < probe_at_ns_) return false;
  for (size_t i = 0; i < fallen_.size(); ++i)
    if (probed(i)) return true;
  return false;
}

void OnlineBalancer::note_lanes(const QuantumFigures& q) {
  const size_t n = inc_.weight.size();
  order_.resize(n, 0.0);  // a lane without a share now keeps what it delivered when it had one
  busy_rates_.resize(n);
  for (size_t i = 0; i < n; ++i) {
    double r = lane_rate(q, i);
    if (r <= 0) continue;
    busy_rates_[i].push_back(r);
    if (busy_rates_[i].size() > kBusyWindow) busy_rates_[i].pop_front();
    order_[i] = median(std::vector<double>(busy_rates_[i].begin(), busy_rates_[i].end()));
  }
}

void OnlineBalancer::Samples::add(double s, const QuantumFigures& q) {
  score.push_back(s);
  rate.push_back(q.achieved_bps);
  power.push_back(q.power_w);
  p50.push_back(q.latency_p50_ns);
  p99.push_back(q.latency_p99_ns);
}

const Setup& OnlineBalancer::step(const QuantumFigures& q) {
  changed_ = false;
  event_.clear();
  measured_.clear();
  if (now_ns_ != 0 && q.now_ns > now_ns_) quantum_ns_ = q.now_ns - now_ns_;
  now_ns_ = q.now_ns;
  offered_.push_back(q.offered_bps);
  while (offered_.size() > p_.rate_window) offered_.pop_front();
  if (settle_ > 0) {
    --settle_;
    return running_;
  }
  left_p99_ns_ = std::max(left_p99_ns_, q.latency_p99_ns);  // the setup's own (not its settling quanta's)
  double s = score(q);
  note_lanes(q);
  switch (phase_) {
    case Phase::kStart:
      if (samples_.empty()) samples_.assign(1, {});
      samples_[0].add(s, q);
      if (samples_[0].score.size() >= p_.min_samples) {
        inc_stats_ = median_spread(samples_[0].score);
        ref_offered_ = recent_offered(p_.min_samples);
        Samples first = std::move(samples_[0]);
        // A saved setup is held, unless the policy's best depends on the offered rate (energy, latency; throughput
        // at a known pace, where the setups that carry it tie and the p99 decides): the saved figures may come from
        // another load (a profile at saturation), so the lanes alone are tried at this one.
        const bool hold = from_saved_ && p_.policy == Policy::kThroughputCritical && !(q.pace_bps > 0);
        start_phase(hold ? Phase::kHold : Phase::kSolo);
        // The first solo block takes the start's samples as the incumbent's: they were taken just now, and every
        // quantum more of equal shares costs (16 workers on one GPU: a fifth of the rate).
        if (phase_ == Phase::kSolo && !block_.empty()) {
          samples_[0] = std::move(first);
          fresh_inc_ = true;
        }
      }
      break;
    case Phase::kHold:
      hold_sample(s, q);
      break;
    default:
      if (block_.empty()) break;
      // The incumbent itself changed (its visits are rarer here: a whole visit off counts).
      if (visit_ == 0 && drifted(s, q, std::min(p_.drift_quanta, p_.visit_quanta))) {
        restart(s, q);
        break;
      }
      samples_[visit_].add(s, q);
      if (--left_ > 0) break;
      if (visit_ == 0 && block_done()) {  // decided at the end of a round (the incumbent is visited last)
        finish_block();
        break;
      }
      if (visit_ == 0 && clear_loss()) {  // the candidates lost clearly: the incumbent alone until it has min_samples
        left_ = p_.visit_quanta;
        break;
      }
      visit_ = (visit_ + 1) % block_.size();
      if (visit_ == 0 && fresh_inc_) {  // the incumbent's samples are the start's: the candidates' turns first
        const bool sampled = std::all_of(samples_.begin(), samples_.end(),
                                         [&](const Samples& x) { return x.score.size() >= p_.min_samples; });
        if (!sampled) {
          visit_ = 1;
        } else if (fresh_inc_ = false; block_done()) {
          finish_block();
          break;
        }
      }
      left_ = p_.visit_quanta;
      run(block_[visit_]);
  }
  return running_;
}

void OnlineBalancer::lane_lost(size_t lane) {
  if (lane >= alive_.size() || !alive_[lane]) return;
  alive_[lane] = false;
  fallen_[lane] = false;
  if (std::none_of(alive_.begin(), alive_.end(), [](bool a) { return a; })) return;
  inc_.weight[lane] = 0;
  for (int16_t& l : inc_.place)
    if (l == static_cast<int16_t>(lane)) l = -1;
  normalise(inc_.weight);
  if (std::accumulate(inc_.weight.begin(), inc_.weight.end(), 0.f) <= 0)
    for (size_t i = 0; i < alive_.size(); ++i) inc_.weight[i] = alive_[i] ? 1.f : 0.f;
  normalise(inc_.weight);
  ++restarts_;
  event_ = fmt::format("lane {} lost: search again from {}", lane, inc_.describe());
  run(inc_);
  start_phase(Phase::kSolo);
}

}  // namespace hpr::sched
