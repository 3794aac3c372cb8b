#include "scheduler/model/model_device.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace hpr::sched::model {

const char* app_name(App a) {
  switch (a) {
    case App::kIpv4: return "ipv4";
    case App::kDpi: return "dpi";
    case App::kMd5: return "md5";
    case App::kAes: return "aes";
  }
  return "?";
}

Result<App> parse_app(std::string_view s) {
  if (s == "ipv4") return App::kIpv4;
  if (s == "dpi") return App::kDpi;
  if (s == "md5") return App::kMd5;
  if (s == "aes") return App::kAes;
  return error(Code::kInvalidArgument, "app '{}' is not one of ipv4, dpi, md5, aes", s);
}

double ModelDevice::throughput_bps(uint32_t batch, const TrafficFeatures& f) const {
  double m = std::clamp(f.match_rate, 0.0, 1.0);
  double peak = p_.peak_bps * (1 - m) + p_.peak_full_match_bps * m;
  double b = std::max<double>(batch, 1);
  double thr = peak * b / (b + p_.half_batch);
  if (p_.cache_batch > 0 && b > p_.cache_batch) {
    double doublings = std::log2(b / p_.cache_batch);
    thr *= std::max(0.5, 1 - p_.cache_penalty * doublings);
  }
  return thr;
}

double ModelDevice::latency_ns(uint32_t batch, const TrafficFeatures& f) const {
  double thr = throughput_bps(batch, f);
  return p_.launch_ns + std::max<double>(batch, 1) * f.mean_packet_bytes * 8 / thr * 1e9;
}

double ModelDevice::service_ns(uint32_t packets, double bytes, const TrafficFeatures& f) const {
  if (packets == 0) return 0;
  return p_.launch_ns + bytes * 8 / throughput_bps(packets, f) * 1e9;
}

double ModelDevice::power_w(double utilisation, bool in_use) const {
  if (!in_use) return p_.off_w;
  double u = std::clamp(utilisation, 0.0, 1.0);
  return p_.idle_w + (p_.dynamic_w + p_.host_feed_w) * u;
}

ModelPlatform::ModelPlatform(App app, std::vector<ModelDevice> devices, double base_w, double memory_cap_bps)
    : app_(app), devices_(std::move(devices)), base_w_(base_w), memory_cap_bps_(memory_cap_bps) {}

double ModelPlatform::count_factor(int n) { return n <= 1 ? 1.0 : (n == 2 ? 54.0 / 64.0 : 0.80); }

double ModelPlatform::combo_factor(uint32_t mask) const {
  if (mask == 0b110) return gpu_pair_factor_;
  return count_factor(__builtin_popcount(mask));
}

ModelOutcome ModelPlatform::evaluate(const Configuration& c, double offered_bps, const TrafficFeatures& f) const {
  ModelOutcome o;
  double factor = combo_factor(c.device_mask);
  // The configuration saturates when its most loaded member does: capacity = min_d thr_d / split_d.
  double cap = std::numeric_limits<double>::infinity();
  for (size_t d = 0; d < devices_.size(); ++d) {
    if (!c.uses(static_cast<int>(d)) || c.split[d] <= 0) continue;
    double thr = devices_[d].throughput_bps(c.batch[d], f) * factor;
    cap = std::min(cap, thr / c.split[d]);
    o.latency_ns = std::max(o.latency_ns, devices_[d].latency_ns(c.batch[d], f) / factor);
  }
  if (!std::isfinite(cap)) cap = 0;
  o.capacity_bps = std::min(cap, memory_cap_bps_);
  o.achieved_bps = std::min(offered_bps, o.capacity_bps);
  o.power_w = base_w_;
  for (size_t d = 0; d < devices_.size(); ++d) {
    bool used = c.uses(static_cast<int>(d)) && c.split[d] > 0;
    double u = 0;
    if (used) {
      double thr = devices_[d].throughput_bps(c.batch[d], f) * factor;
      u = std::min(1.0, o.achieved_bps * c.split[d] / thr);
    }
    o.utilisation[d] = u;
    o.power_w += devices_[d].power_w(u, used);
  }
  return o;
}

Configuration ModelPlatform::balanced(uint32_t device_mask, uint32_t batch, const TrafficFeatures& f) const {
  std::array<uint32_t, kMaxDevices> b{};
  b.fill(batch);
  return balanced(device_mask, b, f);
}

Configuration ModelPlatform::balanced(uint32_t device_mask, const std::array<uint32_t, kMaxDevices>& batch,
                                      const TrafficFeatures& f) const {
  Configuration c;
  c.device_mask = device_mask;
  double sum = 0;
  for (size_t d = 0; d < devices_.size(); ++d)
    if (c.uses(static_cast<int>(d))) sum += devices_[d].throughput_bps(batch[d], f);
  for (size_t d = 0; d < devices_.size(); ++d) {
    if (!c.uses(static_cast<int>(d))) continue;
    c.batch[d] = batch[d];
    c.split[d] = static_cast<float>(devices_[d].throughput_bps(batch[d], f) / sum);
  }
  // make the split sum to exactly 1 in float
  float total = 0;
  int last = -1;
  for (int d = 0; d < kMaxDevices; ++d)
    if (c.uses(d)) {
      total += c.split[d];
      last = d;
    }
  if (last >= 0) c.split[last] += 1.0F - total;
  return c;
}

uint32_t ModelPlatform::best_batch(size_t device, const TrafficFeatures& f) const {
  uint32_t best = 64;
  for (uint32_t b = 64; b <= 65536; b *= 2)
    if (devices_[device].throughput_bps(b, f) > devices_[device].throughput_bps(best, f)) best = b;
  return best;
}

std::vector<Configuration> ModelPlatform::profile(const TrafficFeatures& f) const {
  std::vector<Configuration> out;
  auto n = static_cast<uint32_t>(devices_.size());
  auto measure = [&](Configuration c) {
    ModelOutcome o = evaluate(c, std::numeric_limits<double>::infinity(), f);
    c.throughput_bps = o.capacity_bps;
    c.latency_ns = o.latency_ns;
    c.latency_p99_ns = o.latency_ns * 1.2;  // model: p99 taken as 1.2 × median (assumed)
    c.power_w = o.power_w;
    c.power_source = PowerSource::kModel;
    out.push_back(c);
  };
  std::array<uint32_t, kMaxDevices> best{};
  for (uint32_t d = 0; d < n; ++d) best[d] = best_batch(d, f);
  for (uint32_t mask = 1; mask < (1U << n); ++mask) {
    if (__builtin_popcount(mask) == 1) {
      for (uint32_t b = 64; b <= 65536; b *= 2) measure(balanced(mask, b, f));
      continue;
    }
    // §4.1: combinations start from each member's best-performing batch; then all members' batches halved together.
    for (int k = 0; k <= 10; ++k) {
      std::array<uint32_t, kMaxDevices> b{};
      for (uint32_t d = 0; d < n; ++d) b[d] = std::max<uint32_t>(64, best[d] >> k);
      measure(balanced(mask, b, f));
    }
  }
  return out;
}

namespace {

struct PeakSet {
  double cpu, cpu_full, igpu, igpu_full, gtx, gtx_full;
  double batch_scale;  // multiplies every device's half_batch
  double memory_cap_bps;
  double gpu_pair_factor = 54.0 / 64.0;
};

PeakSet peaks(App app) {
  constexpr double G = 1e9;
  switch (app) {
    // Text: iGPU copes with 40 Gbit/s at all rates; the CPU alone reaches the memory bandwidth; the GTX 480 is
    // the worst device for IPv4. Assumed: CPU 43, iGPU 43 (40 + 5 % headroom), GTX 12, cap 43; memory bound → large batches (×4).
    case App::kIpv4: return {43 * G, 43 * G, 43 * G, 43 * G, 12 * G, 12 * G, 4.0, 43 * G};
    // Text: DPI CPU 28 Gbit/s without matches, 6 with matches overwhelming (4–5×), half of the GTX 480's (12);
    // the HD Graphics never above 5 Gbit/s. Assumed: iGPU 5 / 4, GTX 14 without matches.
    // The GPU pair keeps 0.95 of its sum (assumed: no shared cache or TDP between them) so that, as in §5, "the HD
    // Graphics plus GTX 480 pair is the winner" for match-heavy traffic at 15 Gbit/s.
    case App::kDpi: return {28 * G, 6 * G, 5 * G, 5 * G, 14 * G, 12 * G, 1.0, 1e30, 0.95};
    // Text: MD5 CPU 36, iGPU 28 (pair 54). Assumed: GTX 30.
    case App::kMd5: return {36 * G, 36 * G, 28 * G, 28 * G, 30 * G, 30 * G, 1.0, 1e30};
    // Text: all three handle up to 15.5 Gbit/s; the GTX 480 is the best AES device. Assumed: CPU 7, iGPU 3,
    // GTX 9.4 (sum 19.4 × 0.80 = 15.5); compute bound → smaller batches (×0.5).
    case App::kAes: return {7 * G, 7 * G, 3 * G, 3 * G, 9.4 * G, 9.4 * G, 0.5, 1e30};
  }
  return {};
}

}  // namespace

ModelPlatform ModelPlatform::paper(App app) {
  PeakSet p = peaks(app);
  // The throughputs above are the devices' figures at the largest batch (65,536; DPI CPU: 512, where it peaks);
  // peak_bps is set so that throughput_bps(that batch) equals them.
  auto at = [](double v, double half, double ref_batch) { return v * (ref_batch + half) / ref_batch; };
  double h_cpu = 16 * p.batch_scale, h_igpu = 512 * p.batch_scale, h_gtx = 4096 * p.batch_scale;
  double ref_cpu = app == App::kDpi ? 512 : 65536;
  // Power (§3.1: die TDP 77 W, HD Graphics ≈ 17 W; assumed: GTX 480 250 W board TDP, platform 30 W with the
  // polling I/O core, NICs and DRAM; the GTX 480 is powered off when unused, §3.3.2).
  DeviceModelParams cpu{"i7-3770 CPU (model)", "cpu", at(p.cpu, h_cpu, ref_cpu), at(p.cpu_full, h_cpu, ref_cpu),
                        h_cpu, 0, 0, 5e3, 6, 52, 0, 6};
  DeviceModelParams igpu{"HD Graphics 4000 (model)", "igpu", at(p.igpu, h_igpu, 65536),
                         at(p.igpu_full, h_igpu, 65536), h_igpu, 0, 0, 20e3, 2, 10, 2, 2};
  DeviceModelParams gtx{"GTX 480 (model)", "dgpu", at(p.gtx, h_gtx, 65536), at(p.gtx_full, h_gtx, 65536),
                        h_gtx, 0, 0, 50e3, 40, 170, 4, 0};
  if (app == App::kDpi) {
    cpu.cache_batch = 512;  // §3.3.2: a working set above 512 packets lowers the CPU's DPI throughput
    cpu.cache_penalty = 0.08;
  }
  ModelPlatform mp(app, {ModelDevice(cpu), ModelDevice(igpu), ModelDevice(gtx)}, 30, p.memory_cap_bps);
  mp.gpu_pair_factor_ = p.gpu_pair_factor;
  return mp;
}

}  // namespace hpr::sched::model
