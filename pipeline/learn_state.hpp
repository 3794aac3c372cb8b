#pragma once
// What learning mode keeps between runs (docs/scheduler.md "Learning mode"): every setup it measured, with the
// median and spread of its figures, in a configuration table file — the format `hpr profile` writes
// (profiler/table/config_table.hpp), so a profile seeds it and `--table` reads it — named for the app:
// <state dir>/learned-<app>.json. It is written atomically (temporary file, rename) every few seconds and at the
// end of the run, and read at the next start, whose first setup is the saved one that scores best for the policy.
// A file that cannot be read, or whose fingerprint (devices, drivers, hpr version, app) differs, is set aside
// (renamed to <file>.set-aside-<unix time>) with one log line; the run learns afresh. Control thread only.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "hpr/status.hpp"
#include "profiler/table/config_table.hpp"
#include "scheduler/adaptive/online_balancer.hpp"

namespace hpr {

// $HPR_STATE_DIR when set ("none": not kept; the test suite sets it so that runs stay independent); else
// /var/lib/hpr for root, $XDG_STATE_HOME/hpr, $HOME/.local/state/hpr. "" when none can be named.
std::string default_state_dir();
std::string state_file(const std::string& dir, const std::string& app);

struct LearnState {
  prof::ConfigTable table;  // what was kept (empty when starting afresh)
  std::string note;         // "" or what happened to the file (not found, set aside, …), for the log
};
// Never fails: anything wrong with the file is a note and an empty table.
LearnState load_learn_state(const std::string& path, const prof::Fingerprint& machine);

// The saved setup that scores best for `p` among those measured on `traffic` (all points when none was), for a run
// of `lanes` lanes whose unused lanes take `batch`. nullopt when the table has none that fits.
std::optional<sched::Setup> best_saved_setup(const prof::ConfigTable& t, const sched::BalancerParams& p,
                                             const std::string& traffic, size_t lanes, uint32_t batch);

// Adds or replaces (same setup and traffic) the measured setups in `t`. Setups over more than sched::kMaxDevices
// lanes are not kept. A setup's placement of services is kept with it (Configuration::place). Keeps at most
// `max_points`, dropping the oldest. Returns whether anything changed.
bool record_measured(prof::ConfigTable& t, const std::vector<sched::MeasuredSetup>& m, sched::PowerSource source,
                     const std::string& traffic, size_t max_points = 1024);

}  // namespace hpr
