// The run summary as text and JSON.
#include <fmt/ranges.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "hpr/histogram.hpp"
#include "pipeline/summary.hpp"

namespace hpr {

void Summary::ServiceBook::set_latency() {
  latency_p50_ns = LogLinear::percentile(latency_buckets, 50);
  latency_p99_ns = LogLinear::percentile(latency_buckets, 99);
}

void Summary::add_worker(const Summary& w) {
  rx_packets += w.rx_packets;
  rx_bytes += w.rx_bytes;
  tx_packets += w.tx_packets;
  tx_bytes += w.tx_bytes;
  port_missed += w.port_missed;
  dropped += w.dropped;
  for (const auto& d : w.drops) {
    auto it = std::find_if(drops.begin(), drops.end(), [&](const auto& x) { return x.first == d.first; });
    if (it != drops.end()) it->second += d.second;
    else drops.push_back(d);
  }
  reorders += w.reorders;
  unaccounted += w.unaccounted;
  flows_seen += w.flows_seen;
  flow_table_full += w.flow_table_full;
  lane_failures += w.lane_failures;
  host_frames += w.host_frames;
  events += w.events;
  for (size_t k = 0; k < chain_events.size() && k < w.chain_events.size(); ++k) {
    chain_events[k].count += w.chain_events[k].count;
    chain_events[k].in += w.chain_events[k].in;
    chain_events[k].passed += w.chain_events[k].passed;
  }
  if (services.size() < w.services.size()) services.resize(w.services.size());
  for (size_t i = 0; i < w.services.size(); ++i) {
    ServiceBook& b = services[i];
    const ServiceBook& o = w.services[i];
    b.name = o.name;
    b.out += o.out;
    b.out_bytes += o.out_bytes;
    b.dropped += o.dropped;
    b.lost += o.lost;
    b.lanes.insert(b.lanes.end(), o.lanes.begin(), o.lanes.end());
    if (b.latency_buckets.size() < o.latency_buckets.size()) b.latency_buckets.resize(o.latency_buckets.size(), 0);
    for (size_t k = 0; k < o.latency_buckets.size(); ++k) b.latency_buckets[k] += o.latency_buckets[k];
    b.set_latency();
  }
  dispatch_busy_s += w.dispatch_busy_s;
  egress_busy_s += w.egress_busy_s;
  rx_buffers_in_use += w.rx_buffers_in_use;
  move_held += w.move_held;
  // Shaping with workers is by flow: each worker's buckets are its flows'; the figures add up.
  shaping |= w.shaping;
  shaped_queues += w.shaped_queues;
  shaper_heap += w.shaper_heap;
  shaper_waiting += w.shaper_waiting;
  shaper_reschedules += w.shaper_reschedules;
  shaper_delayed += w.shaper_delayed;
  shaper_throttled += w.shaper_throttled;
  shaper_heap_high_water += w.shaper_heap_high_water;
  if (latency_buckets.size() < w.latency_buckets.size()) latency_buckets.resize(w.latency_buckets.size(), 0);
  for (size_t i = 0; i < w.latency_buckets.size(); ++i) latency_buckets[i] += w.latency_buckets[i];
  latency_p50_ns = LogLinear::percentile(latency_buckets, 50);
  latency_p99_ns = LogLinear::percentile(latency_buckets, 99);
  lanes.insert(lanes.end(), w.lanes.begin(), w.lanes.end());
  for (size_t i = 0; i < w.out_ports.size() && i < out_ports.size(); ++i) {  // the same outputs, in the same order
    out_ports[i].packets += w.out_ports[i].packets;
    out_ports[i].bytes += w.out_ports[i].bytes;
    out_ports[i].failed += w.out_ports[i].failed;
  }
}

Summary Summary::lanes_by_index(size_t per_worker) const {
  if (per_worker == 0 || lanes.size() <= per_worker || lanes.size() % per_worker != 0) return *this;
  Summary f = *this;
  f.lanes.resize(per_worker);
  const double workers = static_cast<double>(lanes.size() / per_worker);
  for (size_t i = 0; i < per_worker; ++i) {
    LaneSummary& l = f.lanes[i];
    if (size_t c = l.name.find(':'); l.name.starts_with('w') && c != std::string::npos) l.name.erase(0, c + 1);
    l.utilisation /= workers;
    for (size_t k = i + per_worker; k < lanes.size(); k += per_worker) {
      const LaneSummary& o = lanes[k];
      l.batches += o.batches;
      l.packets += o.packets;
      l.events += o.events;
      l.queue_full += o.queue_full;
      l.utilisation += o.utilisation / workers;
      l.p50_ns = std::max(l.p50_ns, o.p50_ns);
      l.p99_ns = std::max(l.p99_ns, o.p99_ns);
      if (l.state == "running" && o.state != "running") {
        l.state = o.state;
        l.failure = o.failure;
      }
    }
    l.mean_batch = l.batches == 0 ? 0 : static_cast<double>(l.packets) / static_cast<double>(l.batches);
  }
  return f;
}

std::string Summary::to_json() const {
  nlohmann::json j;
  j["seconds"] = seconds;
  j["rx"] = {{"packets", rx_packets}, {"bytes", rx_bytes}, {"port_missed", port_missed}};
  j["tx"] = {{"packets", tx_packets}, {"bytes", tx_bytes}};
  for (size_t i = 0; i < out_ports.size(); ++i)
    j["tx"]["ports"].push_back({{"port", i},
                                {"name", out_ports[i].name},
                                {"packets", out_ports[i].packets},
                                {"bytes", out_ports[i].bytes},
                                {"failed", out_ports[i].failed}});
  j["dropped"] = dropped;
  for (const auto& [r, c] : drops) j["drops"][r] = c;
  j["reorders"] = reorders;
  if (!output_errors.empty()) j["output_errors"] = output_errors;
  j["unaccounted"] = unaccounted;
  j["flows"] = flows_seen;
  j["flow_table_full"] = flow_table_full;
  j["lane_failures"] = lane_failures;
  j["host_frames"] = host_frames;
  j["rx_buffers_in_use"] = rx_buffers_in_use;
  j["app_events"] = {{"name", event_name}, {"count", events}};
  for (const auto& e : chain_events)
    j["chain_events"].push_back(
        {{"app", e.app}, {"name", e.name}, {"count", e.count}, {"packets_in", e.in}, {"packets_passed", e.passed}});
  for (const auto& [k, v] : app_info) j["app"][k] = v;
  for (const auto& b : services) {
    j["services"].push_back({{"name", b.name},
                             {"packets_out", b.out},
                             {"bytes_out", b.out_bytes},
                             {"dropped", b.dropped},
                             {"lost", b.lost},
                             {"latency_ns", {{"p50", b.latency_p50_ns}, {"p99", b.latency_p99_ns}}}});
    if (!b.lanes.empty()) j["services"].back()["lanes"] = b.lanes;
  }
  j["latency_ns"] = {{"p50", latency_p50_ns}, {"p99", latency_p99_ns}};
  if (!power_source.empty()) j["power"] = {{"watts", power_w}, {"energy_j", energy_j}, {"source", power_source}};
  if (balance)
    j["balancer"] = {{"policy", balancer},
                     {"moves", balance->moves},
                     {"blocked_moves", balance->blocked_moves},
                     {"would_reorder", balance->would_reorder},
                     {"migrations", balance->migrations},
                     {"held_for_moves", move_held},
                     {"adjustments", balance->adjustments}};
  if (shaping) {
    j["shaper"] = {{"queues", shaped_queues},
                   {"throttled", shaper_throttled},
                   {"heap", shaper_heap},
                   {"heap_high_water", shaper_heap_high_water},
                   {"waiting", shaper_waiting},
                   {"reschedules", shaper_reschedules},
                   {"delayed_packets", shaper_delayed}};
    if (!shaper_classes.empty()) {
      j["shaper"]["unclassified"] = shaper_unclassified;
      for (const auto& c : shaper_classes)
        j["shaper"]["classes"].push_back({{"name", c.name},
                                          {"rate_bps", c.rate_bytes_per_s * 8},
                                          {"packets", c.packets},
                                          {"bytes", c.bytes},
                                          {"dropped", c.dropped},
                                          {"waiting", c.waiting},
                                          {"throttled", c.throttled},
                                          {"alpha_bytes", c.alpha_bytes}});
    }
  }
  for (const auto& l : lanes) {
    j["lanes"].push_back({{"name", l.name},
                          {"executor", l.executor},
                          {"state", l.state},
                          {"failure", l.failure},
                          {"batches", l.batches},
                          {"packets", l.packets},
                          {"events", l.events},
                          {"queue_full", l.queue_full},
                          {"mean_batch", l.mean_batch},
                          {"utilisation", l.utilisation},
                          {"batch_latency_ns", {{"p50", l.p50_ns}, {"p99", l.p99_ns}}}});
  }
  return j.dump(2);
}

std::string Summary::to_text() const {
  std::string s;
  double mpps = seconds > 0 ? static_cast<double>(rx_packets) / seconds / 1e6 : 0;
  double gbps = seconds > 0 ? static_cast<double>(tx_bytes) * 8 / seconds / 1e9 : 0;
  s += fmt::format("  time        {:.3f} s\n", seconds);
  s += fmt::format("  received    {} packets ({} bytes), {:.3f} Mpps\n", rx_packets, rx_bytes, mpps);
  if (port_missed) s += fmt::format("  port missed {} packets (dropped by the input port before hpr received them)\n", port_missed);
  s += fmt::format("  transmitted {} packets ({} bytes), {:.3f} Gbit/s\n", tx_packets, tx_bytes, gbps);
  if (out_ports.size() > 1)
    for (size_t i = 0; i < out_ports.size(); ++i)
      s += fmt::format("    port {:<3} {} packets ({} bytes), {} not taken: {}\n", i, out_ports[i].packets,
                       out_ports[i].bytes, out_ports[i].failed, out_ports[i].name);
  s += fmt::format("  dropped     {}\n", dropped);
  for (const auto& [r, c] : drops) s += fmt::format("    {:<18} {}\n", r, c);
  s += fmt::format("  books       received = transmitted + dropped: {} ({} unaccounted)\n",
                   unaccounted == 0 && rx_packets == tx_packets + dropped ? "balanced" : "NOT BALANCED", unaccounted);
  s += fmt::format("  reorders    {}\n", reorders);
  s += fmt::format("  flows       {}{}\n", flows_seen, flow_table_full ? fmt::format(" (table full {} times)", flow_table_full) : "");
  if (chain_events.empty()) s += fmt::format("  {:<11} {}\n", event_name, events);
  for (const auto& e : chain_events)
    s += fmt::format("  {:<11} {} ({}: {} packets in, {} passed on)\n", e.name, e.count, e.app, e.in, e.passed);
  // A service's chain is an app_info line "service NAME" (the start lines show it); the services block names it.
  auto chain_of = [&](const std::string& name) -> const std::string* {
    for (const auto& [k, v] : app_info)
      if (k == "service " + name) return &v;
    return nullptr;
  };
  for (const auto& [k, v] : app_info)
    if (services.empty() || !k.starts_with("service ")) s += fmt::format("  {:<11} {}\n", k, v);
  if (!services.empty())
    s += "  services    what each chain passed to the output and dropped, lost on the way to a lane, rx-to-tx latency:\n";
  for (const auto& b : services) {
    const std::string* chain = chain_of(b.name);
    s += fmt::format("    {:<12} {}{} packets out ({} bytes), {} dropped, {} lost, p50 {:.1f} us, p99 {:.1f} us{}\n",
                     b.name, chain ? "(" + *chain + ") " : "", b.out, b.out_bytes, b.dropped, b.lost,
                     b.latency_p50_ns / 1e3, b.latency_p99_ns / 1e3,
                     b.lanes.empty() ? "" : fmt::format("; placed on {}", fmt::join(b.lanes, ", ")));
  }
  s += fmt::format("  latency     p50 {:.1f} us, p99 {:.1f} us (rx to tx, 16 buckets per octave)\n", latency_p50_ns / 1e3,
                   latency_p99_ns / 1e3);
  if (!power_source.empty()) s += fmt::format("  power       {:.1f} W, energy {:.1f} J (source: {})\n", power_w, energy_j, power_source);
  if (shaping) {
    s += fmt::format("  shaper      {} queues, {} packets delayed, {} reschedules, heap {} now (most {})\n",
                     shaped_queues, shaper_delayed, shaper_reschedules, shaper_heap, shaper_heap_high_water);
    for (const auto& c : shaper_classes)
      s += fmt::format("    class {:<12} {:>12.0f} bit/s  {} packets {} bytes sent, {} dropped\n", c.name,
                       static_cast<double>(c.rate_bytes_per_s) * 8, c.packets, c.bytes, c.dropped);
    if (!shaper_classes.empty()) s += fmt::format("    unclassified {} packets (sent unshaped)\n", shaper_unclassified);
  }
  if (balance)
    s += fmt::format(
        "  balancer    {}: {} flow moves ({} packets held until their flow's old lane had sent the older ones), {} "
        "refused (would have reordered {} packets), {} migrations\n",
        balancer, balance->moves, move_held, balance->blocked_moves, balance->would_reorder, balance->migrations);
  if (host_frames) s += fmt::format("  host frames {} (ICMP sent by the host)\n", host_frames);
  s += fmt::format("  rx buffers  {} still in use\n", rx_buffers_in_use);
  s += "  lanes:\n";
  for (const auto& l : lanes) {
    s += fmt::format(
        "    {:<28} {:>10} pkts {:>8} batches  mean batch {:>7.1f}  busy {:>5.1f}%  batch p50 {:.1f} us p99 {:.1f} us  "
        "{}{}{}\n",
        l.name, l.packets, l.batches, l.mean_batch, l.utilisation * 100, l.p50_ns / 1e3, l.p99_ns / 1e3, l.state,
        l.queue_full ? fmt::format("  queue full {}", l.queue_full) : "",
        l.failure.empty() ? "" : " (" + l.failure + ")");
  }
  return s;
}

std::vector<uint64_t> latency_between(const Summary& prev, const Summary& now) {
  std::vector<uint64_t> d(now.latency_buckets.size(), 0);
  for (size_t i = 0; i < d.size(); ++i)
    d[i] = now.latency_buckets[i] - (i < prev.latency_buckets.size() ? prev.latency_buckets[i] : 0);
  return d;
}

LaneInterval lane_between(const Summary& prev, const Summary& now, size_t i) {
  const LaneSummary& c = now.lanes[i];
  LaneInterval out{.packets = c.packets, .batches = c.batches};
  double busy = c.utilisation * now.seconds;
  if (i < prev.lanes.size()) {
    out.packets -= prev.lanes[i].packets;
    out.batches -= prev.lanes[i].batches;
    busy -= prev.lanes[i].utilisation * prev.seconds;
  }
  const double dt = now.seconds - prev.seconds;
  out.util = dt > 0 ? std::clamp(busy / dt, 0.0, 1.0) : 0.0;
  return out;
}

std::string status_line(const Summary& prev, const Summary& s) {
  double dt = s.seconds - prev.seconds;
  if (!(dt > 0)) dt = 1e-9;
  std::string lanes;
  for (size_t i = 0; i < s.lanes.size(); ++i) {
    const LaneInterval l = lane_between(prev, s, i);
    const std::string batch =
        l.batches > 0 ? fmt::format("{:.0f}", static_cast<double>(l.packets) / static_cast<double>(l.batches)) : "-";
    lanes += fmt::format(" {}:b{}/u{:.0f}%", s.lanes[i].name.substr(0, 12), batch, l.util * 100);
  }
  const std::vector<uint64_t> lat = latency_between(prev, s);
  std::string shaped =
      s.shaping ? fmt::format(" | shaper heap {} waiting {} resched/s {:.0f}", s.shaper_heap, s.shaper_waiting,
                              static_cast<double>(s.shaper_reschedules - prev.shaper_reschedules) / dt)
                : "";
  return fmt::format(
      "[{:6.1f}s] in {:7.3f} Mpps out {:7.3f} Mpps | drops {} | p50 {:.0f} us p99 {:.0f} us | power {:.1f} W ({}) "
      "|{}{}",
      s.seconds, static_cast<double>(s.rx_packets - prev.rx_packets) / dt / 1e6,
      static_cast<double>(s.tx_packets - prev.tx_packets) / dt / 1e6, s.dropped,
      static_cast<double>(LogLinear::percentile(lat, 50)) / 1e3,
      static_cast<double>(LogLinear::percentile(lat, 99)) / 1e3, s.power_w, s.power_source, lanes, shaped);
}

}  // namespace hpr
