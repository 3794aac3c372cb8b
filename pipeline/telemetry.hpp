#pragma once
// Prometheus metrics of a run (prometheus-cpp pull exporter): the rates, drops by reason, latency,
// lane utilisation, power by source, and the shaper's gauges when shaping. Fed from the pipeline's
// status snapshots (Summary). A bare port ("9464") listens on loopback only; another interface must
// be named ("0.0.0.0:9464"), and that is logged as a warning.
#include <memory>
#include <optional>
#include <string>

#include "hpr/status.hpp"
#include "pipeline/pipeline.hpp"

namespace prometheus {
class Exposer;
class Registry;
class Gauge;
template <typename T>
class Family;
}  // namespace prometheus

namespace hpr {

class PrometheusExporter {
 public:
  PrometheusExporter();
  ~PrometheusExporter();
  // Ok where this build has prometheus-cpp; else kUnavailable naming HPR_WITH_PROMETHEUS (telemetry_none.cpp).
  static Status available();
  // Errors: kInvalidArgument for an address that is not ADDR:PORT or PORT, kUnavailable when it cannot listen or
  // the build has no prometheus-cpp.
  Status start(std::string addr, bool shaping);
  // Sets every metric from a snapshot; nothing when not started.
  void update(const Summary& s);
  // The address listened on, with the port the kernel chose for port 0.
  const std::string& listening() const { return listen; }

 private:
  std::unique_ptr<prometheus::Exposer> exposer;
  std::shared_ptr<prometheus::Registry> registry;
  prometheus::Gauge* rx = nullptr;
  prometheus::Gauge* tx = nullptr;
  prometheus::Gauge* dropped = nullptr;
  prometheus::Gauge* reorders = nullptr;
  prometheus::Gauge* p99 = nullptr;
  prometheus::Family<prometheus::Gauge>* lane_util = nullptr;
  prometheus::Family<prometheus::Gauge>*port_tx = nullptr, *port_tx_bytes = nullptr, *port_failed = nullptr;
  prometheus::Family<prometheus::Gauge>* drops = nullptr;
  prometheus::Family<prometheus::Gauge>* events = nullptr;  // by app (a chain's, a service's) and event
  prometheus::Family<prometheus::Gauge>* power = nullptr;
  // [[service]] runs: by service (and what: out, dropped; quantile 0.5, 0.99).
  prometheus::Family<prometheus::Gauge>*svc_packets = nullptr, *svc_bytes = nullptr, *svc_latency = nullptr;
  struct Shaper {  // egress shaper (registered when shaping is on)
    prometheus::Gauge *queues, *throttled, *heap, *heap_high_water, *waiting, *reschedules, *delayed, *unclassified;
    prometheus::Family<prometheus::Gauge>*class_packets, *class_bytes, *class_dropped, *class_waiting, *class_throttled;
  };
  std::optional<Shaper> shaper;
  std::string listen;  // address actually listened on

};

}  // namespace hpr
