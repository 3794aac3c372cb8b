#pragma once
// Live reloads of a running `hpr run` (issue 17; docs/operations.md "Live reloads"): `hpr ctl reload routes|rules|keys
// [FILE]` and SIGHUP. The new file is checked and its tables built beside the running ones, then swapped in at a batch
// boundary (Pipeline::replace_app); a file that cannot be used leaves the running tables in place, and the error names
// the file (and line). One reload at a time: a second one meanwhile is refused.
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/registry.hpp"
#include "pipeline/pipeline.hpp"

namespace hpr {

inline constexpr uint64_t kMaxReloadBytes = 512ull << 20;  // a reloaded file (a rule folder: all its *.rules) at most

struct ReloadReport {
  std::string what;  // routes | rules | keys
  std::string file;
  Pipeline::Replaced replaced;
  double total_s = 0;
  // Resident memory (VmRSS, KiB) before and after the reload (the old version freed; with both: Replaced).
  uint64_t rss_before_kib = 0, rss_after_kib = 0;
  std::string text() const;  // one line for the log and `hpr ctl`
};

class Reloader {
 public:
  // `app`: the run's app name; `opts`: the app options the run was made with (prepare_run).
  Reloader(std::string app, kernels::AppOptions opts, Pipeline& pipeline)
      : app_(std::move(app)), opts_(std::move(opts)), pipeline_(pipeline) {}
  // What this run's app can reload: ipv4 routes, dpi rules, aes keys, md5 nothing.
  std::vector<std::string> kinds() const;
  // `what`: routes | rules | keys, or "" for every kind the app has (SIGHUP). `file`: "" = the file the run uses now.
  // Errors (the running tables stay): kInvalidArgument for a kind this app does not have or a file that cannot be
  // used (too large, malformed: the loader's message names file and line); kNotFound / kIoError for a missing or
  // unreadable file; kUnavailable when another reload is running or the run is stopping.
  Result<ReloadReport> reload(std::string_view what, const std::string& file);

 private:
  Result<std::shared_ptr<const kernels::App>> make(const std::string& what, const std::string& file,
                                                   const kernels::App& running) const;
  std::string app_;
  kernels::AppOptions opts_;  // a successful reload updates the file it read (so SIGHUP re-reads that one)
  Pipeline& pipeline_;
  std::mutex busy_;
};

}  // namespace hpr
