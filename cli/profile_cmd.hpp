#pragma once
// `hpr profile` and the power / adaptive parts of `hpr run` (pipeline/profile.hpp, power.hpp,
// adaptive_control.hpp), kept out of main.cpp.
#include <CLI/CLI.hpp>
#include <memory>
#include <string>

#include "pipeline/adaptive_control.hpp"
#include "pipeline/power.hpp"
#include "pipeline/profile.hpp"
#include "pipeline/run_config.hpp"

namespace hpr::cli {

// Adds the `profile` subcommand; returns it (main checks parsed() and calls run_profile_command()).
CLI::App* add_profile_command(CLI::App& app);
int run_profile_command();

// Before prepare_run: in adaptive mode the pipeline's status interval becomes the quantum.
void adjust_run_config(RunConfig& cfg);

// Power and (when cfg.adapt_table is set) the adaptive scheduler of one run.
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

 private:
  RunConfig cfg_;
  std::unique_ptr<RunPower> power_;
  std::unique_ptr<AdaptiveControl> adapt_;
  Summary prev_;
  bool have_prev_ = false;
  double last_print_s_ = 0;
};

}  // namespace hpr::cli
