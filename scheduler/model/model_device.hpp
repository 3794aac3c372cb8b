#pragma once
// Model devices: throughput, latency and power of a packet-processing device as functions of the batch size
// and of traffic features (DPI match rate), for the four applications of hetero-opencl-adaptive-scheduler
// §3.2, calibrated from the characterisation text (§3.3.2, §3.3.3, §5; see docs/scheduler.md for the numbers
// read from the text and the numbers assumed). Used as simulated lanes (bench/fig7, tests): every figure a
// model produces is labelled "model" (PowerSource::kModel, device names end in "(model)").
//
//   throughput(b) = peak(match) * b / (b + half_batch)                         [saturating in the batch size]
//                   * cache penalty beyond cache_batch (DPI on the CPU, §3.3.2: "larger than 512 packets")
//   peak(match)   = peak_bps * (1 - match) + peak_full_match_bps * match        [DPI only; others: match ignored]
//   latency(b)    = launch_ns + b * mean_packet_bits / throughput(b)          [linear in b once saturated]
//   power         = idle_w + dynamic_w * utilisation (+ host_feed_w * utilisation for GPUs, the CPU thread
//                   that feeds them); a device outside the configuration draws off_w (the GTX 480 is
//                   powered off, §3.3.2) or idle_w.
// A combination of devices reaches combo_factor(n) of the sum of its members (§3.3.2: MD5 CPU 36 + iGPU 28 →
// pair 54, i.e. 0.84; all three 17–22 % below the sum, i.e. 0.80), capped by memory_cap_bps (IPv4: the CPU
// alone reaches the memory bandwidth, extra devices do not help).
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "hpr/status.hpp"
#include "scheduler/store/configuration.hpp"

namespace hpr::sched::model {

enum class App : uint8_t { kIpv4, kDpi, kMd5, kAes };
const char* app_name(App a);                 // "ipv4" | "dpi" | "md5" | "aes"
Result<App> parse_app(std::string_view s);   // kInvalidArgument naming the value

struct TrafficFeatures {
  double match_rate = 0;            // DPI: fraction of packets with pattern matches (0..1)
  // §5: 25 % 60-byte and 75 % 1514-byte TCP packets.
  double mean_packet_bytes = 0.25 * 60 + 0.75 * 1514;
};

struct DeviceModelParams {
  std::string name;                 // "i7-3770 CPU (model)"
  std::string kind;                 // "cpu" | "igpu" | "dgpu"
  double peak_bps = 0;              // large-batch throughput with no matches
  double peak_full_match_bps = 0;   // DPI with every packet matching; == peak_bps for the other apps
  double half_batch = 0;            // batch size reaching half the peak
  uint32_t cache_batch = 0;         // 0: no cache penalty
  double cache_penalty = 0;         // fraction lost per doubling beyond cache_batch (floored at 50 % of peak)
  double launch_ns = 0;             // fixed cost per batch (launch, transfer set-up)
  double idle_w = 0, dynamic_w = 0, host_feed_w = 0, off_w = 0;
};

class ModelDevice {
 public:
  explicit ModelDevice(DeviceModelParams p) : p_(std::move(p)) {}
  const DeviceModelParams& params() const { return p_; }
  double throughput_bps(uint32_t batch, const TrafficFeatures& f) const;
  double latency_ns(uint32_t batch, const TrafficFeatures& f) const;
  // utilisation in [0,1] (clamped); in_use false → off_w.
  double power_w(double utilisation, bool in_use) const;
  // Simulated lane: how long this device takes for one batch of `packets` packets totalling `bytes` bytes
  // (launch + bytes / throughput at that batch size). A lane driven by this reports power source "model".
  double service_ns(uint32_t packets, double bytes, const TrafficFeatures& f) const;

 private:
  DeviceModelParams p_;
};

// What a configuration does at an offered rate on the model platform.
struct ModelOutcome {
  double capacity_bps = 0;          // sustained throughput of the configuration
  double achieved_bps = 0;          // min(offered, capacity)
  double latency_ns = 0;            // batch latency (slowest member)
  double power_w = 0;               // whole system, source "model"
  std::array<double, kMaxDevices> utilisation{};
};

// The three devices of the paper's machine (i7-3770 CPU = 0, HD Graphics 4000 = 1, GTX 480 = 2) for one app.
class ModelPlatform {
 public:
  static ModelPlatform paper(App app);
  ModelPlatform(App app, std::vector<ModelDevice> devices, double base_w, double memory_cap_bps);

  App app() const { return app_; }
  const std::vector<ModelDevice>& devices() const { return devices_; }
  double base_w() const { return base_w_; }
  static double count_factor(int device_count);   // 1, 0.84, 0.80
  double combo_factor(uint32_t device_mask) const;  // as above; the iGPU+GTX pair may differ per app (DPI 0.95)

  // Capacity, latency and power of `c` (device set, batches, split) at `offered_bps`.
  ModelOutcome evaluate(const Configuration& c, double offered_bps, const TrafficFeatures& f) const;
  // Split proportional to each member's throughput at its batch size (every member finishes together).
  Configuration balanced(uint32_t device_mask, uint32_t batch, const TrafficFeatures& f) const;
  Configuration balanced(uint32_t device_mask, const std::array<uint32_t, kMaxDevices>& batch,
                         const TrafficFeatures& f) const;
  // The batch (64..65536, powers of two) at which a device has its highest throughput.
  uint32_t best_batch(size_t device, const TrafficFeatures& f) const;
  // The model "profiling sweep" (§4.1): each device alone over batch sizes 64..65536 (powers of two); then every
  // combination starting from each member's best batch, all members' batches halved together 10 times (min 64);
  // balanced split; measured at saturation; power source "model". 3 devices: 3 × 11 + 4 × 11 = 77 points.
  std::vector<Configuration> profile(const TrafficFeatures& f) const;

 private:
  App app_;
  std::vector<ModelDevice> devices_;
  double base_w_;
  double memory_cap_bps_;
  double gpu_pair_factor_ = 54.0 / 64.0;
};

}  // namespace hpr::sched::model
