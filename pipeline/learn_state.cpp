#include "pipeline/learn_state.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <ctime>
#include <filesystem>

namespace hpr {

std::string default_state_dir() {
  if (const char* e = std::getenv("HPR_STATE_DIR"); e != nullptr && e[0] != '\0') return e;
  if (::geteuid() == 0) return "/var/lib/hpr";
  if (const char* x = std::getenv("XDG_STATE_HOME"); x != nullptr && x[0] == '/') return std::string(x) + "/hpr";
  if (const char* h = std::getenv("HOME"); h != nullptr && h[0] != '\0') return std::string(h) + "/.local/state/hpr";
  return "";
}

std::string state_file(const std::string& dir, const std::string& app) { return dir + "/learned-" + app + ".json"; }

LearnState load_learn_state(const std::string& path, const prof::Fingerprint& machine) {
  LearnState st;
  auto t = prof::load_table(path, machine, false);
  if (t) {
    st.table = std::move(*t);
    st.note = fmt::format("saved state {}: {} setups measured before", path, st.table.points.size());
    return st;
  }
  if (t.status().code() == Code::kNotFound) {
    st.note = fmt::format("no saved state at {} yet: learning afresh", path);
    return st;
  }
  std::string aside = fmt::format("{}.set-aside-{}", path, static_cast<long long>(std::time(nullptr)));
  std::error_code ec;
  std::filesystem::rename(path, aside, ec);
  st.note = ec ? fmt::format("saved state not used ({}), and it could not be set aside: {}; learning afresh",
                             t.status().message(), ec.message())
               : fmt::format("saved state set aside as {} ({}); learning afresh", aside, t.status().message());
  return st;
}

std::optional<sched::Setup> best_saved_setup(const prof::ConfigTable& t, const sched::BalancerParams& p,
                                             const std::string& traffic, size_t lanes, uint32_t batch) {
  bool any_here = std::any_of(t.points.begin(), t.points.end(), [&](const auto& c) { return c.traffic == traffic; });
  std::vector<const sched::Configuration*> pts;
  for (const auto& c : t.points)
    if ((!any_here || c.traffic == traffic) && (lanes >= 32 || (c.device_mask >> lanes) == 0)) pts.push_back(&c);
  double rate = 0;
  for (const auto* c : pts) rate = std::max(rate, c->throughput_bps);
  std::optional<sched::Setup> best;
  double best_score = 0;
  for (const auto* c : pts) {
    double s = sched::policy_score(p, c->throughput_bps, rate, c->power_w, c->latency_p99_ns, 0);
    if (best && s <= best_score) continue;
    sched::Setup su{std::vector<float>(lanes, 0.f), std::vector<uint32_t>(lanes, batch)};
    for (size_t i = 0; i < lanes && i < static_cast<size_t>(sched::kMaxDevices); ++i)
      if (c->uses(static_cast<int>(i))) {
        su.weight[i] = c->split[i];
        su.batch[i] = c->batch[i];
      }
    su.place = c->place;  // OnlineBalancer::create keeps what fits this run's services and lanes
    best = std::move(su);
    best_score = s;
  }
  return best;
}

bool record_measured(prof::ConfigTable& t, const std::vector<sched::MeasuredSetup>& m, sched::PowerSource source,
                     const std::string& traffic, size_t max_points) {
  bool changed = false;
  for (const auto& x : m) {
    if (x.setup.weight.size() > static_cast<size_t>(sched::kMaxDevices)) continue;
    sched::Configuration c;
    if (x.setup.placed()) c.place = x.setup.place;
    for (size_t i = 0; i < x.setup.weight.size(); ++i)
      if (x.setup.weight[i] > 0) {
        c.device_mask |= 1U << i;
        c.batch[i] = x.setup.batch[i];
        c.split[i] = x.setup.weight[i];
      }
    c.throughput_bps = x.rate_bps.median;
    c.throughput_spread_bps = x.rate_bps.spread;
    c.latency_ns = x.latency_p50_ns.median;
    c.latency_spread_ns = x.latency_p50_ns.spread;
    c.latency_p99_ns = x.latency_p99_ns.median;
    c.latency_p99_spread_ns = x.latency_p99_ns.spread;
    c.power_w = x.power_w.median;
    c.power_spread_w = x.power_w.spread;
    c.power_source = source;
    c.samples = static_cast<uint32_t>(std::max<size_t>(1, x.rate_bps.n));
    c.traffic = traffic;
    if (!sched::validate(c).is_ok()) continue;
    std::erase_if(t.points, [&](const auto& o) { return o.same_setup(c) && o.traffic == traffic; });
    t.points.push_back(std::move(c));
    changed = true;
  }
  if (t.points.size() > max_points)
    t.points.erase(t.points.begin(), t.points.begin() + static_cast<std::ptrdiff_t>(t.points.size() - max_points));
  return changed;
}

}  // namespace hpr
