#pragma once
// Learning mode of `hpr run` (the default without --table or --static; docs/scheduler.md "Learning mode"): the
// control thread calls on_quantum() every quantum with the pipeline's snapshot; the OnlineBalancer
// (scheduler/adaptive/online_balancer.hpp) scores the quantum on what the whole run delivered and answers the lane
// shares and batch sizes to run next, which are applied with Pipeline::set_lane_weights (flows move only when
// nothing of theirs is in flight: never a reorder) and set_lane_batch, and with services the lane each is placed
// on (Pipeline::set_service_lanes). A lane that failed is taken out of the search. Every decision is logged
// ("learn …"), the last 20 are listed in the summary; --adapt-csv writes one line per quantum.
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "hpr/atomic_file.hpp"
#include "hpr/status.hpp"
#include "pipeline/adaptive_control.hpp"
#include "pipeline/pipeline.hpp"
#include "pipeline/power.hpp"
#include "pipeline/quantum_csv.hpp"
#include "profiler/table/config_table.hpp"
#include "scheduler/adaptive/online_balancer.hpp"

namespace hpr {

struct LearnOptions {
  sched::BalancerParams params;
  // Per lane: the largest batch searched (lane_max_batch: OpenCL lanes); 0: the batch is not searched (native).
  std::vector<uint32_t> batch_max;
  uint32_t batch = 256;              // starting batch of every lane
  std::vector<uint32_t> batch_start; // per lane, where it differs (a discrete GPU's); empty: `batch` for every lane
  std::optional<sched::Setup> start; // a saved setup to start from
  std::string csv_path;              // per-quantum CSV; empty: none
  // Saved state (pipeline/learn_state.hpp): the file ("" : none), this machine's fingerprint, the traffic, the
  // power source of the figures. A saved setup becomes `start` when none is given.
  std::string state_path;
  prof::Fingerprint fingerprint;
  std::string traffic;
  sched::PowerSource power_source = sched::PowerSource::kModel;
  double save_every_s = 5;
  double pace_pps = 0;  // the generator's --rate-pps (QuantumFigures::pace_bps); 0: not paced or not known
};

class LearnControl {
 public:
  // Errors: kInvalidArgument (parameters, lane count), kIoError (the CSV).
  static Result<std::unique_ptr<LearnControl>> create(const LearnOptions& opt, Pipeline& pipeline);
  void on_quantum(const Summary& s, const PowerSample& power, uint64_t now_ns);
  // hpr ctl set policy (on the thread that calls on_quantum): the balancer is made again with the new goal, starting
  // from the setup found so far (scores of the old goal do not compare with the new one's, so its search starts over
  // from there). Errors: validate(BalancerParams), e.g. latency-target without a target.
  Status set_policy(sched::Policy p, double latency_target_ns, std::string_view why = "hpr ctl set policy");
  // End of the run: the state is saved (a failure is a warning: the run goes on without persistence), the CSV is
  // renamed into place. Errors: kIoError naming the CSV.
  Status finish();
  const std::string& state_note() const { return state_note_; }
  std::string report() const;  // the setup learned, blocks measured, changes kept, restarts, the decisions
  const sched::OnlineBalancer& balancer() const { return *bal_; }

 private:
  LearnControl() = default;
  void apply(const sched::Setup& s);
  void save_state(uint64_t now_ns);
  Pipeline* pipeline_ = nullptr;
  LearnOptions opt_;
  std::optional<sched::OnlineBalancer> bal_;
  QuantumClock clock_;
  std::vector<bool> lost_;
  std::vector<bool> placeable_;  // Pipeline::placeable_services()
  std::deque<std::string> log_;
  uint64_t log_dropped_ = 0;
  std::optional<QuantumCsv> csv_;
  prof::ConfigTable state_;
  std::string state_note_;
  bool state_dirty_ = false;
  uint64_t state_saved_ns_ = 0;
};

}  // namespace hpr
