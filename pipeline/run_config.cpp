#include "pipeline/run_config.hpp"

#include <spdlog/spdlog.h>

#include "pipeline/fault_injection.hpp"

#include <algorithm>
#include <filesystem>
#include <limits>
#include <optional>
#include <set>
#include <toml++/toml.h>

#include <arpa/inet.h>

#include "kernels/ipv4/ipv4_app.hpp"
#include "runtime/ports/dpdk_port.hpp"
#include "runtime/ports/file_ports.hpp"
#include "runtime/ports/generator.hpp"
#include "scheduler/balance/balancer.hpp"

namespace hpr {
namespace {

// Integer nodes only. toml++'s value<int64_t>() also converts a float, and casts it before checking
// its range (undefined for 1e19: found by fuzz_run_config).
std::optional<int64_t> integer_of(const toml::node& n) {
  if (const auto* i = n.as_integer()) return i->get();
  return std::nullopt;
}

template <typename T>
Status get(const toml::table& t, const char* section, const char* key, T& out) {
  const toml::node* n = t.at_path(std::string(section) + "." + key).node();
  if (n == nullptr) return Status::ok();
  if constexpr (std::is_same_v<T, std::string>) {
    if (auto v = n->value<std::string>()) { out = *v; return Status::ok(); }
  } else if constexpr (std::is_same_v<T, bool>) {
    if (auto v = n->value<bool>()) { out = *v; return Status::ok(); }
  } else if constexpr (std::is_floating_point_v<T>) {
    if (auto v = n->value<double>()) { out = static_cast<T>(*v); return Status::ok(); }
  } else {
    if (auto v = integer_of(*n)) {
      constexpr auto kMax = static_cast<uint64_t>(std::numeric_limits<T>::max());
      if (*v < 0 || static_cast<uint64_t>(*v) > kMax)
        return error(Code::kInvalidArgument, "setting {}.{} = {} is out of range 0..{} (line {})", section, key, *v, kMax,
                     n->source().begin.line);
      out = static_cast<T>(*v);
      return Status::ok();
    }
  }
  return error(Code::kInvalidArgument, "setting {}.{} has the wrong type (line {})", section, key, n->source().begin.line);
}

Status get_list(const toml::table& t, const char* section, const char* key, std::vector<std::string>& out) {
  const toml::node* n = t.at_path(std::string(section) + "." + key).node();
  if (n == nullptr) return Status::ok();
  if (auto s = n->value<std::string>()) {
    out = {*s};
    return Status::ok();
  }
  const toml::array* a = n->as_array();
  if (a == nullptr) return error(Code::kInvalidArgument, "setting {}.{} must be a string or a list of strings", section, key);
  out.clear();
  for (const auto& e : *a) {
    auto s = e.value<std::string>();
    if (!s) return error(Code::kInvalidArgument, "setting {}.{} must list strings", section, key);
    out.push_back(*s);
  }
  return Status::ok();
}

// Keys of a table must be among `known` (a misspelt shaper key must not pass silently).
Status check_keys(const toml::table& t, const std::string& where, std::initializer_list<std::string_view> known) {
  for (const auto& [k, v] : t) {
    if (std::find(known.begin(), known.end(), k.str()) != known.end()) continue;
    std::string list;
    for (auto n : known) list += (list.empty() ? "" : ", ") + std::string(n);
    return error(Code::kInvalidArgument, "{}: unknown key '{}' (line {}; known: {})", where, k.str(),
                 k.source().begin.line, list);
  }
  return Status::ok();
}

// An integer or a list of integers in 0..max.
template <typename T>
Status get_int_list(const toml::table& t, const std::string& section, const char* key, int64_t max,
                    std::vector<T>& out) {
  const toml::node* n = t.at_path(section + "." + key).node();
  if (n == nullptr) return Status::ok();
  out.clear();
  auto one = [&](const toml::node& e) -> Status {
    auto v = integer_of(e);
    if (!v || *v < 0 || *v > max)
      return error(Code::kInvalidArgument, "setting {}.{} must be an integer 0..{} or a list of them (line {})",
                   section, key, max, e.source().begin.line);
    out.push_back(static_cast<T>(*v));
    return Status::ok();
  };
  if (const toml::array* a = n->as_array()) {
    for (const auto& e : *a) HPR_RETURN_IF_ERROR(one(e));
    return Status::ok();
  }
  return one(*n);
}

// A rate in bits/s (integer or float) → bytes/s; 0 .. 8e12 bits/s (the shaper's 1e12 bytes/s).
Status get_rate_bps(const toml::table& t, const std::string& section, uint64_t& bytes_per_s) {
  double bps = static_cast<double>(bytes_per_s) * 8;
  HPR_RETURN_IF_ERROR(get(t, section.c_str(), "rate_bps", bps));
  if (!(bps >= 0 && bps <= 8e12))
    return error(Code::kInvalidArgument, "setting {}.rate_bps = {} must be in 0..8e12 bits/s", section, bps);
  bytes_per_s = static_cast<uint64_t>(bps / 8);
  return Status::ok();
}

// [shaper], its [[shaper.class]] entries and [shaper.adaptive].
Status read_shaper(const toml::table& t, ShapingConfig& sc) {
  const toml::table* sh = t.at_path("shaper").as_table();
  if (sh == nullptr) return Status::ok();
  HPR_RETURN_IF_ERROR(check_keys(*sh, "shaper",
                                 {"enabled", "by", "rate_bps", "burst_bytes", "alpha_bytes", "queue_packets",
                                  "waiting_packets", "drain_timeout_s", "class", "adaptive"}));
  HPR_RETURN_IF_ERROR(get(t, "shaper", "enabled", sc.enabled));
  std::string by = sc.by == ShapeBy::kFlow ? "flow" : sc.by == ShapeBy::kPort ? "port" : "class";
  HPR_RETURN_IF_ERROR(get(t, "shaper", "by", by));
  if (by == "flow")
    sc.by = ShapeBy::kFlow;
  else if (by == "port")
    sc.by = ShapeBy::kPort;
  else if (by == "class")
    sc.by = ShapeBy::kClass;
  else
    return error(Code::kInvalidArgument, "shaper.by must be flow, port or class, not '{}'", by);
  HPR_RETURN_IF_ERROR(get_rate_bps(t, "shaper", sc.rate_bytes_per_s));
  double drain_s = static_cast<double>(sc.drain_timeout_ns) / 1e9;
  HPR_RETURN_IF_ERROR(get(t, "shaper", "drain_timeout_s", drain_s));
  if (!(drain_s >= 0 && drain_s <= 86400))
    return error(Code::kInvalidArgument, "setting shaper.drain_timeout_s = {} must be in 0..86400 seconds", drain_s);
  sc.drain_timeout_ns = static_cast<uint64_t>(drain_s * 1e9);
  HPR_RETURN_IF_ERROR(get(t, "shaper", "burst_bytes", sc.burst_bytes));
  HPR_RETURN_IF_ERROR(get(t, "shaper", "alpha_bytes", sc.alpha_bytes));
  HPR_RETURN_IF_ERROR(get(t, "shaper", "queue_packets", sc.queue_packets));
  HPR_RETURN_IF_ERROR(get(t, "shaper", "waiting_packets", sc.waiting_packets));
  if (const toml::node* n = sh->get("class")) {
    const toml::array* a = n->as_array();
    if (a == nullptr || !a->is_array_of_tables())
      return error(Code::kInvalidArgument, "shaper.class must be a list of tables: [[shaper.class]] (line {})",
                   n->source().begin.line);
    sc.classes.clear();
    for (size_t i = 0; i < a->size(); ++i) {
      const std::string sec = fmt::format("shaper.class[{}]", i);
      HPR_RETURN_IF_ERROR(check_keys(*a->get(i)->as_table(), sec,
                                     {"name", "dscp", "out_port", "rate_bps", "burst_bytes", "alpha_bytes"}));
      ShapingClass k;
      HPR_RETURN_IF_ERROR(get(t, sec.c_str(), "name", k.name));
      HPR_RETURN_IF_ERROR(get_int_list(t, sec, "dscp", 63, k.dscp));
      HPR_RETURN_IF_ERROR(get_int_list(t, sec, "out_port", 65535, k.ports));
      HPR_RETURN_IF_ERROR(get_rate_bps(t, sec, k.rate_bytes_per_s));
      HPR_RETURN_IF_ERROR(get(t, sec.c_str(), "burst_bytes", k.burst_bytes));
      HPR_RETURN_IF_ERROR(get(t, sec.c_str(), "alpha_bytes", k.alpha_bytes));
      sc.classes.push_back(std::move(k));
    }
  }
  if (const toml::node* n = sh->get("adaptive")) {
    const toml::table* ad = n->as_table();
    if (ad == nullptr)
      return error(Code::kInvalidArgument, "shaper.adaptive must be a table: [shaper.adaptive] (line {})",
                   n->source().begin.line);
    HPR_RETURN_IF_ERROR(check_keys(*ad, "shaper.adaptive", {"enabled", "gamma", "delta_th", "period_s"}));
    HPR_RETURN_IF_ERROR(get(t, "shaper.adaptive", "enabled", sc.adaptive.enabled));
    HPR_RETURN_IF_ERROR(get(t, "shaper.adaptive", "gamma", sc.adaptive.gamma));
    HPR_RETURN_IF_ERROR(get(t, "shaper.adaptive", "delta_th", sc.adaptive.delta_th));
    double period_s = static_cast<double>(sc.adaptive.period_ns) / 1e9;
    HPR_RETURN_IF_ERROR(get(t, "shaper.adaptive", "period_s", period_s));
    if (!(period_s >= 1e-6 && period_s <= 3600))
      return error(Code::kInvalidArgument, "setting shaper.adaptive.period_s = {} must be in 1e-6..3600 seconds",
                   period_s);
    sc.adaptive.period_ns = static_cast<uint64_t>(period_s * 1e9);
  }
  return Status::ok();
}

Status read_endpoint(const toml::table& t, const char* sec, EndpointConfig& e) {
  HPR_RETURN_IF_ERROR(get(t, sec, "kind", e.kind));
  HPR_RETURN_IF_ERROR(get(t, sec, "pcap", e.pcap));
  HPR_RETURN_IF_ERROR(get(t, sec, "loops", e.loops));
  HPR_RETURN_IF_ERROR(get(t, sec, "dpdk_port", e.dpdk_port));
  HPR_RETURN_IF_ERROR(get(t, sec, "packets", e.gen_packets));
  HPR_RETURN_IF_ERROR(get(t, sec, "rate_pps", e.gen_rate_pps));
  HPR_RETURN_IF_ERROR(get(t, sec, "flows", e.gen_flows));
  HPR_RETURN_IF_ERROR(get(t, sec, "zipf", e.gen_zipf));
  HPR_RETURN_IF_ERROR(get(t, sec, "sizes", e.gen_sizes));
  HPR_RETURN_IF_ERROR(get(t, sec, "seed", e.gen_seed));
  HPR_RETURN_IF_ERROR(get(t, sec, "template", e.gen_template));
  HPR_RETURN_IF_ERROR(get_list(t, sec, "patterns", e.gen_patterns));
  HPR_RETURN_IF_ERROR(get(t, sec, "match_rate", e.gen_match_rate));
  HPR_RETURN_IF_ERROR(get(t, sec, "ttl_low_share", e.gen_ttl_low_share));
  HPR_RETURN_IF_ERROR(get(t, sec, "ipv6_share", e.gen_ipv6_share));
  HPR_RETURN_IF_ERROR(get(t, sec, "rate_steps", e.gen_rate_steps));
  HPR_RETURN_IF_ERROR(get(t, sec, "rate_model", e.gen_rate_model));
  HPR_RETURN_IF_ERROR(get(t, sec, "rate_scale", e.gen_rate_scale));
  return Status::ok();
}

}  // namespace

Result<RunConfig> load_run_config(const std::string& path) {
  if (!std::filesystem::exists(path)) return error(Code::kNotFound, "configuration file '{}' does not exist", path);
  toml::table t;
  try {
    t = toml::parse_file(path);
  } catch (const toml::parse_error& e) {
    return error(Code::kInvalidArgument, "{}:{}:{}: {}", path, e.source().begin.line, e.source().begin.column,
                 e.description());
  }
  static const std::set<std::string> kSections = {"input", "output", "dpdk", "app", "lanes", "devices", "flows",
                                                  "telemetry", "run", "faults", "shaper",
                                                  "power", "adaptive"};
  for (const auto& [k, v] : t) {
    if (!kSections.count(std::string(k.str())))
      return error(Code::kInvalidArgument, "{}: unknown section [{}] (line {})", path, k.str(), k.source().begin.line);
  }
  RunConfig c;
  auto wrap = [&](Status s) { return s.is_ok() ? s : error(s.code(), "{}: {}", path, s.message()); };
  HPR_RETURN_IF_ERROR(wrap(read_endpoint(t, "input", c.input)));
  HPR_RETURN_IF_ERROR(wrap(read_endpoint(t, "output", c.output)));
  HPR_RETURN_IF_ERROR(wrap(get_list(t, "dpdk", "eal", c.eal_args)));
  HPR_RETURN_IF_ERROR(wrap(get_list(t, "dpdk", "vdevs", c.vdevs)));
  HPR_RETURN_IF_ERROR(wrap(get(t, "app", "name", c.app)));
  HPR_RETURN_IF_ERROR(wrap(get(t, "app", "routes", c.app_opts.routes)));
  HPR_RETURN_IF_ERROR(wrap(get(t, "app", "ports", c.app_opts.ports)));
  HPR_RETURN_IF_ERROR(wrap(get(t, "app", "drop_non_ipv4", c.app_opts.drop_non_ipv4)));
  HPR_RETURN_IF_ERROR(wrap(get(t, "app", "rules", c.app_opts.rules)));
  HPR_RETURN_IF_ERROR(wrap(get(t, "app", "keys", c.app_opts.keys)));
  HPR_RETURN_IF_ERROR(wrap(get(t, "app", "master_key", c.app_opts.master_key)));
  HPR_RETURN_IF_ERROR(wrap(get(t, "app", "md5_whole_frame", c.app_opts.md5_whole_frame)));
  HPR_RETURN_IF_ERROR(wrap(get(t, "app", "log", c.log_path)));
  HPR_RETURN_IF_ERROR(wrap(get(t, "app", "icmp_time_exceeded", c.icmp_time_exceeded)));
  HPR_RETURN_IF_ERROR(wrap(get(t, "app", "router_addr", c.router_addr)));
  HPR_RETURN_IF_ERROR(wrap(get_list(t, "lanes", "devices", c.devices)));
  HPR_RETURN_IF_ERROR(wrap(get(t, "lanes", "native", c.native_lanes)));
  HPR_RETURN_IF_ERROR(wrap(get(t, "lanes", "batch", c.batch)));
  HPR_RETURN_IF_ERROR(wrap(get(t, "lanes", "timeout_us", c.batch_timeout_us)));
  HPR_RETURN_IF_ERROR(wrap(get(t, "lanes", "queue", c.queue)));
  HPR_RETURN_IF_ERROR(wrap(get(t, "lanes", "in_flight", c.in_flight)));
  HPR_RETURN_IF_ERROR(wrap(get(t, "lanes", "max_batch", c.max_batch)));
  HPR_RETURN_IF_ERROR(wrap(get(t, "lanes", "balancer", c.balancer)));
  HPR_RETURN_IF_ERROR(wrap(get(t, "lanes", "backpressure", c.backpressure)));
  HPR_RETURN_IF_ERROR(wrap(get(t, "lanes", "run_to_completion", c.run_to_completion)));
  if (const toml::table* kinds = t.at_path("devices.kinds").as_table()) {
    for (const auto& [name, v] : *kinds) {
      auto s = v.value<std::string>();
      if (!s) return error(Code::kInvalidArgument, "{}: devices.kinds.\"{}\" must be a string", path, name.str());
      auto k = parse_device_kind(*s);
      if (!k) return error(Code::kInvalidArgument, "{}: devices.kinds.\"{}\": {}", path, name.str(), k.status().message());
      c.kinds[std::string(name.str())] = *k;
    }
  }
  if (const toml::node* w = t.at_path("lanes.weights").node()) {
    const toml::table* wt = w->as_table();
    if (wt == nullptr)
      return error(Code::kInvalidArgument, "{}: lanes.weights must be a table of lane name = weight (line {})", path,
                   w->source().begin.line);
    for (const auto& [name, v] : *wt) {
      auto x = v.value<double>();
      if (!x) return error(Code::kInvalidArgument, "{}: lanes.weights.\"{}\" must be a number", path, name.str());
      c.lane_weights[std::string(name.str())] = *x;
    }
  }
  if (const toml::table* f = t.at_path("faults.fail_after_batches").as_table()) {
    for (const auto& [name, v] : *f) {
      auto n = integer_of(v);
      if (!n || *n < 0)
        return error(Code::kInvalidArgument, "{}: faults.fail_after_batches.\"{}\" must be an integer >= 0", path,
                     name.str());
      c.fail_after[std::string(name.str())] = static_cast<uint64_t>(*n);
    }
  }
  HPR_RETURN_IF_ERROR(wrap(read_shaper(t, c.shaping)));
  if (const toml::table* f = t.at_path("faults.slow_lane_us").as_table()) {
    for (const auto& [name, v] : *f) {
      auto us = integer_of(v);
      if (!us || *us < 0 || *us > 10'000'000)
        return error(Code::kInvalidArgument, "{}: faults.slow_lane_us.\"{}\" must be an integer 0..10000000 (microseconds)",
                     path, name.str());
      c.slow_lane_us[std::string(name.str())] = static_cast<uint64_t>(*us);
    }
  }
  HPR_RETURN_IF_ERROR(wrap(get(t, "flows", "capacity", c.flow_capacity)));
  HPR_RETURN_IF_ERROR(wrap(get(t, "flows", "idle_s", c.flow_idle_s)));
  HPR_RETURN_IF_ERROR(wrap(get(t, "telemetry", "prometheus", c.prometheus)));
  HPR_RETURN_IF_ERROR(wrap(get(t, "telemetry", "status_interval_s", c.status_interval_s)));
  HPR_RETURN_IF_ERROR(wrap(get(t, "telemetry", "summary_json", c.summary_json)));
  HPR_RETURN_IF_ERROR(wrap(get(t, "run", "duration_s", c.duration_s)));
  HPR_RETURN_IF_ERROR(wrap(get(t, "power", "rapl_root", c.power.rapl_root)));
  HPR_RETURN_IF_ERROR(wrap(get(t, "power", "rapl", c.power.use_rapl)));
  HPR_RETURN_IF_ERROR(wrap(get(t, "power", "nvml", c.power.use_nvml)));
  HPR_RETURN_IF_ERROR(wrap(get(t, "adaptive", "table", c.adapt_table)));
  HPR_RETURN_IF_ERROR(wrap(get(t, "adaptive", "policy", c.adapt_policy)));
  HPR_RETURN_IF_ERROR(wrap(get(t, "adaptive", "latency_target_us", c.adapt_latency_target_us)));
  HPR_RETURN_IF_ERROR(wrap(get(t, "adaptive", "allow_table_mismatch", c.adapt_allow_mismatch)));
  HPR_RETURN_IF_ERROR(wrap(get(t, "adaptive", "quantum_ms", c.adapt_quantum_ms)));
  HPR_RETURN_IF_ERROR(wrap(get(t, "adaptive", "csv", c.adapt_csv)));
  HPR_RETURN_IF_ERROR(wrap(get(t, "adaptive", "learn", c.adapt_learn)));
  return c;
}

namespace {

Status validate_shaping(const ShapingConfig& sc) {
  constexpr uint32_t kLargestFrame = 2048;
  if (sc.by != ShapeBy::kClass) {
    if (sc.rate_bytes_per_s == 0)
      return error(Code::kInvalidArgument, "shaper.rate_bps: give the rate of each bucket in bits/s (at least 8)");
    if (sc.burst_bytes < kLargestFrame)
      return error(Code::kInvalidArgument, "shaper.burst_bytes: {} is below the largest frame ({} bytes)",
                   sc.burst_bytes, kLargestFrame);
    if (sc.alpha_bytes > sc.burst_bytes)
      return error(Code::kInvalidArgument, "shaper.alpha_bytes: {} is above shaper.burst_bytes ({})", sc.alpha_bytes,
                   sc.burst_bytes);
    if (!sc.classes.empty())
      return error(Code::kInvalidArgument, "shaper.class: classes are used only with shaper.by = \"class\" (by is {})",
                   sc.by == ShapeBy::kFlow ? "flow" : "port");
  } else {
    if (sc.classes.empty())
      return error(Code::kInvalidArgument, "shaper.class: shaper.by = \"class\" needs at least one [[shaper.class]]");
    if (sc.classes.size() > 4096)
      return error(Code::kInvalidArgument, "shaper.class: {} classes, at most 4096", sc.classes.size());
    std::set<std::string> names;
    for (size_t i = 0; i < sc.classes.size(); ++i) {
      const ShapingClass& k = sc.classes[i];
      if (k.name.empty()) return error(Code::kInvalidArgument, "shaper.class[{}].name: give the class a name", i);
      if (!names.insert(k.name).second)
        return error(Code::kInvalidArgument, "shaper.class[{}].name: '{}' is used twice", i, k.name);
      if (k.rate_bytes_per_s == 0)
        return error(Code::kInvalidArgument, "shaper.class[{}].rate_bps must be > 0 (at least 8 bits/s; class '{}')", i,
                     k.name);
      if (k.burst_bytes < kLargestFrame)
        return error(Code::kInvalidArgument,
                     "shaper.class[{}].burst_bytes: {} is below the largest frame ({} bytes; class '{}')", i,
                     k.burst_bytes, kLargestFrame, k.name);
      if (k.alpha_bytes > k.burst_bytes)
        return error(Code::kInvalidArgument,
                     "shaper.class[{}].alpha_bytes: {} is above its burst_bytes ({}; class '{}')", i, k.alpha_bytes,
                     k.burst_bytes, k.name);
      for (uint8_t d : k.dscp)
        if (d > 63) return error(Code::kInvalidArgument, "shaper.class[{}].dscp: {} is not a DSCP value (0..63)", i, d);
      if (k.dscp.empty() && k.ports.empty() && i + 1 < sc.classes.size())
        return error(
            Code::kInvalidArgument,
            "shaper.class[{}] ('{}') has no dscp and no out_port, so it matches every packet and the classes after "
            "it never match: list it last (as the default class)",
            i, k.name);
    }
  }
  if (sc.queue_packets == 0 || sc.queue_packets > 4095)
    return error(Code::kInvalidArgument, "shaper.queue_packets: {} is not in 1..4095", sc.queue_packets);
  if (sc.waiting_packets == 0) return error(Code::kInvalidArgument, "shaper.waiting_packets must be at least 1");
  if (sc.adaptive.enabled) {
    if (!(sc.adaptive.gamma > 1.0 && sc.adaptive.gamma <= 1000))
      return error(Code::kInvalidArgument, "shaper.adaptive.gamma: {} must be in (1, 1000]", sc.adaptive.gamma);
    if (sc.adaptive.delta_th > 254)
      return error(Code::kInvalidArgument, "shaper.adaptive.delta_th: {} must be in 0..254 (reschedules per period)",
                   sc.adaptive.delta_th);
    if (sc.adaptive.period_ns == 0) return error(Code::kInvalidArgument, "shaper.adaptive.period_s must be > 0");
  }
  return Status::ok();
}

}  // namespace

Status validate(const RunConfig& c) {
  auto names = kernels::app_names();
  if (std::find(names.begin(), names.end(), c.app) == names.end()) {
    std::string known;
    for (const auto& n : names) known += (known.empty() ? "" : ", ") + n;
    return error(Code::kInvalidArgument, "app.name: unknown app '{}' (known: {})", c.app, known);
  }
  if (c.input.kind != "pcap" && c.input.kind != "dpdk" && c.input.kind != "generator")
    return error(Code::kInvalidArgument, "input.kind: '{}' is not one of pcap, dpdk, generator", c.input.kind);
  if (c.output.kind != "pcap" && c.output.kind != "dpdk" && c.output.kind != "null")
    return error(Code::kInvalidArgument, "output.kind: '{}' is not one of pcap, dpdk, null", c.output.kind);
  if (c.input.kind == "pcap" && c.input.pcap.empty()) return error(Code::kInvalidArgument, "input.pcap: a capture path is needed for pcap input");
  if (c.output.kind == "pcap" && c.output.pcap.empty()) return error(Code::kInvalidArgument, "output.pcap: a path is needed for pcap output");
  if (c.input.kind == "dpdk" && c.input.dpdk_port.empty()) return error(Code::kInvalidArgument, "input.dpdk_port: name the ethdev (e.g. net_pcap0)");
  if (c.output.kind == "dpdk" && c.output.dpdk_port.empty()) return error(Code::kInvalidArgument, "output.dpdk_port: name the ethdev (e.g. net_null0)");
  if (c.input.kind == "dpdk" && c.output.kind == "dpdk" && c.input.dpdk_port == c.output.dpdk_port)
    return error(Code::kInvalidArgument,
                 "output.dpdk_port: '{}' is also the input; one ethdev cannot be opened twice: use two ports (e.g. "
                 "--vdev net_pcap0,... in and --vdev net_null0 out)",
                 c.output.dpdk_port);
  if (c.batch == 0) return error(Code::kInvalidArgument, "lanes.batch: the batch size must be at least 1");
  if (c.batch > 65536) return error(Code::kInvalidArgument, "lanes.batch: {} is above the maximum 65536", c.batch);
  if (c.queue == 0) return error(Code::kInvalidArgument, "lanes.queue: the queue size must be at least 1");
  if (c.in_flight == 0) return error(Code::kInvalidArgument, "lanes.in_flight: at least 1 batch must be allowed in flight");
  if (c.flow_capacity == 0) return error(Code::kInvalidArgument, "flows.capacity: must be at least 1");
  if (c.shaping.enabled) HPR_RETURN_IF_ERROR(validate_shaping(c.shaping));
  for (const auto& [pat, w] : c.lane_weights)
    if (!(w >= 0) || w > 1e6)
      return error(Code::kInvalidArgument, "lanes.weights.\"{}\": {} is not a weight 0..1e6 (share of new flows)", pat,
                   w);
  if (c.max_batch > 65536) return error(Code::kInvalidArgument, "lanes.max_batch: {} is above the maximum 65536", c.max_batch);
  {
    auto names = balance::balancer_names();
    if (std::find(names.begin(), names.end(), c.balancer) == names.end()) {
      std::string known;
      for (const auto& n : names) known += (known.empty() ? "" : ", ") + std::string(n);
      return error(Code::kInvalidArgument, "lanes.balancer: unknown policy '{}' (known: {})", c.balancer, known);
    }
  }
  if (c.native_lanes == 0 && c.devices.size() == 1 && c.devices[0] == "none")
    return error(Code::kInvalidArgument, "lanes: no lanes (lanes.native = 0 and lanes.devices = none)");
  return Status::ok();
}

Result<std::vector<RateStep>> parse_rate_steps(const std::string& spec) {
  std::vector<RateStep> out;
  for (size_t a = 0, b; a < spec.size(); a = b + 1) {
    b = spec.find(',', a);
    if (b == std::string::npos) b = spec.size();
    std::string item = spec.substr(a, b - a);
    double dur = 0, pps = 0;
    char tail = 0;
    if (std::sscanf(item.c_str(), "%lf:%lf%c", &dur, &pps, &tail) != 2 || !(dur > 0) || !(pps >= 0))
      return error(Code::kInvalidArgument, "input.rate_steps: '{}' is not DURATION_S:PPS (duration > 0, rate >= 0)", item);
    out.push_back({static_cast<uint64_t>(dur * 1e9), pps});
  }
  if (out.empty()) return error(Code::kInvalidArgument, "input.rate_steps: no step in '{}'", spec);
  return out;
}

namespace {

Result<std::unique_ptr<Port>> make_endpoint(const EndpointConfig& e, bool is_input) {
  if (e.kind == "pcap") {
    PcapPortConfig pc;
    (is_input ? pc.rx_path : pc.tx_path) = e.pcap;
    pc.loops = e.loops;
    return make_pcap_port(pc);
  }
  if (e.kind == "dpdk") return make_dpdk_port({.name = e.dpdk_port});
  if (e.kind == "null") return make_null_port();
  GeneratorConfig g;
  g.max_packets = e.gen_packets;
  g.seed = e.gen_seed;
  g.flows = e.gen_flows;
  if (e.gen_zipf > 0) {
    g.popularity = Popularity::kZipf;
    g.zipf_s = e.gen_zipf;
  }
  if (e.gen_rate_pps > 0) {
    g.rate.mode = RateMode::kConstant;
    g.rate.rate = e.gen_rate_pps;
  }
  if (!e.gen_rate_steps.empty()) {
    auto steps = parse_rate_steps(e.gen_rate_steps);
    if (!steps) return steps.status();
    g.rate.mode = RateMode::kSteps;
    g.rate.steps = std::move(*steps);
  }
  if (!e.gen_rate_model.empty()) {
    if (e.gen_rate_model != "laps-set1" && e.gen_rate_model != "laps-set2")
      return error(Code::kInvalidArgument, "input.rate_model: '{}' is not laps-set1 or laps-set2 (LAPS Table IV)",
                   e.gen_rate_model);
    if (!(e.gen_rate_scale > 0))
      return error(Code::kInvalidArgument, "input.rate_scale: {} must be > 0", e.gen_rate_scale);
    g.rate.mode = RateMode::kHoltWinters;
    g.rate.services = e.gen_rate_model == "laps-set1" ? laps_table4_set1() : laps_table4_set2();
    g.rate.rate_scale = e.gen_rate_scale;
  }
  g.template_capture = e.gen_template;
  g.patterns = e.gen_patterns;
  g.pattern_match_rate = e.gen_match_rate;
  g.ttl_low_share = e.gen_ttl_low_share;
  g.ipv6_share = e.gen_ipv6_share;
  const std::string& sz = e.gen_sizes;
  unsigned a = 0, b = 0;
  if (sz == "imix") {
    g.size_mode = SizeMode::kImix;
  } else if (std::sscanf(sz.c_str(), "fixed:%u", &a) == 1) {
    g.size_mode = SizeMode::kFixed;
    g.size_bytes = a;
  } else if (std::sscanf(sz.c_str(), "uniform:%u-%u", &a, &b) == 2) {
    g.size_mode = SizeMode::kUniform;
    g.size_min_bytes = a;
    g.size_max_bytes = b;
  } else {
    return error(Code::kInvalidArgument, "input.sizes: '{}' is not imix, fixed:N or uniform:A-B", sz);
  }
  return make_generator_port(g);
}

}  // namespace

Result<std::unique_ptr<RunContext>> prepare_run(const RunConfig& c) {
  HPR_RETURN_IF_ERROR(validate(c));
  auto ctx = std::make_unique<RunContext>();
  kernels::AppOptions ao = c.app_opts;
  ao.key_capacity = c.flow_capacity;  // AES keys are indexed by flow id
  auto app = kernels::make_app(c.app, ao);
  if (!app) return app.status();
  ctx->app = std::move(*app);

  // Devices first: a configuration that names a device that does not exist starts nothing.
  std::vector<DeviceInfo> chosen;
  bool none = c.devices.size() == 1 && c.devices[0] == "none";
  if (!none) {
    auto devs = discover_devices(c.kinds);
    if (!devs) return devs.status();
    bool all = c.devices.size() == 1 && c.devices[0] == "all";
    if (all) {
      chosen = *devs;
    } else {
      for (const auto& want : c.devices) {
        bool found = false;
        for (const auto& d : *devs)
          if (d.name.find(want) != std::string::npos) {
            chosen.push_back(d);
            found = true;
          }
        if (!found) {
          std::string have;
          for (const auto& d : *devs) have += fmt::format("\n  {}", d.name);
          return error(Code::kNotFound, "lanes.devices: no OpenCL device matches '{}'; devices here:{}", want,
                       have.empty() ? " none" : have);
        }
      }
    }
  }

  bool needs_dpdk = c.input.kind == "dpdk" || c.output.kind == "dpdk";
  if (needs_dpdk) HPR_RETURN_IF_ERROR(dpdk_init(c.eal_args.empty() ? dpdk_default_args(c.vdevs) : c.eal_args));
  auto rx = make_endpoint(c.input, true);
  if (!rx) return rx.status();
  ctx->rx = std::move(*rx);
  auto tx = make_endpoint(c.output, false);
  if (!tx) return tx.status();
  ctx->tx = std::move(*tx);

  PipelineConfig pc;
  pc.flow_capacity = c.flow_capacity;
  pc.flow_idle_ns = static_cast<uint64_t>(c.flow_idle_s * 1e9);
  pc.backpressure = c.backpressure;
  pc.run_to_completion = c.run_to_completion;
  pc.balancer = c.balancer;
  if (c.app == "ipv4" && c.icmp_time_exceeded) {
    in_addr a{};
    if (inet_pton(AF_INET, c.router_addr.c_str(), &a) != 1)
      return error(Code::kInvalidArgument, "app.router_addr: '{}' is not an IPv4 address", c.router_addr);
    uint32_t router = ntohl(a.s_addr);
    pc.on_drop = [router](const Packet& p, std::vector<uint8_t>& scratch) -> std::span<const uint8_t> {
      if (p.drop != DropReason::kTtlExceeded) return {};
      scratch.resize(2048);
      auto n = kernels::ipv4::build_icmp_time_exceeded(p, router, scratch);
      if (!n) return {};
      return {scratch.data(), *n};
    };
  }
  pc.shaping = c.shaping;
  pc.log_path = c.log_path;
  pc.max_duration_ns = static_cast<uint64_t>(c.duration_s * 1e9);
  pc.status_interval_ns = static_cast<uint64_t>(c.status_interval_s * 1e9);
  pc.parse.verify_ipv4_checksum = c.app != "ipv4";  // the ipv4 app checks it itself
  auto lane_cfg = [&](const std::string& name) {
    LaneConfig lc;
    lc.name = name;
    lc.batch_size = c.batch;
    lc.max_batch = std::max(c.max_batch, c.batch);
    lc.batch_timeout_ns = c.batch_timeout_us * 1000;
    lc.queue_size = c.queue;
    for (const auto& [pat, n] : c.fail_after)
      if (name.find(pat) != std::string::npos) lc.fail_after_batches = n;
    for (const auto& [pat, us] : c.slow_lane_us)
      if (name.find(pat) != std::string::npos) lc.slow_batch_ns = us * 1000;
    return lc;
  };
  auto weigh = [&](LaneConfig& lc, double dflt) {
    lc.weight = dflt;
    for (const auto& [pat, w] : c.lane_weights)
      if (lc.name.find(pat) != std::string::npos) lc.weight = w;
  };
  const fault::ClFault cl_fault = fault::cl_fault_from_env();
  for (const auto& d : chosen) {
    auto prog = cl_fault.point == fault::ClPoint::kBuild && cl_fault.applies_to(d.name)
                    ? Result<std::shared_ptr<kernels::AppProgram>>(
                          error(Code::kUnavailable, "fault injected (HPR_FAULT_CL): clBuildProgram failed: CL_BUILD_PROGRAM_FAILURE"))
                    : kernels::AppProgram::create(*ctx->app, d.device);
    if (!prog) {
      // A device that cannot build the program or start is left out; the rest go on.
      spdlog::warn("device '{}' left out: {}", d.name, prog.status().message());
      ctx->left_out.push_back(d.name + ": " + prog.status().message());
      continue;
    }
    LaneSpec s;
    s.kind = LaneSpec::Kind::kOpenCL;
    s.program = std::move(*prog);
    // Memory path: mapped where the device shares host memory, copied through pinned staging where it does
    // not or where its kind is dgpu (a kind override, [devices.kinds], also selects the discrete path).
    s.host_unified = d.host_unified && d.kind != DeviceKind::kDiscreteGpu;
    s.lane = lane_cfg(fmt::format("cl{}:{}", d.index, d.name));
    weigh(s.lane, d.compute_units);
    s.in_flight = c.in_flight;
    pc.lanes.push_back(std::move(s));
    ctx->devices.push_back(d);
  }
  for (uint32_t i = 0; i < c.native_lanes; ++i) {
    LaneSpec s;
    s.kind = LaneSpec::Kind::kNative;
    s.lane = lane_cfg(fmt::format("native{}", i));
    weigh(s.lane, 1);
    pc.lanes.push_back(std::move(s));
  }
  if (pc.lanes.empty()) return error(Code::kUnavailable, "no lane could be started (every device was left out and lanes.native = 0)");
  if (std::none_of(pc.lanes.begin(), pc.lanes.end(), [](const LaneSpec& s) { return s.lane.weight > 0; }))
    return error(Code::kInvalidArgument, "lanes.weights: every lane has weight 0, so no lane would take a flow");
  auto p = Pipeline::create(std::move(pc), ctx->app, *ctx->rx, *ctx->tx);
  if (!p) return p.status();
  ctx->pipeline = std::move(*p);
  // Devices whose lane could not start (queues, buffers) are left out too.
  for (const auto& why : ctx->pipeline->left_out()) {
    ctx->left_out.push_back(why);
    std::erase_if(ctx->devices, [&](const DeviceInfo& d) { return why.starts_with(fmt::format("cl{}:", d.index)); });
  }
  return ctx;
}

}  // namespace hpr
