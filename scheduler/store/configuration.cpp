#include "scheduler/store/configuration.hpp"

#include <fmt/format.h>

#include <cmath>

#include "scheduler/store/json_number.hpp"

namespace hpr::sched {

const char* power_source_name(PowerSource s) {
  switch (s) {
    case PowerSource::kRapl:
      return "rapl";
    case PowerSource::kNvml:
      return "nvml";
    case PowerSource::kModel:
      return "model";
    case PowerSource::kUnknown:
      return "unknown";
  }
  return "unknown";
}

Result<PowerSource> parse_power_source(std::string_view s) {
  if (s == "rapl") return PowerSource::kRapl;
  if (s == "nvml") return PowerSource::kNvml;
  if (s == "model") return PowerSource::kModel;
  if (s == "unknown") return PowerSource::kUnknown;
  return error(Code::kInvalidArgument, "power source '{}' is not one of rapl, nvml, model", s);
}

void Configuration::set_figures(const MedianSpread& thr, const MedianSpread& lat, const MedianSpread& p99,
                                const MedianSpread& power, uint32_t n) {
  throughput_bps = thr.median;
  throughput_spread_bps = thr.spread;
  latency_ns = lat.median;
  latency_spread_ns = lat.spread;
  latency_p99_ns = p99.median;
  latency_p99_spread_ns = p99.spread;
  power_w = power.median;
  power_spread_w = power.spread;
  samples = n;
}

void Configuration::copy_figures(const Configuration& f) {
  set_figures({f.throughput_bps, f.throughput_spread_bps}, {f.latency_ns, f.latency_spread_ns},
              {f.latency_p99_ns, f.latency_p99_spread_ns}, {f.power_w, f.power_spread_w}, f.samples);
  power_source = f.power_source;
}

bool Configuration::same_setup(const Configuration& o) const {
  if (device_mask != o.device_mask) return false;
  for (int d = 0; d < kMaxDevices; ++d) {
    if (!uses(d)) continue;
    if (batch[d] != o.batch[d]) return false;
    if (std::llround(split[d] * 1e4) != std::llround(o.split[d] * 1e4)) return false;
  }
  return place == o.place;
}

std::string Configuration::describe() const {
  std::string devs, b, s;
  for (int d = 0; d < kMaxDevices; ++d) {
    if (!uses(d)) continue;
    if (!devs.empty()) {
      devs += ',';
      b += ',';
      s += ',';
    }
    devs += std::to_string(d);
    b += std::to_string(batch[d]);
    s += fmt::format("{:.2f}", split[d]);
  }
  std::string p;
  for (size_t i = 0; i < place.size(); ++i)
    p += (i ? "," : "") + (place[i] < 0 ? std::string("-") : std::to_string(place[i]));
  return fmt::format("dev{{{}}} b=[{}] s=[{}]{}", devs, b, s, place.empty() ? "" : " p=[" + p + "]");
}

Status validate(const Configuration& c) {
  if (c.device_mask == 0) return error(Code::kInvalidArgument, "configuration: device_mask is empty");
  if (c.device_mask >> kMaxDevices)
    return error(Code::kInvalidArgument, "configuration: device_mask {:#x} uses a device id >= {}", c.device_mask,
                 kMaxDevices);
  double sum = 0;
  for (int d = 0; d < kMaxDevices; ++d) {
    if (!c.uses(d)) continue;
    if (c.batch[d] == 0) return error(Code::kInvalidArgument, "configuration: batch[{}] is 0 for a used device", d);
    if (!(c.split[d] >= 0)) return error(Code::kInvalidArgument, "configuration: split[{}] is negative", d);
    sum += c.split[d];
  }
  if (std::fabs(sum - 1.0) > 1e-3)
    return error(Code::kInvalidArgument, "configuration: split sums to {:.4f} over used devices, expected 1", sum);
  for (auto [name, v] :
       {std::pair{"throughput_bps", c.throughput_bps}, std::pair{"latency_ns", c.latency_ns},
        std::pair{"latency_p99_ns", c.latency_p99_ns}, std::pair{"power_w", c.power_w},
        std::pair{"throughput_spread_bps", c.throughput_spread_bps},
        std::pair{"latency_spread_ns", c.latency_spread_ns},
        std::pair{"latency_p99_spread_ns", c.latency_p99_spread_ns}, std::pair{"power_spread_w", c.power_spread_w}}) {
    if (!std::isfinite(v) || v < 0) return error(Code::kInvalidArgument, "configuration: {} = {} is not >= 0", name, v);
  }
  if (c.samples == 0) return error(Code::kInvalidArgument, "configuration: samples = 0, at least 1");
  for (size_t i = 0; i < c.place.size(); ++i)
    if (c.place[i] < -1 || c.place[i] >= kMaxDevices)
      return error(Code::kInvalidArgument, "configuration: place[{}] = {} is not a device id (0..{}) or -1", i,
                   c.place[i], kMaxDevices - 1);
  return Status::ok();
}

void to_json(nlohmann::json& j, const Configuration& c) {
  nlohmann::json devices = nlohmann::json::array();
  for (int d = 0; d < kMaxDevices; ++d) {
    if (!c.uses(d)) continue;
    devices.push_back({{"device", d}, {"batch", c.batch[d]}, {"split", c.split[d]}});
  }
  j = nlohmann::json{{"devices", devices},
                     {"throughput_bps", c.throughput_bps},
                     {"latency_ns", c.latency_ns},
                     {"latency_p99_ns", c.latency_p99_ns},
                     {"power_w", c.power_w},
                     {"power_source", power_source_name(c.power_source)},
                     {"throughput_spread_bps", c.throughput_spread_bps},
                     {"latency_spread_ns", c.latency_spread_ns},
                     {"latency_p99_spread_ns", c.latency_p99_spread_ns},
                     {"power_spread_w", c.power_spread_w},
                     {"samples", c.samples}};
  if (!c.traffic.empty()) j["traffic"] = c.traffic;
  if (!c.place.empty()) j["place"] = c.place;
}

void from_json(const nlohmann::json& j, Configuration& c) {
  c = Configuration{};
  for (const auto& dj : j.at("devices")) {
    int d = json_integer<int>(dj.at("device"));
    if (d < 0 || d >= kMaxDevices) throw nlohmann::json::other_error::create(501, "device id out of range", &dj);
    c.device_mask |= 1U << d;
    c.batch[d] = json_integer<uint32_t>(dj.at("batch"));
    c.split[d] = json_float(dj.at("split"));
  }
  c.throughput_bps = j.at("throughput_bps").get<double>();
  c.latency_ns = j.at("latency_ns").get<double>();
  c.latency_p99_ns = j.value("latency_p99_ns", c.latency_ns);
  c.power_w = j.at("power_w").get<double>();
  auto src = parse_power_source(j.value("power_source", std::string("unknown")));
  c.power_source = src ? *src : PowerSource::kUnknown;
  auto optional_number = [&](const char* key) { return j.contains(key) ? j.at(key).get<double>() : 0.0; };
  c.throughput_spread_bps = optional_number("throughput_spread_bps");
  c.latency_spread_ns = optional_number("latency_spread_ns");
  c.latency_p99_spread_ns = optional_number("latency_p99_spread_ns");
  c.power_spread_w = optional_number("power_spread_w");
  if (j.contains("samples")) c.samples = json_integer<uint32_t>(j.at("samples"));
  if (j.contains("traffic")) c.traffic = j.at("traffic").get<std::string>();
  if (j.contains("place")) {
    const auto& pj = j.at("place");
    if (!pj.is_array()) throw nlohmann::json::type_error::create(302, "place: expected an array", &pj);
    for (const auto& x : pj) c.place.push_back(json_integer<int16_t>(x));
  }
}

}  // namespace hpr::sched
