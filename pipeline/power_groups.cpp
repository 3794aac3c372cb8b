#include "pipeline/power_groups.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <thread>

namespace hpr {

namespace {

std::string lane_list(const std::vector<PowerLane>& lanes, const std::vector<size_t>& idx,
                      const std::vector<uint32_t>& cores) {
  std::string s;
  for (size_t k = 0; k < idx.size(); ++k) {
    s += (k ? ", " : "") + lanes[idx[k]].name;
    if (!lanes[idx[k]].on.empty())
      s += fmt::format(" (on {})", lanes[idx[k]].on);
    else if (!cores.empty())
      s += fmt::format(" ({} core{})", cores[k], cores[k] == 1 ? "" : "s");
  }
  return s;
}

ModelGroup cpu_group(const std::vector<PowerLane>& lanes, const std::vector<size_t>& idx, uint32_t host) {
  ModelGroup g{prof::default_model_power("cpu", "host-cpu"), idx, {}, {}};
  std::vector<uint32_t> cores;
  for (size_t i : idx) {
    uint32_t c = lanes[i].cores == 0 ? host : std::min(lanes[i].cores, host);
    cores.push_back(c);
    g.share.push_back(static_cast<double>(c) / host);
  }
  bool one = idx.size() == 1;
  g.note = fmt::format(
      "model power: CPU lane{} {} {} host-CPU model: {:g} W idle{} + {:g} W × busy cores / {} "
      "host cores (one package assumed)",
      one ? "" : "s", lane_list(lanes, idx, cores), one ? "uses the" : "share one", g.params.idle_w, one ? "" : " once",
      g.params.dynamic_w, host);
  return g;
}

ModelGroup device_group(const std::vector<PowerLane>& lanes, const std::vector<size_t>& idx) {
  const PowerLane& first = lanes[idx.front()];
  const std::string& dev = device_key(first);
  ModelGroup g{prof::default_model_power(first.kind, dev), idx, std::vector<double>(idx.size(), 1.0), {}};
  if (idx.size() == 1)
    g.note = fmt::format("model power: {} lane {} uses its own model: {:g} W idle + {:g} W × utilisation", first.kind,
                         first.name, g.params.idle_w, g.params.dynamic_w);
  else
    g.note = fmt::format(
        "model power: {} lanes {} share one model of {}: {:g} W idle once + {:g} W × min(1, sum of "
        "their utilisations)",
        first.kind, lane_list(lanes, idx, {}), dev, g.params.idle_w, g.params.dynamic_w);
  return g;
}

}  // namespace

const std::string& device_key(const PowerLane& lane) { return lane.device.empty() ? lane.name : lane.device; }

std::vector<ModelGroup> model_groups(const std::vector<PowerLane>& lanes, const std::vector<bool>& covered,
                                     uint32_t host_cores) {
  if (host_cores == 0) host_cores = std::max(1u, std::thread::hardware_concurrency());
  std::vector<size_t> cpu;
  std::vector<std::pair<std::string, std::vector<size_t>>> devices;  // device key → its lanes, in lane order
  for (size_t i = 0; i < lanes.size(); ++i) {
    if (i < covered.size() && covered[i]) continue;
    if (lanes[i].kind == "cpu") {
      cpu.push_back(i);
      continue;
    }
    const std::string& key = device_key(lanes[i]);
    auto it = std::find_if(devices.begin(), devices.end(), [&](const auto& d) { return d.first == key; });
    if (it == devices.end())
      devices.push_back({key, {i}});
    else
      it->second.push_back(i);
  }
  std::vector<ModelGroup> out;
  if (!cpu.empty()) out.push_back(cpu_group(lanes, cpu, host_cores));
  for (const auto& d : devices) out.push_back(device_group(lanes, d.second));
  return out;
}

double group_utilisation(const std::vector<size_t>& lanes, const std::vector<double>& share,
                         const std::vector<double>& lane_util) {
  double busy = 0;
  for (size_t k = 0; k < lanes.size() && k < share.size(); ++k)
    if (lanes[k] < lane_util.size()) busy += share[k] * std::clamp(lane_util[lanes[k]], 0.0, 1.0);
  return std::min(1.0, busy);
}

}  // namespace hpr
