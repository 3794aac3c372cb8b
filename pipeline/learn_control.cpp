#include "pipeline/learn_control.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "pipeline/adaptive_control.hpp"  // interval_stats

namespace hpr {
namespace {
constexpr size_t kLogKept = 200;  // decisions kept for the summary (all of them go to the log)
}  // namespace

Result<std::unique_ptr<LearnControl>> LearnControl::create(const LearnOptions& opt, Pipeline& pipeline) {
  size_t n = pipeline.lane_count();
  if (opt.batch_searched.size() != n)
    return error(Code::kInvalidArgument, "learning: {} batch flags for {} lanes", opt.batch_searched.size(), n);
  auto b = sched::OnlineBalancer::create(opt.params, std::vector<uint32_t>(n, opt.batch), opt.batch_searched,
                                         opt.start);
  if (!b) return b.status();
  std::unique_ptr<LearnControl> c(new LearnControl());
  c->pipeline_ = &pipeline;
  c->opt_ = opt;
  c->bal_.emplace(std::move(*b));
  c->lost_.assign(n, false);
  if (!opt.csv_path.empty()) {
    auto f = AtomicFile::open(opt.csv_path, "adaptive.csv (--adapt-csv)");
    if (!f) return f.status();
    c->csv_.emplace(std::move(*f));
    std::fprintf(c->csv_->file(),
                 "t_s,phase,offered_bps,achieved_bps,lost_pkts,power_w,power_source,lat_p50_us,lat_p99_us,score,"
                 "setup,changed,event\n");
  }
  c->apply(c->bal_->setup());
  if (!c->bal_->event().empty()) c->log_.push_back("[  0.000s] " + c->bal_->event());
  return c;
}

void LearnControl::apply(const sched::Setup& s) {
  for (size_t i = 0; i < s.batch.size(); ++i)
    if (opt_.batch_searched[i]) pipeline_->set_lane_batch(i, s.batch[i]);
  (void)pipeline_->set_lane_weights(s.weight);  // sizes match by construction, weights >= 0
}

void LearnControl::on_quantum(const Summary& s, const PowerSample& power, uint64_t now_ns) {
  if (!have_prev_) {
    prev_ = s;
    have_prev_ = true;
    start_ns_ = now_ns - static_cast<uint64_t>(s.seconds * 1e9);
    return;
  }
  IntervalStats st = interval_stats(prev_, s);
  if (st.seconds <= 0) return;
  prev_ = s;
  double t_s = static_cast<double>(now_ns - start_ns_) / 1e9;
  for (size_t i = 0; i < s.lanes.size() && i < lost_.size(); ++i)
    if (!lost_[i] && s.lanes[i].state != "running") {
      lost_[i] = true;
      bal_->lane_lost(i);
    }
  sched::QuantumFigures q{.now_ns = now_ns,
                          .offered_bps = st.offered_bps,
                          .achieved_bps = st.achieved_bps,
                          .power_w = power.watts,
                          .latency_p99_ns = static_cast<double>(st.latency_p99_ns),
                          .lost_packets = st.lost_packets,
                          .lane_bps = st.lane_bps,
                          .lane_util = st.lane_util};
  double score = bal_->score(q);
  const char* phase = bal_->phase_name();
  const sched::Setup& next = bal_->step(q);
  if (bal_->changed()) apply(next);
  const std::string& ev = bal_->event();
  if (!ev.empty()) {
    std::string line = fmt::format("[{:7.3f}s] {}", t_s, ev);
    spdlog::info("learn {}", line);
    if (log_.size() < kLogKept)
      log_.push_back(std::move(line));
    else
      ++log_dropped_;
  }
  if (csv_)
    std::fprintf(csv_->file(), "%.3f,%s,%.0f,%.0f,%llu,%.2f,%s,%.1f,%.1f,%.6g,%s,%d,\"%s\"\n", t_s, phase,
                 st.offered_bps, st.achieved_bps, static_cast<unsigned long long>(st.lost_packets), power.watts,
                 power.source.c_str(), static_cast<double>(st.latency_p50_ns) / 1e3,
                 static_cast<double>(st.latency_p99_ns) / 1e3, score, next.describe().c_str(), bal_->changed() ? 1 : 0,
                 ev.c_str());
}

Status LearnControl::finish() {
  if (!csv_) return Status::ok();
  Status st = csv_->commit();
  csv_.reset();
  return st;
}

std::string LearnControl::report() const {
  const auto& b = *bal_;
  std::string s = fmt::format(
      "  learning    policy {}, setup {} (score {:.4g} ± {:.2g}), {} blocks measured, {} changes kept, {} "
      "restarts, phase {}\n",
      sched::policy_name(opt_.params.policy), b.incumbent().describe(), b.incumbent_score().median,
      b.incumbent_score().spread, b.blocks(), b.wins(), b.restarts(), b.phase_name());
  for (const auto& l : log_) s += "    " + l + "\n";
  if (log_dropped_ != 0) s += fmt::format("    … {} more decisions in the log\n", log_dropped_);
  return s;
}

}  // namespace hpr
