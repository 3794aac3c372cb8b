#pragma once
// AdaptiveScheduler: the online adaptation algorithm of hetero-opencl-adaptive-scheduler §4.2.
//
//   Step 1  measure the offered rate R; look the policy's best configuration up in the ConfigStore (O(log N));
//           change to it only when it is better than the running one by a factor λ (or the running one can no
//           longer sustain R). λ keeps the scheduler from alternating between competing configurations.
//           Another batch size of the running devices and split is left to Step 3 while it searches, and after
//           it has settled while the running setup sustains R (otherwise the two would undo each other).
//   Step 2  (the daemon) batches of the chosen size go to the chosen devices' queues.
//   Step 3  compare the measured performance with the table's: when it differs by more than δ the table is
//           updated (cross-training); when the running configuration cannot carry R the batch size grows by α,
//           when it carries more than R(1+δ) it shrinks by β; the factor applied in the opposite direction
//           is halved after each reversal (the paper's "set β = α/2", "set α = β/2", read as a bisection in
//           log space), so the batch converges within log_α(max batch) + log2(log α / log(1+δ)) steps.
//           Once converged the scheduler stays on that batch until R moves by more than δ, the table changes,
//           or the configuration falls behind.
//
// One quantum is not a measurement (architecture.md convention 13): Step 3 acts on the median and spread of the
// last `samples` quanta of the running setup (the first quantum after a change is skipped: it still carries the
// old setup's batches), the table is updated only where the median leaves the stored value by more than δ and by
// more than both spreads, and a Step 1 switch needs its gain beyond both table entries' spreads as well as λ.
//
// Extensions beyond the paper (documented in docs/scheduler.md):
//   * one store per traffic class (e.g. DPI low / high match rate, a feature the DPI app measures): a class
//     change re-evaluates Step 1 against that class's table immediately;
//   * power is written back to the table only from measurements taken near saturation (achieved >= (1-δ) ×
//     capacity), so table powers stay comparable (power at 10 % load is not the configuration's power);
//   * the lookup asks for R × (1 + headroom).
//
// Pure: input = measurements (with now_ns), output = a Decision; no clocks, threads or I/O. The daemon applies a
// decision: for a device-set change it moves a flow only once the flow has no packet in flight on its old lane
// (architecture.md, order guarantee), so switching never reorders. Decision cost: O(log N) (bench/fig7
// decision_bench measures it). Not thread safe: the control thread owns it and the stores.
#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "scheduler/store/config_store.hpp"

namespace hpr::sched {

struct AdaptiveParams {
  Policy policy = Policy::kEnergyCritical;
  double latency_target_ns = 0;  // kLatencyTarget
  double lambda = 1.10;          // λ: switch only when better by this factor
  double delta = 0.10;           // δ: "similar" threshold (paper: 10 %)
  double alpha = 2.0;            // α: batch growth factor (paper: 2×)
  double beta = 2.0;             // β: batch decrease factor (paper: 2×)
  uint32_t min_batch = 64;
  uint32_t max_batch = 65536;
  double headroom = 0.05;  // the lookup asks for R × (1 + headroom)
  uint32_t samples = 3;    // quanta behind each Step 3 decision and table update (1..64)
};

// Checks λ >= 1, 0 < δ < 1, α > 1, β > 1, 1 <= min_batch <= max_batch, headroom >= 0, 1 <= samples <= 64,
// latency target > 0 for kLatencyTarget. kInvalidArgument naming the parameter.
Status validate(const AdaptiveParams& p);

// What the control thread measured over the last quantum (§4.1: 40 ms or two samples).
struct Measurement {
  uint64_t now_ns = 0;
  uint64_t epoch = 0;       // Decision::epoch in force while measuring; another epoch skips Step 3
  double offered_bps = 0;   // arrival rate
  double achieved_bps = 0;  // processed rate
  double capacity_bps = 0;  // what the running configuration sustains (bits / busy time); 0 = unknown
  double latency_ns = 0;    // batch latency, median
  double latency_p99_ns = 0;
  double power_w = 0;
  PowerSource power_source = PowerSource::kUnknown;
  uint32_t traffic_class = 0;  // which store (0 when there is one)
};

enum class Reason : uint8_t {
  kInitial,              // first decision
  kStay,                 // nothing to change
  kSwitchBetter,         // Step 1: candidate better by λ
  kSwitchCannotSustain,  // Step 1: the running configuration cannot carry R
  kBatchGrow,            // Step 3: × α
  kBatchShrink,          // Step 3: ÷ β
  kTuned,                // Step 3 converged
};
const char* reason_name(Reason r);

struct Decision {
  uint64_t now_ns = 0;
  uint64_t epoch = 0;           // increments whenever devices or batch sizes change
  ConfigId config = kNoConfig;  // store entry of the running setup; kNoConfig until first measured
  uint32_t device_mask = 0;
  std::array<uint32_t, kMaxDevices> batch{};
  std::array<float, kMaxDevices> weight{};  // lane weights = the configuration's split
  Reason reason = Reason::kInitial;
  bool devices_changed = false;  // the daemon drains in-flight flows before moving them
  bool changed = false;          // devices or batch sizes changed in this step
};

class AdaptiveScheduler {
 public:
  // `stores[c]` is the table for traffic class c; the scheduler does not own them and updates them (Step 3).
  // Errors: validate(p); kInvalidArgument when `stores` is empty, holds a null pointer or an empty store.
  static Result<AdaptiveScheduler> create(const AdaptiveParams& p, std::vector<ConfigStore*> stores);

  // One iteration of §4.2. Measurement of a traffic class with no store: kept on the last class.
  const Decision& step(const Measurement& m);
  const Decision& decision() const { return dec_; }
  const Configuration& running() const { return running_; }
  const AdaptiveParams& params() const { return p_; }
  bool tuning() const { return tuning_; }
  uint64_t device_switches() const { return device_switches_; }
  uint64_t table_updates() const { return table_updates_; }

 private:
  AdaptiveScheduler(const AdaptiveParams& p, std::vector<ConfigStore*> stores) : p_(p), stores_(std::move(stores)) {}
  Query query(double rate_bps) const { return {p_.policy, rate_bps, p_.latency_target_ns}; }
  bool should_switch(const ConfigStore& s, ConfigId cand, ConfigId cur, double rate_bps) const;
  void apply_config(const ConfigStore& s, ConfigId id, Reason why, uint64_t now_ns);
  void apply_batch_scale(double factor, Reason why, uint64_t now_ns);
  bool take_sample(const Measurement& m);  // true once `samples` quanta of the running setup are in (figures_ set)
  Configuration window_figures();          // their medians and spreads, as a measured configuration
  void record(ConfigStore& s);
  void tune(const Measurement& m, double rate_bps);
  void settle(uint32_t scale_batch, uint64_t now_ns, double rate_bps);
  uint32_t lead_batch() const;

  AdaptiveParams p_;
  std::vector<ConfigStore*> stores_;
  uint32_t class_ = 0;
  Configuration running_;            // the setup in force (measurements are of it)
  ConfigId running_id_ = kNoConfig;  // its entry in stores_[class_], once known
  Decision dec_;
  bool started_ = false;
  // Step 3 state
  bool tuning_ = false;
  bool settled_ = false;
  double settled_rate_bps_ = 0;
  double step_log_ = 0;  // current batch step, natural log of the factor
  int last_dir_ = 0;
  uint32_t best_good_batch_ = 0;  // smallest lead batch seen that carried R
  // The running setup's last quanta (this epoch and traffic class), oldest first.
  std::vector<Measurement> window_;
  uint64_t window_epoch_ = ~uint64_t{0};
  uint32_t window_class_ = 0;
  Configuration figures_;        // window_figures() of the last full window
  std::vector<double> scratch_;  // window_figures()' sort buffer (no allocation per quantum)
  uint64_t device_switches_ = 0;
  uint64_t table_updates_ = 0;
};

}  // namespace hpr::sched
