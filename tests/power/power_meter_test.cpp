#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <random>

#include "profiler/power/power_meter.hpp"

using namespace hpr;
using namespace hpr::prof;
namespace fs = std::filesystem;

namespace {

struct TempDir {
  fs::path path;
  TempDir() {
    std::random_device rd;
    path = fs::temp_directory_path() / fmt::format("hpr-power-test-{}", rd());
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
};

void write(const fs::path& p, const std::string& s) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << s << "\n";
}

void zone(const fs::path& dir, const std::string& name, uint64_t energy, uint64_t range) {
  write(dir / "name", name);
  write(dir / "energy_uj", std::to_string(energy));
  write(dir / "max_energy_range_uj", std::to_string(range));
}

}  // namespace

TEST_CASE("rapl_delta_uj handles the wrap at max_energy_range_uj") {
  CHECK(rapl_delta_uj(100, 250, 1000) == 150);
  CHECK(rapl_delta_uj(900, 50, 1000) == 150);   // 900 → 1000 → 0 → 50
  CHECK(rapl_delta_uj(1000, 0, 1000) == 0);
  CHECK(rapl_delta_uj(5, 5, 1000) == 0);
}

TEST_CASE("RAPL discovery and reading on a fake powercap tree with a wrap-around") {
  TempDir tmp;
  const uint64_t range = 262143328850ULL;  // a real max_energy_range_uj value
  // Top-level zones and nested subzones, as the kernel lays them out.
  zone(tmp.path / "intel-rapl:0", "package-0", range - 1'000'000, range);
  zone(tmp.path / "intel-rapl:0" / "intel-rapl:0:0", "core", 10, range);
  zone(tmp.path / "intel-rapl:0" / "intel-rapl:0:1", "uncore", 20, range);
  zone(tmp.path / "intel-rapl:0" / "intel-rapl:0:2", "dram", 30, range);
  fs::create_directories(tmp.path / "intel-rapl-mmio:0");  // other powercap control types are ignored
  write(tmp.path / "not-a-zone" / "name", "x");

  auto domains = discover_rapl(tmp.path.string());
  REQUIRE(domains.is_ok());
  REQUIRE(domains->size() == 4);
  CHECK((*domains)[0].id == "intel-rapl:0");
  CHECK((*domains)[0].kind == RaplKind::kPackage);
  CHECK((*domains)[1].kind == RaplKind::kCore);
  CHECK((*domains)[2].kind == RaplKind::kUncore);
  CHECK((*domains)[3].kind == RaplKind::kDram);
  CHECK((*domains)[0].max_energy_range_uj == range);

  auto meter = open_rapl((*domains)[0]);
  REQUIRE(meter.is_ok());
  CHECK((*meter)->source() == PowerSource::kRapl);
  CHECK((*meter)->name() == "rapl:package-0");
  auto r0 = (*meter)->read(1'000'000'000);
  REQUIRE(r0.is_ok());
  CHECK(r0->energy_uj == 0);
  CHECK(r0->watts == 0);
  CHECK(r0->source == PowerSource::kRapl);
  // 1 s later the counter has wrapped: 1 J to the top of the range, then 49 J more → 50 J over 1 s = 50 W.
  write(tmp.path / "intel-rapl:0" / "energy_uj", std::to_string(49'000'000));
  auto r1 = (*meter)->read(2'000'000'000);
  REQUIRE(r1.is_ok());
  CHECK(r1->energy_uj == 50'000'000);
  CHECK(r1->watts == Approx(50.0));
  write(tmp.path / "intel-rapl:0" / "energy_uj", std::to_string(69'000'000));
  auto r2 = (*meter)->read(2'500'000'000);
  REQUIRE(r2.is_ok());
  CHECK(r2->energy_uj == 70'000'000);  // cumulative
  CHECK(r2->watts == Approx(40.0));

  // A counter that turns into garbage is an error naming the file.
  write(tmp.path / "intel-rapl:0" / "energy_uj", "garbage");
  auto bad = (*meter)->read(3'000'000'000);
  REQUIRE_FALSE(bad.is_ok());
  CHECK(bad.status().message().find("energy_uj") != std::string::npos);
}

TEST_CASE("RAPL absent: a clear status, not a crash") {
  TempDir tmp;
  auto none = discover_rapl(tmp.path.string());
  REQUIRE_FALSE(none.is_ok());
  CHECK(none.status().code() == Code::kNotFound);
  CHECK(none.status().message().find("model power source") != std::string::npos);
  auto missing = discover_rapl((tmp.path / "nope").string());
  REQUIRE_FALSE(missing.is_ok());
  CHECK(missing.status().message().find("nope") != std::string::npos);
  // A zone without its name file is reported with its path.
  write(tmp.path / "intel-rapl:0" / "energy_uj", "1");
  auto broken = discover_rapl(tmp.path.string());
  REQUIRE_FALSE(broken.is_ok());
  CHECK(broken.status().message().find("intel-rapl:0") != std::string::npos);
  // A domain whose energy_uj cannot be opened is "unavailable".
  RaplDomain d{(tmp.path / "intel-rapl:9").string(), "intel-rapl:9", "package-9", RaplKind::kPackage, 100};
  auto m = open_rapl(d);
  REQUIRE_FALSE(m.is_ok());
  CHECK(m.status().code() == Code::kUnavailable);
}

TEST_CASE("NVML absent is not an error: no meters and a reason") {
  NvmlProbe p = probe_nvml("libnvidia-ml-definitely-absent.so.1");
  CHECK_FALSE(p.available);
  CHECK(p.meters.empty());
  CHECK(p.reason.find("NVML not available") != std::string::npos);
  // The real library name: on this machine (no NVIDIA driver) also unavailable; on a GPU machine, meters.
  NvmlProbe real = probe_nvml();
  if (real.available) {
    for (auto& m : real.meters) {
      CHECK(m->source() == PowerSource::kNvml);
      auto r = m->read(1);
      CHECK(r.is_ok());
    }
  } else {
    CHECK_FALSE(real.reason.empty());
  }
}

TEST_CASE("NVML present (a fake libnvidia-ml): one meter per GPU, energy counter or integrated power") {
  NvmlProbe p = probe_nvml(HPR_FAKE_NVML);
  INFO(p.reason);
  REQUIRE(p.available);
  REQUIRE(p.meters.size() == 2);
  CHECK(p.meters[0]->name() == "nvml:0:Fake GPU 0");
  CHECK(p.meters[1]->name() == "nvml:1:Fake GPU 1");
  for (auto& m : p.meters) CHECK(m->source() == PowerSource::kNvml);
  // GPU 0: the total-energy counter (+50 J per read), counted from the first read. Each update is taken to be
  // midway between reads and carried on from there (SteppedEnergy): at the power usage (100 W) until the counter
  // has moved twice, then at the counter's own rate (50 J a second).
  auto a0 = p.meters[0]->read(1'000'000'000);
  auto a1 = p.meters[0]->read(2'000'000'000);
  auto a2 = p.meters[0]->read(3'000'000'000);
  REQUIRE(a0.is_ok());
  REQUIRE(a1.is_ok());
  REQUIRE(a2.is_ok());
  CHECK(a0->energy_uj == 0);
  CHECK(a1->energy_uj == 50'000'000 + 50'000'000);   // 50 J at 1.5 s, then 0.5 s at 100 W
  CHECK(a2->energy_uj == 100'000'000 + 25'000'000);  // 100 J at 2.5 s, then 0.5 s at 50 W
  CHECK(a1->watts == Approx(100));
  CHECK(a1->source == PowerSource::kNvml);
  // GPU 1: no counter ("not supported"), 100 W integrated by trapezoids over 2 s.
  auto b0 = p.meters[1]->read(1'000'000'000);
  auto b1 = p.meters[1]->read(3'000'000'000);
  REQUIRE(b0.is_ok());
  REQUIRE(b1.is_ok());
  CHECK(b1->energy_uj == 200'000'000);
  CHECK(b1->watts == Approx(100));
}

// The device's counter as NVML showed it on an H200: it moves every 100 ms by what the GPU drew since (integer mJ);
// hpr reads it every 43 ms (a 40 ms quantum and the loop's lateness).
namespace {
struct SteppedGpu {
  double watts;
  uint64_t counter_uj = 0, last_update_ns = 0;
  uint64_t at(uint64_t now_ns, const std::vector<std::pair<uint64_t, double>>& profile) {
    while (now_ns >= last_update_ns + 100'000'000) {
      last_update_ns += 100'000'000;
      for (const auto& [from, w] : profile)
        if (last_update_ns >= from) watts = w;
      counter_uj += static_cast<uint64_t>(watts * 100) * 1000;  // W x 0.1 s, in mJ, as uJ
    }
    return counter_uj;
  }
};
}  // namespace

TEST_CASE("SteppedEnergy: a counter updated every 100 ms, read every 43 ms, over windows of 3 updates") {
  // 130 W for 3 s, then 300 W. The reads jitter as the status loop's do (43 ms +- 5).
  const std::vector<std::pair<uint64_t, double>> profile = {{0, 130.0}, {3'000'000'000, 300.0}};
  SteppedGpu gpu{.watts = 130};
  SteppedEnergy raw_like(0), smooth;  // max_gap 0: never carried on, as the raw counter
  smooth.seed_watts(83);              // nvmlDeviceGetPowerUsage at the start (idle)
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> jitter(-5, 5);
  std::vector<uint64_t> t_reads;
  std::vector<uint64_t> raw, sm;
  for (uint64_t t = 0; t <= 6'000'000'000; t += static_cast<uint64_t>(43 + jitter(rng)) * 1'000'000) {
    const uint64_t c = gpu.at(t, profile);
    t_reads.push_back(t);
    raw.push_back(raw_like.update(t, c));
    sm.push_back(smooth.update(t, c));
  }
  CHECK(smooth.period_ns() == Approx(100e6).epsilon(0.25));
  // Windows of two reads (about 86 ms): the raw counter gives 0 W in some (no update) and 2x in others.
  size_t zero = 0;
  for (size_t i = 2; i < raw.size(); i += 2) zero += raw[i] == raw[i - 2];
  CHECK(zero > 0);
  // Windows of at least 300 ms (RunPower::min_window_ns), away from the step: within 15 % of the power drawn.
  size_t windows = 0;
  for (size_t i = 0; i < t_reads.size(); ++i) {
    size_t j = i;
    while (j < t_reads.size() && t_reads[j] - t_reads[i] < 300'000'000) ++j;
    if (j == t_reads.size()) break;
    const uint64_t a = t_reads[i], b = t_reads[j];
    if (a < 500'000'000 || (b > 2'900'000'000 && a < 3'500'000'000)) continue;
    const double want = b < 3'000'000'000 ? 130 : 300;
    const double w = static_cast<double>(sm[j] - sm[i]) / (static_cast<double>(b - a) / 1e3);
    INFO("window " << a / 1e6 << ".." << b / 1e6 << " ms: " << w << " W, drawn " << want << " W");
    CHECK(w == Approx(want).epsilon(0.15));
    ++windows;
  }
  CHECK(windows > 50);
  // Never backwards, and over the run the total is the counter's within one update (300 W x 100 ms).
  for (size_t i = 1; i < sm.size(); ++i) REQUIRE(sm[i] >= sm[i - 1]);
  CHECK(static_cast<double>(sm.back()) / 1e6 == Approx(static_cast<double>(gpu.counter_uj) / 1e6).margin(30));
}

TEST_CASE("NVML declarations come from the toolkit's nvml.h when CMake found it") {
  INFO("nvml.h from the CUDA toolkit: " << nvml_toolkit_header());
#if HPR_NVML_HEADER_FROM_CMAKE
  CHECK(nvml_toolkit_header());
#elif !__has_include(<nvml.h>)
  CHECK_FALSE(nvml_toolkit_header());  // neither CMake nor the compiler's default paths have one
#endif
  // Either way the absent library is not an error (the same path, other declarations).
  CHECK_FALSE(probe_nvml("libnvidia-ml-definitely-absent.so.1").available);
}

TEST_CASE("model meter: idle + dynamic x utilisation, integrated over time, source model") {
  auto params = default_model_power("igpu", "HD Graphics 4000");
  CHECK(params.idle_w == 2);
  CHECK(params.dynamic_w == 12);
  CHECK(default_model_power("something").idle_w == default_model_power("cpu").idle_w);
  ModelPowerMeter m(params, 0);
  CHECK(m.name() == "model:HD Graphics 4000");
  CHECK(m.source() == PowerSource::kModel);
  auto r0 = m.read(0);
  REQUIRE(r0.is_ok());
  CHECK(r0->source == PowerSource::kModel);
  m.set_utilisation(0.5, 0);                // 2 + 6 = 8 W for 1 s
  m.set_utilisation(1.0, 1'000'000'000);    // 14 W for 1 s
  auto r1 = m.read(2'000'000'000);
  REQUIRE(r1.is_ok());
  CHECK(r1->energy_uj == 22'000'000);
  CHECK(r1->watts == Approx(11.0));
  m.set_utilisation(7.0, 2'000'000'000);    // clamped to 1
  CHECK(m.read(3'000'000'000)->watts == Approx(14.0));
  CHECK(std::string(power_source_name(PowerSource::kModel)) == "model");
}

TEST_CASE("an NVML that loads but returns errors: named in one line, and the reads fail with the call's name") {
  {
    setenv("FAKE_NVML_FAIL", "init", 1);
    NvmlProbe p = probe_nvml(HPR_FAKE_NVML);
    unsetenv("FAKE_NVML_FAIL");
    CHECK_FALSE(p.available);
    CHECK(p.reason == "NVML not available: nvmlInit_v2 failed: Unknown Error (999)");
  }
  setenv("FAKE_NVML_FAIL", "read", 1);
  NvmlProbe p = probe_nvml(HPR_FAKE_NVML);
  REQUIRE(p.available);
  for (auto& m : p.meters) {
    auto r = m->read(1'000'000'000);
    REQUIRE_FALSE(r.is_ok());
    CHECK_THAT(r.status().message(), Catch::Contains(m->name()) && Catch::Contains("Unknown Error"));
  }
  unsetenv("FAKE_NVML_FAIL");
}
