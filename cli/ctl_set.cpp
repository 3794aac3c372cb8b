// hpr ctl set weight LANE W | set policy GOAL [TARGET_US]: what an operator may change in a running hpr.
#include <fmt/format.h>

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

// set weight LANE W. LANE: a lane's index as `hpr ctl lanes` lists them (every worker's lanes in turn), its full name
// ("native1", "w1:native0"), or, with several workers, its name without the worker's "wN:" (that lane of every
// worker).
Result<nlohmann::json> set_weight(Pipeline& p, const SchedulerHooks& sched, const std::vector<std::string>& args) {
  if (args.size() != 3) return error(Code::kInvalidArgument, "set weight: usage: set weight LANE W (W >= 0)");
  if (!sched.weights_owner.empty())
    return error(Code::kInvalidArgument,
                 "set weight: the {} scheduler sets the lane weights in this run; start hpr run with --static for "
                 "weights set by hand ([lanes.weights] at the start, hpr ctl set weight while it runs)",
                 sched.weights_owner);
  const std::string& lane = args[1];
  const auto w = number(args[2]);
  if (!w || *w < 0 || *w > 1e6)
    return error(Code::kInvalidArgument, "set weight: W '{}' is not a number in 0..1e6", args[2]);
  const std::vector<Pipeline*> ws = p.all_workers();
  // Which lanes: (worker, lane index) pairs.
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
    return error(Code::kInvalidArgument, "set weight: LANE '{}' is neither a lane's name nor its index (lanes: {})",
                 lane, names);
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
  if (!args.empty() && args[0] == "policy") return set_policy(sched, args);
  return error(Code::kInvalidArgument, "set: usage: set weight LANE W | set policy GOAL");
}

}  // namespace hpr::cli
