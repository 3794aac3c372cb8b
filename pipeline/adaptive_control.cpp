#include "pipeline/adaptive_control.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "runtime/opencl/devices.hpp"
#include "pipeline/run_config.hpp"

namespace hpr {
namespace {

std::string mask_text(uint32_t mask) {
  std::string s;
  for (int i = 0; i < sched::kMaxDevices; ++i)
    if ((mask >> i) & 1U) s += (s.empty() ? "" : "+") + std::to_string(i);
  return s.empty() ? "-" : s;
}

}  // namespace

IntervalStats interval_stats(const Summary& prev, const Summary& cur) {
  IntervalStats st;
  st.seconds = cur.seconds - prev.seconds;
  if (st.seconds <= 0) return st;
  double dt = st.seconds;
  double rx_bits = static_cast<double>(cur.rx_bytes - prev.rx_bytes) * 8;
  double tx_bits = static_cast<double>(cur.tx_bytes - prev.tx_bytes) * 8;
  uint64_t tx_p = cur.tx_packets - prev.tx_packets, rx_p = cur.rx_packets - prev.rx_packets;
  // Drops for want of capacity (the configuration did not keep up) vs. the app's verdicts (processed packets).
  auto lost = [](const Summary& x) {
    uint64_t n = 0;
    for (const auto& [r, c] : x.drops)
      if (r == "queue_full" || r == "no_lane" || r == "pool_empty") n += c;
    return n;
  };
  uint64_t lost_p = lost(cur) - std::min(lost(cur), lost(prev));
  uint64_t dropped_p = cur.dropped - std::min(cur.dropped, prev.dropped);
  double processed = static_cast<double>(tx_p + dropped_p - std::min(dropped_p, lost_p));
  double bits_per_pkt = rx_p != 0   ? rx_bits / static_cast<double>(rx_p)
                        : tx_p != 0 ? tx_bits / static_cast<double>(tx_p)
                                    : 0;
  // What the input port missed (hpr fell behind a line-rate port) was offered too, and lost.
  const uint64_t missed_p = cur.port_missed - std::min(cur.port_missed, prev.port_missed);
  st.offered_bps = (rx_bits + static_cast<double>(missed_p) * bits_per_pkt) / dt;
  st.achieved_bps = processed * bits_per_pkt / dt;
  st.tx_bps = tx_bits / dt;
  st.rx_pps = static_cast<double>(rx_p) / dt;
  st.tx_pps = static_cast<double>(tx_p) / dt;
  st.lost_packets = lost_p + missed_p;
  const std::vector<uint64_t> d = latency_between(prev, cur);
  st.latency_p50_ns = LogLinear::percentile(d, 50);
  st.latency_p99_ns = LogLinear::percentile(d, 99);
  for (size_t i = 0; i < cur.lanes.size(); ++i) {
    const LaneInterval l = lane_between(prev, cur, i);
    st.lane_batches.push_back(l.batches);
    st.lane_util.push_back(l.util);
    st.lane_packets.push_back(l.packets);
    st.lane_bps.push_back(static_cast<double>(l.packets) * bits_per_pkt / dt);
  }
  st.dispatch_util = std::max((cur.dispatch_busy_s - prev.dispatch_busy_s) / dt, 0.0);
  st.egress_util = std::max((cur.egress_busy_s - prev.egress_busy_s) / dt, 0.0);
  return st;
}

std::vector<double> power_util(const IntervalStats& st, uint32_t workers) {
  const double per = std::max(workers, 1u);  // add_host_threads: the workers' parts as one lane of `workers` cores
  std::vector<double> u = st.lane_util;
  u.push_back(std::min(st.dispatch_util / per, 1.0));
  u.push_back(std::min(st.egress_util / per, 1.0));
  return u;
}

std::optional<IntervalStats> QuantumClock::next(const Summary& s, uint64_t now_ns) {
  if (!have_prev_) {
    prev_ = s;
    have_prev_ = true;
    start_ns_ = now_ns - static_cast<uint64_t>(s.seconds * 1e9);
    return std::nullopt;
  }
  IntervalStats st = interval_stats(prev_, s);
  if (st.seconds <= 0) return std::nullopt;
  prev_ = s;
  return st;
}

prof::Fingerprint machine_fingerprint(const std::vector<DeviceInfo>& devices, uint32_t native_lanes,
                                      const std::string& app, const std::string& traffic) {
  prof::Fingerprint fp;
  for (const auto& d : devices) fp.devices.push_back({d.name, d.platform, d.driver});
  for (uint32_t i = 0; i < native_lanes; ++i) fp.devices.push_back({fmt::format("native{}", i), "hpr", HPR_VERSION});
  fp.app = app;
  fp.traffic = traffic;
  return fp;
}

std::string traffic_description(const EndpointConfig& in) {
  if (in.kind == "pcap") return "pcap:" + in.pcap;
  if (in.kind == "dpdk") return "dpdk:" + in.dpdk_port;
  std::string s =
      fmt::format("generator sizes={} flows={} zipf={} seed={}", in.gen_sizes, in.gen_flows, in.gen_zipf, in.gen_seed);
  if (!in.gen_template.empty()) s += " template=" + in.gen_template;
  if (in.gen_match_rate > 0) s += fmt::format(" match_rate={}", in.gen_match_rate);
  if (in.gen_ttl_low_share > 0) s += fmt::format(" ttl1={}", in.gen_ttl_low_share);
  if (in.gen_ipv6_share > 0) s += fmt::format(" ipv6={}", in.gen_ipv6_share);
  return s;
}

Result<std::unique_ptr<AdaptiveControl>> AdaptiveControl::create(const AdaptiveOptions& opt,
                                                                 const prof::Fingerprint& machine, Pipeline& pipeline,
                                                                 RunPower* /*power*/) {
  auto t = prof::load_table(opt.table_path, machine, opt.allow_mismatch);
  if (!t) {
    if (t.status().code() == Code::kInvalidArgument && t.status().message().find("fingerprint") != std::string::npos &&
        t.status().message().find("--allow-table-mismatch") == std::string::npos)
      return error(t.status().code(), "{} (pass --allow-table-mismatch to use it anyway)", t.status().message());
    return t.status();
  }
  if (t->points.empty()) return error(Code::kInvalidArgument, "table {}: no measured point", opt.table_path);
  std::unique_ptr<AdaptiveControl> c(new AdaptiveControl());
  c->opt_ = opt;
  c->pipeline_ = &pipeline;
  c->table_ = std::move(*t);
  uint32_t lanes_mask = pipeline.lane_count() >= 32 ? ~0U : (1U << pipeline.lane_count()) - 1;
  for (size_t i = 0; i < c->table_.points.size(); ++i)
    if ((c->table_.points[i].device_mask & ~lanes_mask) != 0)
      return error(Code::kInvalidArgument, "table {}: point {} uses device(s) {} but this run has {} lanes",
                   opt.table_path, i, mask_text(c->table_.points[i].device_mask), pipeline.lane_count());
  c->store_ = std::make_unique<sched::ConfigStore>(sched::StoreOptions{.delta = opt.params.delta});
  // The points measured on this run's traffic (the table's traffic is a dimension, not a refusal), else all.
  auto filled = prof::fill_store(c->table_, *c->store_, machine.traffic);
  if (!filled) return error(filled.status().code(), "table {}: {}", opt.table_path, filled.status().message());
  if (!filled->note.empty()) spdlog::warn("adaptive: table {}: {}", opt.table_path, filled->note);
  sched::AdaptiveParams params = opt.params;
  {  // batch range of the scheduler: the table's
    uint32_t lo = 0, hi = 0;
    for (const auto& pt : c->table_.points)
      for (int d = 0; d < sched::kMaxDevices; ++d)
        if (pt.uses(d)) {
          lo = lo == 0 ? pt.batch[d] : std::min(lo, pt.batch[d]);
          hi = std::max(hi, pt.batch[d]);
        }
    if (lo != 0) {
      params.min_batch = lo;
      params.max_batch = hi;
    }
  }
  auto s = sched::AdaptiveScheduler::create(params, {c->store_.get()});
  if (!s) return s.status();
  c->sched_ = std::make_unique<sched::AdaptiveScheduler>(std::move(*s));
  c->weights_.assign(pipeline.lane_count(), 0.f);
  if (!opt.csv_path.empty()) {
    auto f = AtomicFile::open(opt.csv_path, "adaptive.csv (--adapt-csv)");
    if (!f) return f.status();
    c->csv_.emplace(std::move(*f));
    std::fprintf(c->csv_->file(),
                 "t_s,offered_bps,achieved_bps,tx_bps,lost_pkts,capacity_bps,power_w,power_source,devices,batches,"
                 "lat_p50_us,lat_p99_us,epoch,reason,changed\n");
  }
  return c;
}

AdaptiveControl::~AdaptiveControl() = default;

Status AdaptiveControl::finish() {
  if (!csv_) return Status::ok();
  Status st = csv_->commit();
  csv_.reset();
  return st;
}

Status AdaptiveControl::set_policy(sched::Policy p, double latency_target_ns, std::string_view why) {
  sched::AdaptiveParams params = sched_->params();
  params.policy = p;
  if (latency_target_ns > 0) params.latency_target_ns = latency_target_ns;
  auto s = sched::AdaptiveScheduler::create(params, {store_.get()});
  if (!s) return s.status();
  log_.push_back(fmt::format("policy {} -> {} ({}): a first decision under it follows",
                             sched::policy_name(opt_.params.policy), sched::policy_name(p), why));
  spdlog::info("adapt {}", log_.back());
  sched_ = std::make_unique<sched::AdaptiveScheduler>(std::move(*s));
  opt_.params.policy = p;
  opt_.params.latency_target_ns = params.latency_target_ns;
  return Status::ok();
}

void AdaptiveControl::apply(const sched::Decision& d) {
  for (size_t i = 0; i < weights_.size(); ++i) {
    bool used = i < static_cast<size_t>(sched::kMaxDevices) && ((d.device_mask >> i) & 1U);
    weights_[i] = used ? std::max(d.weight[i], 1e-3f) : 0.f;
    if (used && d.batch[i] != 0) pipeline_->set_lane_batch(i, d.batch[i]);
  }
  (void)pipeline_->set_lane_weights(weights_);  // sizes match by construction, weights >= 0
}

void AdaptiveControl::on_quantum(const Summary& s, const PowerSample& power, uint64_t now_ns) {
  auto iv = clock_.next(s, now_ns);
  if (!iv) return;
  const IntervalStats& st = *iv;
  const sched::Decision& before = sched_->decision();
  uint32_t old_mask = before.device_mask;
  std::string old_desc = sched_->running().describe();

  sched::Measurement m;
  m.now_ns = now_ns;
  m.epoch = before.epoch;
  recent_offered_.push_back(st.offered_bps);
  if (recent_offered_.size() > std::max<uint32_t>(opt_.rate_window, 1)) recent_offered_.erase(recent_offered_.begin());
  m.offered_bps = *std::max_element(recent_offered_.begin(), recent_offered_.end());
  m.achieved_bps = st.achieved_bps;
  double cap = 0;
  bool any = false;
  for (size_t i = 0; i < st.lane_util.size() && i < static_cast<size_t>(sched::kMaxDevices); ++i) {
    if (!((old_mask >> i) & 1U) || before.weight[i] <= 0) continue;
    // Too little work in the quantum to tell (a fast lane at a low rate is busy well under 1 %): unknown.
    if (st.lane_util[i] <= 1e-4 || st.lane_batches[i] < 2 || st.lane_bps[i] <= 0) {
      any = false;
      cap = 0;
      break;
    }
    double c = st.lane_bps[i] / st.lane_util[i] / before.weight[i];
    cap = any ? std::min(cap, c) : c;
    any = true;
  }
  m.capacity_bps = any && opt_.learn ? cap : 0;
  m.latency_ns = static_cast<double>(st.latency_p50_ns);
  m.latency_p99_ns = static_cast<double>(st.latency_p99_ns);
  m.power_w = power.watts;
  m.power_source = power.source == "rapl"   ? sched::PowerSource::kRapl
                   : power.source == "nvml" ? sched::PowerSource::kNvml
                                            : sched::PowerSource::kModel;
  const sched::Decision& d = sched_->step(m);
  ++decisions_;
  double t_s = clock_.seconds_since_start(now_ns);
  if (d.changed) {
    ++switches_;
    apply(d);
    std::string line =
        fmt::format("[{:7.3f}s] {} -> {} ({}{})", t_s, old_mask == 0 ? "start" : old_desc, sched_->running().describe(),
                    sched::reason_name(d.reason), d.devices_changed ? ", devices changed" : "");
    log_.push_back(line);
    spdlog::info("adapt {}", line);
  }
  // Rate steps and adaptation time.
  double off = st.offered_bps;
  double delta = opt_.params.delta;
  // A step: the offered rate off the reference by more than max(2δ, 25 %) for two quanta in a row (one noisy
  // quantum is not a step); it is dated at the first of the two.
  bool off_ref = ref_offered_ > 0 && std::fabs(off - ref_offered_) > std::max(2 * delta, 0.25) * ref_offered_;
  if (ref_offered_ <= 0) {
    ref_offered_ = off;
  } else if (off_ref && pending_step_) {
    steps_.push_back({pending_t_s_, ref_offered_, off, -1, pending_lost_});
    adapting_ = true;
    step_ns_ = pending_ns_;
    ref_offered_ = off;
    pending_step_ = false;
  } else if (off_ref) {
    pending_step_ = true;
    pending_t_s_ = t_s;
    pending_lost_ = st.lost_packets;
    pending_ns_ = now_ns;
  } else {
    pending_step_ = false;
    ref_offered_ = 0.8 * ref_offered_ + 0.2 * off;
  }
  if (adapting_ && !steps_.empty()) steps_.back().lost_packets += st.lost_packets;
  if (adapting_ && !d.changed && st.achieved_bps >= (1 - delta) * off) {
    steps_.back().adaptation_ms = static_cast<double>(now_ns - step_ns_) / 1e6;
    adapting_ = false;
  }
  if (csv_) {
    std::string batches;
    for (size_t i = 0; i < weights_.size(); ++i)
      batches += fmt::format("{}{}", i ? "/" : "", ((d.device_mask >> i) & 1U) ? d.batch[i] : 0);
    std::fprintf(csv_->file(), "%.3f,%.0f,%.0f,%.0f,%llu,%.0f,%.2f,%s,%s,%s,%.1f,%.1f,%llu,%s,%d\n", t_s, st.offered_bps,
                 st.achieved_bps, st.tx_bps, static_cast<unsigned long long>(st.lost_packets), m.capacity_bps,
                 power.watts, power.source.c_str(), mask_text(d.device_mask).c_str(), batches.c_str(),
                 static_cast<double>(st.latency_p50_ns) / 1e3, static_cast<double>(st.latency_p99_ns) / 1e3,
                 static_cast<unsigned long long>(d.epoch), sched::reason_name(d.reason), d.changed ? 1 : 0);
  }
}

std::string AdaptiveControl::report() const {
  std::string s =
      fmt::format("  adaptive    policy {}, {} decisions, {} changes ({} device-set switches), {} table updates\n",
                  sched::policy_name(opt_.params.policy), decisions_, switches_, sched_->device_switches(),
                  sched_->table_updates());
  for (const auto& r : steps_)
    s += fmt::format("    rate step at {:.2f} s: {:.3f} -> {:.3f} Gbit/s, adapted {}, {} packets lost meanwhile\n",
                     r.at_s, r.from_bps / 1e9, r.to_bps / 1e9,
                     r.adaptation_ms < 0 ? std::string("(not settled)") : fmt::format("in {:.0f} ms", r.adaptation_ms),
                     r.lost_packets);
  return s;
}

}  // namespace hpr
