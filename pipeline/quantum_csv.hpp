#pragma once
// The per-quantum CSV of `hpr run --adapt-csv` in learning and static mode (one row per quantum: rates, power and
// its source, latency, the setup in force, decisions). The adaptive (table) mode writes its own columns
// (adaptive_control.cpp). Written through AtomicFile: the file appears whole at commit(), or not at all.
#include <optional>
#include <string>

#include "hpr/atomic_file.hpp"
#include "hpr/status.hpp"
#include "pipeline/adaptive_control.hpp"
#include "pipeline/power.hpp"

namespace hpr {

class QuantumCsv {
 public:
  // Opens the temporary file and writes the header. Errors: kIoError / kInvalidArgument naming
  // adaptive.csv (--adapt-csv) and the path.
  static Result<QuantumCsv> open(const std::string& path);
  // One quantum: `phase` is the learner's phase ("static" without one), `score` NaN when none, `setup` the lane
  // shares and batches in force for the next quantum, `changed` whether they changed, `event` a decision ("" none).
  void row(double t_s, const char* phase, const IntervalStats& st, const PowerSample& power, double score,
           const std::string& setup, bool changed, const std::string& event);
  Status commit();

 private:
  explicit QuantumCsv(AtomicFile f) : file_(std::move(f)) {}
  std::optional<AtomicFile> file_;
};

}  // namespace hpr
