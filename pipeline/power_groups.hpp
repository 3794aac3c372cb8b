#pragma once
// The model's side of RunPower (pipeline/power.hpp): which lanes share one piece of hardware, and so one
// ModelPowerMeter, and how busy that hardware is.
//   * CPU lanes (kind "cpu": native lanes, OpenCL CPU devices such as PoCL's pthread and basic) run on the host's
//     cores. They share one host-CPU model: idle_w counted once, dynamic_w × min(1, Σ utilisation × cores the
//     lane keeps busy / host cores). One package is assumed: OpenCL does not say which socket a CPU device runs
//     on, so a multi-socket host is modelled as one package with all its cores (RAPL, when readable, measures
//     every package instead).
//   * Other lanes share a model per PowerLane::device (one GPU): idle once, dynamic × min(1, Σ utilisation).
#include <cstdint>
#include <string>
#include <vector>

#include "pipeline/power.hpp"

namespace hpr {

struct ModelGroup {
  prof::ModelPowerParams params;  // meter name "model:host-cpu", or "model:<device>"
  std::vector<size_t> lanes;      // indices into the run's lanes
  std::vector<double> share;      // share[k]: lanes[k]'s part of the hardware at utilisation 1
  std::string note;               // "model power: CPU lanes native0 (1 core), ... share one host-CPU model: ..."
};

// The hardware a non-CPU lane runs on: PowerLane::device, or its name when that is empty.
const std::string& device_key(const PowerLane& lane);

// Groups the lanes not `covered` by a sensor, CPU group first, then the others in lane order.
// `host_cores` 0: std::thread::hardware_concurrency() (1 when that is unknown).
std::vector<ModelGroup> model_groups(const std::vector<PowerLane>& lanes, const std::vector<bool>& covered,
                                     uint32_t host_cores);

// The group's busy share over an interval: min(1, Σ share[k] × lane_util[lanes[k]]), each utilisation clamped to
// [0,1] (missing entries count as 0).
double group_utilisation(const std::vector<size_t>& lanes, const std::vector<double>& share,
                         const std::vector<double>& lane_util);

}  // namespace hpr
