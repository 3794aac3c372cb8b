#pragma once
// app.place = "learned" (--place-app learned): each app of a chain placed from what learning mode measured for that
// app run alone on this run's lanes (its learned state, <state dir>/learned-<app>.json: one store per app), at the
// start of the run (docs/chains.md "Placement from the learned state").
//
// For app a on lane set S the estimate is the best median rate among the app's points that used exactly S (and their
// spread and whole-system power). A stage of apps A on S runs them one after another: 1 / Σ_a 1/R(a,S); a plan of
// stages on disjoint lane sets runs as fast as its slowest stage. Its energy a bit is the sum of its apps' (J/bit on
// their lanes; for stages that run side by side an upper bound: the idle power counted once per app). The plan with
// the whole chain on one lane set is what learning mode reaches without placing; at most one stage runs on the native
// lanes (in run to completion, which stages need, one thread runs them all); a plan of stages is taken only when
// it beats the best whole-chain plan by more than both spreads and by 2 % (the learner's rule); among the staged plans
// as fast as the fastest within their spreads, the one of least energy a bit. Not modelled: a CPU device's threads
// and the host thread taking turns on the same cores (each app was measured with the machine to itself) and a first
// app's drops (every packet is counted through every stage, which is pessimistic for the later ones).
#include <string>
#include <vector>

#include "pipeline/run_config.hpp"
#include "profiler/table/config_table.hpp"

namespace hpr {

struct LearnedPlacement {
  // Per app of the chain, the names of its lanes; empty: not placed (the whole chain on every lane, learning mode).
  std::vector<std::vector<std::string>> app_lanes;
  std::vector<double> weights;  // per lane when placed: its share within its stage (0: a lane no stage uses)
  std::string text;             // what was chosen and from what, for the start line and the log
};

// `tables[k]`: app k's learned state, nullptr when there is none (`why[k]` says why: file not found, another machine).
// `traffic`: this run's (points measured on it are preferred, as best_saved_setup does). Lanes: at most
// sched::kMaxDevices (a learned state keeps no setup over more). `host_lanes`: the lanes one host thread runs (the
// native lanes: stages run to completion), which at most one stage may use.
LearnedPlacement place_from_learned(const std::vector<std::string>& apps, const std::vector<std::string>& lanes,
                                    const std::vector<const prof::ConfigTable*>& tables,
                                    const std::vector<std::string>& why, const std::string& traffic,
                                    uint32_t host_lanes = 0);

// The run's chain placed from each app's learned state, read from adapt.state_dir (else default_state_dir()) for
// this machine's `devices` and c.native_lanes and the run's traffic; `lanes`: the lanes' names, devices' first.
// Never fails: a state that is missing or from another machine is named in the text, and nothing is placed.
LearnedPlacement place_learned(const RunConfig& c, const std::vector<DeviceInfo>& devices,
                               const std::vector<std::string>& lanes);

}  // namespace hpr
