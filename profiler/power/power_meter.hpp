#pragma once
// Power meters (hetero-opencl-adaptive-scheduler §3.1.1 measured power with current sensors; §7 proposes RAPL
// and power models where there is no sensor). Three sources, and every reading says which one it came from:
//   * "rapl"  — Intel/AMD RAPL through the Linux powercap sysfs (energy_uj counters, wrap at
//               max_energy_range_uj), domains package / core / uncore (the integrated GPU on client parts) / dram;
//   * "nvml"  — NVIDIA GPUs through libnvidia-ml.so.1 loaded with dlopen (total energy counter in mJ where the
//               GPU has one, else power in mW integrated over time); no NVIDIA driver → no meters, not an error;
//   * "model" — idle_w + dynamic_w × utilisation per device, from the configuration (defaults below).
// Readings are cumulative energy since the meter was opened plus the average power since the previous read;
// time is passed in (now_ns). Control-plane code: readings do file I/O; not for the packet path.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "hpr/status.hpp"
#include "scheduler/store/configuration.hpp"

namespace hpr::prof {

using sched::PowerSource;
using sched::power_source_name;

struct PowerReading {
  uint64_t now_ns = 0;
  uint64_t energy_uj = 0;      // cumulative since the meter was opened (wrap-arounds removed)
  double watts = 0;            // average since the previous read; 0 on the first read
  PowerSource source = PowerSource::kUnknown;
};

class PowerMeter {
 public:
  virtual ~PowerMeter() = default;
  virtual PowerSource source() const = 0;
  virtual const std::string& name() const = 0;  // "rapl:package-0", "nvml:0:NVIDIA H100", "model:cpu"
  // Errors: kIoError / kUnavailable when the counter cannot be read (message names the file or call).
  virtual Result<PowerReading> read(uint64_t now_ns) = 0;
  // How often the counter behind the meter moves, as seen so far (0: continuously, or not known yet). Power over
  // a window of a few of these is a measurement; over a shorter one, mostly the counter's steps.
  virtual uint64_t update_period_ns() const { return 0; }
};

// ---- RAPL (powercap sysfs) ----
enum class RaplKind : uint8_t { kPackage, kCore, kUncore, kDram, kPsys, kOther };
const char* rapl_kind_name(RaplKind k);

struct RaplDomain {
  std::string path;            // <root>/intel-rapl:0 or <root>/intel-rapl:0:1
  std::string id;              // "intel-rapl:0:1"
  std::string name;            // contents of `name`: "package-0", "core", "uncore", "dram", "psys"
  RaplKind kind = RaplKind::kOther;
  uint64_t max_energy_range_uj = 0;
};

// Lists intel-rapl:N and intel-rapl:N:M zones under `root` (top level and nested), sorted by id.
// Errors: kNotFound when `root` has no RAPL zone (message says the model source is the fallback);
//         kInvalidArgument when a zone lacks `name` or has an unparsable max_energy_range_uj (names the file).
Result<std::vector<RaplDomain>> discover_rapl(const std::string& root = "/sys/class/powercap");

// Energy counted between two raw readings of a counter that wraps to 0 after max_range_uj.
uint64_t rapl_delta_uj(uint64_t prev_uj, uint64_t cur_uj, uint64_t max_range_uj);

// Opens a domain's energy_uj. Errors: kUnavailable when it cannot be read (since Linux 5.10 it is root-only:
// the message says so), kInvalidArgument when its content is not a number.
Result<std::unique_ptr<PowerMeter>> open_rapl(const RaplDomain& d);

// ---- A counter the device updates now and then ----
// NVML's total-energy counter on an H200 (driver 580) moves about every 100 ms. Read every 40 ms quantum, a window
// saw either no change or a whole update (8 W or 300 W in turn at a real 130 W), and `hpr profile`'s median of
// such windows put a GPU lane at 9 W (docs/gpu/nvidia-h200/). An update is taken to have happened midway between
// the read that saw it and the one before; from there the energy is carried on at the rate of the last updates
// (over up to kRateSpan of them; before that, the seed rate), for at most `max_gap_ns`. It never runs backwards:
// an update below the estimate holds the output until the counter passes it. Over a run the total is the
// counter's, within about one update's worth of energy.
class SteppedEnergy {
 public:
  static constexpr size_t kRateSpan = 8;
  explicit SteppedEnergy(uint64_t max_gap_ns = 1'000'000'000) : max_gap_ns_(max_gap_ns) {}
  void seed_watts(double w) { seed_uj_per_ns_ = std::max(0.0, w) * 1e-3; }  // 1 W = 1e-3 uJ per ns
  // `counter_uj`: the raw cumulative counter at now_ns (non-decreasing); returns the smoothed cumulative energy.
  uint64_t update(uint64_t now_ns, uint64_t counter_uj);
  // The median time between the updates seen (0 before three).
  uint64_t period_ns() const;

 private:
  struct Point {
    uint64_t ns, uj;
  };
  uint64_t max_gap_ns_;
  double seed_uj_per_ns_ = 0;
  std::vector<Point> changes_;  // the last kRateSpan + 1 updates seen (their estimated time), oldest first
  uint64_t prev_read_ns_ = 0;
  uint64_t out_uj_ = 0;
};

// ---- NVML (dlopen) ----
struct NvmlProbe {
  bool available = false;
  std::string reason;          // why not available ("libnvidia-ml.so.1: cannot open shared object file ...")
  std::vector<std::unique_ptr<PowerMeter>> meters;  // one per GPU; source "nvml"
};
// Never fails: an absent library or a failing nvmlInit gives available = false and the reason.
NvmlProbe probe_nvml(const char* library = "libnvidia-ml.so.1");
// Where the NVML types and prototypes came from at build time: true when the CUDA toolkit's nvml.h was found
// (CMake's HPR_NVML_INCLUDE_DIR, or a system nvml.h), false for hpr's own copy of the few declarations used.
bool nvml_toolkit_header();

// ---- Model ----
struct ModelPowerParams {
  std::string name;            // device label; the meter is named "model:<name>"
  double idle_w = 0;
  double dynamic_w = 0;        // added at utilisation 1
};
// Documented defaults per device kind ("cpu", "igpu", "dgpu"; anything else → "cpu"):
//   cpu  idle 6 W, dynamic 52 W  (i7-3770: 77 W die TDP minus ≈17 W for the HD Graphics, §3.1; idle assumed)
//   igpu idle 2 W, dynamic 12 W  (HD Graphics 4000 ≈ 17 W TDP estimate, §3.1; includes the feeding thread)
//   dgpu idle 40 W, dynamic 174 W (GTX 480 class, 250 W board TDP — assumed, not from the paper)
ModelPowerParams default_model_power(std::string_view kind, std::string name = "");

class ModelPowerMeter final : public PowerMeter {
 public:
  ModelPowerMeter(ModelPowerParams p, uint64_t start_ns);
  PowerSource source() const override { return PowerSource::kModel; }
  const std::string& name() const override { return name_; }
  // Utilisation in [0,1] (clamped) from now_ns on; energy up to now_ns is integrated at the previous value.
  void set_utilisation(double u, uint64_t now_ns);
  double watts_at(double u) const;
  Result<PowerReading> read(uint64_t now_ns) override;

 private:
  void integrate(uint64_t now_ns);
  ModelPowerParams p_;
  std::string name_;
  double util_ = 0;
  double energy_uj_ = 0;
  uint64_t last_ns_;
  uint64_t last_read_ns_ = 0;
  double last_read_uj_ = 0;
  bool read_once_ = false;
};

}  // namespace hpr::prof
