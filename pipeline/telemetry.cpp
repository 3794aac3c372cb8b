#include "pipeline/telemetry.hpp"

#include <prometheus/counter.h>
#include <prometheus/exposer.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>
#include <spdlog/spdlog.h>

namespace hpr {

PrometheusExporter::PrometheusExporter() = default;
PrometheusExporter::~PrometheusExporter() = default;
Status PrometheusExporter::available() { return Status::ok(); }

Status PrometheusExporter::start(std::string addr, bool shaping) {
  // Least privilege: a bare port ("9464" or ":9464") listens on loopback only; another interface must be
  // named explicitly ("0.0.0.0:9464"). civetweb would otherwise bind every interface.
  if (addr.find_first_not_of("0123456789:") == std::string::npos) {
    auto port = addr.substr(addr.find_last_of(':') == std::string::npos ? 0 : addr.find_last_of(':') + 1);
    addr = "127.0.0.1:" + port;
  }
  auto colon = addr.find_last_of(':');
  if (colon == std::string::npos || colon + 1 == addr.size())
    return error(Code::kInvalidArgument, "telemetry.prometheus (--prometheus): '{}' is not ADDR:PORT or PORT", addr);
  try {
    exposer = std::make_unique<prometheus::Exposer>(addr);
  } catch (const std::exception& e) {
    return error(Code::kUnavailable, "telemetry.prometheus (--prometheus): cannot listen on {}: {}", addr, e.what());
  }
  // Port 0 asks the kernel for a free port: report the one it gave, not ":0".
  auto ports = exposer->GetListeningPorts();
  listen = addr.substr(0, colon) + ":" + (ports.empty() ? addr.substr(colon + 1) : std::to_string(ports.front()));
  std::string host = addr.substr(0, colon);
  if (host != "127.0.0.1" && host != "localhost" && host != "[::1]" && host.rfind("127.", 0) != 0)
    spdlog::warn("telemetry.prometheus: listening on {}: every host that can reach this address can read the metrics",
                 listen);
  registry = std::make_shared<prometheus::Registry>();
  auto g = [&](const char* n, const char* h) -> prometheus::Gauge* {
    return &prometheus::BuildGauge().Name(n).Help(h).Register(*registry).Add({});
  };
  rx = g("hpr_rx_packets_total", "Packets received by the input port");
  tx = g("hpr_tx_packets_total", "Packets transmitted by the output port");
  dropped = g("hpr_dropped_packets_total", "Packets dropped, all reasons");
  reorders = g("hpr_reorders_total", "Packets that left a flow out of order (must be 0)");
  p99 = g("hpr_latency_p99_seconds", "rx-to-tx latency, 99th percentile");
  port_tx = &prometheus::BuildGauge()
                 .Name("hpr_port_tx_packets_total")
                 .Help("Packets transmitted, by output port")
                 .Register(*registry);
  port_tx_bytes = &prometheus::BuildGauge()
                       .Name("hpr_port_tx_bytes_total")
                       .Help("Bytes transmitted, by output port")
                       .Register(*registry);
  port_failed = &prometheus::BuildGauge()
                     .Name("hpr_port_tx_failed_total")
                     .Help("Packets an output port did not take, by port")
                     .Register(*registry);
  lane_util = &prometheus::BuildGauge().Name("hpr_lane_utilisation").Help("Fraction of time a lane had work").Register(*registry);
  drops = &prometheus::BuildGauge().Name("hpr_drops_total").Help("Drops by reason").Register(*registry);
  events = &prometheus::BuildGauge()
                .Name("hpr_app_events_total")
                .Help("Application events (forwarded, matches, digests, encrypted), by app: a chain's apps by name, "
                      "services' as service:app")
                .Register(*registry);
  svc_packets = &prometheus::BuildGauge()
                     .Name("hpr_service_packets_total")
                     .Help("[[service]] runs: packets each service's chain passed to the output (what=out) or dropped "
                           "(what=dropped), and those lost on the way to a lane (what=lost: full queue, no lane)")
                     .Register(*registry);
  svc_bytes = &prometheus::BuildGauge()
                   .Name("hpr_service_bytes_total")
                   .Help("[[service]] runs: bytes each service's chain passed to the output")
                   .Register(*registry);
  svc_latency = &prometheus::BuildGauge()
                     .Name("hpr_service_latency_seconds")
                     .Help("[[service]] runs: rx-to-tx latency of each service's packets, by quantile (0.5, 0.99)")
                     .Register(*registry);
  power = &prometheus::BuildGauge().Name("hpr_power_watts").Help("Power of the run's devices, by source (rapl, nvml, model, mixed)").Register(*registry);
  if (shaping) {
    auto fam = [&](const char* n, const char* h) {
      return &prometheus::BuildGauge().Name(n).Help(h).Register(*registry);
    };
    shaper = Shaper{
        g("hpr_shaper_queues", "Egress shaper: token buckets configured"),
        g("hpr_shaper_throttled_queues", "Egress shaper: buckets out of tokens now (their queue waits on the heap)"),
        g("hpr_shaper_heap_size", "Egress shaper: reschedule heap nodes now"),
        g("hpr_shaper_heap_high_water", "Egress shaper: largest heap size seen"),
        g("hpr_shaper_waiting_packets", "Egress shaper: packets waiting for tokens now"),
        g("hpr_shaper_reschedules_total", "Egress shaper: queues disabled until their reschedule time"),
        g("hpr_shaper_delayed_packets_total", "Egress shaper: packets that waited for tokens"),
        g("hpr_shaper_unclassified_packets_total",
          "Egress shaper by class: packets that matched no class (sent unshaped)"),
        fam("hpr_shaper_class_packets_total", "Egress shaper: packets sent, by class"),
        fam("hpr_shaper_class_bytes_total", "Egress shaper: bytes sent, by class"),
        fam("hpr_shaper_class_dropped_total",
            "Egress shaper: packets dropped (class queue full or frame too long), by class"),
        fam("hpr_shaper_class_waiting_packets", "Egress shaper: packets waiting for tokens now, by class"),
        fam("hpr_shaper_class_throttled", "Egress shaper: 1 while the class's bucket is out of tokens, by class"),
    };
  }
  exposer->RegisterCollectable(registry);
  return Status::ok();
}

void PrometheusExporter::update(const Summary& s) {
  if (!exposer) return;
  rx->Set(static_cast<double>(s.rx_packets));
  tx->Set(static_cast<double>(s.tx_packets));
  dropped->Set(static_cast<double>(s.dropped));
  reorders->Set(static_cast<double>(s.reorders));
  p99->Set(static_cast<double>(s.latency_p99_ns) / 1e9);
  for (size_t i = 0; i < s.out_ports.size(); ++i) {
    const prometheus::Labels l{{"port", std::to_string(i)}};
    port_tx->Add(l).Set(static_cast<double>(s.out_ports[i].packets));
    port_tx_bytes->Add(l).Set(static_cast<double>(s.out_ports[i].bytes));
    port_failed->Add(l).Set(static_cast<double>(s.out_ports[i].failed));
  }
  for (const auto& l : s.lanes) lane_util->Add({{"lane", l.name}}).Set(l.utilisation);
  for (const auto& [r, c] : s.drops) drops->Add({{"reason", r}}).Set(static_cast<double>(c));
  if (s.chain_events.empty()) events->Add({{"event", s.event_name}}).Set(static_cast<double>(s.events));
  for (const auto& e : s.chain_events) events->Add({{"app", e.app}, {"event", e.name}}).Set(static_cast<double>(e.count));
  for (const auto& b : s.services) {
    svc_packets->Add({{"service", b.name}, {"what", "out"}}).Set(static_cast<double>(b.out));
    svc_packets->Add({{"service", b.name}, {"what", "dropped"}}).Set(static_cast<double>(b.dropped));
    svc_packets->Add({{"service", b.name}, {"what", "lost"}}).Set(static_cast<double>(b.lost));
    svc_bytes->Add({{"service", b.name}}).Set(static_cast<double>(b.out_bytes));
    svc_latency->Add({{"service", b.name}, {"quantile", "0.5"}}).Set(static_cast<double>(b.latency_p50_ns) / 1e9);
    svc_latency->Add({{"service", b.name}, {"quantile", "0.99"}}).Set(static_cast<double>(b.latency_p99_ns) / 1e9);
  }
  if (!s.power_source.empty()) power->Add({{"source", s.power_source}}).Set(s.power_w);
  if (shaper && s.shaping) {
    auto set = [](prometheus::Gauge* g, uint64_t v) { g->Set(static_cast<double>(v)); };
    set(shaper->queues, s.shaped_queues);
    set(shaper->throttled, s.shaper_throttled);
    set(shaper->heap, s.shaper_heap);
    set(shaper->heap_high_water, s.shaper_heap_high_water);
    set(shaper->waiting, s.shaper_waiting);
    set(shaper->reschedules, s.shaper_reschedules);
    set(shaper->delayed, s.shaper_delayed);
    set(shaper->unclassified, s.shaper_unclassified);
    for (const auto& c : s.shaper_classes) {
      set(&shaper->class_packets->Add({{"class", c.name}}), c.packets);
      set(&shaper->class_bytes->Add({{"class", c.name}}), c.bytes);
      set(&shaper->class_dropped->Add({{"class", c.name}}), c.dropped);
      set(&shaper->class_waiting->Add({{"class", c.name}}), c.waiting);
      set(&shaper->class_throttled->Add({{"class", c.name}}), c.throttled ? 1 : 0);
    }
  }
}

}  // namespace hpr
