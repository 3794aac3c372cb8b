// hpr ctl set weight LANE W | set place SERVICE LANE|any | set policy GOAL [TARGET_US]: what an operator may change in
// a running hpr.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <optional>

#include "cli/ctl_cmd.hpp"
#include "cli/run_extras.hpp"

namespace hpr::cli {
namespace {

// Whole string as a number (strtod: "1", "0.5", "1e3"); nullopt otherwise.
std::optional<double> number(const std::string& s) {
  if (s.empty() || std::isspace(static_cast<unsigned char>(s[0]))) return std::nullopt;
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

std::string fmt_weights(Pipeline& w) {
  std::string s;
  const std::vector<float> ws = w.lane_weights();
  for (size_t i = 0; i < ws.size(); ++i) s += fmt::format("{}{} {:g}", i ? ", " : "", w.lane_name(i), ws[i]);
  return s;
}

// LANE: a lane's index as `hpr ctl lanes` lists them (every worker's lanes in turn), its full name ("native1",
// "w1:native0"), or, with several workers, its name without the worker's "wN:" (that lane of every worker). The
// (worker, lane index) pairs it names; none: an error naming `cmd` and the lanes there are.
Result<std::vector<std::pair<size_t, size_t>>> match_lanes(const std::vector<Pipeline*>& ws, const std::string& lane,
                                                           const char* cmd) {
  std::vector<std::pair<size_t, size_t>> hit;
  std::string names;
  size_t global = 0;
  const bool index = !lane.empty() && lane.find_first_not_of("0123456789") == std::string::npos;
  for (size_t k = 0; k < ws.size(); ++k)
    for (size_t i = 0; i < ws[k]->lane_count(); ++i, ++global) {
      const std::string& name = ws[k]->lane_name(i);
      names += (names.empty() ? "" : ", ") + name;
      const size_t colon = name.find(':');
      const bool prefixed = ws.size() > 1 && name.size() > 1 && name[0] == 'w' && colon != std::string::npos;
      if (index ? lane == std::to_string(global) : name == lane || (prefixed && name.substr(colon + 1) == lane))
        hit.emplace_back(k, i);
    }
  if (hit.empty())
    return error(Code::kInvalidArgument, "{}: LANE '{}' is neither a lane's name nor its index (lanes: {})", cmd, lane,
                 names);
  return hit;
}

// set weight LANE W (LANE: match_lanes).
Result<nlohmann::json> set_weight(Pipeline& p, const SchedulerHooks& sched, const std::vector<std::string>& args) {
  if (args.size() != 3) return error(Code::kInvalidArgument, "set weight: usage: set weight LANE W (W >= 0)");
  if (!sched.weights_owner.empty())
    return error(Code::kInvalidArgument,
                 "set weight: the {} scheduler sets the lane weights in this run; start hpr run with --static for "
                 "weights set by hand ([lanes.weights] at the start, hpr ctl set weight while it runs)",
                 sched.weights_owner);
  const auto w = number(args[2]);
  if (!w || *w < 0 || *w > 1e6)
    return error(Code::kInvalidArgument, "set weight: W '{}' is not a number in 0..1e6", args[2]);
  const std::vector<Pipeline*> ws = p.all_workers();
  auto matched = match_lanes(ws, args[1], "set weight");
  if (!matched) return matched.status();
  const std::vector<std::pair<size_t, size_t>>& hit = *matched;
  // The new weights of each worker touched; refused when one would have no lane left for new flows.
  std::vector<std::vector<float>> next(ws.size());
  std::string was;
  for (auto [k, i] : hit) {
    if (next[k].empty()) next[k] = ws[k]->lane_weights();
    was += fmt::format("{}{} {:g} -> {:g}", was.empty() ? "" : ", ", ws[k]->lane_name(i), next[k][i], *w);
    next[k][i] = static_cast<float>(*w);
  }
  for (size_t k = 0; k < ws.size(); ++k)
    if (!next[k].empty() && std::none_of(next[k].begin(), next[k].end(), [](float x) { return x > 0; }))
      return error(Code::kInvalidArgument,
                   "set weight: refused: every lane{} would have weight 0, so no lane would take a new flow",
                   ws.size() > 1 ? fmt::format(" of worker {}", k) : "");
  for (size_t k = 0; k < ws.size(); ++k)
    if (!next[k].empty())
      if (Status st = ws[k]->set_lane_weights(next[k]); !st.is_ok())
        return error(Code::kInvalidArgument, "set weight: {}", st.message());
  nlohmann::json j;
  std::string t = "weight " + was +
                  " (new flows from the dispatcher's next burst; a flow moves only once nothing of "
                  "it is in flight)\n";
  for (Pipeline* x : ws) {
    const std::vector<float> now = x->lane_weights();
    for (size_t i = 0; i < now.size(); ++i) j["weights"][x->lane_name(i)] = now[i];
    t += "  weights: " + fmt_weights(*x) + "\n";
  }
  j["text"] = t;
  return j;
}

// set place SERVICE LANE|any: every flow of a [[service]] (its name or index) on one lane (LANE: match_lanes; with
// several workers, by its name without "wN:", that lane of every worker), or back where the config puts it (any: its
// `lanes`, or every lane). Flows move as for a weight change. Not in learning mode, which places services itself.
Result<nlohmann::json> set_place(Pipeline& p, const SchedulerHooks& sched, const std::vector<std::string>& args) {
  if (args.size() != 3) return error(Code::kInvalidArgument, "set place: usage: set place SERVICE LANE|any");
  if (sched.weights_owner == "learning")
    return error(Code::kInvalidArgument,
                 "set place: learning mode places the services in this run; start hpr run with --static (or --table) "
                 "to place them by hand ([[service]] lanes at the start, hpr ctl set place while it runs)");
  std::vector<std::string> services;
  for (const auto& b : p.snapshot().services) services.push_back(b.name);
  if (services.empty()) return error(Code::kInvalidArgument, "set place: this run has no [[service]] entries");
  size_t svc = services.size();
  for (size_t i = 0; i < services.size(); ++i)
    if (args[1] == services[i] || args[1] == std::to_string(i)) svc = i;
  if (svc == services.size())
    return error(Code::kInvalidArgument,
                 "set place: SERVICE '{}' is neither a service's name nor its index (services: {})", args[1],
                 fmt::join(services, ", "));
  const std::vector<Pipeline*> ws = p.all_workers();
  std::vector<int> lane(ws.size(), -1);  // per worker: the lane, or -1 (any; or a worker not named)
  std::vector<bool> touched(ws.size(), args[2] == "any");
  std::vector<std::string> on;
  if (args[2] != "any") {
    auto matched = match_lanes(ws, args[2], "set place");
    if (!matched) return matched.status();
    for (auto [k, i] : *matched) {
      lane[k] = static_cast<int>(i);
      touched[k] = true;
      on.push_back(ws[k]->lane_name(i));
    }
  }
  for (size_t k = 0; k < ws.size(); ++k) {
    if (!touched[k]) continue;
    std::vector<int16_t> place = ws[k]->service_lanes();
    if (place.size() <= svc) place.resize(svc + 1, -1);
    place[svc] = static_cast<int16_t>(lane[k]);
    if (Status st = ws[k]->set_service_lanes(place); !st.is_ok())
      return error(Code::kInvalidArgument, "set place: {}", st.message());
  }
  const std::string where = on.empty() ? "where the config puts it" : fmt::format("{}", fmt::join(on, ", "));
  return nlohmann::json{
      {"service", services[svc]},
      {"lanes", on},
      {"text", fmt::format("place {} -> {} (its flows from the dispatcher's next burst; a flow moves only once nothing "
                           "of it is in flight)\n",
                           services[svc], where)}};
}

Result<nlohmann::json> set_policy(const SchedulerHooks& sched, const std::vector<std::string>& args) {
  if (args.size() < 2 || args.size() > 3)
    return error(Code::kInvalidArgument,
                 "set policy: usage: set policy throughput|latency|energy|latency-target [TARGET_US]");
  if (!sched.set_policy)
    return error(Code::kInvalidArgument, "{}", RunExtras::kNoScheduler);
  double target_us = 0;
  if (args.size() == 3) {
    const auto t = number(args[2]);
    if (!t || !(*t > 0))
      return error(Code::kInvalidArgument, "set policy: TARGET_US '{}' is not a number of microseconds > 0", args[2]);
    target_us = *t;
  }
  auto r = sched.set_policy(args[1], target_us);
  if (!r) return r.status();
  return nlohmann::json{{"policy", args[1]}, {"text", *r}};
}

}  // namespace

Result<nlohmann::json> ctl_set(Pipeline& p, const SchedulerHooks& sched, const std::vector<std::string>& args) {
  if (!args.empty() && args[0] == "weight") return set_weight(p, sched, args);
  if (!args.empty() && args[0] == "place") return set_place(p, sched, args);
  if (!args.empty() && args[0] == "policy") return set_policy(sched, args);
  return error(Code::kInvalidArgument, "set: usage: set weight LANE W | set place SERVICE LANE|any | set policy GOAL");
}

}  // namespace hpr::cli
