#include "scheduler/store/config_store.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <tuple>

namespace hpr::sched {

const char* metric_name(Metric m) {
  switch (m) {
    case Metric::kThroughput:
      return "throughput";
    case Metric::kLatency:
      return "latency";
    case Metric::kPower:
      return "power";
  }
  return "?";
}

const char* policy_name(Policy p) {
  switch (p) {
    case Policy::kEnergyCritical:
      return "energy";
    case Policy::kLatencyCritical:
      return "latency";
    case Policy::kThroughputCritical:
      return "throughput";
    case Policy::kLatencyTarget:
      return "latency-target";
  }
  return "?";
}

Result<Policy> parse_policy(std::string_view s) {
  if (s == "energy") return Policy::kEnergyCritical;
  if (s == "latency") return Policy::kLatencyCritical;
  if (s == "throughput") return Policy::kThroughputCritical;
  if (s == "latency-target") return Policy::kLatencyTarget;
  return error(Code::kInvalidArgument, "policy '{}' is not one of energy, latency, throughput, latency-target", s);
}

ConfigStore::ConfigStore(StoreOptions opt) : opt_(opt) {}

double ConfigStore::score(Metric m, double v) const {
  constexpr double kTiny = 1e-12;
  switch (m) {
    case Metric::kThroughput:
      return v / opt_.throughput_scale_bps;
    case Metric::kLatency:
      return opt_.latency_scale_ns / std::max(v, kTiny);
    case Metric::kPower:
      return opt_.power_scale_w / std::max(v, kTiny);
  }
  return 0;
}

double ConfigStore::value_of(ConfigId id, Metric m) const {
  const auto& c = configs_[id];
  switch (m) {
    case Metric::kThroughput:
      return c.throughput_bps;
    case Metric::kLatency:
      return c.latency_ns;
    case Metric::kPower:
      return c.power_w;
  }
  return 0;
}

double ConfigStore::spread_of(ConfigId id, Metric m) const {
  const auto& c = configs_[id];
  switch (m) {
    case Metric::kThroughput:
      return c.throughput_spread_bps;
    case Metric::kLatency:
      return c.latency_spread_ns;
    case Metric::kPower:
      return c.power_spread_w;
  }
  return 0;
}

bool ConfigStore::within_spread(ConfigId a, ConfigId b, Metric m) const {
  return std::fabs(value_of(a, m) - value_of(b, m)) < spread_of(a, m) + spread_of(b, m);
}

void ConfigStore::tree_insert(ConfigId id) {
  for (int t = 0; t < 3; ++t) {
    auto m = static_cast<Metric>(t);
    double v = value_of(id, m);
    Tree& tree = trees_[t];
    // Nearest existing node: merge when within δ of it (§4.1 "differs with its parent by a threshold δ").
    auto it = tree.end();
    auto hi = tree.lower_bound(v);
    double best_d = std::numeric_limits<double>::infinity();
    if (hi != tree.end()) {
      best_d = hi->first - v;
      it = hi;
    }
    if (hi != tree.begin()) {
      auto lo = std::prev(hi);
      if (v - lo->first <= best_d) {
        best_d = v - lo->first;
        it = lo;
      }
    }
    if (it == tree.end() || best_d > opt_.delta * std::fabs(it->first)) it = tree.try_emplace(v).first;
    node_key_[id][t] = it->first;
    for (int o = 0; o < 3; ++o) {
      if (o == t) continue;
      it->second.by[o].emplace(score(static_cast<Metric>(o), value_of(id, static_cast<Metric>(o))), id);
    }
  }
}

void ConfigStore::tree_erase(ConfigId id) {
  for (int t = 0; t < 3; ++t) {
    Tree& tree = trees_[t];
    auto it = tree.find(node_key_[id][t]);
    assert(it != tree.end());
    for (int o = 0; o < 3; ++o) {
      if (o == t) continue;
      it->second.by[o].erase({score(static_cast<Metric>(o), value_of(id, static_cast<Metric>(o))), id});
    }
    int other = t == 0 ? 1 : 0;
    if (it->second.by[other].empty()) tree.erase(it);
  }
}

Result<ConfigId> ConfigStore::insert(const Configuration& c) {
  HPR_RETURN_IF_ERROR(validate(c));
  if (auto existing = find_setup(c)) {
    update(*existing, c.throughput_bps, c.latency_ns, c.latency_p99_ns, c.power_w, c.power_source);
    return *existing;
  }
  auto id = static_cast<ConfigId>(configs_.size());
  configs_.push_back(c);
  node_key_.push_back({});
  by_setup_.emplace(setup_hash(c), id);
  for (int t = 0; t < 3; ++t) max_spread_[t] = std::max(max_spread_[t], spread_of(id, static_cast<Metric>(t)));
  tree_insert(id);
  index_attach(id, kNoPos);
  return id;
}

bool ConfigStore::update(ConfigId id, const Configuration& m) {
  assert(id < configs_.size());
  const auto& c = configs_[id];
  auto differs = [&](double stored, double stored_spread, double measured, double measured_spread) {
    double d = std::fabs(measured - stored);
    return d > opt_.delta * std::max(std::fabs(stored), 1e-12) && d > stored_spread + measured_spread;
  };
  if (!differs(c.throughput_bps, c.throughput_spread_bps, m.throughput_bps, m.throughput_spread_bps) &&
      !differs(c.latency_ns, c.latency_spread_ns, m.latency_ns, m.latency_spread_ns) &&
      !differs(c.power_w, c.power_spread_w, m.power_w, m.power_spread_w))
    return false;
  tree_erase(id);
  size_t old_pos = index_detach(id);
  auto& w = configs_[id];
  w.copy_figures(m);
  w.samples = std::max<uint32_t>(w.samples, 1);
  for (int t = 0; t < 3; ++t) max_spread_[t] = std::max(max_spread_[t], spread_of(id, static_cast<Metric>(t)));
  tree_insert(id);
  index_attach(id, old_pos);
  return true;
}

bool ConfigStore::update(ConfigId id, double throughput_bps, double latency_ns, double latency_p99_ns, double power_w,
                         PowerSource source) {
  assert(id < configs_.size());
  Configuration m = configs_[id];  // its spreads
  m.throughput_bps = throughput_bps;
  m.latency_ns = latency_ns;
  m.latency_p99_ns = latency_p99_ns;
  m.power_w = power_w;
  m.power_source = source;
  m.samples = 1;
  return update(id, m);
}

uint64_t setup_hash(const Configuration& c) {
  uint64_t h = 1469598103934665603ULL ^ c.device_mask;
  auto mix = [&](uint64_t v) { h = (h ^ v) * 1099511628211ULL; };
  for (int d = 0; d < kMaxDevices; ++d) {
    if (!c.uses(d)) continue;
    mix(c.batch[d]);
    mix(static_cast<uint64_t>(std::llround(c.split[d] * 1e4)));
  }
  return h;
}

std::optional<ConfigId> ConfigStore::find_setup(const Configuration& c) const {
  auto [lo, hi] = by_setup_.equal_range(setup_hash(c));
  for (auto it = lo; it != hi; ++it)
    if (configs_[it->second].same_setup(c)) return it->second;
  return std::nullopt;
}

NodeView ConfigStore::view(Metric m, const Tree::const_iterator& it) const {
  NodeView v;
  v.key = it->first;
  int t = static_cast<int>(m);
  for (int o = 0; o < 3; ++o) {
    if (o == t) continue;
    v.size = it->second.by[o].size();
    v.best_by[o] = it->second.by[o].empty() ? kNoConfig : it->second.by[o].begin()->second;
  }
  return v;
}

std::optional<NodeView> ConfigStore::find_exact(Metric m, double value) const {
  const Tree& tree = trees_[static_cast<int>(m)];
  auto it = tree.find(value);
  if (it == tree.end()) return std::nullopt;
  return view(m, it);
}

std::optional<NodeView> ConfigStore::find_nearest(Metric m, double value) const {
  const Tree& tree = trees_[static_cast<int>(m)];
  if (tree.empty()) return std::nullopt;
  auto hi = tree.lower_bound(value);
  if (hi == tree.end()) return view(m, std::prev(hi));
  if (hi == tree.begin()) return view(m, hi);
  auto lo = std::prev(hi);
  return (value - lo->first <= hi->first - value) ? view(m, lo) : view(m, hi);
}

std::vector<NodeView> ConfigStore::nodes(Metric m) const {
  std::vector<NodeView> out;
  const Tree& tree = trees_[static_cast<int>(m)];
  for (auto it = tree.begin(); it != tree.end(); ++it) out.push_back(view(m, it));
  return out;
}

// a better than b on metric m (power or latency); values within tie_tolerance of each other, or closer than their
// two spreads combined, are a tie, broken by the other less-is-better metric (§4.1: the configuration best for
// both requirements).
bool ConfigStore::better(ConfigId a, ConfigId b, Metric m) const {
  Metric other = m == Metric::kPower ? Metric::kLatency : Metric::kPower;
  double va = value_of(a, m), vb = value_of(b, m);
  if (std::fabs(va - vb) <= opt_.tie_tolerance * std::max(va, vb) || within_spread(a, b, m))
    return value_of(a, other) < value_of(b, other);
  return va < vb;
}

void ConfigStore::rebuild() const {
  size_t n = configs_.size();
  thr_order_.resize(n);
  for (size_t i = 0; i < n; ++i) thr_order_[i] = static_cast<ConfigId>(i);
  std::sort(thr_order_.begin(), thr_order_.end(), [&](ConfigId a, ConfigId b) { return thr_less(a, b); });
  thr_sorted_.resize(n);
  suffix_min_power_.resize(n);
  suffix_min_latency_.resize(n);
  for (size_t i = 0; i < n; ++i) thr_sorted_[i] = configs_[thr_order_[i]].throughput_bps;
  for (size_t k = n; k-- > 0;) std::tie(suffix_min_power_[k], suffix_min_latency_[k]) = fold_at(k);
  set_max_throughput();
  power_order_ = thr_order_;
  std::sort(power_order_.begin(), power_order_.end(), [&](ConfigId a, ConfigId b) { return power_less(a, b); });
  built_ = true;
}

// The suffix minima (power, latency) at position k of the throughput order, from its element and the minima at
// k + 1: the fold of both rebuild() and index_attach().
std::pair<ConfigId, ConfigId> ConfigStore::fold_at(size_t k) const {
  ConfigId e = thr_order_[k];
  if (k + 1 == thr_order_.size()) return {e, e};
  ConfigId p = suffix_min_power_[k + 1], l = suffix_min_latency_[k + 1];
  return {better(e, p, Metric::kPower) ? e : p, better(e, l, Metric::kLatency) ? e : l};
}

bool ConfigStore::thr_less(ConfigId a, ConfigId b) const {
  double ta = configs_[a].throughput_bps, tb = configs_[b].throughput_bps;
  return ta < tb || (ta == tb && a < b);
}

bool ConfigStore::power_less(ConfigId a, ConfigId b) const {
  double pa = configs_[a].power_w, pb = configs_[b].power_w;
  return pa < pb || (pa == pb && a < b);
}

// Highest throughput; among those tied with it — within tie_tolerance, or closer to it than the two throughput
// spreads combined —, the least power (better(), folded downwards as the suffix minima are). The spread ties are
// found by a scan below the tolerance band, as far as the top's spread plus the largest spread reach: O(k).
void ConfigStore::set_max_throughput() const {
  max_throughput_ = kNoConfig;
  if (thr_sorted_.empty()) return;
  double top = thr_sorted_.back();
  ConfigId top_id = thr_order_.back();
  auto first = std::lower_bound(thr_sorted_.begin(), thr_sorted_.end(), top * (1 - opt_.tie_tolerance));
  auto k = static_cast<size_t>(first - thr_sorted_.begin());
  ConfigId best = suffix_min_power_[k];
  double reach = spread_of(top_id, Metric::kThroughput) + max_spread_[static_cast<int>(Metric::kThroughput)];
  for (size_t i = k; i-- > 0 && top - thr_sorted_[i] < reach;)
    if (within_spread(thr_order_[i], top_id, Metric::kThroughput) && better(thr_order_[i], best, Metric::kPower))
      best = thr_order_[i];
  max_throughput_ = best;
}

// The incremental path (after the first rebuild): `id` leaves the orders before its values change...
size_t ConfigStore::index_detach(ConfigId id) {
  if (!built_) return kNoPos;
  auto by_thr = [&](ConfigId a, ConfigId b) { return thr_less(a, b); };
  auto it = std::lower_bound(thr_order_.begin(), thr_order_.end(), id, by_thr);
  assert(it != thr_order_.end() && *it == id);
  auto pos = static_cast<size_t>(it - thr_order_.begin());
  thr_order_.erase(it);
  thr_sorted_.erase(thr_sorted_.begin() + static_cast<ptrdiff_t>(pos));
  suffix_min_power_.erase(suffix_min_power_.begin() + static_cast<ptrdiff_t>(pos));
  suffix_min_latency_.erase(suffix_min_latency_.begin() + static_cast<ptrdiff_t>(pos));
  auto pit = std::lower_bound(power_order_.begin(), power_order_.end(), id,
                              [&](ConfigId a, ConfigId b) { return power_less(a, b); });
  assert(pit != power_order_.end() && *pit == id);
  power_order_.erase(pit);
  return pos;
}

// ...and comes back at its new place. The suffix minima are refolded from the higher of the old and new
// positions down, the same fold as rebuild() (so the same answers, ties included), and stop below both
// positions once a minimum is unchanged and is not `id` (whose values changed). O(N) moves at worst, no sort.
void ConfigStore::index_attach(ConfigId id, size_t old_pos) {
  if (!built_) return;
  auto by_thr = [&](ConfigId a, ConfigId b) { return thr_less(a, b); };
  auto it = std::lower_bound(thr_order_.begin(), thr_order_.end(), id, by_thr);
  auto pos = static_cast<size_t>(it - thr_order_.begin());
  auto at = [&](auto& v) { return v.begin() + static_cast<ptrdiff_t>(pos); };
  thr_order_.insert(it, id);
  thr_sorted_.insert(at(thr_sorted_), configs_[id].throughput_bps);
  suffix_min_power_.insert(at(suffix_min_power_), id);
  suffix_min_latency_.insert(at(suffix_min_latency_), id);
  power_order_.insert(std::lower_bound(power_order_.begin(), power_order_.end(), id,
                                       [&](ConfigId a, ConfigId b) { return power_less(a, b); }),
                      id);
  size_t lo = old_pos == kNoPos ? pos : std::min(pos, old_pos);
  size_t hi = old_pos == kNoPos ? pos : std::max(pos, old_pos);
  for (size_t k = hi + 1; k-- > 0;) {
    auto [p, l] = fold_at(k);
    if (k < lo && p == suffix_min_power_[k] && l == suffix_min_latency_[k] && p != id && l != id) break;
    suffix_min_power_[k] = p;
    suffix_min_latency_[k] = l;
  }
  set_max_throughput();
}

ConfigId ConfigStore::best(const Query& q) const {
  if (configs_.empty()) return kNoConfig;
  if (!built_) rebuild();
  if (q.policy == Policy::kThroughputCritical) return max_throughput_;
  auto it = std::lower_bound(thr_sorted_.begin(), thr_sorted_.end(), q.rate_bps);
  if (it == thr_sorted_.end()) return max_throughput_;  // nothing sustains R: the most we can do
  auto k = static_cast<size_t>(it - thr_sorted_.begin());
  switch (q.policy) {
    case Policy::kEnergyCritical:
      return suffix_min_power_[k];
    case Policy::kLatencyCritical:
      return suffix_min_latency_[k];
    case Policy::kLatencyTarget: {
      auto meets = [&](ConfigId id) {
        const auto& c = configs_[id];
        return c.throughput_bps >= q.rate_bps && c.latency_p99_ns <= q.latency_target_ns;
      };
      for (size_t i = 0; i < power_order_.size(); ++i) {
        ConfigId least = power_order_[i];
        if (!meets(least)) continue;
        // Those whose power is closer to the least than their two power spreads combined tie with it; the tie
        // goes to the lower median latency (as better() breaks ties). Scanned as far as the spreads reach.
        ConfigId pick = least;
        double reach =
            configs_[least].power_w + spread_of(least, Metric::kPower) + max_spread_[static_cast<int>(Metric::kPower)];
        for (size_t j = i + 1; j < power_order_.size() && configs_[power_order_[j]].power_w < reach; ++j) {
          ConfigId id = power_order_[j];
          if (meets(id) && within_spread(id, least, Metric::kPower) &&
              configs_[id].latency_ns < configs_[pick].latency_ns)
            pick = id;
        }
        return pick;
      }
      return suffix_min_latency_[k];  // the target cannot be met at this rate: the lowest latency that can
    }
    case Policy::kThroughputCritical:
      break;
  }
  return max_throughput_;
}

}  // namespace hpr::sched
