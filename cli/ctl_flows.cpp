// hpr ctl flows top [N]: the flows with the most bytes, from every worker's dispatcher (pipeline/flows_top.cpp).
#include <fmt/format.h>

#include <charconv>

#include "cli/ctl_cmd.hpp"

namespace hpr::cli {
namespace {
constexpr size_t kTopDefault = 10, kTopMax = 1000;
// A dispatcher answers within its scan gap (100 ms) and one loop iteration per 16384 ids of its table (a table of
// 2^24 ids: about a thousand); longer: it is stuck (waiting for room in a lane).
constexpr int kTopTimeoutMs = 2000;
}  // namespace

Result<nlohmann::json> ctl_flows(Pipeline& p, const std::vector<std::string>& args) {
  if (args.empty() || args[0] != "top" || args.size() > 2)
    return error(Code::kInvalidArgument, "flows: usage: flows top [N] (N: 1..{}, default {})", kTopMax, kTopDefault);
  size_t n = kTopDefault;
  if (args.size() == 2) {
    const std::string& a = args[1];
    auto [end, ec] = std::from_chars(a.data(), a.data() + a.size(), n);
    if (ec != std::errc() || end != a.data() + a.size() || n < 1 || n > kTopMax)
      return error(Code::kInvalidArgument, "flows top: N '{}' is not a whole number in 1..{}", a, kTopMax);
  }
  auto r = p.flows_top(n, kTopTimeoutMs);
  if (!r) return r.status();
  const size_t workers = p.all_workers().size();
  nlohmann::json j;
  j["live"] = r->live;
  j["capacity"] = r->capacity;
  j["workers"] = workers;
  j["scan_ms"] = static_cast<double>(r->scan_ns) / 1e6;
  j["flows"] = nlohmann::json::array();
  std::string t = fmt::format("flows: {} live of {} ({} worker{}, scan {:.2f} ms); the {} with the most bytes:\n",
                              r->live, r->capacity, workers, workers == 1 ? "" : "s",
                              static_cast<double>(r->scan_ns) / 1e6, r->flows.size());
  t += fmt::format("  {:>14} {:>10}  {:<14} {:>8}  {}\n", "bytes", "packets", "lane", "idle s", "flow");
  for (const auto& f : r->flows) {
    const std::string flow = flow_key_text(f.key);
    const std::string lane = f.lane_name.empty() ? "-" : f.lane_name;
    const double idle_s = static_cast<double>(f.idle_ns) / 1e9;
    j["flows"].push_back({{"flow", flow},
                          {"proto", f.key.proto},
                          {"bytes", f.bytes},
                          {"packets", f.packets},
                          {"lane", lane},
                          {"idle_s", idle_s}});
    t += fmt::format("  {:>14} {:>10}  {:<14} {:>8.3f}  {}\n", f.bytes, f.packets, lane, idle_s, flow);
  }
  j["text"] = t;
  return j;
}

}  // namespace hpr::cli
