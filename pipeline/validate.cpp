// Checks of a whole RunConfig (settings that depend on each other); single values are range-checked
// where they are read (settings.cpp).
#include <algorithm>
#include <map>
#include <set>

#include "hpr/atomic_file.hpp"
#include "kernels/ipv4/ipv4_app.hpp"
#include "kernels/registry.hpp"
#include "pipeline/run_config.hpp"
#include "scheduler/balance/balancer.hpp"

namespace hpr {
namespace {

constexpr uint64_t kMaxLargePoolMiB = 4096;  // ports.large_buffers × ports.max_frame

// Every bucket holds the largest frame (a bucket smaller than a frame would never send it).
Status validate_shaping(const ShapingConfig& sc, uint32_t largest_frame) {
  if (sc.by != ShapeBy::kClass) {
    if (sc.rate_bytes_per_s == 0)
      return error(Code::kInvalidArgument, "shaper.rate_bps: give the rate of each bucket in bits/s (at least 8)");
    if (sc.burst_bytes < largest_frame)
      return error(Code::kInvalidArgument,
                   "shaper.burst_bytes (--shape-burst): {} is below the largest frame (ports.max_frame = {} bytes): "
                   "raise it or lower ports.max_frame (--max-frame)",
                   sc.burst_bytes, largest_frame);
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
      if (k.burst_bytes < largest_frame)
        return error(Code::kInvalidArgument,
                     "shaper.class[{}].burst_bytes: {} is below the largest frame (ports.max_frame = {} bytes; class "
                     "'{}'): raise it or lower ports.max_frame (--max-frame)",
                     i, k.burst_bytes, largest_frame, k.name);
      if (k.alpha_bytes > k.burst_bytes)
        return error(Code::kInvalidArgument,
                     "shaper.class[{}].alpha_bytes: {} is above its burst_bytes ({}; class '{}')", i, k.alpha_bytes,
                     k.burst_bytes, k.name);
      for (uint8_t d : k.dscp)
        if (d > 63) return error(Code::kInvalidArgument, "shaper.class[{}].dscp: {} is not a DSCP value (0..63)", i, d);
      if (k.dscp.empty() && k.ports.empty() && k.services.empty() && i + 1 < sc.classes.size())
        return error(
            Code::kInvalidArgument,
            "shaper.class[{}] ('{}') has no dscp, out_port or service, so it matches every packet and the classes after "
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

// Output ports 1.. (port 0 is checked with output.*), ports.map, ports.macs and [[neighbour]].
Status validate_outputs(const RunConfig& c) {
  const size_t outputs = 1 + c.more_outputs.size();
  std::set<std::string> pcaps, ethdevs;
  if (c.input.kind == "dpdk") ethdevs.insert(c.input.dpdk_port);
  for (size_t i = 0; i < outputs; ++i) {
    const EndpointConfig& e = i == 0 ? c.output : c.more_outputs[i - 1];
    if (i > 0 && e.kind != "pcap" && e.kind != "dpdk" && e.kind != "null")
      return error(Code::kInvalidArgument, "output.ports (--out): output {}: '{}' is not one of pcap, dpdk, null", i,
                   e.kind);
    if (e.kind == "pcap" && !pcaps.insert(e.pcap).second)
      return error(Code::kInvalidArgument, "output.ports (--out): output {} writes '{}', as an earlier output does", i,
                   e.pcap);
    if (i > 0 && e.kind == "dpdk" && !ethdevs.insert(e.dpdk_port).second)
      return error(Code::kInvalidArgument,
                   "output.ports (--out): output {}: ethdev '{}' is already used (the input or an earlier output)", i,
                   e.dpdk_port);
    if (i == 0 && e.kind == "dpdk") ethdevs.insert(e.dpdk_port);
  }
  for (size_t i = 0; i < c.port_map.size(); ++i)
    if (c.port_map[i] >= outputs)
      return error(Code::kInvalidArgument,
                   "ports.map (--port-map): entry {} names output port {}, but there {} {} output port{} (--out / "
                   "output.ports)",
                   i, c.port_map[i], outputs == 1 ? "is" : "are", outputs, outputs == 1 ? "" : "s");
  if (c.port_macs.size() > outputs)
    return error(Code::kInvalidArgument, "ports.macs (--port-mac): {} MACs for {} output port{}", c.port_macs.size(),
                 outputs, outputs == 1 ? "" : "s");
  for (size_t i = 0; i < c.port_macs.size(); ++i)
    if (!c.port_macs[i].empty())
      if (auto m = kernels::ipv4::parse_mac(c.port_macs[i]); !m)
        return error(Code::kInvalidArgument, "ports.macs (--port-mac): output port {}: {}", i, m.status().message());
  if (c.neighbours.empty()) return Status::ok();
  if (!kernels::runs_app(c.app, c.app_opts, "ipv4"))
    return error(Code::kInvalidArgument, "neighbour: the neighbour table is for the ipv4 app, and '{}' does not run it",
                 c.app);
  if (!c.port_map.empty())
    return error(Code::kInvalidArgument,
                 "ports.map (--port-map): not with [[neighbour]], whose entries name each next hop's output port");
  std::vector<int> seen(c.app_opts.ports, -1);
  std::map<uint32_t, size_t> addrs;
  for (size_t i = 0; i < c.neighbours.size(); ++i) {
    const NeighbourConfig& nb = c.neighbours[i];
    uint32_t a = 0;
    if (!nb.address.empty() && !kernels::ipv4::parse_ipv4(nb.address, a))
      return error(Code::kInvalidArgument, "neighbour[{}].address: '{}' is not an IPv4 address a.b.c.d", i, nb.address);
    if (!nb.address.empty() && !addrs.emplace(a, i).second)
      return error(Code::kInvalidArgument, "neighbour[{}].address: {} is already the address of neighbour[{}]", i,
                   nb.address, addrs[a]);
    if (nb.next_hop >= c.app_opts.ports)
      return error(Code::kInvalidArgument,
                   "neighbour[{}].next_hop: {} is not a next hop: they are 0..{} (app.ports = {})", i, nb.next_hop,
                   c.app_opts.ports - 1, c.app_opts.ports);
    if (seen[nb.next_hop] >= 0)
      return error(Code::kInvalidArgument, "neighbour[{}].next_hop: next hop {} is already in neighbour[{}]", i,
                   nb.next_hop, seen[nb.next_hop]);
    seen[nb.next_hop] = static_cast<int>(i);
    if (nb.port >= outputs)
      return error(
          Code::kInvalidArgument,
          "neighbour[{}].port: output port {} does not exist: there {} {} output port{} (--out / output.ports)", i,
          nb.port, outputs == 1 ? "is" : "are", outputs, outputs == 1 ? "" : "s");
    if (auto m = kernels::ipv4::parse_mac(nb.mac); !m)
      return error(Code::kInvalidArgument, "neighbour[{}].mac: {}", i, m.status().message());
  }
  for (uint32_t h = 0; h < c.app_opts.ports; ++h)
    if (seen[h] < 0)
      return error(Code::kInvalidArgument,
                   "neighbour: next hop {} has no [[neighbour]] entry; with a neighbour table every next hop 0..{} "
                   "(app.ports = {}) needs one",
                   h, c.app_opts.ports - 1, c.app_opts.ports);
  return Status::ok();
}

}  // namespace

Status validate(const RunConfig& c) {
  auto apps = kernels::chain_apps(c.app);
  if (!apps) return error(Code::kInvalidArgument, "app.name (--app): {}", apps.status().message());
  for (const auto& [name, lanes] : c.app_place)
    if (std::find(apps->begin(), apps->end(), name) == apps->end())
      return error(Code::kInvalidArgument,
                   "app.place.{} (--place-app): '{}' is not an app of the chain {} (its apps: {})", name, name, c.app,
                   fmt::join(*apps, ", "));
  if (c.app_place_learned && (apps->size() < 2 || !c.app_opts.services.empty()))
    return error(Code::kInvalidArgument,
                 "app.place = learned (--place-app learned): places the apps of one chain (--app ipv4,dpi); {}",
                 c.app_opts.services.empty()
                     ? fmt::format("{} is one app", c.app)
                     : std::string("with [[service]] give each service its lanes (service[N].lanes)"));
  if (c.app_place_learned && !c.lane_weights.empty())
    return error(Code::kInvalidArgument,
                 "app.place = learned (--place-app learned): sets the lanes' weights from the learned state; "
                 "lanes.weights (--weight) would set others");
  if (c.app_place_learned && !c.adapt_table.empty())
    return error(Code::kInvalidArgument,
                 "app.place = learned (--place-app learned): places from the learned state; adaptive.table (--table) "
                 "would set the lanes' weights from another");
  if (c.app_place_learned && c.run_to_completion_given && !c.run_to_completion)
    return error(Code::kInvalidArgument,
                 "app.place = learned (--place-app learned): apps on lanes of their own run to completion; "
                 "lanes.run_to_completion (--run-to-completion) is off");
  if (!c.app_place.empty() && !c.adapt_table.empty())
    return error(Code::kInvalidArgument,
                 "app.place (--place-app): the lanes keep their weights; adaptive.table (--table) would change them");
  if (!c.app_place.empty() && c.run_to_completion_given && !c.run_to_completion)
    return error(Code::kInvalidArgument,
                 "app.place (--place-app): apps on lanes of their own run to completion; lanes.run_to_completion "
                 "(--run-to-completion) is off");
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
  HPR_RETURN_IF_ERROR(validate_outputs(c));
  // Output files are written through AtomicFile, which refuses non-regular targets: say so before the run.
  for (auto [key, path] : {std::pair<const char*, const std::string*>{"telemetry.summary_json (--summary-json)", &c.summary_json},
                           {"app.log (--log)", &c.log_path},
                           {"adaptive.csv (--adapt-csv)", &c.adapt_csv}})
    if (!path->empty()) HPR_RETURN_IF_ERROR(AtomicFile::check_target(*path, key));
  auto finite_in = [](double x, double lo, double hi) { return x >= lo && x <= hi; };  // false for NaN
  if (!finite_in(c.duration_s, 0, kMaxRunSeconds))
    return error(Code::kInvalidArgument, "run.duration_s (--duration): {} is not in 0..{} seconds", c.duration_s,
                 kMaxRunSeconds);
  if (!finite_in(c.input.gen_rate_pps, 0, 1e10))
    return error(Code::kInvalidArgument, "input.rate_pps (--rate-pps): {} is not in 0..1e10", c.input.gen_rate_pps);
  if (!finite_in(c.input.gen_zipf, 0, 10))
    return error(Code::kInvalidArgument, "input.zipf (--zipf): {} is not in 0..10", c.input.gen_zipf);
  if (!finite_in(c.flow_idle_s, 0.001, 86400))
    return error(Code::kInvalidArgument, "flows.idle_s: {} is not in 0.001..86400 seconds", c.flow_idle_s);
  if (!finite_in(c.status_interval_s, 0, 3600))
    return error(Code::kInvalidArgument, "telemetry.status_interval_s: {} is not in 0..3600 seconds (0: none)",
                 c.status_interval_s);
  if (c.queue > (1u << 20))
    return error(Code::kInvalidArgument, "lanes.queue (--queue): {} is above 1048576 packets", c.queue);
  if (c.batch == 0) return error(Code::kInvalidArgument, "lanes.batch: the batch size must be at least 1");
  if (c.batch > 65536) return error(Code::kInvalidArgument, "lanes.batch: {} is above the maximum 65536", c.batch);
  if (c.queue == 0) return error(Code::kInvalidArgument, "lanes.queue: the queue size must be at least 1");
  if (c.in_flight == 0) return error(Code::kInvalidArgument, "lanes.in_flight: at least 1 batch must be allowed in flight");
  if (c.flow_capacity == 0) return error(Code::kInvalidArgument, "flows.capacity: must be at least 1");
  if (c.max_frame < kMinMaxFrame || c.max_frame > kMaxMaxFrame)
    return error(Code::kInvalidArgument, "ports.max_frame (--max-frame): {} is not in {}..{} bytes", c.max_frame,
                 kMinMaxFrame, kMaxMaxFrame);
  if (const uint64_t mib = (uint64_t{c.large_buffers} * c.max_frame) >> 20; mib > kMaxLargePoolMiB)
    return error(Code::kInvalidArgument,
                 "ports.large_buffers (--large-buffers): {} buffers of {} bytes would take {} MiB, above {} MiB",
                 c.large_buffers, c.max_frame, mib, kMaxLargePoolMiB);
  if (c.shaping.enabled) HPR_RETURN_IF_ERROR(validate_shaping(c.shaping, c.max_frame));
  if (c.slow_until_s != 0 && c.slow_until_s <= c.slow_from_s)
    return error(Code::kInvalidArgument, "faults.slow_until_s: {} s is not after faults.slow_from_s ({} s)", c.slow_until_s,
                 c.slow_from_s);
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
  if (c.adapt_static && !c.adapt_table.empty())
    return error(Code::kInvalidArgument,
                 "adaptive.static (--static) and adaptive.table (--table): choose one (fixed weights, or the table)");
  if (c.native_lanes == 0 && c.devices.size() == 1 && c.devices[0] == "none")
    return error(Code::kInvalidArgument, "lanes: no lanes (lanes.native = 0 and lanes.devices = none)");
  return validate_workers(c);
}

Status validate_workers(const RunConfig& c) {
  if (c.workers == 0 || c.workers > kMaxWorkers)
    return error(Code::kInvalidArgument, "lanes.workers (--workers): {} is not in 1..{}", c.workers, kMaxWorkers);
  for (const std::string& core : c.cores)
    if (core.empty() || core.find_first_not_of("0123456789") != std::string::npos || core.size() > 4)
      return error(Code::kInvalidArgument, "lanes.cores (--cores): '{}' is not a core number", core);
  if (c.workers == 1) return Status::ok();
  constexpr const char* kWhy = "with lanes.workers (--workers) above 1";
  if (c.native_lanes > 1)
    return error(Code::kInvalidArgument,
                 "lanes.native (--native): {} each worker has at most one native lane: give --native 1 (or 0 with "
                 "devices)",
                 kWhy);
  if (c.run_to_completion_given && !c.run_to_completion)
    return error(Code::kInvalidArgument,
                 "lanes.run_to_completion (--run-to-completion): off is not possible {}: each worker is one thread",
                 kWhy);
  // Each worker shapes its own flows (a flow lives on one worker); a port's or a class's bucket would be one per
  // worker, each at the full rate.
  if (c.shaping.enabled && c.shaping.by != ShapeBy::kFlow)
    return error(Code::kInvalidArgument,
                 "shaper.by: {} is not possible {} (each worker shapes on its own, so a {}'s rate would be taken once "
                 "per worker): shaper.by = flow, or --workers 1",
                 c.shaping.by == ShapeBy::kPort ? "port" : "class", kWhy, c.shaping.by == ShapeBy::kPort ? "port" : "class");
  if (!c.adapt_table.empty())
    return error(Code::kInvalidArgument, "adaptive.table (--table): not available {} (nothing to choose among)", kWhy);
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
    if (std::sscanf(item.c_str(), "%lf:%lf%c", &dur, &pps, &tail) != 2 || !(dur >= 1e-6 && dur <= 3.2e7) ||
        !(pps >= 0 && pps <= 1e10))
      return error(Code::kInvalidArgument,
                   "input.rate_steps (--rate-steps): '{}' is not DURATION_S:PPS (duration 1e-6..3.2e7 s, rate "
                   "0..1e10 packets/s)",
                   item);
    out.push_back({static_cast<uint64_t>(dur * 1e9), pps});
  }
  if (out.empty()) return error(Code::kInvalidArgument, "input.rate_steps: no step in '{}'", spec);
  return out;
}

Status parse_sizes(const std::string& sz, TrafficStep& st, std::string_view setting) {
  unsigned a = 0, b = 0;
  char tail = 0;
  if (sz == "imix") {
    st.size_mode = SizeMode::kImix;
  } else if (std::sscanf(sz.c_str(), "fixed:%u%c", &a, &tail) == 1) {
    st.size_mode = SizeMode::kFixed;
    st.size_bytes = a;
  } else if (std::sscanf(sz.c_str(), "uniform:%u-%u%c", &a, &b, &tail) == 2) {
    st.size_mode = SizeMode::kUniform;
    st.size_min_bytes = a;
    st.size_max_bytes = b;
  } else {
    return error(Code::kInvalidArgument, "{}: '{}' is not imix, fixed:N or uniform:A-B", setting, sz);
  }
  return Status::ok();
}

Result<std::vector<TrafficStep>> parse_traffic_steps(const std::string& spec, double default_match_rate) {
  constexpr std::string_view kSetting = "input.traffic_steps (--traffic-steps)";
  std::vector<TrafficStep> out;
  for (size_t a = 0, b; a < spec.size(); a = b + 1) {
    b = spec.find(',', a);
    if (b == std::string::npos) b = spec.size();
    const std::string item = spec.substr(a, b - a);
    TrafficStep st;
    st.match_rate = default_match_rate;
    const size_t colon = item.find(':');
    char* end = nullptr;
    const double dur = colon == std::string::npos ? 0 : std::strtod(item.c_str(), &end);
    if (colon == std::string::npos || end != item.c_str() + colon || !(dur >= 1e-3 && dur <= 3.2e7))
      return error(Code::kInvalidArgument, "{}: step '{}' is not DURATION_S:SIZES[@MATCH] (duration 0.001..3.2e7 s)",
                   kSetting, item);
    const size_t at = item.find('@', colon);
    const std::string sizes = item.substr(colon + 1, at == std::string::npos ? std::string::npos : at - colon - 1);
    if (at != std::string::npos) {
      st.match_rate = std::strtod(item.c_str() + at + 1, &end);
      if (end == item.c_str() + at + 1 || *end != 0 || !(st.match_rate >= 0 && st.match_rate <= 1))
        return error(Code::kInvalidArgument, "{}: step '{}': the match rate after @ must be a number in [0, 1]",
                     kSetting, item);
    }
    st.duration_ns = static_cast<uint64_t>(dur * 1e9);
    HPR_RETURN_IF_ERROR(parse_sizes(sizes, st, fmt::format("{}: step '{}'", kSetting, item)));
    out.push_back(st);
  }
  if (out.empty()) return error(Code::kInvalidArgument, "{}: no step in '{}'", kSetting, spec);
  return out;
}

uint32_t input_buffers(const RunConfig& c, size_t device_lanes, uint16_t workers, uint32_t floor,
                       size_t discrete_lanes) {
  if (c.buffers != 0) return c.buffers;
  const uint64_t batch = lane_max_batch(c, false);
  const uint64_t discrete = c.max_batch_discrete != 0 ? lane_start_batch(c, true) : lane_max_batch(c, true);
  discrete_lanes = std::min(discrete_lanes, device_lanes);
  const uint64_t per_worker = ((device_lanes - discrete_lanes) * batch + discrete_lanes * discrete) * (c.in_flight + 1) +
                              uint64_t{c.native_lanes} * 2 * batch + 2048;
  return static_cast<uint32_t>(std::clamp<uint64_t>(per_worker * workers, floor, std::max(floor, kMaxAutoBuffers)));
}

bool learning_mode(const RunConfig& c) {
  if (!c.adapt_table.empty() || c.adapt_static || !c.lane_weights.empty() || !c.app_place.empty()) return false;
  return !(c.native_lanes <= 1 && c.devices == std::vector<std::string>{"none"});
}

const char* auto_run_to_completion(RunConfig& c, unsigned host_cores) {
  if (c.run_to_completion_given || c.run_to_completion) return nullptr;
  if (!c.app_place.empty() || c.app_place_learned) {
    c.run_to_completion = true;
    return "apps on lanes of their own (app.place)";
  }
  if (c.workers > 1) {
    c.run_to_completion = true;
    return "each worker is one thread";
  }
  if (c.native_lanes == 1 && c.devices == std::vector<std::string>{"none"}) {
    c.run_to_completion = true;
    return "one native lane, no device";
  }
  if (host_cores != 0 && host_cores <= 2) {
    c.run_to_completion = true;
    return "2 cores or fewer: a thread per lane would take turns on them";
  }
  return nullptr;
}

}  // namespace hpr
