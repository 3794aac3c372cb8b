// RunPower's model (pipeline/power.hpp, power_groups.hpp): lanes on one piece of hardware share one model, so idle
// power is counted once and the dynamic part follows the hardware's busy share, not each lane's.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <random>

#include "pipeline/adaptive_control.hpp"
#include "pipeline/power.hpp"
#include "runtime/opencl/devices.hpp"

using namespace hpr;
namespace fs = std::filesystem;

namespace {

// No powercap tree, no NVML, a 2-core host: the model alone.
PowerConfig model_only(uint32_t host_cores = 2) {
  return {.rapl_root = "/nonexistent/powercap", .use_rapl = true, .use_nvml = false, .host_cores = host_cores};
}

constexpr uint64_t kSec = 1'000'000'000;

bool has_note(const RunPower& rp, const std::string& text) {
  for (const auto& n : rp.notes())
    if (n.find(text) != std::string::npos) return true;
  return false;
}

}  // namespace

TEST_CASE("run power: two native lanes at 50 % on a 2-core host are one CPU: idle once + dynamic x 0.5") {
  auto rp = RunPower::create(model_only(), power_lanes({}, 2), 0);
  CHECK(rp->source() == "model");
  CHECK(rp->power_source() == sched::PowerSource::kModel);
  CHECK(rp->meter_names() == std::vector<std::string>{"model:host-cpu"});
  PowerSample s = rp->sample({0.5, 0.5}, kSec);
  CHECK(s.source == "model");
  CHECK(s.watts == Approx(6 + 52 * 0.5));  // was 2 × (6 + 52 × 0.5) with a model per lane
  CHECK(s.energy_j == Approx(6 + 52 * 0.5));
  CHECK(has_note(*rp,
                 "model power: CPU lanes native0 (1 core), native1 (1 core) share one host-CPU model: 6 W idle "
                 "once + 52 W × busy cores / 2 host cores (one package assumed)"));
  CHECK_THAT(rp->describe(), Catch::StartsWith("power model (model:host-cpu)\n  power note: rapl: ") &&
                                 Catch::Contains("\n  power note: model power: CPU lanes native0"));
}

TEST_CASE("run power: a 2-CU OpenCL cpu lane and a native lane, both at 100 %, clamp at the host's cores") {
  std::vector<DeviceInfo> devs(1);
  devs[0].name = "pthread-cpu";
  devs[0].vendor = "PoCL";
  devs[0].kind = DeviceKind::kCpu;
  devs[0].compute_units = 2;
  auto lanes = power_lanes(devs, 1);
  REQUIRE(lanes.size() == 2);
  CHECK(lanes[0].cores == 2);
  CHECK(lanes[1].cores == 1);
  auto rp = RunPower::create(model_only(), lanes, 0);
  CHECK(rp->meter_names().size() == 1);
  CHECK(rp->sample({1.0, 1.0}, kSec).watts == Approx(6 + 52));  // 3 busy cores of 2: the package is full
  // The OpenCL lane alone at 50 % keeps one of the two cores busy.
  CHECK(rp->sample({0.5, 0.0}, 2 * kSec).watts == Approx(6 + 52 * 0.5));
  CHECK(rp->energy_j() == Approx(58 + 32));
  CHECK(has_note(*rp, "CPU lanes cl0:pthread-cpu (2 cores), native0 (1 core) share one host-CPU model"));
  // Compute units beyond the host's cores count as the host's cores; 0 (unknown) as all of them.
  lanes[0].cores = 16;
  CHECK(RunPower::create(model_only(), lanes, 0)->sample({0.5, 0.0}, kSec).watts == Approx(6 + 52 * 0.5));
  lanes[0].cores = 0;
  CHECK(RunPower::create(model_only(), lanes, 0)->sample({0.5, 0.0}, kSec).watts == Approx(6 + 52 * 0.5));
}

TEST_CASE("run power: a CPU lane and a dgpu lane are two models, summed; lanes of one GPU share its model") {
  std::vector<DeviceInfo> devs(1);
  devs[0].name = "GTX 480";
  devs[0].vendor = "Some GPU vendor";
  devs[0].kind = DeviceKind::kDiscreteGpu;
  devs[0].compute_units = 15;
  auto lanes = power_lanes(devs, 1);
  CHECK(lanes[0].device == "cl0:GTX 480");
  CHECK(lanes[0].cores == 1);
  auto rp = RunPower::create(model_only(), lanes, 0);
  CHECK(rp->meter_names() == std::vector<std::string>{"model:host-cpu", "model:cl0:GTX 480"});
  // cpu: 6 + 52 × 1/2 (one of two cores); dgpu: 40 + 174 × 0.5.
  CHECK(rp->sample({0.5, 1.0}, kSec).watts == Approx(6 + 26 + 40 + 87));
  CHECK(has_note(*rp, "model power: dgpu lane cl0:GTX 480 uses its own model: 40 W idle + 174 W × utilisation"));

  // Two lanes on the same GPU (same device key): one idle, dynamic × min(1, sum); another GPU: its own model.
  std::vector<PowerLane> gpus = {
      {"a0", "dgpu", "X", 1, "gpu0"}, {"a1", "dgpu", "X", 1, "gpu0"}, {"b0", "dgpu", "X", 1, "gpu1"}};
  auto g = RunPower::create(model_only(), gpus, 0);
  CHECK(g->meter_names() == std::vector<std::string>{"model:gpu0", "model:gpu1"});
  CHECK(g->sample({0.25, 0.5, 0.0}, kSec).watts == Approx(40 + 174 * 0.75 + 40));
  CHECK(g->sample({0.75, 0.5, 0.0}, 2 * kSec).watts == Approx(40 + 174 + 40));  // clamped at the GPU's 100 %
  CHECK(has_note(*g,
                 "model power: dgpu lanes a0, a1 share one model of gpu0: 40 W idle once + 174 W × min(1, sum "
                 "of their utilisations)"));
}

TEST_CASE("run power: the shared model integrates over time; missing utilisations count as idle") {
  auto rp = RunPower::create(model_only(4), power_lanes({}, 2), 10 * kSec);
  CHECK(rp->sample({1.0, 1.0}, 12 * kSec).energy_j == Approx(2 * (6 + 52 * 0.5)));  // 2 of 4 cores for 2 s
  CHECK(rp->last_watts() == Approx(32));
  PowerSample s = rp->sample({}, 13 * kSec);  // 1 s idle
  CHECK(s.watts == Approx(6));
  CHECK(s.energy_j == Approx(64 + 6));
  CHECK(rp->sample({0.5}, 15 * kSec).energy_j == Approx(70 + 2 * (6 + 52 * 0.125)));
  CHECK(rp->energy_j() == Approx(70 + 25));
}

TEST_CASE("run power: readable RAPL covers every CPU lane once; the model only takes the rest") {
  fs::path root = fs::temp_directory_path() / fmt::format("hpr-run-power-{}", std::random_device{}());
  fs::create_directories(root / "intel-rapl:0");
  std::ofstream(root / "intel-rapl:0" / "name") << "package-0\n";
  std::ofstream(root / "intel-rapl:0" / "energy_uj") << "1000000\n";
  std::ofstream(root / "intel-rapl:0" / "max_energy_range_uj") << "262143328850\n";
  std::vector<PowerLane> lanes = power_lanes({}, 2);
  lanes.push_back({"cl0:gpu", "igpu", "Intel", 1, "cl0:gpu"});
  auto rp = RunPower::create({.rapl_root = root.string(), .use_nvml = false, .host_cores = 2}, lanes, 0);
  CHECK(rp->source() == "mixed: rapl+model");
  CHECK(rp->meter_names() == std::vector<std::string>{"rapl:package-0", "model:cl0:gpu"});
  CHECK_FALSE(has_note(*rp, "CPU lane"));
  std::ofstream(root / "intel-rapl:0" / "energy_uj") << "4000000\n";  // +3 J
  CHECK(rp->sample({1.0, 1.0, 0.5}, kSec).energy_j == Approx(3 + 2 + 12 * 0.5));
  fs::remove_all(root);
}

TEST_CASE("run power: NVML meters the GPU of an NVIDIA lane and every other GPU too, lane or not (fake NVML)") {
  const PowerConfig nvml{.rapl_root = "/nonexistent/powercap", .nvml_library = HPR_FAKE_NVML, .host_cores = 2};
  // A native lane only: both fake GPUs are metered (with no lane), the host is modelled.
  auto native = RunPower::create(nvml, power_lanes({}, 1), 0);
  CHECK(native->source() == "mixed: nvml+model");
  CHECK(native->meter_names() == std::vector<std::string>{"nvml:0:Fake GPU 0", "nvml:1:Fake GPU 1", "model:host-cpu"});
  CHECK(has_note(*native, "nvml:1:Fake GPU 1 has no lane here and is metered all the same"));
  // An NVIDIA lane takes the first GPU; the second is metered all the same.
  std::vector<DeviceInfo> devs(1);
  devs[0].name = "Fake GPU 0";
  devs[0].vendor = "NVIDIA Corporation";
  devs[0].kind = DeviceKind::kDiscreteGpu;
  auto gpu = RunPower::create(nvml, power_lanes(devs, 1), 0);
  CHECK(gpu->meter_names() == native->meter_names());
  CHECK_FALSE(has_note(*gpu, "nvml:0:Fake GPU 0 has no lane"));
  CHECK(has_note(*gpu, "nvml:1:Fake GPU 1 has no lane here"));
  // No NVML: no note unless a lane is NVIDIA's.
  const PowerConfig absent{.rapl_root = "/nonexistent/powercap", .nvml_library = "libnvidia-ml-absent.so.1"};
  CHECK_FALSE(has_note(*RunPower::create(absent, power_lanes({}, 1), 0), "nvml:"));
  CHECK(has_note(*RunPower::create(absent, power_lanes(devs, 1), 0), "nvml: NVML not available"));
}

TEST_CASE("run power: the host threads (dispatch, egress) are CPU lanes of the host model, after the lanes") {
  auto lanes = add_host_threads(power_lanes({}, 1));
  REQUIRE(lanes.size() == 3);
  CHECK(lanes[1].name == "host:dispatch");
  CHECK(lanes[2].name == "host:egress");
  auto rp = RunPower::create(model_only(), lanes, 0);
  CHECK(has_note(*rp, "native0 (1 core), host:dispatch (1 core), host:egress (1 core) share one host-CPU model"));
  // A native lane busy 20 % whose packets keep the dispatcher busy 60 % and egress 20 %: one core of two.
  IntervalStats st;
  st.lane_util = {0.2};
  st.dispatch_util = 0.6;
  st.egress_util = 0.2;
  CHECK(power_util(st) == std::vector<double>{0.2, 0.6, 0.2});
  CHECK(rp->sample(power_util(st), kSec).watts == Approx(6 + 52 * 0.5));
}

TEST_CASE("run power: run to completion, the host work is part of the worker's thread") {
  auto rp = RunPower::create(model_only(), add_host_threads(power_lanes({}, 1), 1, true), 0);
  CHECK(has_note(*rp,
                 "native0 (1 core), host:dispatch (on the worker's thread), host:egress (on the worker's thread) "
                 "share one host-CPU model"));
  IntervalStats st;
  st.lane_util = {0.5};
  st.dispatch_util = 0.3;
  st.egress_util = 0.2;
  CHECK(power_util(st) == std::vector<double>{0.5, 0.3, 0.2});
  CHECK(rp->sample(power_util(st), kSec).watts == Approx(6 + 52 * 0.5));  // one thread, always busy: 1 core of 2
}

TEST_CASE("run power: with workers, each worker's native lane in the summary's order and names") {
  auto lanes = add_host_threads(power_lanes({}, 1, 2), 2);
  REQUIRE(lanes.size() == 4);
  CHECK(lanes[0].name == "w0:native0");
  CHECK(lanes[1].name == "w1:native0");
  CHECK(lanes[2].name == "host:dispatch");
  CHECK(lanes[2].cores == 2);
  auto rp = RunPower::create(model_only(4), lanes, 0);
  CHECK(has_note(*rp,
                 "w0:native0 (1 core), w1:native0 (1 core), host:dispatch (on the workers' threads), "
                 "host:egress (on the workers' threads) share"));
  // The workers' dispatch and egress time is summed over the workers: 1.2 s a second of two workers' dispatching is
  // 0.6 of their two cores, not a share clamped to one core.
  IntervalStats st;
  st.lane_util = {0.2, 0.2};
  st.dispatch_util = 1.2;
  st.egress_util = 0.4;
  CHECK(power_util(st, 2) == std::vector<double>{0.2, 0.2, 0.6, 0.2});
  CHECK(rp->sample(power_util(st, 2), kSec).watts == Approx(6 + 52 * (0.2 + 0.2 + 1.2 + 0.4) / 4));
}
