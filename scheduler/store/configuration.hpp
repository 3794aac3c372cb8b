#pragma once
// A device configuration of the adaptive scheduler (hetero-opencl-adaptive-scheduler §4.1): which devices
// process the traffic, the batch size of each, how a batch is split between them, and what was measured
// for it (throughput, latency median/p99, power with the power's source): the median of `samples` samples and
// its spread (architecture.md convention 13), and the traffic it was measured on.
#include <array>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "hpr/median_spread.hpp"
#include "hpr/status.hpp"

namespace hpr::sched {

// At most this many devices (lanes) take part in one configuration; device ids are 0..kMaxDevices-1.
inline constexpr int kMaxDevices = 8;

// Where a power figure comes from (architecture.md: every power figure carries its source).
enum class PowerSource : uint8_t { kRapl, kNvml, kModel, kUnknown };
const char* power_source_name(PowerSource s);  // "rapl" | "nvml" | "model" | "unknown"
// Parses "rapl" | "nvml" | "model"; anything else is kInvalidArgument naming the value.
Result<PowerSource> parse_power_source(std::string_view s);

struct Configuration {
  uint32_t device_mask = 0;                   // bit d set: device d takes part
  std::array<uint32_t, kMaxDevices> batch{};  // packets per batch for each device (0 when unused)
  std::array<float, kMaxDevices> split{};     // share of the traffic per device, sums to 1 over the mask
  double throughput_bps = 0;                  // sustained throughput measured (bits/s)
  double latency_ns = 0;                      // median batch latency
  double latency_p99_ns = 0;
  double power_w = 0;  // whole-system power while running this configuration
  PowerSource power_source = PowerSource::kUnknown;
  // Spread of each figure over its samples: the half-width of the median's confidence interval (hpr/median_spread.hpp),
  // the figures above being the medians. 0: one sample, or not known (format-1 tables). ConfigStore policies treat two
  // configurations whose difference is smaller than their two spreads combined as a tie.
  double throughput_spread_bps = 0;
  double latency_spread_ns = 0;
  double latency_p99_spread_ns = 0;
  double power_spread_w = 0;
  uint32_t samples = 1;  // samples behind the medians (1 after a live update)
  std::string traffic;   // traffic it was measured on; "" in a table: the fingerprint's (the table's default)
  // Learning mode's services placed (sched::Setup::place: per service, the device its flows all take; -1: by the
  // split); empty: none. Only learning mode applies it: the --table scheduler does not use such points.
  std::vector<int16_t> place;

  int device_count() const { return __builtin_popcount(device_mask); }
  bool uses(int device) const { return (device_mask >> device) & 1U; }
  // Same devices, batch sizes, split and placement (the identity of a configuration; measurements excluded).
  bool same_setup(const Configuration& o) const;
  // "dev{0,2} b=[1024,4096] s=[0.30,0.70]", and " p=[-,2]" with services placed
  std::string describe() const;
  // The measured figures: medians and spreads of `samples` samples of throughput, latency, p99 latency, power.
  void set_figures(const MedianSpread& thr, const MedianSpread& lat, const MedianSpread& p99, const MedianSpread& power,
                   uint32_t samples);
  // Another configuration's figures (medians, spreads, samples, power source) onto this setup.
  void copy_figures(const Configuration& from);
};

// Validates a configuration read from a file or built by a caller: non-empty mask within kMaxDevices,
// a batch >= 1 for every used device, split >= 0 summing to 1 (±1e-3) over used devices, finite metrics and
// spreads >= 0, samples >= 1. Returns kInvalidArgument naming the field.
Status validate(const Configuration& c);

void to_json(nlohmann::json& j, const Configuration& c);
// The spreads, "samples", "traffic" and "place" are optional (format-1 tables have none: spread 0, 1 sample, the
// table's traffic); "traffic" and "place" are written only when set.
void from_json(const nlohmann::json& j, Configuration& c);  // throws nlohmann::json::exception on bad types

}  // namespace hpr::sched
