#include "pipeline/learn_control.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "pipeline/learn_state.hpp"

namespace hpr {
namespace {
constexpr size_t kLogKept = 20;  // the latest decisions, for the summary (all of them go to the log)
}  // namespace

Result<std::unique_ptr<LearnControl>> LearnControl::create(const LearnOptions& opt, Pipeline& pipeline) {
  size_t n = pipeline.lane_count();
  if (opt.batch_max.size() != n)
    return error(Code::kInvalidArgument, "learning: {} largest batches for {} lanes", opt.batch_max.size(), n);
  std::unique_ptr<LearnControl> c(new LearnControl());
  c->opt_ = opt;
  std::optional<sched::Setup> start = opt.start;
  if (!opt.state_path.empty()) {  // say at once when nothing can be kept
    auto dir = std::filesystem::path(opt.state_path).parent_path();
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec || ::access(dir.c_str(), W_OK) != 0) {
      c->state_note_ = fmt::format("what was learned is not kept: state dir {}: {}", dir.string(),
                                   ec ? ec.message() : std::strerror(errno));
      spdlog::warn("learn: {} (set --state-dir to a writable directory, or none)", c->state_note_);
      c->opt_.state_path.clear();
    }
  }
  if (!c->opt_.state_path.empty()) {
    LearnState ls = load_learn_state(opt.state_path, opt.fingerprint);
    c->state_ = std::move(ls.table);
    c->state_note_ = std::move(ls.note);
    if (!start) start = best_saved_setup(c->state_, opt.params, opt.traffic, n, opt.batch);
  }
  c->state_.fingerprint = opt.fingerprint;
  c->state_.complete = true;
  if (!opt.batch_start.empty() && opt.batch_start.size() != n)
    return error(Code::kInvalidArgument, "learning: {} first batches for {} lanes", opt.batch_start.size(), n);
  c->placeable_ = pipeline.placeable_services();
  auto b = sched::OnlineBalancer::create(
      opt.params, opt.batch_start.empty() ? std::vector<uint32_t>(n, opt.batch) : opt.batch_start, opt.batch_max, start,
      c->placeable_);
  if (!b) return b.status();
  c->pipeline_ = &pipeline;
  c->bal_.emplace(std::move(*b));
  c->state_saved_ns_ = 0;
  c->lost_.assign(n, false);
  if (!opt.csv_path.empty()) {
    auto f = QuantumCsv::open(opt.csv_path);
    if (!f) return f.status();
    c->csv_.emplace(std::move(*f));
  }
  c->apply(c->bal_->setup());
  if (!c->bal_->event().empty()) c->log_.push_back("[  0.000s] " + c->bal_->event());
  return c;
}

Status LearnControl::set_policy(sched::Policy p, double latency_target_ns, std::string_view why) {
  sched::BalancerParams params = opt_.params;
  params.policy = p;
  if (latency_target_ns > 0) params.latency_target_ns = latency_target_ns;
  const sched::Setup from = bal_->incumbent();
  auto b = sched::OnlineBalancer::create(params, from.batch, opt_.batch_max, from, placeable_);
  if (!b) return b.status();
  const std::string line =
      fmt::format("policy {} -> {} ({}): the search starts over from {}", sched::policy_name(opt_.params.policy),
                  sched::policy_name(p), why, from.describe());
  spdlog::info("learn {}", line);
  log_.push_back(line);
  if (log_.size() > kLogKept) {
    log_.pop_front();
    ++log_dropped_;
  }
  bal_.emplace(std::move(*b));
  for (size_t i = 0; i < lost_.size(); ++i)
    if (lost_[i]) bal_->lane_lost(i);
  opt_.params = params;
  apply(bal_->setup());
  return Status::ok();
}

// Every worker alike: lane i of each (run_setup makes every worker's lanes the same).
void LearnControl::apply(const sched::Setup& s) {
  for (Pipeline* w : pipeline_->all_workers()) {
    for (size_t i = 0; i < s.batch.size(); ++i)
      if (opt_.batch_max[i] != 0) w->set_lane_batch(i, s.batch[i]);
    (void)w->set_lane_weights(s.weight);  // sizes match by construction, weights >= 0
    if (!s.place.empty()) (void)w->set_service_lanes(s.place);  // only the placeable services: valid
  }
}

void LearnControl::on_quantum(const Summary& whole, const PowerSample& power, uint64_t now_ns) {
  const Summary s = whole.lanes_by_index(lost_.size());  // with workers: lane i of them all together
  auto iv = clock_.next(s, now_ns);
  if (!iv) return;
  const IntervalStats& st = *iv;
  double t_s = clock_.seconds_since_start(now_ns);
  for (size_t i = 0; i < s.lanes.size() && i < lost_.size(); ++i)
    if (!lost_[i] && s.lanes[i].state != "running") {
      lost_[i] = true;
      bal_->lane_lost(i);
    }
  sched::QuantumFigures q{.now_ns = now_ns,
                          .offered_bps = st.offered_bps,
                          .achieved_bps = st.achieved_bps,
                          .power_w = power.watts,
                          .latency_p50_ns = static_cast<double>(st.latency_p50_ns),
                          .latency_p99_ns = static_cast<double>(st.latency_p99_ns),
                          .lost_packets = st.lost_packets,
                          .pace_bps = st.rx_pps > 0 ? opt_.pace_pps * st.offered_bps / st.rx_pps : 0,
                          .lane_bps = st.lane_bps,
                          .lane_util = st.lane_util};
  double score = bal_->score(q);
  const char* phase = bal_->phase_name();
  const sched::Setup& next = bal_->step(q);
  if (bal_->changed()) apply(next);
  if (!opt_.state_path.empty() && !bal_->measured().empty())
    state_dirty_ |= record_measured(state_, bal_->measured(), opt_.power_source, opt_.traffic);
  if (state_dirty_ && now_ns - state_saved_ns_ >= static_cast<uint64_t>(opt_.save_every_s * 1e9)) save_state(now_ns);
  const std::string& ev = bal_->event();
  if (!ev.empty()) {
    std::string line = fmt::format("[{:7.3f}s] {}", t_s, ev);
    spdlog::info("learn {}", line);
    log_.push_back(std::move(line));
    if (log_.size() > kLogKept) {
      log_.pop_front();
      ++log_dropped_;
    }
  }
  if (csv_) csv_->row(t_s, phase, st, power, score, next.describe(), bal_->changed(), ev);
}

void LearnControl::save_state(uint64_t now_ns) {
  state_saved_ns_ = now_ns;
  state_dirty_ = false;
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(opt_.state_path).parent_path(), ec);
  Status st = ec ? error(Code::kIoError, "state dir {}: {}", std::filesystem::path(opt_.state_path).parent_path().string(),
                         ec.message())
                 : prof::save_table(opt_.state_path, state_);
  if (st.is_ok()) return;
  spdlog::warn("learn: what was learned is not kept ({}); set --state-dir to a writable directory, or none", st.message());
  state_note_ = "not kept: " + st.message();
  opt_.state_path.clear();  // one warning, then a run without persistence
}

Status LearnControl::finish() {
  if (state_dirty_ && !opt_.state_path.empty()) save_state(state_saved_ns_ + 1);
  if (!csv_) return Status::ok();
  Status st = csv_->commit();
  csv_.reset();
  return st;
}

std::string LearnControl::report() const {
  const auto& b = *bal_;
  std::string s = fmt::format(
      "  learning    policy {}, setup {} (score {:.4g} ± {:.2g}), {} blocks measured, {} changes kept, {} "
      "restarts, {} drift checks, phase {}\n",
      sched::policy_name(opt_.params.policy), b.incumbent().describe(), b.incumbent_score().median,
      b.incumbent_score().spread, b.blocks(), b.wins(), b.restarts(), b.checks(), b.phase_name());
  // The placement by name (describe() gives it by service index: " p 1/-/-"), the user's among it.
  if (b.incumbent().placed()) s += "    services placed: " + pipeline_->placement() + "\n";
  if (!state_note_.empty()) s += "    state: " + state_note_ + "\n";
  if (!opt_.state_path.empty())
    s += fmt::format("    state: {} setups kept in {}\n", state_.points.size(), opt_.state_path);
  if (log_dropped_ != 0) s += fmt::format("    … {} earlier decisions in the log\n", log_dropped_);
  for (const auto& l : log_) s += "    " + l + "\n";
  return s;
}

}  // namespace hpr
