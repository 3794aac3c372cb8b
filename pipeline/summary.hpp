#pragma once
// What a run reports: the live snapshot and the final summary (books, drops by reason, latency, lanes,
// balancer, shaper, power), as text, JSON and the one-line status shown every interval.
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "scheduler/balance/balancer.hpp"

namespace hpr {

struct LaneSummary {
  std::string name, executor, state, failure;
  uint64_t batches = 0, packets = 0, events = 0;
  uint64_t queue_full = 0;  // dropped at this lane's full queue (part of the queue_full reason)
  double mean_batch = 0, utilisation = 0;
  uint64_t p50_ns = 0, p99_ns = 0;
};

struct Summary {
  double seconds = 0;
  uint64_t rx_packets = 0, rx_bytes = 0, tx_packets = 0, tx_bytes = 0;
  uint64_t port_missed = 0;  // DPDK input: packets the port dropped before hpr received them (imissed, no mbuf)
  uint64_t dropped = 0;
  std::vector<std::pair<std::string, uint64_t>> drops;  // reason → count (non-zero only)
  uint64_t reorders = 0, unaccounted = 0;
  uint64_t flows_seen = 0, flow_table_full = 0, lane_failures = 0, host_frames = 0;
  uint64_t events = 0;
  // Host threads' busy time beyond the lanes' (dispatcher bursts, egress polls with work), for the power model.
  double dispatch_busy_s = 0, egress_busy_s = 0;
  std::string event_name;
  // A chain's events, app by app (the summary's events are its last app's).
  struct AppEvents {
    std::string app, name;
    uint64_t count = 0;
    uint64_t in = 0, passed = 0;  // packets the app was given, and those it passed on (the rest it or one before dropped)
  };
  std::vector<AppEvents> chain_events;
  // [[service]] runs: per service, what its chain passed to the output (packets, bytes, rx-to-tx latency), what its
  // chain dropped, and what was lost on the way to a lane (full queue, no lane). A packet of no service (parse errors,
  // no_service) is in the totals only.
  struct ServiceBook {
    std::string name;
    uint64_t out = 0, out_bytes = 0, dropped = 0, lost = 0;
    std::vector<uint64_t> latency_buckets;  // LogLinear layout
    uint64_t latency_p50_ns = 0, latency_p99_ns = 0;
    std::vector<std::string> lanes;  // the lanes it is placed on ([[service]] lanes; every worker's); empty: any
    void set_latency();  // the percentiles from the buckets
  };
  std::vector<ServiceBook> services;
  std::vector<std::pair<std::string, std::string>> app_info;  // App::summary_info (AES: key_epoch), JSON "app"
  // Egress shaper (when on).
  bool shaping = false;
  uint64_t shaped_queues = 0, shaper_heap = 0, shaper_waiting = 0, shaper_reschedules = 0, shaper_delayed = 0;
  uint64_t shaper_throttled = 0, shaper_heap_high_water = 0;
  uint64_t shaper_unclassified = 0;  // ShapeBy::kClass: packets that matched no class (sent unshaped)
  struct ShaperClass {
    std::string name;
    uint64_t rate_bytes_per_s = 0;
    uint64_t packets = 0, bytes = 0;  // sent (handed to the output port)
    uint64_t dropped = 0;             // shaper_queue_full or frame_too_long
    uint64_t waiting = 0;             // packets waiting for tokens now
    uint32_t alpha_bytes = 0;         // reschedule threshold now (grows and decays with shaper.adaptive)
    bool throttled = false;           // waiting for tokens now
  };
  std::vector<ShaperClass> shaper_classes;
  // Per output port (docs/pipeline.md "Output ports"): sent packets and bytes, and packets the port did not take
  // (counted under the port's unsent reason, tx_failed or tx_error). They sum to tx_packets and tx_bytes.
  struct OutPort {
    std::string name;  // Port::describe()
    uint64_t packets = 0, bytes = 0, failed = 0;
  };
  std::vector<OutPort> out_ports;
  uint64_t rx_buffers_in_use = 0;  // rx port buffers not yet released (pool/generator: 0 after the drain)
  uint64_t latency_p50_ns = 0, latency_p99_ns = 0;
  std::vector<LaneSummary> lanes;
  // The flow-to-lane policy and its counters (final summary only: the dispatcher owns them while it runs).
  std::string balancer;
  std::optional<balance::BalancerStats> balance;
  uint64_t move_held = 0;  // packets held while their flow moved lane (PipelineConfig::move_hold)
  std::vector<uint64_t> latency_buckets;  // rx-to-tx histogram (hpr/histogram.hpp LogLinear layout), for per-interval deltas
  // Power, filled in by the caller (pipeline/power.hpp); shown when power_source is not empty.
  double power_w = 0, energy_j = 0;
  std::string power_source;
  // Output that could not be written (result log, output file), one message each (final summary
  // only). Non-empty: what the summary counts as sent may not all be on disk; hpr exits with 3.
  std::vector<std::string> output_errors;
  std::string to_json() const;
  std::string to_text() const;
  // Adds another worker's snapshot of the same run (pipeline.hpp add_worker): counters and drops summed, latency
  // histograms added and their percentiles read again, lanes listed after these. The time, the app's and the
  // balancer's fields stay this worker's. Shaping is per run, not per worker (validate() refuses it with workers).
  void add_worker(const Summary& w);
  // The workers' lanes folded by their index in a worker (each worker has the same `per_worker` lanes, listed in
  // worker order): lane i is the sum of every worker's lane i (packets, batches, events, queue_full; utilisation the
  // mean, latency the largest), named without the "wN:" prefix, running only while every worker's is. The learner's
  // view: it sets lane i of every worker alike. A snapshot of one worker is returned as it is.
  Summary lanes_by_index(size_t per_worker) const;
};

// What happened between two snapshots of one run (`prev` the earlier): the rx-to-tx latency buckets of the
// interval's packets, and lane i's packets, batches and busy share over it (lanes index-aligned; a lane that `prev`
// lacks counts from 0).
std::vector<uint64_t> latency_between(const Summary& prev, const Summary& now);
struct LaneInterval {
  uint64_t packets = 0, batches = 0;
  double util = 0;  // busy share of the interval, 0..1
};
LaneInterval lane_between(const Summary& prev, const Summary& now, size_t i);

// "[  3.0s] in 1.234 Mpps out ... | drops N | p50 .. us p99 .. us | power .. | lane:b../u..%": everything over the
// interval from `prev` to `now` (rates, latency, each lane's mean batch and busy share) except the drops, a total.
std::string status_line(const Summary& prev, const Summary& now);

}  // namespace hpr
