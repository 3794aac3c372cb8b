// Fault injection (issue 8): for each fault, the daemon's data path goes on with what works, nothing is lost
// without being counted (rx == tx + drops, unaccounted 0, no reorder), and the log says what happened.
//   * an OpenCL call that fails: build, alloc, map, enqueue (HPR_FAULT_CL, pipeline/fault_injection.hpp), and a
//     device that computes wrong results (corrupt);
//   * a device that disappears mid-run ([faults.fail_after_batches]), also every lane at once;
//   * a full queue (tiny lane queues, no backpressure);
//   * a slow lane ([faults.slow_lane_us]);
//   * a configuration table that does not match the machine (profiler/table);
//   * a power meter that stops answering (profiler/power, RAPL on a fake powercap tree).
#include <catch2/catch.hpp>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "tests/common/log_capture.hpp"
#include "profiler/power/power_meter.hpp"
#include "profiler/table/config_table.hpp"
#include "pipeline/fault_injection.hpp"
#include "pipeline/power.hpp"
#include "tests/pipeline/pipeline_fixture.hpp"

using namespace hpr;
using namespace hpr::test;
namespace fs = std::filesystem;

namespace {

RunConfig gen_config(uint64_t packets) {
  RunConfig c = base_config();
  c.input = {.kind = "generator", .gen_packets = packets, .gen_flows = 2000, .gen_zipf = 1.0, .gen_sizes = "imix", .gen_seed = 9};
  c.output = {.kind = "null"};
  c.native_lanes = 1;
  return c;
}

uint64_t drops_of(const Summary& s, const std::string& reason) {
  for (const auto& [r, n] : s.drops)
    if (r == reason) return n;
  return 0;
}

const LaneSummary* lane_named(const Summary& s, const std::string& part) {
  for (const auto& l : s.lanes)
    if (l.name.find(part) != std::string::npos) return &l;
  return nullptr;
}

}  // namespace

TEST_CASE("HPR_FAULT_CL values parse; malformed ones are ignored") {
  auto f = fault::parse_cl_fault("enqueue:3@pthread");
  CHECK(f.point == fault::ClPoint::kEnqueue);
  CHECK(f.nth == 3);
  CHECK(f.applies_to("pthread-AMD EPYC"));
  CHECK_FALSE(f.applies_to("cpu-basic"));
  CHECK(fault::parse_cl_fault("map:1").applies_to("anything"));
  CHECK(fault::parse_cl_fault("build").point == fault::ClPoint::kBuild);
  CHECK(fault::parse_cl_fault("alloc:2").point == fault::ClPoint::kAlloc);
  CHECK(fault::parse_cl_fault("corrupt:4@gpu").point == fault::ClPoint::kCorrupt);
  CHECK(fault::parse_cl_fault("corrupt:4@gpu").nth == 4);
  CHECK(fault::parse_cl_fault("").point == fault::ClPoint::kNone);
  CHECK(fault::parse_cl_fault(nullptr).point == fault::ClPoint::kNone);
  CHECK(fault::parse_cl_fault("explode:2").point == fault::ClPoint::kNone);
}

TEST_CASE("an OpenCL kernel enqueue that fails mid-run: that lane leaves, the rest carry its packets") {
  LogCapture log;
  EnvVar env("HPR_FAULT_CL", "enqueue:3@pthread");
  RunConfig c = gen_config(40000);
  Summary s = run_to_end(c);
  check_books(s);
  CHECK(s.rx_buffers_in_use == 0);
  CHECK(s.rx_packets == 40000);
  CHECK(s.lane_failures == 1);
  CHECK(drops_of(s, "no_lane") == 0);
  const LaneSummary* l = lane_named(s, "pthread");
  REQUIRE(l != nullptr);
  CHECK(l->state == "removed");
  CHECK_THAT(l->failure, Catch::Contains("CL_OUT_OF_RESOURCES"));
  std::string t = log.text();
  CHECK_THAT(t, Catch::Contains("fault injected: clEnqueueNDRangeKernel"));
  CHECK_THAT(t, Catch::Contains("failed and leaves the lane set"));
}

TEST_CASE("an OpenCL buffer map that fails on the first batch: that lane leaves, nothing lost") {
  LogCapture log;
  EnvVar env("HPR_FAULT_CL", "map:1@basic");
  RunConfig c = gen_config(30000);
  Summary s = run_to_end(c);
  check_books(s);
  CHECK(s.rx_buffers_in_use == 0);
  CHECK(s.rx_packets == 30000);
  CHECK(s.lane_failures == 1);
  const LaneSummary* l = lane_named(s, "basic");
  REQUIRE(l != nullptr);
  CHECK(l->state == "removed");
  CHECK_THAT(l->failure, Catch::Contains("CL_MAP_FAILURE"));
  CHECK_THAT(log.text(), Catch::Contains("fault injected: clEnqueueMapBuffer"));
}

TEST_CASE("a device that cannot build the program, allocate its lane's buffers or compute right is left out, the run goes on") {
  struct Case {
    const char* fault;  // HPR_FAULT_CL
    const char* error;  // in the left-out reason
    const char* log;
  };
  for (const Case& k : {Case{"build:1@basic", "CL_BUILD_PROGRAM_FAILURE", "left out"},
                        Case{"alloc:1@basic", "CL_MEM_OBJECT_ALLOCATION_FAILURE", "fault injected: clCreateBuffer"},
                        // Builds and runs, but its results differ from the native lane's: the start-up check
                        // (pipeline/device_check.hpp) names the first differing packet.
                        Case{"corrupt:1@basic", "computes wrong results: packet 1 of 256 (", "computes wrong results"}}) {
    INFO(k.fault);
    LogCapture log;
    EnvVar env("HPR_FAULT_CL", k.fault);
    RunConfig c = gen_config(20000);
    auto ctx = prepare_run(c);
    REQUIRE(ctx.is_ok());
    REQUIRE((*ctx)->left_out.size() == 1);
    CHECK_THAT((*ctx)->left_out[0], Catch::Contains(k.error));
    for (const auto& d : (*ctx)->devices) CHECK(d.name.find("basic") == std::string::npos);
    Summary s = (*ctx)->pipeline->run();
    check_books(s);
    CHECK(s.rx_packets == 20000);
    CHECK(s.lane_failures == 0);
    for (const auto& l : s.lanes) CHECK(l.name.find("basic") == std::string::npos);
    CHECK_THAT(log.text(), Catch::Contains(k.log));
  }
}

TEST_CASE("every OpenCL device disappears mid-run: the native lane carries on") {
  LogCapture log;
  RunConfig c = gen_config(40000);
  c.fail_after = {{"cl", 5}};
  Summary s = run_to_end(c);
  check_books(s);
  CHECK(s.rx_buffers_in_use == 0);
  CHECK(s.rx_packets == 40000);
  CHECK(s.lane_failures == 2);
  CHECK(drops_of(s, "no_lane") == 0);
  CHECK(lane_named(s, "native0")->state != "removed");
  CHECK_THAT(log.text(), Catch::Contains("fault injected at batch 5"));
}

TEST_CASE("every lane fails: what cannot be processed is counted as no_lane, the books still balance") {
  LogCapture log;
  RunConfig c = gen_config(20000);
  c.fail_after = {{"cl", 3}, {"native", 3}};
  Summary s = run_to_end(c);
  check_books(s);
  CHECK(s.rx_buffers_in_use == 0);
  CHECK(s.rx_packets == 20000);
  CHECK(s.lane_failures == 3);
  CHECK(drops_of(s, "no_lane") > 0);
}

// 1000 packets to native0, batches of 64 closed only by size or at the stop: 15 full batches, then the last 40
// packets are submitted as batch 16 after the input has ended, and that submit fails. `lanes` native lanes; the
// others take no new flows (weight 0).
namespace {
Summary fail_while_draining(bool rtc, uint32_t lanes) {
  RunConfig c = gen_config(1000);
  c.devices = {"none"};
  c.native_lanes = lanes;
  for (uint32_t i = 0; i < lanes; ++i) c.lane_weights["native" + std::to_string(i)] = i == 0 ? 1 : 0;
  c.batch = 64;
  c.batch_timeout_us = 10'000'000;
  c.native_run_what_arrived = false;
  c.fail_after = {{"native0", 16}};
  c.run_to_completion = rtc;
  Summary s = run_to_end(c);
  check_books(s);
  CHECK(s.rx_buffers_in_use == 0);
  CHECK(s.lane_failures == 1);
  CHECK(lane_named(s, "native0")->state == "removed");
  return s;
}
}  // namespace

TEST_CASE("a lane that fails while draining at the end: what it held is counted as no_lane, in both modes") {
  for (bool rtc : {false, true}) {
    LogCapture log;
    INFO("run to completion " << rtc);
    Summary s = fail_while_draining(rtc, 1);
    CHECK(drops_of(s, "no_lane") == 40);
    // Threaded: the lane thread failed after the dispatcher had ended, and no lane is left; one thread: its drain
    // re-routes.
    if (!rtc) CHECK_THAT(log.text(), Catch::Contains("lane native0 failed while draining"));
  }
}

TEST_CASE("a lane that fails while draining at the end: what it held runs on a lane that drained well, in both modes") {
  // As above with a second native lane: native0's 40 packets go to native1, which runs them and ends again.
  for (bool rtc : {false, true}) {
    LogCapture log;
    INFO("run to completion " << rtc);
    Summary s = fail_while_draining(rtc, 2);
    CHECK(drops_of(s, "no_lane") == 0);
    CHECK(lane_named(s, "native1")->packets == 40);
    if (!rtc) CHECK_THAT(log.text(), Catch::Contains("re-routing 40 packets"));
  }
}

TEST_CASE("full queues: tiny lane queues without backpressure count queue_full drops and go on") {
  RunConfig c = gen_config(150000);
  c.devices = {"none"};
  c.native_lanes = 2;
  c.queue = 16;
  c.batch = 16;
  c.backpressure = false;
  Summary s = run_to_end(c);
  check_books(s);
  CHECK(s.rx_buffers_in_use == 0);
  CHECK(drops_of(s, "queue_full") > 0);
  CHECK(s.tx_packets > 0);
}

TEST_CASE("a slow lane ([faults.slow_lane_us]): books balance with and without backpressure") {
  for (bool bp : {true, false}) {
    RunConfig c = gen_config(20000);
    c.devices = {"none"};
    c.native_lanes = 2;
    c.slow_lane_us = {{"native0", 500}};
    c.backpressure = bp;
    Summary s = run_to_end(c);
    INFO("backpressure " << bp);
    check_books(s);
    CHECK(s.rx_packets == 20000);
    if (bp) CHECK(drops_of(s, "queue_full") == 0);
    CHECK(lane_named(s, "native0")->packets > 0);
    CHECK(lane_named(s, "native1")->packets > 0);
  }
}

TEST_CASE("[faults.slow_lane_us] is read from the configuration file and checked") {
  auto write = [](const std::string& text) {
    std::string p = tmp_path("faults.toml");
    std::ofstream(p) << text;
    return p;
  };
  auto ok = load_run_config(write("[faults.slow_lane_us]\nnative0 = 2000\n[faults.fail_after_batches]\ncl = 4\n"));
  REQUIRE(ok.is_ok());
  CHECK(ok->slow_lane_us.at("native0") == 2000);
  CHECK(ok->fail_after.at("cl") == 4);
  auto bad = load_run_config(write("[faults.slow_lane_us]\nnative0 = -5\n"));
  REQUIRE_FALSE(bad.is_ok());
  CHECK_THAT(bad.status().message(), Catch::Contains("faults.slow_lane_us.\"native0\""));
  // Slow for a while only: from 5 s to 10 s into the run.
  auto window = load_run_config(write("[faults]\nslow_from_s = 5\nslow_until_s = 10\n[faults.slow_lane_us]\nnative0 = 2000\n"));
  REQUIRE(window.is_ok());
  CHECK(window->slow_from_s == 5);
  CHECK(window->slow_until_s == 10);
  CHECK(validate(*window).is_ok());
  RunConfig backwards = *window;
  backwards.slow_until_s = 5;
  CHECK_THAT(validate(backwards).message(), Catch::Contains("faults.slow_until_s"));
  CHECK(in_slow_window(5'000'000'000, 5'000'000'000, 10'000'000'000));
  CHECK_FALSE(in_slow_window(4'999'999'999, 5'000'000'000, 10'000'000'000));
  CHECK_FALSE(in_slow_window(10'000'000'000, 5'000'000'000, 10'000'000'000));
  CHECK(in_slow_window(1ULL << 62, 0, 0));
}

TEST_CASE("a configuration table from another machine is refused, naming the difference; allow_mismatch overrides") {
  prof::ConfigTable t;
  t.complete = true;
  t.fingerprint.app = "ipv4";
  t.fingerprint.devices = {{"NVIDIA GeForce GTX 480", "NVIDIA CUDA", "OpenCL 1.1 CUDA 4.2.1"}};
  sched::Configuration p;
  p.device_mask = 1;
  p.batch[0] = 1024;
  p.split[0] = 1;
  p.throughput_bps = 1e9;
  t.points.push_back(p);
  std::string path = tmp_path("table.json");
  REQUIRE(prof::save_table(path, t).is_ok());
  prof::Fingerprint here;
  here.app = "ipv4";
  here.devices = {{"pthread-AMD EPYC", "Portable Computing Language", "OpenCL 3.0 PoCL 3.1"}};
  auto r = prof::load_table(path, here);
  REQUIRE_FALSE(r.is_ok());
  CHECK(r.status().code() == Code::kInvalidArgument);
  CHECK_THAT(r.status().message(), Catch::Contains("devices[0].name"));
  CHECK_THAT(r.status().message(), Catch::Contains("allow_mismatch"));
  auto forced = prof::load_table(path, here, /*allow_mismatch=*/true);
  REQUIRE(forced.is_ok());
  CHECK(forced->points.size() == 1);
  // A table cut short on disk (the machine died while writing) is refused, not half-read.
  {
    std::ifstream in(path);
    std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::ofstream(path) << all.substr(0, all.size() / 2);
  }
  auto cut = prof::load_table(path, here, true);
  REQUIRE_FALSE(cut.is_ok());
  CHECK_THAT(cut.status().message(), Catch::Contains("not valid JSON"));
}

TEST_CASE("a power meter that stops answering returns an error naming the file, and resumes when it answers") {
  fs::path root = fs::temp_directory_path() / "hpr_faults_powercap";
  fs::remove_all(root);
  fs::path zone = root / "intel-rapl:0";
  fs::create_directories(zone);
  std::ofstream(zone / "name") << "package-0\n";
  std::ofstream(zone / "max_energy_range_uj") << "262143328850\n";
  std::ofstream(zone / "energy_uj") << "1000000\n";
  auto doms = prof::discover_rapl(root.string());
  REQUIRE(doms.is_ok());
  REQUIRE(doms->size() == 1);
  auto m = prof::open_rapl(doms->front());
  REQUIRE(m.is_ok());
  REQUIRE((*m)->read(1'000'000'000).is_ok());
  std::ofstream(zone / "energy_uj", std::ios::trunc);  // the sensor stops answering: empty reads
  auto r = (*m)->read(2'000'000'000);
  REQUIRE_FALSE(r.is_ok());
  CHECK_THAT(r.status().message(), Catch::Contains("energy_uj"));
  std::ofstream(zone / "energy_uj", std::ios::trunc) << "3000000\n";  // and comes back
  auto back = (*m)->read(3'000'000'000);
  REQUIRE(back.is_ok());
  CHECK(back->energy_uj == 2'000'000);

  // The daemon's power accounting over the same tree: it goes on, says so in the log, and counts the
  // energy of the silent interval once the meter answers again.
  LogCapture log;
  std::ofstream(zone / "energy_uj", std::ios::trunc) << "1000000\n";
  auto rp = RunPower::create({.rapl_root = root.string(), .use_nvml = false}, {{.name = "native0", .kind = "cpu"}},
                             1'000'000'000);
  REQUIRE(rp->source() == "rapl");
  std::ofstream(zone / "energy_uj", std::ios::trunc) << "2000000\n";
  CHECK(rp->sample({1.0}, 2'000'000'000).energy_j == Approx(1.0));
  std::ofstream(zone / "energy_uj", std::ios::trunc);  // silent for two samples
  rp->sample({1.0}, 3'000'000'000);
  rp->sample({1.0}, 4'000'000'000);
  CHECK(rp->failed_reads() == 2);
  std::ofstream(zone / "energy_uj", std::ios::trunc) << "5000000\n";
  CHECK(rp->sample({1.0}, 5'000'000'000).energy_j == Approx(4.0));  // 1 J before + 3 J across the gap
  std::string t = log.text();
  CHECK_THAT(t, Catch::Contains("stopped answering") && Catch::Contains("energy_uj"));
  CHECK_THAT(t, Catch::Contains("answers again"));
  fs::remove_all(root);
}
