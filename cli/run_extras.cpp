#include "cli/run_extras.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>

#include "hpr/clock.hpp"
#include "pipeline/learn_state.hpp"
#include "runtime/opencl/devices.hpp"

namespace hpr::cli {
namespace {
double g_print_interval_s = 1;  // the console line's interval (the pipeline's may become the quantum)
}  // namespace

void adjust_run_config(RunConfig& cfg) {
  g_print_interval_s = cfg.status_interval_s;
  const bool learning = learning_mode(cfg);
  // A lane's queue holds two of its largest batches, so that a batch can fill while the one before it is taken.
  cfg.queue = std::max(cfg.queue, 2 * std::max(cfg.batch, cfg.max_batch));
  if (!learning && cfg.adapt_table.empty()) {
    // Static mode with --adapt-csv: a row every quantum as well (the same columns as learning mode's).
    if (!cfg.adapt_csv.empty()) cfg.status_interval_s = std::max(0.02, cfg.adapt_quantum_ms / 1e3);
    return;
  }
  // Lane buffers and queues must hold the largest batch the scheduler may set: the learner's bound, or the table's
  // largest (its fingerprint is checked later).
  uint32_t mb = 0;
  if (learning) {
    mb = cfg.max_batch != 0 ? cfg.max_batch : std::max(cfg.batch, kLearnMaxBatch);
    // A discrete GPU's lanes may go further (prepare_run gives them lane_max_batch(cfg, true)).
    if (cfg.max_batch == 0) cfg.max_batch_discrete = std::max(cfg.batch, kLearnMaxBatchDiscrete);
  } else if (auto t = prof::load_table(cfg.adapt_table, {}, true)) {
    for (const auto& pt : t->points)
      for (auto b : pt.batch) mb = std::max(mb, b);
  }
  cfg.max_batch = std::max(cfg.max_batch, mb);
  cfg.queue = std::max(cfg.queue, 2 * mb);
  // The pipeline calls back every quantum; the console line keeps its own interval (RunExtras::on_status).
  cfg.status_interval_s = std::max(0.02, cfg.adapt_quantum_ms / 1e3);
}

Result<std::unique_ptr<RunExtras>> RunExtras::create(const RunConfig& cfg, RunContext& ctx) {
  auto x = std::make_unique<RunExtras>();
  x->cfg_ = cfg;
  x->power_ = RunPower::create(
      cfg.power,
      add_host_threads(power_lanes(ctx.devices, cfg.native_lanes, cfg.workers), cfg.workers, cfg.run_to_completion),
      monotonic_ns());
  // app.place = learned that placed the apps: static weights, as app.place's.
  const bool learning = learning_mode(cfg) && !ctx.pipeline->staged();
  if (!learning && cfg.adapt_table.empty()) {
    if (!cfg.adapt_csv.empty()) {
      auto f = QuantumCsv::open(cfg.adapt_csv);
      if (!f) return f.status();
      x->static_csv_.emplace(std::move(*f));
    }
    return x;
  }
  x->policy_ = cfg.adapt_policy;
  auto pol = sched::parse_policy(cfg.adapt_policy);
  if (!pol) return error(Code::kInvalidArgument, "--policy: {}", pol.status().message());
  x->in_force_ = *pol;
  const std::string traffic = traffic_description(cfg.input);
  const std::string app(ctx.app->name());  // the app, the chain, or services:NAMES
  const auto fp = machine_fingerprint(ctx.devices, cfg.native_lanes, app, traffic);
  if (learning) {
    LearnOptions lo;
    lo.params.policy = *pol;
    lo.params.latency_target_ns = cfg.adapt_latency_target_us * 1e3;
    lo.params.min_batch = std::min<uint32_t>(16, cfg.batch);
    lo.batch = cfg.batch;
    // Lane i is OpenCL device i, then the native lanes (prepare_run's order): device batches are searched, each up
    // to its lane's largest.
    lo.batch_max.assign(ctx.pipeline->lane_count(), 0);
    lo.batch_start.assign(ctx.pipeline->lane_count(), cfg.batch);
    bool any_discrete = false;
    for (size_t i = 0; i < ctx.devices.size() && i < lo.batch_max.size(); ++i) {
      const bool discrete = ctx.devices[i].kind == DeviceKind::kDiscreteGpu;
      any_discrete |= discrete;
      lo.batch_max[i] = lane_max_batch(cfg, discrete);
      lo.batch_start[i] = lane_start_batch(cfg, discrete);
    }
    if (!ctx.devices.empty()) {  // the start line's bounds
      const uint32_t other = lane_max_batch(cfg, false), discrete = lane_max_batch(cfg, true);
      x->learn_batches_ = fmt::format(" and device batch sizes up to {}", other);
      if (any_discrete && discrete != other) x->learn_batches_ += fmt::format(" ({} on discrete GPUs)", discrete);
    }
    std::vector<std::string> placed;  // the services its place phase may put on a lane of their own
    const std::vector<bool> placeable = ctx.pipeline->placeable_services();
    const std::vector<std::string> names = ctx.app->service_names();
    for (size_t i = 0; i < placeable.size() && i < names.size(); ++i)
      if (placeable[i]) placed.push_back(names[i]);
    if (!placed.empty())
      x->learn_batches_ += fmt::format(" and the lane{} of service{} {}", placed.size() > 1 ? "s" : "",
                                       placed.size() > 1 ? "s" : "", fmt::join(placed, ", "));
    lo.csv_path = cfg.adapt_csv;
    std::string dir = cfg.adapt_state_dir.empty() ? default_state_dir() : cfg.adapt_state_dir;
    if (!dir.empty() && dir != "none") lo.state_path = state_file(dir, app);
    lo.traffic = traffic;
    // A constant pace is known; rate steps and the Holt-Winters model move it (their own catch-ups stay in the score).
    const auto& in = cfg.input;
    if (in.kind == "generator" && in.gen_rate_steps.empty() && in.gen_rate_model.empty()) lo.pace_pps = in.gen_rate_pps;
    lo.fingerprint = fp;
    lo.power_source = x->power_->power_source();
    auto l = LearnControl::create(lo, *ctx.pipeline);
    if (!l) return l.status();
    x->learn_ = std::move(*l);
  } else {
    AdaptiveOptions ao;
    ao.table_path = cfg.adapt_table;
    ao.params.policy = *pol;
    ao.params.latency_target_ns = cfg.adapt_latency_target_us * 1e3;
    ao.allow_mismatch = cfg.adapt_allow_mismatch;
    ao.quantum_s = cfg.adapt_quantum_ms / 1e3;
    ao.csv_path = cfg.adapt_csv;
    ao.learn = cfg.adapt_learn;
    auto a = AdaptiveControl::create(ao, fp, *ctx.pipeline, x->power_.get());
    if (!a) return a.status();
    x->adapt_ = std::move(*a);
  }
  return x;
}

bool RunExtras::on_status(Summary& s) {
  if (!have_prev_) {
    prev_.seconds = 0;
    have_prev_ = true;
  }
  IntervalStats st = interval_stats(prev_, s);
  uint64_t now = monotonic_ns();
  PowerSample ps = power_->sample(power_util(st, cfg_.workers), now);
  prev_ = s;
  s.power_w = ps.watts;
  s.energy_j = ps.energy_j;
  s.power_source = ps.source;
  take_policy();
  fall_back(ps);
  if (adapt_) adapt_->on_quantum(s, ps, now);
  if (learn_) learn_->on_quantum(s, ps, now);
  if (static_csv_)
    if (auto iv = static_clock_.next(s, now))
      static_csv_->row(static_clock_.seconds_since_start(now), "static", *iv, ps, std::nan(""), "static", false, "");
  double interval = adapt_ || learn_ || static_csv_ ? g_print_interval_s : 0;
  if (s.seconds - last_print_s_ >= interval) {
    last_print_s_ = s.seconds;
    return true;
  }
  return false;
}

Result<std::string> RunExtras::request_policy(const std::string& name, double target_us) {
  if (!adapt_ && !learn_)
    return error(Code::kInvalidArgument, "{}", kNoScheduler);
  auto p = sched::parse_policy(name);
  if (!p) return error(Code::kInvalidArgument, "set policy: {}", p.status().message());
  if (!(target_us >= 0)) return error(Code::kInvalidArgument, "set policy: the latency target must be > 0 microseconds");
  const double target = target_us > 0 ? target_us : cfg_.adapt_latency_target_us;
  if (*p == sched::Policy::kLatencyTarget && !(target > 0))
    return error(Code::kInvalidArgument,
                 "set policy latency-target: no p99 target: give it (set policy latency-target MICROSECONDS) or start "
                 "the run with --latency-target-us");
  if (*p != sched::Policy::kLatencyTarget && target_us > 0)
    return error(Code::kInvalidArgument, "set policy {}: takes no latency target (only latency-target does)", name);
  std::lock_guard<std::mutex> g(policy_mu_);
  const std::string old = policy_;
  pending_policy_ = *p;
  pending_target_ns_ = target_us * 1e3;  // 0: keep the run's
  policy_ = name;
  return fmt::format("policy {} -> {}{}: the {} scheduler takes it at its next quantum ({})\n", old, name,
                     *p == sched::Policy::kLatencyTarget ? fmt::format(" (p99 target {} us)", target) : "",
                     weights_owner(),
                     adapt_ ? "a first decision under the new goal; the table and its updates are kept"
                            : "its search starts over from the setup found so far: scores of another goal do not "
                              "compare");
}

// On the status thread, before the scheduler's quantum.
void RunExtras::take_policy() {
  std::optional<sched::Policy> p;
  double target_ns = 0;
  {
    std::lock_guard<std::mutex> g(policy_mu_);
    p = pending_policy_;
    target_ns = pending_target_ns_;
    pending_policy_.reset();
  }
  if (!p) return;
  fallback_.forget();  // the user's goal from now on
  Status st = set_policy(*p, target_ns, "hpr ctl set policy");
  if (!st.is_ok()) spdlog::warn("hpr ctl set policy {}: not applied: {}", sched::policy_name(*p), st.message());
}

Status RunExtras::set_policy(sched::Policy p, double target_ns, std::string_view why) {
  if (!adapt_ && !learn_) return Status::ok();
  Status st = adapt_ ? adapt_->set_policy(p, target_ns, why) : learn_->set_policy(p, target_ns, why);
  if (st.is_ok()) in_force_ = p;
  return st;
}

void RunExtras::fall_back(const PowerSample& ps) {
  if (!adapt_ && !learn_) return;
  auto change = fallback_.next(ps, in_force_);
  if (!change) return;
  if (fallback_.active())
    spdlog::warn("{}", change->why);
  else
    spdlog::info("{}", change->why);
  Status st =
      set_policy(change->policy, 0, fallback_.active() ? "a power meter is silent" : "power meters answer again");
  if (!st.is_ok()) {
    spdlog::warn("policy {}: not applied: {}", sched::policy_name(change->policy), st.message());
    return;
  }
  std::lock_guard<std::mutex> g(policy_mu_);
  policy_ = sched::policy_name(change->policy);
}

void RunExtras::finish(Summary& s) {
  IntervalStats st = interval_stats(prev_, s);
  PowerSample ps = power_->sample(power_util(st, cfg_.workers), monotonic_ns());
  s.energy_j = ps.energy_j;
  s.power_w = s.seconds > 0 ? ps.energy_j / s.seconds : 0;  // mean over the run
  s.power_source = ps.source;
  if (adapt_)
    if (Status st = adapt_->finish(); !st.is_ok()) s.output_errors.push_back(st.message());
  if (learn_)
    if (Status st = learn_->finish(); !st.is_ok()) s.output_errors.push_back(st.message());
  if (static_csv_)
    if (Status st = static_csv_->commit(); !st.is_ok()) s.output_errors.push_back(st.message());
  static_csv_.reset();
}

std::string RunExtras::report() const { return adapt_ ? adapt_->report() : learn_ ? learn_->report() : ""; }

std::string RunExtras::describe() const {
  std::string s = power_->describe();
  if (adapt_)
    s += fmt::format("\n  adaptive: table {} ({} points, {}), policy {}, quantum {} ms", cfg_.adapt_table,
                     adapt_->table().points.size(), adapt_->table().complete ? "complete" : "incomplete",
                     cfg_.adapt_policy, cfg_.adapt_quantum_ms);
  if (adapt_ && !cfg_.adapt_learn) s += " (table lookups only)";
  if (learn_)
    s += fmt::format("\n  learning: lane shares{} online, policy {}, quantum {} ms (--static: fixed weights)",
                     learn_batches_, cfg_.adapt_policy, cfg_.adapt_quantum_ms);
  if (learn_ && !learn_->state_note().empty()) s += "\n  learning: " + learn_->state_note();
  return s;
}

}  // namespace hpr::cli
