#pragma once
// The power, adaptive and learning parts of `hpr run` (pipeline/power.hpp, adaptive_control.hpp,
// learn_control.hpp), kept out of main.cpp.
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "pipeline/adaptive_control.hpp"
#include "pipeline/learn_control.hpp"
#include "pipeline/power.hpp"
#include "pipeline/quantum_csv.hpp"
#include "pipeline/run_config.hpp"

namespace hpr::cli {

// Before prepare_run: in adaptive and learning mode the pipeline's status interval becomes the quantum and the lanes
// hold the largest batch that may be set.
void adjust_run_config(RunConfig& cfg);

// Power and the adaptive scheduler (cfg.adapt_table set) or the learning mode (learning_mode(cfg)) of one run.
class RunExtras {
 public:
  // Errors: the adaptive table (missing, mismatching fingerprint, bad policy) — kInvalidArgument / kNotFound.
  static Result<std::unique_ptr<RunExtras>> create(const RunConfig& cfg, RunContext& ctx);
  // Every pipeline status callback: fills s.power_*; returns whether the console line is due
  // (every telemetry.status_interval_s).
  bool on_status(Summary& s);
  void finish(Summary& s);  // final power figures (mean power over the run)
  std::string report() const;
  std::string describe() const;  // RunPower::describe() ("power model (model:host-cpu, ...)", notes), adaptive setup
  AdaptiveControl* adaptive() { return adapt_.get(); }
  // hpr ctl (the control socket's thread). The scheduler that sets the lane weights: "adaptive", "learning", or ""
  // (static weights: --static).
  const char* weights_owner() const { return adapt_ ? "adaptive" : learn_ ? "learning" : ""; }
  // hpr ctl set policy NAME [TARGET_US]: checks the goal (and, for latency-target, the p99 target: TARGET_US, else
  // --latency-target-us) and hands it to the scheduler, which takes it at its next quantum (on_status). Returns the
  // reply's text. Errors (kInvalidArgument): no scheduler in this run, an unknown goal, no latency target.
  Result<std::string> request_policy(const std::string& name, double target_us);
  static constexpr const char* kNoScheduler =
      "set policy: this run has no scheduler (--static: fixed lane weights); start hpr run without --static "
      "(learning mode) or with --table for a goal to apply";

 private:
  void take_policy();  // on_status: a goal hpr ctl asked for
  // on_status: the energy policy gives way to throughput while a power meter is silent (PowerFallback).
  void fall_back(const PowerSample& ps);
  Status set_policy(sched::Policy p, double target_ns, std::string_view why);
  RunConfig cfg_;
  std::unique_ptr<RunPower> power_;
  std::unique_ptr<AdaptiveControl> adapt_;
  std::unique_ptr<LearnControl> learn_;
  // The start line's " and device batch sizes up to N" and " and the lanes of services A, B" (what else it learns).
  std::string learn_batches_;
  std::optional<QuantumCsv> static_csv_;  // static mode with --adapt-csv
  QuantumClock static_clock_;
  Summary prev_;
  bool have_prev_ = false;
  double last_print_s_ = 0;
  // A goal asked for by hpr ctl, taken by on_status (the status thread) at the next quantum.
  std::mutex policy_mu_;
  std::string policy_;                   // the goal in force or asked for last
  std::optional<sched::Policy> pending_policy_;
  double pending_target_ns_ = 0;
  sched::Policy in_force_ = sched::Policy::kThroughputCritical;  // the scheduler's goal (status thread)
  PowerFallback fallback_;
};

}  // namespace hpr::cli
