// Several workers (issue 12): each a pipeline on its own core with its own flow table, fed by one reader that
// spreads the frames by flow hash (ports without RSS), summed into one summary.
#include <catch2/catch.hpp>
#include <map>
#include <set>
#include <thread>

#include <pthread.h>
#include <sched.h>

#include "runtime/ports/spread_port.hpp"
#include "tests/pipeline/pipeline_fixture.hpp"

using namespace hpr;
using namespace hpr::test;

namespace {

void two_workers(RunConfig& c) {
  c.workers = 2;
  c.devices = {"none"};
  c.native_lanes = 1;
}

Status config_error(RunConfig c) {
  if (Status v = validate(c); !v.is_ok()) return v;
  auto ctx = prepare_run(c);
  return ctx ? Status::ok() : ctx.status();
}

}  // namespace

TEST_CASE("two workers spread by flow hash forward every packet like the native reference") {
  if (cores_here().size() < 2) {
    WARN("fewer than 2 cores: nothing to test");
    return;
  }
  const char* cap = GENERATE("pcap/ndpi/443-chrome.pcap", "pcap/ndpi/skype.pcap", "pcap/ndpi/badpackets.pcap");
  INFO(cap);
  Summary s = check_against_reference("ipv4", data_path(cap), two_workers);
  REQUIRE(s.lanes.size() == 2);
  CHECK(s.lanes[0].name == "w0:native0");
  CHECK(s.lanes[1].name == "w1:native0");
  CHECK(s.rx_buffers_in_use == 0);
}

TEST_CASE("two workers write one result log: every digest and alert of a native pass, once") {
  if (cores_here().size() < 2) return;
  const char* app = GENERATE("md5", "dpi");
  INFO(app);
  Summary s = check_against_reference(app, data_path("pcap/ndpi/skype.pcap"), two_workers);  // checks the log
  REQUIRE(s.lanes.size() == 2);
  CHECK(s.lanes[0].packets > 0);
  CHECK(s.lanes[1].packets > 0);
}

TEST_CASE("two workers, each with a lane on every PoCL device and a native lane: output as the native reference") {
  if (cores_here().size() < 2) return;
  const char* app = GENERATE("ipv4", "md5", "ipv4,dpi,md5");  // aes: the test below; a chain shares a device too
  const bool share = GENERATE(true, false);   // lanes.share_devices on, or auto (CPU devices: an executor per lane)
  INFO(app << (share ? ", the device's executor shared" : ", an executor per lane"));
  Summary s = check_against_reference(app, data_path("pcap/ndpi/skype.pcap"), [&](RunConfig& c) {
    c.workers = 2;
    c.devices = {"all"};
    c.native_lanes = 1;
    c.share_devices = share ? "on" : "auto";
  });
  CHECK(s.rx_buffers_in_use == 0);
  // Each worker has its own lane on each device, named after the worker; the device lanes carried packets.
  REQUIRE(s.lanes.size() % 2 == 0);
  const size_t per = s.lanes.size() / 2;
  REQUIRE(per >= 2);
  uint64_t on_devices = 0;
  for (size_t i = 0; i < s.lanes.size(); ++i) {
    INFO(s.lanes[i].name << ": " << s.lanes[i].executor);
    CHECK(s.lanes[i].name.starts_with(i < per ? "w0:" : "w1:"));
    const bool device = s.lanes[i].name.find(":cl") != std::string::npos;
    if (device) on_devices += s.lanes[i].packets;
    CHECK((s.lanes[i].executor.find("shared by 2 workers") != std::string::npos) == (device && share));
  }
  CHECK(on_devices > 0);
  CHECK(s.lanes[per - 1].name == "w0:native0");
  // The learner's view: lane i of both workers together.
  const Summary f = s.lanes_by_index(per);
  REQUIRE(f.lanes.size() == per);
  CHECK(f.lanes[per - 1].name == "native0");
  CHECK(f.lanes[per - 1].packets == s.lanes[per - 1].packets + s.lanes[2 * per - 1].packets);
}

TEST_CASE(
    "a shared device that fails: every worker's lane on it leaves, its packets re-routed, output as the reference") {
  if (cores_here().size() < 2) return;
  // One executor on `pthread` for both workers: its 6th launch fails, and both workers' lanes on it fail with it.
  // Each takes back its own batches that were not done and re-routes them (to its native lane). 20,000 packets: the
  // input cannot end before the device fails.
  EnvVar fault("HPR_FAULT_CL", "enqueue:6@pthread");
  const std::string gen = generated_capture("workers_shared_fail.pcap", 29, {"cmd.exe"}, 20000);
  const char* app = GENERATE("ipv4", "md5", "dpi,md5");
  INFO(app);
  Summary s = check_against_reference(app, gen, [](RunConfig& c) {
    c.workers = 2;
    c.devices = {"pthread"};
    c.native_lanes = 1;
    c.batch = 16;
    c.share_devices = "on";
  });
  CHECK(s.lane_failures == 2);
  REQUIRE(s.lanes.size() == 4);
  for (size_t i : {0, 2}) {
    INFO(s.lanes[i].name);
    CHECK(s.lanes[i].executor.find("shared by 2 workers") != std::string::npos);
    CHECK(s.lanes[i].failure.find("clEnqueueNDRangeKernel") != std::string::npos);
  }
  CHECK(s.lanes[1].packets > 0);
  CHECK(s.lanes[3].packets > 0);
}

TEST_CASE("two workers shape by flow, each its own flows: books balanced, packets delayed, nothing left waiting") {
  if (cores_here().size() < 2) return;
  RunConfig c = base_config();
  two_workers(c);
  c.input = {.kind = "generator", .gen_packets = 20000, .gen_flows = 64};
  c.output = {.kind = "null"};
  c.backpressure = true;
  c.shaping.enabled = true;
  c.shaping.by = ShapeBy::kFlow;
  c.shaping.rate_bytes_per_s = 2'000'000;  // 64 flows × 2 MB/s: the generator's unpaced traffic waits
  c.shaping.burst_bytes = 16384;
  Summary s = run_to_end(c);
  check_books(s);
  CHECK(s.rx_packets == 20000);
  CHECK(s.shaping);
  CHECK(s.shaper_delayed > 0);
  CHECK(s.shaper_waiting == 0);
  REQUIRE(s.lanes.size() == 2);
  CHECK(s.lanes[0].packets > 0);
  CHECK(s.lanes[1].packets > 0);
}

TEST_CASE("aes with two workers: each worker's flows encrypted as a native pass over them, from its counter range") {
  if (cores_here().size() < 2) return;
  const std::string in = data_path("pcap/ndpi/skype.pcap");
  const std::string out = tmp_path("aes_workers_out.pcap");
  RunConfig c = pcap_config("aes", in, out);
  two_workers(c);
  // With device lanes too: each worker's lanes on the PoCL devices carry that worker's keys (its own flow ids).
  c.devices = {GENERATE("none", "all")};
  INFO(c.devices[0]);
  Summary s = run_to_end(c);
  check_books(s);
  // The reference: the frames of each worker (split as the reader spreads them), a native pass each with an app
  // whose IV counters start where that worker's do (base_config's start 0, + w × 2^48).
  const std::vector<std::string> parts = {tmp_path("aes_part0.pcap"), tmp_path("aes_part1.pcap")};
  REQUIRE(split_capture_by_flow(in, parts).is_ok());
  std::vector<std::vector<uint8_t>> want;
  uint64_t dropped = 0;
  for (uint64_t w = 0; w < 2; ++w) {
    auto part = load_capture(parts[w]);
    REQUIRE(part.is_ok());
    auto o = c.app_opts;
    o.key_capacity = c.flow_capacity;
    o.max_frame_bytes = c.max_frame;
    o.iv_counter_start = w << 48;
    auto app = kernels::make_app("aes", o);
    REQUIRE(app.is_ok());
    Reference ref = native_reference(**app, *part, c);
    want.insert(want.end(), ref.out.begin(), ref.out.end());
    dropped += ref.dropped;
  }
  auto got = load_capture(out);
  REQUIRE(got.is_ok());
  CHECK(s.dropped == dropped);
  CHECK(sorted(got->frames) == sorted(want));
}

TEST_CASE("both workers get flows, and every flow stays on one worker in both directions") {
  const std::string in = data_path("pcap/ndpi/skype.pcap");
  const std::vector<std::string> out = {tmp_path("split0.pcap"), tmp_path("split1.pcap")};
  REQUIRE(split_capture_by_flow(in, out).is_ok());
  std::map<std::vector<uint8_t>, std::set<int>> where;  // canonical key bytes → the files it is in
  size_t frames = 0;
  for (int w = 0; w < 2; ++w) {
    auto cap = load_capture(out[w]);
    REQUIRE(cap.is_ok());
    CHECK(cap->size() > 0);
    frames += cap->size();
    for (auto f : cap->frames) {
      Packet p;
      p.data = f.data();
      p.len = static_cast<uint16_t>(f.size());
      if (parse(p) != DropReason::kNone || (p.l3 != L3::kIPv4 && p.l3 != L3::kIPv6)) continue;
      FlowKey k = flow_key(p).canonical();
      auto* b = reinterpret_cast<const uint8_t*>(&k);
      where[std::vector<uint8_t>(b, b + sizeof k)].insert(w);
    }
  }
  auto all = load_capture(in);
  REQUIRE(all.is_ok());
  CHECK(frames == all->size());
  CHECK(where.size() > 1);
  for (const auto& [key, files] : where) CHECK(files.size() == 1);
}

TEST_CASE("workers stopped mid-run lose nothing the reader took in") {
  if (cores_here().size() < 2) return;
  const bool backpressure = GENERATE(true, false);
  RunConfig c = base_config();
  two_workers(c);
  c.input = {.kind = "generator", .gen_packets = 0, .gen_flows = 2000};  // unpaced, endless
  c.output = {.kind = "null"};
  c.backpressure = backpressure;
  c.duration_s = 0.3;
  Summary s = run_to_end(c);
  check_books(s);
  CHECK(s.rx_packets > 0);
  CHECK(s.rx_buffers_in_use == 0);
  REQUIRE(s.lanes.size() == 2);
  CHECK(s.lanes[0].packets > 0);
  CHECK(s.lanes[1].packets > 0);
}

TEST_CASE("worker settings that cannot work are refused, naming the setting") {
  RunConfig c = base_config();
  c.input = {.kind = "generator", .gen_packets = 100};
  two_workers(c);
  const std::string core = std::to_string(cores_here().at(0));
  SECTION("more workers than cores") {
    c.cores = {core};
    CHECK_THAT(config_error(c).message(), Catch::Contains("lanes.workers") && Catch::Contains("1 cores are named"));
  }
  SECTION("a core twice, a core that is not a number, a core not here") {
    c.cores = {core, core};
    CHECK_THAT(config_error(c).message(), Catch::Contains("lanes.cores") && Catch::Contains("named twice"));
    c.cores = {core, "x"};
    CHECK_THAT(config_error(c).message(), Catch::Contains("lanes.cores") && Catch::Contains("'x'"));
    c.cores = {core, "9999"};
    CHECK_THAT(config_error(c).message(), Catch::Contains("lanes.cores") && Catch::Contains("9999"));
  }
  SECTION("shaping by port or class, several native lanes, threads") {
    c.shaping.enabled = true;
    c.shaping.by = ShapeBy::kPort;
    c.shaping.rate_bytes_per_s = 1'000'000;
    c.shaping.burst_bytes = 16384;
    CHECK_THAT(config_error(c).message(), Catch::Contains("shaper.by: port") && Catch::Contains("shaper.by = flow"));
    c.shaping.enabled = false;
    c.native_lanes = 2;
    CHECK_THAT(config_error(c).message(), Catch::Contains("lanes.native"));
    c.native_lanes = 1;
    c.run_to_completion_given = true;
    c.run_to_completion = false;
    CHECK_THAT(config_error(c).message(), Catch::Contains("lanes.run_to_completion"));
  }
  SECTION("zero workers") {
    c.workers = 0;
    CHECK_THAT(config_error(c).message(), Catch::Contains("lanes.workers"));
  }
}

TEST_CASE("the core budget: workers on the first cores, the control thread on the next one, or not pinned") {
  const std::vector<int> cores = cores_here();
  if (cores.size() < 2) return;
  RunConfig c = base_config();
  c.devices = {"none"};
  c.native_lanes = 1;
  c.input = {.kind = "generator", .gen_packets = 500, .gen_flows = 20, .gen_seed = 3};
  c.output = {.kind = "null"};
  // The calling thread's cores once run() has returned (on a thread of its own: it may be pinned).
  auto control_cores_after_run = [](RunContext& ctx) {
    std::vector<int> got;
    std::thread t([&] {
      (void)ctx.pipeline->run();
      cpu_set_t set;
      CPU_ZERO(&set);
      REQUIRE(pthread_getaffinity_np(pthread_self(), sizeof set, &set) == 0);
      for (int i = 0; i < CPU_SETSIZE; ++i)
        if (CPU_ISSET(i, &set)) got.push_back(i);
    });
    t.join();
    return got;
  };
  SECTION("a core left over: the control thread's") {
    c.workers = 1;
    c.cores = {std::to_string(cores[1]), std::to_string(cores[0])};
    auto ctx = prepare_run(c);
    REQUIRE(ctx);
    CHECK((*ctx)->budget == fmt::format("worker on core {}; control thread on core {}", cores[1], cores[0]));
    CHECK(control_cores_after_run(**ctx) == std::vector<int>{cores[0]});
  }
  SECTION("every core has a worker: the control thread keeps the process's cores") {
    c.workers = 2;
    c.cores = {std::to_string(cores[0]), std::to_string(cores[1])};
    auto ctx = prepare_run(c);
    REQUIRE(ctx);
    CHECK_THAT((*ctx)->budget, Catch::StartsWith(fmt::format("workers 2 on cores {},{}; control thread not pinned",
                                                             cores[0], cores[1])));
    CHECK(control_cores_after_run(**ctx) == cores);
  }
}
