#include "pipeline/power.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include "pipeline/power_groups.hpp"
#include "runtime/opencl/devices.hpp"

namespace hpr {

std::vector<PowerLane> power_lanes(const std::vector<DeviceInfo>& devices, uint32_t native_lanes, uint32_t workers) {
  // The snapshot's order: each worker's lanes in turn, its device lanes first. Every worker's lane on one device is
  // metered as that device (one power group: its idle power once).
  std::vector<PowerLane> out;
  out.reserve((devices.size() + native_lanes) * workers);
  for (uint32_t w = 0; w < workers; ++w) {
    const std::string prefix = workers > 1 ? fmt::format("w{}:", w) : std::string();
    for (const auto& d : devices) {
      // A CPU device keeps its compute units busy (PoCL pthread: every core; basic: one).
      std::string name = fmt::format("cl{}:{}", d.index, d.name);
      uint32_t cores = d.kind == DeviceKind::kCpu ? d.compute_units : 1;
      out.push_back({prefix + name, kind_name(d.kind), d.vendor, cores, name});
    }
    for (uint32_t i = 0; i < native_lanes; ++i)
      out.push_back({fmt::format("{}native{}", prefix, i), "cpu", "host", 1, "host"});
  }
  return out;
}

std::vector<PowerLane> add_host_threads(std::vector<PowerLane> lanes, uint32_t workers, bool run_to_completion) {
  workers = std::max(workers, 1u);
  const bool rtc = run_to_completion || workers > 1;
  const std::string on = !rtc ? "" : workers > 1 ? "the workers' threads" : "the worker's thread";
  const uint32_t cores = rtc ? workers : 1;
  for (const char* name : {"host:dispatch", "host:egress"})
    lanes.push_back(
        PowerLane{.name = name, .kind = "cpu", .vendor = "host", .cores = cores, .device = "host", .on = on});
  return lanes;
}

std::unique_ptr<RunPower> RunPower::create(const PowerConfig& cfg, const std::vector<PowerLane>& lanes,
                                           uint64_t start_ns) {
  auto rp = std::unique_ptr<RunPower>(new RunPower());
  rp->start_ns_ = rp->last_ns_ = start_ns;
  std::vector<bool> covered(lanes.size(), false);

  // RAPL package domains cover every CPU lane.
  std::vector<size_t> cpu_lanes;
  for (size_t i = 0; i < lanes.size(); ++i)
    if (lanes[i].kind == "cpu") cpu_lanes.push_back(i);
  if (cfg.use_rapl && !cpu_lanes.empty()) {
    auto doms = prof::discover_rapl(cfg.rapl_root);
    if (!doms) {
      rp->notes_.push_back("rapl: " + doms.status().message());
    } else {
      std::vector<Meter> pkgs;
      for (const auto& d : *doms) {
        if (d.kind != prof::RaplKind::kPackage) continue;
        auto m = prof::open_rapl(d);
        if (!m) {
          rp->notes_.push_back("rapl: " + m.status().message());
          pkgs.clear();
          break;
        }
        pkgs.push_back(Meter{.meter = std::move(*m)});
      }
      if (!pkgs.empty()) {
        pkgs[0].lanes = cpu_lanes;  // the package meters together cover the CPU lanes
        for (auto& m : pkgs) rp->meters_.push_back(std::move(m));
        for (size_t i : cpu_lanes) covered[i] = true;
      } else if (rp->notes_.empty()) {
        rp->notes_.push_back("rapl: no package domain under " + cfg.rapl_root);
      }
    }
  }
  // NVML meters, one per NVIDIA GPU (distinct device_key) in lane order; its lanes share it.
  if (cfg.use_nvml) {
    bool any = false;
    for (const auto& l : lanes) any = any || l.vendor.find("NVIDIA") != std::string::npos;
    auto probe = prof::probe_nvml(cfg.nvml_library.c_str());
    if (!probe.available && any) rp->notes_.push_back("nvml: " + probe.reason);
    size_t next = 0;
    for (size_t i = 0; i < lanes.size() && probe.available; ++i) {
      if (covered[i] || lanes[i].vendor.find("NVIDIA") == std::string::npos || next >= probe.meters.size()) continue;
      Meter m{.meter = std::move(probe.meters[next++])};
      for (size_t j = i; j < lanes.size(); ++j)
        if (!covered[j] && device_key(lanes[j]) == device_key(lanes[i])) {
          m.lanes.push_back(j);
          covered[j] = true;
        }
      rp->meters_.push_back(std::move(m));
    }
    for (; next < probe.meters.size(); ++next) {  // GPUs without a lane: their power is the machine's too
      rp->notes_.push_back("nvml: " + probe.meters[next]->name() + " has no lane here and is metered all the same "
                           "(its idle power counts in every run, with or without a lane on it)");
      rp->meters_.push_back(Meter{.meter = std::move(probe.meters[next])});
    }
  }
  // The rest: one model per piece of hardware (pipeline/power_groups.hpp), its note saying what it covers.
  for (auto& g : model_groups(lanes, covered, cfg.host_cores)) {
    rp->notes_.push_back(std::move(g.note));
    rp->meters_.push_back(Meter{.meter = std::make_unique<prof::ModelPowerMeter>(std::move(g.params), start_ns),
                                .lanes = std::move(g.lanes),
                                .share = std::move(g.share)});
  }
  bool has[3] = {false, false, false};  // rapl, nvml, model
  for (const auto& m : rp->meters_) {
    auto s = m.meter->source();
    has[s == sched::PowerSource::kRapl ? 0 : s == sched::PowerSource::kNvml ? 1 : 2] = true;
  }
  int n = has[0] + has[1] + has[2];
  static const char* kNames[] = {"rapl", "nvml", "model"};
  if (n <= 1) {
    rp->source_ = has[0] ? "rapl" : has[1] ? "nvml" : "model";
  } else {
    rp->source_ = "mixed: ";
    bool first = true;
    for (int k = 0; k < 3; ++k)
      if (has[k]) {
        rp->source_ += (first ? "" : "+") + std::string(kNames[k]);
        first = false;
      }
  }
  rp->psource_ = has[2] ? sched::PowerSource::kModel : has[0] ? sched::PowerSource::kRapl : sched::PowerSource::kNvml;
  if (lanes.empty()) rp->psource_ = sched::PowerSource::kModel;
  // First read: starts the counters.
  for (auto& m : rp->meters_) {
    if (auto r = m.meter->read(start_ns)) {
      m.last_uj = r->energy_uj;
      m.first = false;
    }
  }
  return rp;
}

PowerSample RunPower::sample(const std::vector<double>& lane_util, uint64_t now_ns) {
  double joules = 0;
  std::vector<std::string> silent;
  for (auto& m : meters_) {
    if (m.meter->source() == sched::PowerSource::kModel) {
      double u = group_utilisation(m.lanes, m.share, lane_util);
      // The utilisation was measured over (last_ns_, now_ns]: integrate that interval at it.
      static_cast<prof::ModelPowerMeter*>(m.meter.get())->set_utilisation(u, last_ns_);
    }
    auto r = m.meter->read(now_ns);
    if (!r) {
      // No energy for this interval; what the meter counts meanwhile is taken from its last good
      // reading once it answers again, so nothing is lost unless the counter wraps more than once.
      ++failed_reads_;
      silent.push_back(m.meter->name());
      if (!m.failing)
        spdlog::warn("power meter {} stopped answering: {}; the run goes on, its energy is counted from the last "
                     "good reading when it answers again", m.meter->name(), r.status().message());
      m.failing = true;
      continue;
    }
    if (m.failing) spdlog::info("power meter {} answers again", m.meter->name());
    m.failing = false;
    if (!m.first) joules += static_cast<double>(r->energy_uj - std::min(r->energy_uj, m.last_uj)) / 1e6;
    m.last_uj = r->energy_uj;
    m.first = false;
  }
  double dt = now_ns > last_ns_ ? static_cast<double>(now_ns - last_ns_) / 1e9 : 0;
  energy_j_ += joules;
  if (dt > 0) last_w_ = joules / dt;
  last_ns_ = std::max(last_ns_, now_ns);
  return {last_w_, energy_j_, source_, std::move(silent)};
}

std::optional<PowerFallback::Change> PowerFallback::next(const PowerSample& s, sched::Policy in_force) {
  if (!s.silent.empty()) {
    answered_ = 0;
    if (from_ || in_force != sched::Policy::kEnergyCritical) return std::nullopt;
    from_ = in_force;
    return Change{sched::Policy::kThroughputCritical,
                  fmt::format("power meter {} stopped answering: policy {} -> throughput until it answers again",
                              fmt::join(s.silent, ", "), sched::policy_name(in_force))};
  }
  if (!from_ || ++answered_ < 2) return std::nullopt;
  const sched::Policy back = *from_;
  from_.reset();
  return Change{back, fmt::format("power meters answer again: policy throughput -> {}", sched::policy_name(back))};
}

uint64_t RunPower::min_window_ns() const {
  uint64_t p = 0;
  for (const auto& m : meters_) p = std::max(p, m.meter->update_period_ns());
  return 3 * p;
}

std::vector<std::string> RunPower::meter_names() const {
  std::vector<std::string> v;
  for (const auto& m : meters_) v.push_back(m.meter->name());
  return v;
}

std::string RunPower::describe() const {
  std::string s = "power " + source_ + " (";
  auto names = meter_names();
  for (size_t i = 0; i < names.size(); ++i) s += (i ? ", " : "") + names[i];
  s += ")";
  for (const auto& n : notes_) s += "\n  power note: " + n;
  return s;
}

}  // namespace hpr
