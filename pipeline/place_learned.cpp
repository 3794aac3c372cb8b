// app.place = "learned": a chain's apps placed from each app's learned state (place_learned.hpp).
#include "pipeline/place_learned.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "kernels/registry.hpp"
#include "pipeline/adaptive_control.hpp"
#include "pipeline/learn_state.hpp"

namespace hpr {
namespace {

// App a on exactly the lanes of one mask: the best median rate measured there, its relative spread, its J/bit (< 0:
// no power figure) and the point (for its split).
struct Est {
  double bps = 0, rel = 0, jpb = -1;
  const sched::Configuration* point = nullptr;
};

struct Plan {
  std::vector<uint32_t> end;   // per stage: one past its last app
  std::vector<uint32_t> mask;  // per stage: its lanes
  double bps = 0, rel = 0, jpb = 0;
  bool staged() const { return end.size() > 1; }
};

class Planner {
 public:
  Planner(size_t apps, size_t lanes, uint32_t host)
      : n_(static_cast<uint32_t>(apps)), host_(host), est_(apps, std::vector<Est>(size_t{1} << lanes)) {}

  void add(size_t a, const prof::ConfigTable& t, const std::string& traffic) {
    const bool any_here =
        std::any_of(t.points.begin(), t.points.end(), [&](const auto& c) { return c.traffic == traffic; });
    for (const auto& c : t.points) {
      if ((any_here && c.traffic != traffic) || c.device_mask >= est_[a].size() || c.throughput_bps <= 0 ||
          !c.place.empty())
        continue;
      Est& e = est_[a][c.device_mask];
      if (c.throughput_bps <= e.bps) continue;
      e = {c.throughput_bps, c.throughput_spread_bps / c.throughput_bps,
           c.power_w > 0 ? c.power_w / c.throughput_bps : -1, &c};
    }
  }

  // Every plan: the apps split into consecutive stages, each on lanes of its own (disjoint), each app measured there;
  // at most one stage on the host's lanes (one thread runs them all: stages there would take turns, not run side by
  // side).
  void search(uint32_t first, uint32_t free, Plan& p) {
    if (first == n_) {
      consider(p);
      return;
    }
    for (uint32_t e = first + 1; e <= n_; ++e)
      for (uint32_t s = free; s != 0; s = (s - 1) & free) {
        if ((s & host_) != 0 && (free & host_) != host_) continue;
        double inv = 0, rel = 0, jpb = 0;
        bool ok = true;
        for (uint32_t a = first; a < e && ok; ++a) {
          const Est& x = est_[a][s];
          ok = x.bps > 0;
          if (!ok) break;
          inv += 1 / x.bps;
          rel = std::max(rel, x.rel);
          jpb = jpb < 0 || x.jpb < 0 ? -1 : jpb + x.jpb;
        }
        if (!ok) continue;
        const Plan keep = p;
        p.end.push_back(e);
        p.mask.push_back(s);
        p.bps = p.end.size() == 1 ? 1 / inv : std::min(p.bps, 1 / inv);
        p.rel = std::max(p.rel, rel);
        p.jpb = p.jpb < 0 || jpb < 0 ? -1 : p.jpb + jpb;
        search(e, free & ~s, p);
        p = keep;
      }
  }

  const Est& est(uint32_t a, uint32_t mask) const { return est_[a][mask]; }
  std::vector<Plan> whole, staged;  // the plans found

 private:
  void consider(const Plan& p) { (p.staged() ? staged : whole).push_back(p); }
  uint32_t n_;
  uint32_t host_;                      // the lanes of the host's one thread
  std::vector<std::vector<Est>> est_;  // [app][lane mask]
};

double lo(const Plan& p) { return p.bps * (1 - p.rel); }
double hi(const Plan& p) { return p.bps * (1 + p.rel); }

const Plan* fastest(const std::vector<Plan>& v) {
  const Plan* best = nullptr;
  for (const Plan& p : v)
    if (best == nullptr || p.bps > best->bps) best = &p;
  return best;
}

// Of the plans as fast as the fastest within both spreads, the one of least energy a bit (where every one has a
// power figure), else the fastest.
const Plan* choose(const std::vector<Plan>& v) {
  const Plan* top = fastest(v);
  if (top == nullptr) return nullptr;
  const Plan* best = top;
  for (const Plan& p : v)
    if (hi(p) >= lo(*top) && p.jpb >= 0 && best->jpb >= 0 && p.jpb < best->jpb) best = &p;
  return best;
}

std::string lanes_of(uint32_t mask, const std::vector<std::string>& lanes) {
  std::vector<std::string> v;
  for (size_t i = 0; i < lanes.size(); ++i)
    if ((mask >> i) & 1U) v.push_back(lanes[i]);
  return fmt::format("{}", fmt::join(v, ", "));
}

std::string describe(const Plan& p, const std::vector<std::string>& apps, const std::vector<std::string>& lanes) {
  std::string s;
  for (size_t j = 0, b = 0; j < p.end.size(); b = p.end[j++]) {
    std::vector<std::string> group(apps.begin() + static_cast<long>(b), apps.begin() + p.end[j]);
    s += fmt::format("{}{} on {}", s.empty() ? "" : "; ", fmt::join(group, ","), lanes_of(p.mask[j], lanes));
  }
  s += fmt::format(" (est. {:.3f} Gbit/s ±{:.0f} %", p.bps / 1e9, p.rel * 100);
  if (p.jpb >= 0) s += fmt::format(", {:.2f} nJ/bit", p.jpb * 1e9);
  return s + ")";
}

}  // namespace

LearnedPlacement place_from_learned(const std::vector<std::string>& apps, const std::vector<std::string>& lanes,
                                    const std::vector<const prof::ConfigTable*>& tables,
                                    const std::vector<std::string>& why, const std::string& traffic,
                                    uint32_t host_lanes) {
  LearnedPlacement out;
  const char* keep = "the whole chain on every lane, learning its shares";
  std::vector<std::string> missing, first;
  for (size_t a = 0; a < apps.size(); ++a)
    if (a >= tables.size() || tables[a] == nullptr) {
      missing.push_back(fmt::format("{} ({})", apps[a], a < why.size() ? why[a] : "no learned state"));
      if (first.empty()) first.push_back(apps[a]);
    }
  if (!missing.empty()) {
    out.text = fmt::format(
        "not placed: no learned state for {}; {} (run each app alone on the same lanes first, "
        "e.g. hpr run --app {})",
        fmt::join(missing, ", "), keep, first[0]);
    return out;
  }
  if (lanes.size() > static_cast<size_t>(sched::kMaxDevices)) {
    out.text = fmt::format("not placed: {} lanes, and a learned state keeps setups of at most {}; {}", lanes.size(),
                           sched::kMaxDevices, keep);
    return out;
  }
  Planner pl(apps.size(), lanes.size(), host_lanes);
  for (size_t a = 0; a < apps.size(); ++a) pl.add(a, *tables[a], traffic);
  Plan p;
  pl.search(0, (1U << lanes.size()) - 1, p);
  const Plan* whole = fastest(pl.whole);
  const Plan* staged = choose(pl.staged);
  if (staged == nullptr) {
    out.text = whole ? fmt::format(
                           "not placed: no lane set measured for each app on its own lanes; {} (best whole "
                           "chain: {})",
                           keep, describe(*whole, apps, lanes))
                     : fmt::format("not placed: no lane set was measured for every app; {}", keep);
    return out;
  }
  // The learner's rule: better by more than both spreads and by 2 %.
  if (whole != nullptr && !(lo(*staged) > hi(*whole) && staged->bps > 1.02 * whole->bps)) {
    out.text = fmt::format(
        "not placed: the best placement {} does not beat the whole chain on {} beyond their "
        "spreads; {}",
        describe(*staged, apps, lanes), describe(*whole, apps, lanes), keep);
    return out;
  }
  out.app_lanes.assign(apps.size(), {});
  out.weights.assign(lanes.size(), 0);
  uint32_t used = 0;
  for (size_t j = 0, b = 0; j < staged->end.size(); b = staged->end[j++]) {
    // The stage's shares: the split of its slowest app's point there.
    uint32_t slow = static_cast<uint32_t>(b);
    for (uint32_t a = slow; a < staged->end[j]; ++a)
      if (pl.est(a, staged->mask[j]).bps < pl.est(slow, staged->mask[j]).bps) slow = a;
    const sched::Configuration& pt = *pl.est(slow, staged->mask[j]).point;
    used |= staged->mask[j];
    for (size_t i = 0; i < lanes.size(); ++i) {
      // A lane no stage uses joins the last stage at weight 0: it takes flows only when that stage's others fail.
      const bool last = j + 1 == staged->end.size();
      if (!((staged->mask[j] >> i) & 1U) && !(last && !((used >> i) & 1U))) continue;
      if ((staged->mask[j] >> i) & 1U) out.weights[i] = std::max(pt.split[i], 1e-3f);
      for (size_t a = b; a < staged->end[j]; ++a) out.app_lanes[a].push_back(lanes[i]);
    }
  }
  out.text = fmt::format("{}, against the whole chain {}", describe(*staged, apps, lanes),
                         whole ? describe(*whole, apps, lanes) : std::string("(not measured on one lane set)"));
  return out;
}

LearnedPlacement place_learned(const RunConfig& c, const std::vector<DeviceInfo>& devices,
                               const std::vector<std::string>& lanes) {
  auto apps = kernels::chain_apps(c.app);  // validated
  if (!apps) return {{}, {}, fmt::format("not placed: {}", apps.status().message())};
  const std::string dir = c.adapt_state_dir.empty() ? default_state_dir() : c.adapt_state_dir;
  const std::string traffic = traffic_description(c.input);
  std::vector<prof::ConfigTable> tables(apps->size());
  std::vector<const prof::ConfigTable*> have(apps->size(), nullptr);
  std::vector<std::string> why(apps->size());
  for (size_t a = 0; a < apps->size(); ++a) {
    if (dir.empty() || dir == "none") {
      why[a] = "adapt.state_dir names no folder";
      continue;
    }
    const std::string path = state_file(dir, (*apps)[a]);
    auto t = prof::load_table(path, machine_fingerprint(devices, c.native_lanes, (*apps)[a], traffic));
    if (t) {
      tables[a] = std::move(*t);
      have[a] = &tables[a];
    } else {
      why[a] = t.status().code() == Code::kNotFound ? fmt::format("{} not found", path) : t.status().message();
    }
  }
  // Run to completion (stages are), the native lanes (after the devices') run on the worker's one thread.
  const size_t lanes_n = devices.size() + c.native_lanes;  // more than kMaxDevices: not placed (place_from_learned)
  const uint32_t host = lanes_n <= 31 ? ((1U << c.native_lanes) - 1) << devices.size() : 0;
  return place_from_learned(*apps, lanes, have, why, traffic, host);
}

}  // namespace hpr
