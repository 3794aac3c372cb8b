#pragma once
// `hpr profile`: the characterisation run of hetero-opencl-adaptive-scheduler §4.1 (profiling builds the
// configuration dictionary; §3.3.2-3.3.3 the per-device characterisation) on the live pipeline.
//
// Grid: every device alone (each OpenCL lane and each native lane), then every combination (pairs, triples, …
// up to max_set_size), over batch sizes (powers of two in [min_batch, max_batch]; every device of a set gets the
// same batch) and, for combinations, split ratios on a grid of 1/split_steps (each device of the set > 0).
// One pipeline is built for the whole run (PoCL program builds are slow): a point is set with
// Pipeline::set_lane_weights (lanes outside the set: weight 0) and set_lane_batch, then the traffic settles
// (at least one quantum, until lanes outside the set carry < 1 % of the packets, at most 5 quanta: flows move
// only when nothing of theirs is in flight), then one quantum — max(quantum_ms, two status samples) — is
// measured: throughput (processed bits/s — transmitted or dropped by the app's verdict — under saturation: the
// generator is unpaced with backpressure), rx-to-tx latency median and p99, power over the quantum with its source
// (RunPower). Each point is appended to the table file at once (TableWriter), so an interrupted run (SIGINT →
// Pipeline::request_stop) keeps what was measured; "complete": true only when every planned point was measured.
#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "hpr/status.hpp"
#include "profiler/table/config_table.hpp"
#include "pipeline/pipeline.hpp"
#include "pipeline/power.hpp"
#include "pipeline/run_config.hpp"

namespace hpr {

struct ProfileOptions {
  RunConfig run;  // app, input (generator or capture), lanes; rate/packets/duration are overridden
  PowerConfig power;
  std::string out_path = "table.json";
  uint32_t min_batch = 64, max_batch = 65536;
  double quantum_ms = 40;
  uint32_t split_steps = 4;   // split grid step 1/split_steps
  uint32_t max_set_size = 0;  // largest device combination (0: all lanes)
  double budget_s = 0;        // stop after this long (0: no budget)
};

struct ProfileProgress {
  size_t done = 0, planned = 0;
  double elapsed_s = 0, eta_s = 0;
  const sched::Configuration* last = nullptr;
};

struct ProfileResult {
  size_t measured = 0, planned = 0;
  bool complete = false;
  bool budget_hit = false;
  double seconds = 0;
  std::string power_source;
  std::string power_description;  // RunPower::describe(): meters and notes (what each model covers)
  prof::ConfigTable table;
};

// The planned grid for `lanes` lanes (setups only: measurements are zero). Errors: kInvalidArgument for a bad
// batch range (not powers of two within 1..65536, min > max), split_steps == 0, lanes == 0 or > kMaxDevices.
Result<std::vector<sched::Configuration>> profile_grid(size_t lanes, const ProfileOptions& o);

// Runs the profile. `on_start` gets the pipeline before it runs (for a SIGINT handler); `on_progress` is called
// after every point. Errors: from prepare_run, profile_grid, TableWriter (kIoError naming the path).
Result<ProfileResult> run_profile(const ProfileOptions& o, const std::function<void(Pipeline*)>& on_start = {},
                                  const std::function<void(const ProfileProgress&)>& on_progress = {});

}  // namespace hpr
