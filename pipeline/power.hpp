#pragma once
// Power of a run (hetero-opencl-adaptive-scheduler §3.1.1 measured power; §7: RAPL or a model where
// there is no sensor). Each lane gets one source, chosen once at start:
//   * CPU lanes (native lanes and OpenCL devices of kind cpu): the RAPL package domain(s) under `rapl_root` when
//     they can be read (shared by every CPU lane: counted once);
//   * NVIDIA GPU lanes (vendor contains "NVIDIA"): an NVML meter when libnvidia-ml loads (one per GPU — per
//     distinct PowerLane::device — in order). Every other GPU NVML reports is metered too, with no lane: an H200
//     draws 83 W idle and ~120 W once a context is open, so runs with and without a GPU lane compare only when
//     both count it (docs/gpu/nvidia-h200/);
//   * otherwise a model (profiler/power/power_meter.hpp, default_model_power(kind) for the constants), one per
//     piece of hardware, not per lane (pipeline/power_groups.hpp): all CPU lanes share one host-CPU model (idle
//     once, dynamic × the share of the host's cores their utilisations keep busy), lanes of one GPU share that
//     GPU's model.
// The run's power is the sum of the distinct meters; its source is "model", "rapl", "nvml", or
// "mixed: rapl+model" (the sources present, in that order). Control-plane code (file I/O for RAPL): call from the
// control thread only; not thread safe.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "profiler/power/power_meter.hpp"
#include "scheduler/store/config_store.hpp"

namespace hpr {

struct PowerConfig {
  std::string rapl_root = "/sys/class/powercap";  // [power] rapl_root
  bool use_rapl = true;                           // [power] rapl
  bool use_nvml = true;                           // [power] nvml
  std::string nvml_library = "libnvidia-ml.so.1";  // tests: a fake one
  uint32_t host_cores = 0;  // cores of the host CPU package for the model; 0: std::thread::hardware_concurrency()
};

struct PowerLane {
  std::string name;
  std::string kind = "cpu";  // cpu | igpu | dgpu | accelerator (model defaults: see default_model_power)
  std::string vendor;
  // CPU lanes: cores the lane keeps busy at utilisation 1 (native lane 1; OpenCL cpu device its compute units;
  // 0: every host core). Capped at the host's cores.
  uint32_t cores = 1;
  // Other lanes: lanes with the same device share one model (and one NVML meter); empty: the lane's name.
  std::string device;
  // CPU work that runs on other threads' time (run to completion: the dispatcher's and egress' part of each
  // worker's thread): whose, for the model's note instead of the cores ("the worker's thread"); empty: its own.
  std::string on;
};

struct PowerSample {
  double watts = 0;     // average over the interval since the previous sample
  double energy_j = 0;  // since start
  std::string source;   // "model" | "rapl" | "nvml" | "mixed: ..."
  // Meters that did not answer this time: the watts lack their share (what they count meanwhile comes in with their
  // next good reading).
  std::vector<std::string> silent;
};

class RunPower {
 public:
  // Never fails: a RAPL tree that is absent or unreadable, or no NVML, falls back to the model (notes() says why).
  static std::unique_ptr<RunPower> create(const PowerConfig& cfg, const std::vector<PowerLane>& lanes,
                                          uint64_t start_ns);
  // `lane_util[i]`: utilisation of lane i over (previous sample, now_ns] (missing entries count as 0).
  PowerSample sample(const std::vector<double>& lane_util, uint64_t now_ns);
  const std::string& source() const { return source_; }
  // The sched::PowerSource of the sum: the single source, or kModel for a mix containing the model, else kRapl.
  sched::PowerSource power_source() const { return psource_; }
  // Why a sensor was not used, and what each model covers ("model power: CPU lanes ... share one host-CPU model").
  const std::vector<std::string>& notes() const { return notes_; }
  std::vector<std::string> meter_names() const;
  // "power model (model:host-cpu)" and one "\n  power note: ..." per note, for the start of a run.
  std::string describe() const;
  // The shortest window whose power is a measurement: 3 updates of the slowest-moving meter (NVML's energy counter
  // on an H200: 3 x 100 ms); 0 while none is known (every meter moves continuously, or too few reads yet).
  uint64_t min_window_ns() const;
  double energy_j() const { return energy_j_; }
  double last_watts() const { return last_w_; }
  // Reads that failed (a meter that stopped answering); each streak is logged once, and its end.
  uint64_t failed_reads() const { return failed_reads_; }

 private:
  struct Meter {
    std::unique_ptr<prof::PowerMeter> meter;
    std::vector<size_t> lanes;  // lanes it covers
    std::vector<double> share;  // model: lanes[k]'s share of the modelled hardware at utilisation 1
    uint64_t last_uj = 0;
    bool first = true;
    bool failing = false;  // the last read failed (logged once per streak)
  };
  uint64_t failed_reads_ = 0;
  std::vector<Meter> meters_;
  std::string source_;
  sched::PowerSource psource_ = sched::PowerSource::kModel;
  std::vector<std::string> notes_;
  uint64_t last_ns_ = 0, start_ns_ = 0;
  double energy_j_ = 0, last_w_ = 0;
};

// The energy policy ranks setups by their power: while a meter does not answer, the run's scheduler works under the
// throughput policy, and goes back once every meter has answered two samples in a row (the first good reading after
// a silence carries all that the meter counted during it). Fed every sample with the policy in force.
class PowerFallback {
 public:
  struct Change {
    sched::Policy policy;
    std::string why;  // "power meter rapl:package-0 stopped answering: ..." (for the log)
  };
  // nullopt: nothing to change.
  std::optional<Change> next(const PowerSample& s, sched::Policy in_force);
  // A policy chosen since (hpr ctl set policy): nothing to go back to.
  void forget() { from_.reset(); }
  bool active() const { return from_.has_value(); }

 private:
  std::optional<sched::Policy> from_;  // the policy given up for throughput
  uint32_t answered_ = 0;              // samples in a row with every meter answering
};

// Lane descriptions of a prepared run: its OpenCL devices in order, then `native_lanes` native lanes (with several
// workers, those of each worker in turn, named as the summary names them: w0:native0, w1:native0, ...).
struct DeviceInfo;
std::vector<PowerLane> power_lanes(const std::vector<DeviceInfo>& devices, uint32_t native_lanes, uint32_t workers = 1);
// Appends the pipeline's host work as CPU "lanes", after the lanes: host:dispatch (rx, classification, enqueue) and
// host:egress (order check, tx). Their work costs power as a lane's does (a native lane's packets spend most of their
// host time there); power_util() gives their utilisation in this order. Threaded (one worker): a thread each, one
// core. Run to completion (every run of several workers): parts of the `workers` workers' threads, which their
// lanes share, so up to `workers` cores, and the note names the threads instead of a core count.
std::vector<PowerLane> add_host_threads(std::vector<PowerLane> lanes, uint32_t workers = 1,
                                        bool run_to_completion = false);

}  // namespace hpr
