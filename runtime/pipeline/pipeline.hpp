#pragma once
// The data path of `hpr run` (architecture.md): rx → classify → dispatch to lanes → egress.
//
// Threads: one dispatcher (rx, parse, flow table, lane choice), one per lane (batch builder and
// executor), one egress (per-flow order check, tx, buffer release), and the caller's thread for
// control (status line, telemetry) until the run ends.
//
// Order: a flow is bound to one lane and moves only when none of its packets is queued or in
// flight, so egress sees each flow's packets in sequence; it checks the sequence numbers the
// dispatcher assigned and counts any reorder (must stay 0).
//
// Books: every packet the rx port took in is transmitted or counted under one DropReason:
//   rx_packets + rx_too_long == tx_packets + sum(drops).
#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "kernels/app.hpp"
#include "runtime/flow.hpp"
#include "runtime/parser.hpp"
#include "runtime/pipeline/counters.hpp"
#include "runtime/pipeline/lane.hpp"
#include "runtime/port.hpp"

namespace hpr {

struct LaneSpec {
  enum class Kind { kNative, kOpenCL } kind = Kind::kNative;
  std::shared_ptr<kernels::AppProgram> program;  // OpenCL: the app built for the device
  bool host_unified = true;                      // OpenCL: map instead of copy
  std::string device_name;
  LaneConfig lane;
  uint32_t in_flight = 2;
};

struct PipelineConfig {
  std::vector<LaneSpec> lanes;
  uint32_t flow_capacity = 1u << 20;
  uint64_t flow_idle_ns = 30'000'000'000ull;
  ParseOptions parse;
  // Wait for room instead of dropping when a lane queue is full (file input: every packet counts).
  bool backpressure = false;
  uint16_t rx_burst = 32;
  uint32_t completion_ring = 8192;
  std::string log_path;            // result log (DPI alerts, MD5 digests); empty: none
  uint64_t max_duration_ns = 0;    // stop after this long (0: until the source ends or a signal)
  uint64_t status_interval_ns = 1'000'000'000ull;  // console status line period (0: none)
  // Host-side handling of packets the app dropped (e.g. ICMP Time Exceeded for kTtlExceeded).
  // Returns a frame to transmit, or an empty span.
  std::function<std::span<const uint8_t>(const Packet&, std::vector<uint8_t>& scratch)> on_drop;
};

struct LaneSummary {
  std::string name, executor, state, failure;
  uint64_t batches = 0, packets = 0, events = 0;
  double mean_batch = 0, utilisation = 0;
  uint64_t p50_ns = 0, p99_ns = 0;
};

struct Summary {
  double seconds = 0;
  uint64_t rx_packets = 0, rx_bytes = 0, tx_packets = 0, tx_bytes = 0;
  uint64_t dropped = 0;
  std::vector<std::pair<std::string, uint64_t>> drops;  // reason → count (non-zero only)
  uint64_t reorders = 0, unaccounted = 0;
  uint64_t flows_seen = 0, flow_table_full = 0, lane_failures = 0, host_frames = 0;
  uint64_t events = 0;
  std::string event_name;
  uint64_t rx_buffers_in_use = 0;  // rx port buffers not yet released (pool/generator: 0 after the drain)
  uint64_t latency_p50_ns = 0, latency_p99_ns = 0;
  std::vector<LaneSummary> lanes;
  std::string to_json() const;
  std::string to_text() const;
};

class Pipeline {
 public:
  // Errors: a lane that cannot be created (kUnavailable, naming the device), no lanes, flow table.
  static Result<std::unique_ptr<Pipeline>> create(PipelineConfig cfg, std::shared_ptr<const kernels::App> app,
                                                  Port& rx, Port& tx);
  ~Pipeline();

  // Runs until the source ends, max_duration passes, or request_stop(); then drains and returns.
  Summary run();
  // Safe from a signal handler: stops rx; run() drains and returns.
  void request_stop() { stop_rx_.store(true, std::memory_order_relaxed); }
  Summary snapshot() const;
  // Called once per status interval with the live snapshot (console line, Prometheus).
  void on_status(std::function<void(const Summary&, double interval_s)> f) { on_status_ = std::move(f); }

 private:
  Pipeline() = default;
  void dispatch_loop();
  void egress_loop();
  uint8_t pick_lane(uint32_t hash) const;
  bool handle_failed_lanes();
  bool enqueue(Packet& p, uint8_t lane);
  void drop_at_dispatch(Packet* p, uint16_t n, DropReason r);
  std::string flow_text(const Packet& p) const;

  PipelineConfig cfg_;
  std::shared_ptr<const kernels::App> app_;
  Port* rx_ = nullptr;
  Port* tx_ = nullptr;
  std::unique_ptr<FlowTable> flows_;
  std::vector<std::unique_ptr<Lane>> lanes_;
  std::vector<std::unique_ptr<std::atomic<uint64_t>>> egress_handled_;  // per lane

  std::atomic<bool> stop_rx_{false};
  std::atomic<bool> dispatch_done_{false};
  std::atomic<bool> lanes_done_{false};
  std::atomic<bool> egress_done_{false};
  std::thread dispatcher_, egress_;

  DropCounters drops_dispatch_, drops_egress_;
  std::atomic<uint64_t> reorders_{0}, tx_packets_{0}, tx_bytes_{0}, host_frames_{0}, lane_failures_{0};
  std::atomic<uint64_t> flows_seen_{0};
  LatencyHistogram latency_;
  std::vector<uint32_t> expected_seq_;  // egress-owned, per flow id
  uint64_t start_ns_ = 0, end_ns_ = 0;
  std::function<void(const Summary&, double)> on_status_;
  FILE* log_ = nullptr;
};

}  // namespace hpr
