#include "scheduler/balance/balancer.hpp"

#include <algorithm>
#include <array>
#include <cassert>
#include <optional>

#include "scheduler/balance/afd.hpp"
#include "scheduler/balance/hash.hpp"
#include "scheduler/balance/linear_hash.hpp"

namespace hpr::balance {

Balancer::Balancer(const BalancerConfig& cfg) : cfg_(cfg), flow_mask_(cfg.flow_slots - 1), flows_(cfg.flow_slots) {}

void Balancer::assign(std::span<const PacketMeta> burst, LaneTable& table, std::span<uint16_t> out) {
  assert(out.size() >= burst.size());
  assert(burst.size() <= cfg_.burst_max);
  assert(table.lanes.size() == cfg_.lanes);
  assert(table.flow_pending.size() == cfg_.flow_slots);
  ++stats_.bursts;
  uint64_t mask = 0;
  for (size_t j = 0; j < table.lanes.size(); ++j) mask |= static_cast<uint64_t>(table.lanes[j].enabled) << j;
  mask |= static_cast<uint64_t>(table.lanes.size()) << 58;  // 64 lanes max: 6 bits above 58 unused by lanes < 58
  if (mask != lane_mask_) {
    lane_mask_ = mask;
    ++epoch_;
  }
  do_assign(burst, table, out);
}

Status Balancer::set_lanes(uint32_t n) {
  if (n == 0 || n > kMaxLanes)
    return error(Code::kInvalidArgument, "balancer: lanes must be in 1..{} (got {})", kMaxLanes, n);
  cfg_.lanes = n;
  cfg_.lane_weights.resize(n, 1.0f);
  return Status::ok();
}

Status Balancer::set_lane_weights(std::span<const float> w) {
  if (w.size() != cfg_.lanes)
    return error(Code::kInvalidArgument, "balancer: {} weights for {} lanes", w.size(), cfg_.lanes);
  for (float x : w)
    if (!(x >= 0)) return error(Code::kInvalidArgument, "balancer: lane weights must be >= 0");
  cfg_.lane_weights.assign(w.begin(), w.end());
  ++epoch_;
  return set_lanes(cfg_.lanes);  // policies reload what they derive from the weights
}

uint16_t Balancer::commit(const PacketMeta& p, uint16_t want, LaneTable& t) {
  uint32_t slot = p.flow_id & flow_mask_;
  FlowSlot& fs = flows_[slot];
  uint16_t last = fs.lane;
  if (last != kNoLane && last != want && last < t.lanes.size()) {
    if (t.flow_pending[slot] > 0) {
      ++stats_.would_reorder;
      if (cfg_.no_reorder && t.lanes[last].enabled) {
        ++stats_.blocked_moves;
        want = last;
      } else {
        ++stats_.moves;
      }
    } else {
      ++stats_.moves;
    }
  }
  fs.lane = want;
  ++t.flow_pending[slot];
  ++t.lanes[want].queued;
  ++stats_.packets;
  return want;
}

uint16_t Balancer::least_loaded(const LaneTable& t) const {
  uint16_t best = kNoLane;
  for (uint32_t i = 0; i < t.lanes.size(); ++i) {
    const auto& l = t.lanes[i];
    if (!l.enabled) continue;
    // queued/capacity, compared without division
    if (best == kNoLane || static_cast<uint64_t>(l.queued) * t.lanes[best].capacity <
                               static_cast<uint64_t>(t.lanes[best].queued) * l.capacity)
      best = i;
  }
  return best == kNoLane ? 0 : best;
}

namespace {

// First enabled lane at or after `lane` (cyclic); `lane` itself when none is enabled.
uint16_t enabled_from(const LaneTable& t, uint16_t lane) {
  const auto n = static_cast<uint16_t>(t.lanes.size());
  for (uint32_t k = 0; k < n; ++k) {
    uint16_t c = static_cast<uint16_t>((lane + k) % n);
    if (t.lanes[c].enabled) return c;
  }
  return lane;
}

float load_factor(const LaneState& l) {
  return l.capacity ? static_cast<float>(l.queued) / static_cast<float>(l.capacity) : 1.0f;
}

// HRW (eq. 1 with the eq. 2 weight): lane with the highest weight among enabled lanes.
uint16_t hrw_pick(const LaneTable& t, uint32_t digest) {
  uint16_t best = 0;
  uint32_t best_w = 0;
  bool any = false;
  for (uint32_t j = 0; j < t.lanes.size(); ++j) {
    if (!t.lanes[j].enabled) continue;
    uint32_t w = hrw_weight(j, digest);
    if (!any || w > best_w) {
      best = j;
      best_w = w;
      any = true;
    }
  }
  return best;
}

// Eq. 3: weight mu_j * eq.2 with mu_j = 1 - tau_j over the enabled lanes other than `exclude`.
uint16_t ahrw_pick(const LaneTable& t, uint32_t digest, uint16_t exclude) {
  uint16_t best = exclude;
  float best_w = -1.0f;
  for (uint32_t j = 0; j < t.lanes.size(); ++j) {
    if (j == exclude || !t.lanes[j].enabled) continue;
    float mu = 1.0f - std::min(1.0f, load_factor(t.lanes[j]));
    float w = mu * static_cast<float>(hrw_weight(j, digest));
    if (w > best_w) {
      best = j;
      best_w = w;
    }
  }
  return best;
}

class RoundRobin final : public Balancer {
 public:
  explicit RoundRobin(const BalancerConfig& cfg) : Balancer(cfg) {}
  std::string_view name() const override { return "rr"; }

 protected:
  void do_assign(std::span<const PacketMeta> burst, LaneTable& t, std::span<uint16_t> out) override {
    uint16_t lane = enabled_from(t, static_cast<uint16_t>(next_ % t.lanes.size()));
    for (size_t i = 0; i < burst.size(); ++i) out[i] = commit(burst[i], lane, t);
    next_ = lane + 1u;
  }

 private:
  uint32_t next_ = 0;
};

// Map table of buckets -> lane; re-pointing buckets adds and removes lanes.
class MapTable {
 public:
  MapTable(uint32_t size, uint32_t lanes) : map_(size) {
    for (uint32_t b = 0; b < size; ++b) map_[b] = static_cast<uint16_t>(b % lanes);
    lanes_ = lanes;
  }
  uint16_t lane(uint32_t h) const { return map_[h % map_.size()]; }
  // Re-points the fewest buckets: a new lane takes size/n buckets from the fullest lanes; a removed
  // lane's buckets go to the emptiest remaining lanes.
  void resize(uint32_t n) {
    std::vector<uint32_t> count(std::max(n, lanes_), 0);
    for (auto l : map_) ++count[l];
    auto emptiest = [&]() {
      uint16_t e = 0;
      for (uint32_t l = 1; l < n; ++l)
        if (count[l] < count[e]) e = l;
      return e;
    };
    for (auto& l : map_)
      if (l >= n) {
        --count[l];
        l = emptiest();
        ++count[l];
      }
    for (uint32_t nl = lanes_; nl < n; ++nl) {
      uint32_t share = static_cast<uint32_t>(map_.size()) / n;
      for (auto& l : map_) {
        if (count[nl] >= share) break;
        if (l != nl && count[l] > share) {
          --count[l];
          l = static_cast<uint16_t>(nl);
          ++count[nl];
        }
      }
    }
    lanes_ = n;
  }

 private:
  std::vector<uint16_t> map_;
  uint32_t lanes_;
};

class MapHash final : public Balancer {
 public:
  MapHash(const BalancerConfig& cfg, bool use_crc32)
      : Balancer(cfg), crc32_(use_crc32), map_(cfg.map_table_size, cfg.lanes) {}
  std::string_view name() const override { return crc32_ ? "crc32" : "crc16"; }
  Status set_lanes(uint32_t n) override {
    HPR_RETURN_IF_ERROR(Balancer::set_lanes(n));
    map_.resize(n);
    return Status::ok();
  }

 protected:
  void do_assign(std::span<const PacketMeta> burst, LaneTable& t, std::span<uint16_t> out) override {
    for (size_t i = 0; i < burst.size(); ++i) {
      const auto& p = burst[i];
      uint32_t h = cached(p, [&] { return crc32_ ? crc32(p.tuple) & 0x7fffffffu : crc16(p.tuple); });
      uint16_t lane = map_.lane(h);
      if (!t.lanes[lane].enabled) lane = enabled_from(t, lane);
      out[i] = commit(p, lane, t);
    }
  }

 private:
  bool crc32_;
  MapTable map_;
};

class Hrw final : public Balancer {
 public:
  Hrw(const BalancerConfig& cfg, bool adaptive) : Balancer(cfg), adaptive_(adaptive) {}
  std::string_view name() const override { return adaptive_ ? "ahrw" : "hrw"; }

 protected:
  void do_assign(std::span<const PacketMeta> burst, LaneTable& t, std::span<uint16_t> out) override {
    const float thr = static_cast<float>(cfg_.load_threshold);
    for (size_t i = 0; i < burst.size(); ++i) {
      const auto& p = burst[i];
      uint16_t lane = cached_lane(p, [&] { return hrw_pick(t, p.flow_hash); });
      if (adaptive_ && load_factor(t.lanes[lane]) > thr) {
        lane = ahrw_pick(t, p.flow_hash, lane);
        ++stats_.adjustments;
      }
      out[i] = commit(p, lane, t);
    }
  }

 private:
  bool adaptive_;
};

class WeightedHrw final : public Balancer {
 public:
  explicit WeightedHrw(const BalancerConfig& cfg) : Balancer(cfg) { load_weights(); }
  std::string_view name() const override { return "whrw"; }
  Status set_lanes(uint32_t n) override {
    HPR_RETURN_IF_ERROR(Balancer::set_lanes(n));
    load_weights();
    return Status::ok();
  }

 protected:
  void do_assign(std::span<const PacketMeta> burst, LaneTable& t, std::span<uint16_t> out) override {
    for (size_t i = 0; i < burst.size(); ++i) {
      const auto& p = burst[i];
      out[i] = commit(p, cached_lane(p, [&] { return pick(t, p.flow_hash); }), t);
    }
  }

 private:
  uint16_t pick(const LaneTable& t, uint32_t flow_hash) const {
    const auto n = static_cast<uint16_t>(t.lanes.size());
    {
      const uint32_t fh = flow_hash;
      uint16_t best = 0;
      float best_s = -1.0f;
      for (uint32_t j = 0; j < n; ++j) {
        if (!t.lanes[j].enabled) continue;
        // u in (0, 1]; eq. 2 output finalized so that the lanes' u are independent.
        float u = static_cast<float>((mix32(hrw_weight(j, fh)) >> 8) + 1) * (1.0f / 16777216.0f);
        float nl = -fast_ln(u);  // >= 0; 0 only for u == 1
        float s = nl > 0 ? weight_[j] / nl : 3.0e38f;
        if (s > best_s) {
          best_s = s;
          best = j;
        }
      }
      return best;
    }
  }

  void load_weights() {
    weight_.fill(1.0f);
    for (size_t j = 0; j < cfg_.lane_weights.size() && j < kMaxLanes; ++j) weight_[j] = cfg_.lane_weights[j];
  }
  std::array<float, kMaxLanes> weight_{};
};

class Subflow final : public Balancer {
 public:
  explicit Subflow(const BalancerConfig& cfg) : Balancer(cfg), target_(cfg.burst_max, -1) {}
  std::string_view name() const override { return "subflow"; }

 protected:
  void do_assign(std::span<const PacketMeta> burst, LaneTable& t, std::span<uint16_t> out) override {
    // Algorithm 1 line 1: the previous burst's decisions are not reused.
    std::fill(target_.begin(), target_.end(), int16_t{-1});
    std::fill(staged_.begin(), staged_.begin() + t.lanes.size(), 0u);
    const auto bsz = static_cast<uint32_t>(target_.size());
    const bool pow2 = (bsz & (bsz - 1)) == 0;
    const float thr = static_cast<float>(cfg_.load_threshold);
    for (size_t i = 0; i < burst.size(); ++i) {
      const auto& p = burst[i];
      uint32_t idx = pow2 ? (p.flow_hash & (bsz - 1)) : p.flow_hash % bsz;  // line 3
      int16_t c = target_[idx];
      if (c < 0) {  // lines 5-7
        c = static_cast<int16_t>(cached_lane(p, [&] { return hrw_pick(t, p.flow_hash); }));
        target_[idx] = c;
      }
      // tau > threshold, as queued > threshold * capacity (no division per packet)
      bool adjusted = false;
      if (staged_[c] == 0 && static_cast<float>(t.lanes[c].queued) > thr * static_cast<float>(t.lanes[c].capacity)) {
        c = static_cast<int16_t>(ahrw_pick(t, p.flow_hash, static_cast<uint16_t>(c)));
        target_[idx] = c;
        adjusted = true;
        ++stats_.adjustments;
      }
      uint16_t lane = commit(p, static_cast<uint16_t>(c), t);
      // A re-decision the no-reorder rule refused does not count as staged: the next subflow bound
      // for the overloaded lane (perhaps one with nothing pending) gets its own chance to move.
      if (lane == static_cast<uint16_t>(c) || !adjusted) ++staged_[lane];
      out[i] = lane;
    }
  }

 private:
  std::vector<int16_t> target_;
  std::array<uint32_t, kMaxLanes> staged_{};
};

class Fcfs final : public Balancer {
 public:
  explicit Fcfs(const BalancerConfig& cfg) : Balancer(cfg) {}
  std::string_view name() const override { return "fcfs"; }

 protected:
  void do_assign(std::span<const PacketMeta> burst, LaneTable& t, std::span<uint16_t> out) override {
    const auto n = static_cast<uint32_t>(t.lanes.size());
    bool uniform = true;
    for (uint32_t j = 0; j < n; ++j) {
      eff_[j] = t.lanes[j].enabled ? t.lanes[j].queued : 0xffffffffu;
      uniform &= t.lanes[j].capacity == t.lanes[0].capacity;
    }
    // JSQ in amortized O(1): lanes at the minimum level m are used in index order; a full scan
    // for the next level happens once every ~n packets.
    uint32_t m = 0xffffffffu, pos = n;
    for (size_t i = 0; i < burst.size(); ++i) {
      uint16_t want;
      if (uniform) {
        while (pos < n && eff_[pos] != m) ++pos;
        if (pos >= n) {
          m = 0xffffffffu;
          for (uint32_t j = 0; j < n; ++j) m = std::min(m, eff_[j]);
          pos = 0;
          while (pos < n && eff_[pos] != m) ++pos;
          if (pos >= n) pos = 0;
        }
        want = static_cast<uint16_t>(pos);
      } else {
        want = least_loaded(t);
      }
      uint16_t lane = commit(burst[i], want, t);
      out[i] = lane;
      if (eff_[lane] != 0xffffffffu) eff_[lane] = t.lanes[lane].queued;
    }
  }

 private:
  std::array<uint32_t, kMaxLanes> eff_{};
};

class Afs final : public Balancer {
 public:
  explicit Afs(const BalancerConfig& cfg) : Balancer(cfg), map_(cfg.map_table_size, cfg.lanes) {}
  std::string_view name() const override { return "afs"; }
  Status set_lanes(uint32_t n) override {
    HPR_RETURN_IF_ERROR(Balancer::set_lanes(n));
    map_.resize(n);
    for (auto& f : flows_) f.aux = 0xffffffffu;
    return Status::ok();
  }

 protected:
  void do_assign(std::span<const PacketMeta> burst, LaneTable& t, std::span<uint16_t> out) override {
    for (size_t i = 0; i < burst.size(); ++i) {
      const auto& p = burst[i];
      uint32_t slot = p.flow_id & flow_mask_;
      uint32_t mig = flows_[slot].aux;
      uint16_t lane =
          mig < kMaxLanes ? static_cast<uint16_t>(mig) : map_.lane(cached(p, [&] { return crc16(p.tuple); }));
      if (!t.lanes[lane].enabled) lane = enabled_from(t, lane);
      if (t.lanes[lane].queued >= cfg_.imbalance_queue) {
        uint16_t ll = least_loaded(t);
        if (ll != lane && can_move(p, t)) {
          flows_[slot].aux = ll;
          ++stats_.migrations;
          lane = ll;
        }
      }
      out[i] = commit(p, lane, t);
    }
  }

 private:
  MapTable map_;
};

class Laps final : public Balancer {
 public:
  Laps(const BalancerConfig& cfg, AggressiveFlowDetector afd, std::vector<LinearHashTable> tables)
      : Balancer(cfg), afd_(std::move(afd)), tables_(std::move(tables)) {
    for (uint32_t s = 0; s < tables_.size(); ++s)
      for (auto l : tables_[s].lanes()) service_[l] = s;
  }
  std::string_view name() const override { return "laps"; }
  Status set_lanes(uint32_t n) override {
    uint32_t old = cfg_.lanes;
    if (n < tables_.size())
      return error(Code::kInvalidArgument, "laps: lanes ({}) must be >= services ({})", n, tables_.size());
    for (uint32_t l = n; l < old; ++l) {  // remove lanes from their services
      auto& tab = tables_[service_[l]];
      if (tab.size() == 1)
        return error(Code::kInvalidArgument, "laps: lane {} is the last lane of service {}", l, service_[l]);
      HPR_RETURN_IF_ERROR(tab.remove(static_cast<uint16_t>(l)));
      ++gen_[l];
    }
    HPR_RETURN_IF_ERROR(Balancer::set_lanes(n));
    for (uint32_t l = old; l < n; ++l) {  // a new lane joins the service with the fewest lanes
      uint16_t s = 0;
      for (uint32_t k = 1; k < tables_.size(); ++k)
        if (tables_[k].size() < tables_[s].size()) s = k;
      tables_[s].grow(static_cast<uint16_t>(l));
      service_[l] = s;
      ++gen_[l];
    }
    return Status::ok();
  }
  const AggressiveFlowDetector& afd() const { return afd_; }

 protected:
  static constexpr uint32_t kNoMig = 0xffffffffu;

  void do_assign(std::span<const PacketMeta> burst, LaneTable& t, std::span<uint16_t> out) override {
    if (cfg_.dynamic_cores) track_idle(t);
    for (size_t i = 0; i < burst.size(); ++i) {
      const auto& p = burst[i];
      uint16_t s = p.service < tables_.size() ? p.service : 0;
      uint32_t slot = p.flow_id & flow_mask_;
      uint32_t m = flows_[slot].aux;
      uint16_t lane;
      if (m != kNoMig && (m >> 16) == gen_[m & 0xffff] && service_[m & 0xffff] == s) {
        lane = static_cast<uint16_t>(m & 0xffff);  // migration table first (§III-D step 1)
      } else {
        lane = tables_[s].lane(cached(p, [&] { return crc16(p.tuple); }));  // map table (step 2)
      }
      afd_.observe(p.flow_id);
      if (t.lanes[lane].queued >= cfg_.imbalance_queue) {  // load imbalance (step 3)
        uint16_t ll = least_loaded_of(s, t);
        if (t.lanes[ll].queued >= cfg_.imbalance_queue && cfg_.dynamic_cores) {
          uint16_t got = take_surplus(s, t);  // step 4: the service is short of cores
          if (got != kNoLane) ll = got;
        }
        if (ll != lane && afd_.is_aggressive(p.flow_id) && can_move(p, t)) {
          flows_[slot].aux = (static_cast<uint32_t>(gen_[ll]) << 16) | ll;
          ++stats_.migrations;
          lane = ll;
        }
      }
      out[i] = commit(p, lane, t);
    }
  }

 private:
  void track_idle(const LaneTable& t) {
    const uint64_t now = t.now_ns + 1;  // 0 means "not idle"
    for (uint32_t l = 0; l < t.lanes.size(); ++l) {
      if (t.lanes[l].queued == 0) {
        if (idle_since_[l] == 0)
          idle_since_[l] = now;
        else if (surplus_since_[l] == 0 && now - idle_since_[l] >= cfg_.idle_th_ns)
          surplus_since_[l] = now;
      } else {
        idle_since_[l] = 0;
        surplus_since_[l] = 0;  // its own service uses it again: unmark
      }
    }
  }

  uint16_t least_loaded_of(uint16_t s, const LaneTable& t) const {
    const auto& lanes = tables_[s].lanes();
    uint16_t best = lanes[0];
    for (auto l : lanes)
      if (t.lanes[l].queued < t.lanes[best].queued) best = l;
    return best;
  }

  // The lane marked surplus for the longest time, from another service that keeps >= 1 lane.
  uint16_t take_surplus(uint16_t s, const LaneTable& t) {
    uint16_t best = kNoLane;
    for (uint32_t l = 0; l < t.lanes.size(); ++l) {
      if (surplus_since_[l] == 0 || service_[l] == s || tables_[service_[l]].size() <= 1) continue;
      if (best == kNoLane || surplus_since_[l] < surplus_since_[best]) best = l;
    }
    if (best == kNoLane) return kNoLane;
    (void)tables_[service_[best]].remove(best);  // cannot fail: present and not the last lane
    tables_[s].grow(best);
    service_[best] = s;
    ++gen_[best];  // invalidates migration entries that point at it
    surplus_since_[best] = 0;
    idle_since_[best] = 0;
    ++stats_.core_reallocations;
    return best;
  }

  AggressiveFlowDetector afd_;
  std::vector<LinearHashTable> tables_;
  // migration table: FlowSlot::aux = gen << 16 | lane, or kNoMig
  std::array<uint16_t, kMaxLanes> service_{};
  std::array<uint16_t, kMaxLanes> gen_{};
  std::array<uint64_t, kMaxLanes> idle_since_{};
  std::array<uint64_t, kMaxLanes> surplus_since_{};
};

constexpr std::array<std::string_view, 10> kNames = {"rr",   "crc16",   "crc32", "hrw", "whrw",
                                                     "ahrw", "subflow", "fcfs",  "afs", "laps"};

Status validate(const BalancerConfig& c) {
  if (c.lanes == 0 || c.lanes > kMaxLanes)
    return error(Code::kInvalidArgument, "balancer setting 'lanes' must be in 1..{} (got {})", kMaxLanes, c.lanes);
  if (c.flow_slots == 0 || (c.flow_slots & (c.flow_slots - 1)) != 0)
    return error(Code::kInvalidArgument, "balancer setting 'flow_slots' must be a power of two (got {})", c.flow_slots);
  if (c.map_table_size < c.lanes)
    return error(Code::kInvalidArgument, "balancer setting 'map_table_size' ({}) must be >= lanes ({})",
                 c.map_table_size, c.lanes);
  if (c.burst_max == 0 || c.burst_max > 4096)
    return error(Code::kInvalidArgument, "balancer setting 'burst_max' must be in 1..4096 (got {})", c.burst_max);
  if (!(c.load_threshold > 0.0 && c.load_threshold <= 1.0))
    return error(Code::kInvalidArgument, "balancer setting 'load_threshold' must be in (0, 1] (got {})",
                 c.load_threshold);
  if (!c.lane_weights.empty()) {
    if (c.lane_weights.size() != c.lanes)
      return error(Code::kInvalidArgument, "balancer setting 'lane_weights' has {} entries for {} lanes",
                   c.lane_weights.size(), c.lanes);
    for (size_t i = 0; i < c.lane_weights.size(); ++i)
      if (!(c.lane_weights[i] > 0.0f))
        return error(Code::kInvalidArgument, "balancer setting 'lane_weights[{}]' must be > 0 (got {})", i,
                     c.lane_weights[i]);
  }
  return Status::ok();
}

}  // namespace

std::span<const std::string_view> balancer_names() { return kNames; }

Result<std::unique_ptr<Balancer>> make_balancer(std::string_view name, const BalancerConfig& cfg) {
  HPR_RETURN_IF_ERROR(validate(cfg));
  std::unique_ptr<Balancer> b;
  if (name == "rr")
    b = std::make_unique<RoundRobin>(cfg);
  else if (name == "crc16")
    b = std::make_unique<MapHash>(cfg, false);
  else if (name == "crc32")
    b = std::make_unique<MapHash>(cfg, true);
  else if (name == "hrw")
    b = std::make_unique<Hrw>(cfg, false);
  else if (name == "ahrw")
    b = std::make_unique<Hrw>(cfg, true);
  else if (name == "whrw")
    b = std::make_unique<WeightedHrw>(cfg);
  else if (name == "subflow")
    b = std::make_unique<Subflow>(cfg);
  else if (name == "fcfs")
    b = std::make_unique<Fcfs>(cfg);
  else if (name == "afs")
    b = std::make_unique<Afs>(cfg);
  else if (name == "laps") {
    if (cfg.services == 0 || cfg.services > cfg.lanes)
      return error(Code::kInvalidArgument, "balancer setting 'services' must be in 1..lanes ({}) (got {})", cfg.lanes,
                   cfg.services);
    auto afd = AggressiveFlowDetector::create(
        AfdConfig{cfg.afc_entries, cfg.annex_entries, cfg.annex_ways, cfg.afd_sample_every, cfg.afd_decay_packets});
    if (!afd) return afd.status();
    std::vector<LinearHashTable> tables;
    for (uint32_t s = 0; s < cfg.services; ++s) {  // lanes split evenly, contiguous
      std::vector<uint16_t> lanes;
      for (uint32_t l = s * cfg.lanes / cfg.services; l < (s + 1) * cfg.lanes / cfg.services; ++l)
        lanes.push_back(static_cast<uint16_t>(l));
      auto t = LinearHashTable::create(std::move(lanes));
      if (!t) return t.status();
      tables.push_back(std::move(t).value());
    }
    b = std::make_unique<Laps>(cfg, std::move(afd).value(), std::move(tables));
  } else {
    std::string known;
    for (auto n : kNames) known += (known.empty() ? "" : ", ") + std::string(n);
    return error(Code::kInvalidArgument, "unknown balancer policy '{}' (known: {})", name, known);
  }
  return b;
}

}  // namespace hpr::balance
