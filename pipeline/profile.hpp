#pragma once
// `hpr profile`: the characterisation run of hetero-opencl-adaptive-scheduler §4.1 (profiling builds the
// configuration dictionary; §3.3.2-3.3.3 the per-device characterisation) on the live pipeline.
//
// Grid: every device alone (each OpenCL lane and each native lane), then every combination (pairs, triples, …
// up to max_set_size), for combinations over split ratios on a grid of 1/split_steps (each device of the set
// > 0), and over batch sizes (powers of two in [min_batch, max_batch]; every device of a set gets the same
// batch) — so the batch sizes of one device set and split are neighbours: a block (profile_rounds.hpp).
// One pipeline is built for the whole run (PoCL program builds are slow). A sample of a point: the point is set
// with Pipeline::set_lane_weights (lanes outside the set: weight 0) and set_lane_batch, then the traffic settles
// (at least one quantum, until lanes outside the set carry < 1 % of the packets, at most 5 quanta: flows move
// only when nothing of theirs is in flight), then one quantum — max(quantum_ms, two status samples) — is
// measured: throughput (processed bits/s — transmitted or dropped by the app's verdict — under saturation: the
// generator is unpaced with backpressure), rx-to-tx latency median and p99, power over the quantum with its source
// (RunPower). Samples are repeated and interleaved within a block (round after round, min_samples to max_samples,
// until the spreads are within spread_delta; profile_rounds.hpp); a point's figures are the medians, with their
// spreads and sample count. A block's points are appended to the table file (TableWriter) as soon as the block is
// done, so an interrupted run (SIGINT → Pipeline::request_stop) keeps every finished block — and the points of
// the unfinished one that have min_samples samples —; "complete": true only when every planned point was measured.
#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "hpr/status.hpp"
#include "profiler/table/config_table.hpp"
#include "pipeline/pipeline.hpp"
#include "pipeline/power.hpp"
#include "pipeline/profile_rounds.hpp"
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
  SampleRule sampling;        // --min-samples, --max-samples, --spread
  // --interleave grid: the rounds visit the whole grid, not one block (a device set and split) at a time, so that a
  // load that comes and goes hits every point alike, not only the blocks it overlaps; the table is written at the
  // end (a stop keeps the points with min_samples), and a change of device set between visits settles as a block's
  // first visit does.
  bool interleave_grid = false;
};

// After every sample. samples_planned is an estimate: finished blocks took their rounds, the others are
// expected to take the mean rounds of the finished ones (min_samples before any finished).
struct ProfileProgress {
  size_t done = 0, planned = 0;                   // points written / in the grid
  size_t samples = 0, samples_planned = 0;        // samples measured / expected in all
  double elapsed_s = 0, eta_s = 0;
  const sched::Configuration* last = nullptr;     // the point of this sample (its current median); never null
};

struct ProfileResult {
  size_t measured = 0, planned = 0;  // points written / in the grid
  size_t samples = 0;                // samples measured (those of points not written included)
  double samples_median = 0;         // samples per written point: median and largest
  uint32_t samples_max = 0;
  size_t not_within = 0;             // written points whose throughput or power spread is above spread_delta
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
// after every sample. Errors: from prepare_run, profile_grid, validate(SampleRule) (kInvalidArgument naming the
// flag), TableWriter (kIoError naming the path).
Result<ProfileResult> run_profile(const ProfileOptions& o, const std::function<void(Pipeline*)>& on_start = {},
                                  const std::function<void(const ProfileProgress&)>& on_progress = {});

}  // namespace hpr
