#pragma once
// The online adaptive scheduler (scheduler/adaptive, hetero-opencl-adaptive-scheduler §4.2) driving the live
// daemon's lanes. The control thread calls on_quantum() every quantum (40 ms or two status samples) with the
// pipeline's snapshot; it builds a sched::Measurement from the deltas since the previous call
//   offered = rx bits/s, achieved = processed bits/s (transmitted + dropped by the app's verdict; not the drops
//   for want of capacity),
//   capacity = min over the running lanes of (lane bits / lane busy time) / lane weight (the lane that saturates
//              first bounds the split), latency median / p99 from the rx-to-tx histogram deltas,
//   power and its source from RunPower, epoch of the decision in force,
// (the offered rate passed on is the largest of the last rate_window quanta), calls AdaptiveScheduler::step and
// applies the Decision: split → Pipeline::set_lane_weights (lanes outside the
// device set get weight 0; flows move only when nothing of theirs is in flight, so never a reorder) and
// Pipeline::set_lane_batch per lane. Lane i of the pipeline is device i of the table (OpenCL devices in
// discovery order, then native lanes), as `hpr profile` writes it.
// Every switch is logged (time, old → new configuration, reason) and counted; a rate step (offered rate off the
// running reference by more than max(2δ, 25 %) for two quanta in a row) starts a clock that stops at the first quantum
// with no change and achieved >= (1-δ) offered: the adaptation time.
#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "hpr/atomic_file.hpp"
#include "hpr/status.hpp"
#include "profiler/table/config_table.hpp"
#include "pipeline/pipeline.hpp"
#include "pipeline/power.hpp"
#include "scheduler/adaptive/adaptive_scheduler.hpp"

namespace hpr {

struct DeviceInfo;
struct EndpointConfig;

// What happened between two snapshots.
struct IntervalStats {
  double seconds = 0;
  double offered_bps = 0;   // rx bits/s, and what the input port missed (port_missed × mean rx frame bits)
  double achieved_bps = 0;  // processed: (tx + the app's own drops) × mean rx frame bits / s
  double tx_bps = 0;
  uint64_t lost_packets = 0;  // for want of capacity: queue_full, no_lane, pool_empty drops and port_missed
  double rx_pps = 0, tx_pps = 0;
  uint64_t latency_p50_ns = 0, latency_p99_ns = 0;  // rx to tx (histogram bucket midpoints, within ±3.2 %)
  std::vector<double> lane_util;                    // busy fraction of the interval
  // The host threads' busy time beyond the lanes', per second: summed over workers (up to the worker count).
  double dispatch_util = 0, egress_util = 0;
  std::vector<double> lane_bps;                     // lane packets × mean tx frame bits / interval
  std::vector<uint64_t> lane_packets;
  std::vector<uint64_t> lane_batches;
};
IntervalStats interval_stats(const Summary& prev, const Summary& cur);
// What RunPower::sample takes: lane_util, then the host threads' (the order of add_host_threads), those of `workers`
// workers (the sum of their busy shares) as the share of their `workers` cores.
std::vector<double> power_util(const IntervalStats& st, uint32_t workers = 1);

// The interval since the previous snapshot, for a control loop called every quantum (adaptive and learning mode).
class QuantumClock {
 public:
  // nullopt for the first snapshot (it only starts the clock) and for an empty interval.
  std::optional<IntervalStats> next(const Summary& s, uint64_t now_ns);
  double seconds_since_start(uint64_t now_ns) const { return static_cast<double>(now_ns - start_ns_) / 1e9; }

 private:
  Summary prev_;
  bool have_prev_ = false;
  uint64_t start_ns_ = 0;
};

// Fingerprint of this machine for a run config's lanes: the OpenCL devices that got a lane (name, platform,
// driver version), then one entry per native lane ("native<i>", "hpr", hpr version); app; traffic description.
prof::Fingerprint machine_fingerprint(const std::vector<DeviceInfo>& devices, uint32_t native_lanes,
                                      const std::string& app, const std::string& traffic);
// The traffic a run or a table point is measured on: generator sizes/flows/zipf/seed/match rate (not the rate), or
// the capture path.
std::string traffic_description(const EndpointConfig& in);

struct AdaptiveOptions {
  std::string table_path;
  sched::AdaptiveParams params;
  bool allow_mismatch = false;
  double quantum_s = 0.04;
  std::string csv_path;  // per-quantum log; empty: none
  // Step 3 (batch search and table updates from measurements) on. Off: the measured capacity is withheld
  // (Measurement::capacity_bps = 0), so the scheduler only looks the table up (Step 1 with λ) — deterministic
  // on hand-made tables, and a way around batch-search/table cycles (docs/scheduler.md).
  bool learn = true;
  // The offered rate given to the scheduler is the largest of the last `rate_window` quanta (1: the last one):
  // up at once, down only after the window — bursts of a stalled input do not flip configurations every quantum.
  uint32_t rate_window = 3;
};

struct RateStepRecord {
  double at_s = 0, from_bps = 0, to_bps = 0;
  double adaptation_ms = -1;  // -1: did not settle before the run ended
  uint64_t lost_packets = 0;  // queue_full / no_lane / pool_empty drops from the step until settled
};

class AdaptiveControl {
 public:
  // Loads the table (load_table: refuses a mismatching fingerprint — devices, drivers, hpr version, app — unless
  // allow_mismatch, the message names the field and the override --allow-table-mismatch), fills a ConfigStore
  // with the points measured on machine.traffic (all points, with a warning logged, when it has none), creates
  // the scheduler.
  // Errors: kNotFound (table), kInvalidArgument (table, fingerprint, parameters, a table naming a device beyond
  // the pipeline's lanes).
  static Result<std::unique_ptr<AdaptiveControl>> create(const AdaptiveOptions& opt, const prof::Fingerprint& machine,
                                                         Pipeline& pipeline, RunPower* power);
  ~AdaptiveControl();
  // End of the run: the per-quantum CSV is renamed into place. Errors: kIoError naming the file.
  Status finish();
  // One quantum. `s` is a snapshot taken now; `power` the power sample of the same interval.
  void on_quantum(const Summary& s, const PowerSample& power, uint64_t now_ns);
  // hpr ctl set policy (on the thread that calls on_quantum): the scheduler is made again with the new goal over the
  // same table (its updates kept), so its next quantum is a first decision under that goal (the Step 3 search starts
  // over; its device-switch and table-update counts restart). Errors: validate(AdaptiveParams), e.g. latency-target
  // without a target.
  Status set_policy(sched::Policy p, double latency_target_ns, std::string_view why = "hpr ctl set policy");
  uint64_t switches() const { return switches_; }
  uint64_t decisions() const { return decisions_; }
  const std::vector<RateStepRecord>& rate_steps() const { return steps_; }
  const std::vector<std::string>& log() const { return log_; }
  const sched::AdaptiveScheduler& scheduler() const { return *sched_; }
  const prof::ConfigTable& table() const { return table_; }
  std::string report() const;  // switches, rate steps and adaptation times, table updates

 private:
  AdaptiveControl() = default;
  void apply(const sched::Decision& d);
  AdaptiveOptions opt_;
  Pipeline* pipeline_ = nullptr;
  prof::ConfigTable table_;
  std::unique_ptr<sched::ConfigStore> store_;
  std::unique_ptr<sched::AdaptiveScheduler> sched_;
  QuantumClock clock_;
  uint64_t switches_ = 0, decisions_ = 0;
  std::vector<float> weights_;
  std::vector<double> recent_offered_;
  std::vector<RateStepRecord> steps_;
  double ref_offered_ = 0;
  bool adapting_ = false;
  bool pending_step_ = false;
  double pending_t_s_ = 0;
  uint64_t pending_lost_ = 0;
  uint64_t pending_ns_ = 0;
  uint64_t step_ns_ = 0;
  std::vector<std::string> log_;
  std::optional<AtomicFile> csv_;
};

}  // namespace hpr
