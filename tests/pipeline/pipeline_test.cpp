#include <catch2/catch.hpp>
#include <fstream>
#include <functional>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

#include "kernels/ipv4/routes.hpp"
#include "kernels/registry.hpp"
#include "pipeline/settings.hpp"
#include "tests/pipeline/pipeline_fixture.hpp"

using namespace hpr;
using namespace hpr::test;

namespace {
const char* kCaptures[] = {"pcap/ndpi/443-chrome.pcap", "pcap/ndpi/dns_doh.pcap", "pcap/ndpi/skype.pcap",
                           "pcap/ndpi/badpackets.pcap", "pcap/ndpi/6in4tunnel.pcap", "pcap/ndpi/webex.pcap"};

}  // namespace

TEST_CASE("pcap to pcap: every app's output equals the native reference, on both devices and a native lane") {
  for (std::string app : {"ipv4", "dpi", "md5", "aes"})
    for (const char* cap_name : kCaptures) {
      DYNAMIC_SECTION(app << " " << cap_name) { check_against_reference(app, data_path(cap_name)); }
    }
}

TEST_CASE("generator traffic: every app's output equals the native reference, on both devices and a native lane") {
  const std::string gen = generated_capture("generated.pcap", 12, {"Volume Serial Number", "cmd.exe", "/etc/passwd"});
  for (std::string app : {"ipv4", "dpi", "md5", "aes"}) {
    DYNAMIC_SECTION(app) { check_against_reference(app, gen); }
  }
}

TEST_CASE(
    "a device run as discrete (kind dgpu: pinned staging, copies of the used bytes) equals the native reference") {
  for (std::string app : {"ipv4", "dpi", "md5", "aes"})
    for (const char* cap_name : {"pcap/ndpi/skype.pcap"}) {
      DYNAMIC_SECTION(app << " " << cap_name) {
        Summary s = check_against_reference(app, data_path(cap_name), [](RunConfig& c) {
          c.devices = {"basic"};
          c.kinds = {{"basic", DeviceKind::kDiscreteGpu}};
          c.native_lanes = 0;  // every packet through the copy path
        });
        REQUIRE(s.lanes.size() == 1);
        CHECK(s.lanes[0].executor == "opencl (copied)");
        CHECK(s.lanes[0].packets > 0);
      }
    }
}

// One native lane, no device, run to completion: the in-place worker path (pipeline/worker.cpp).
static void worker_path(RunConfig& c) {
  c.devices = {"none"};
  c.native_lanes = 1;
  c.run_to_completion = true;
}
static bool took_worker_path(const Summary& s) {
  return s.lanes.size() == 1 && s.lanes[0].executor == "native, in place on the rx burst";
}

TEST_CASE("TTL exceeded: dropped, counted, and answered with ICMP Time Exceeded by the host") {
  RunConfig c = base_config();
  const bool worker = GENERATE(false, true);
  INFO((worker ? "in-place worker path" : "lanes"));
  if (worker) worker_path(c);
  // With IPv6 routes, half the flows IPv6: hop limit 1 is answered with ICMPv6 Time Exceeded from app.router_addr6.
  const bool v6 = GENERATE(false, true);
  INFO((v6 ? "IPv4 and IPv6" : "IPv4"));
  if (v6) {
    c.app_opts.routes = tmp_path("routes46.txt");
    FILE* f = std::fopen(c.app_opts.routes.c_str(), "w");
    std::fputs("0.0.0.0/0 1\n::/0 2\n", f);
    std::fclose(f);
  }
  std::string out = tmp_path("ttl_out.pcap");
  c.input = {.kind = "generator", .gen_packets = 2000, .gen_flows = 50, .gen_sizes = "fixed:200", .gen_seed = 8,
             .gen_ttl_low_share = 0.1, .gen_ipv6_share = v6 ? 0.5 : 0.0};
  c.output = {.kind = "pcap", .pcap = out};
  Summary s;
  {
    auto ctx = prepare_run(c);
    REQUIRE(ctx.is_ok());
    s = (*ctx)->pipeline->run();
  }
  check_books(s);
  CHECK(took_worker_path(s) == worker);
  // Every frame that left is either forwarded (TTL 63 from 64) or an ICMP from the router address.
  auto got = load_capture(out);
  REQUIRE(got.is_ok());
  CHECK(got->size() == s.tx_packets + s.host_frames);
  uint64_t ttl_drops = 0;
  for (const auto& [r, n] : s.drops)
    if (r == "ttl_exceeded") ttl_drops = n;
  CHECK(ttl_drops > 100);
  CHECK(s.host_frames == ttl_drops);
  size_t icmp = 0, icmp6 = 0, forwarded6 = 0;
  for (auto& f : got->frames) {
    Packet p = {};
    p.data = f.data();
    p.len = static_cast<uint16_t>(f.size());
    REQUIRE(parse(p) == DropReason::kNone);  // checksums right
    if (p.l3 == L3::kIPv6) {
      if (p.l4 == 58) {
        ++icmp6;
        CHECK(f[p.l4_off] == 3);  // ICMPv6 Time Exceeded
        auto want = kernels::ipv4::Ipv6Addr{};
        REQUIRE(kernels::ipv4::parse_ipv6("2001:db8::1", want));
        CHECK(std::equal(want.begin(), want.end(), f.begin() + p.l3_off + 8));
      } else {
        ++forwarded6;
        CHECK(f[p.l3_off + 7] == 63);  // forwarded: hop limit 64 - 1
      }
    } else if (p.l4 == 1) {
      ++icmp;
      CHECK(f[p.l4_off] == 11);                            // Time Exceeded
      CHECK(std::equal(f.begin() + p.l3_off + 12, f.begin() + p.l3_off + 16, std::begin({192, 0, 2, 1})) );
    } else {
      CHECK(f[p.l3_off + 8] == 63);                        // forwarded: TTL 64 - 1
    }
  }
  CHECK(icmp + icmp6 == ttl_drops);
  CHECK((icmp6 > 0) == v6);
  CHECK((forwarded6 > 0) == v6);
}

TEST_CASE("a router address that does not parse is refused, naming the setting") {
  RunConfig c = base_config();
  c.router_addr6 = "2001:db8::zz";
  auto ctx = prepare_run(c);
  REQUIRE_FALSE(ctx.is_ok());
  CHECK_THAT(ctx.status().message(), Catch::Contains("app.router_addr6") && Catch::Contains("2001:db8::zz"));
}

TEST_CASE("aes: every flow of a flow table whose capacity is not a power of two has its key") {
  // The FlowTable rounds 5 up to 8 slots; the key table had 5, so flows in slots 5..7 dropped as key_missing.
  // A key epoch given: the summary shows it as app.key_epoch.
  RunConfig c = base_config();
  c.app = "aes";
  c.app_opts.master_key = "000102030405060708090a0b0c0d0e0f";
  c.devices = {"none"};
  c.flow_capacity = 5;
  c.input = {.kind = "generator", .gen_packets = 800, .gen_flows = 8, .gen_sizes = "fixed:200", .gen_seed = 3};
  c.output = {.kind = "null"};
  Summary s = run_to_end(c);
  check_books(s);
  INFO(s.to_text());
  CHECK(s.flows_seen == 8);
  CHECK(s.dropped == 0);
  CHECK(s.events == 800);
  CHECK_THAT(s.to_json(), Catch::Contains("\"key_epoch\": \"00112233445566778899aabbccddeeff\""));
}

TEST_CASE("two devices and a native lane with Zipf traffic: no reorder, books balance") {
  RunConfig c = base_config();
  c.input = {.kind = "generator", .gen_packets = 200000, .gen_flows = 5000, .gen_zipf = 1.2, .gen_sizes = "imix", .gen_seed = 3};
  c.output = {.kind = "null"};
  c.native_lanes = 1;
  Summary s = run_to_end(c);
  check_books(s);
  CHECK(s.rx_packets == 200000);
  REQUIRE(s.lanes.size() == 3);
  for (const auto& l : s.lanes) CHECK(l.packets > 0);
}

TEST_CASE("every balancer policy runs in the daemon without reordering") {
  for (std::string pol : {"rr", "crc16", "crc32", "hrw", "whrw", "ahrw", "subflow", "fcfs", "afs", "laps"}) {
    DYNAMIC_SECTION(pol) {
      RunConfig c = base_config();
      c.balancer = pol;
      c.input = {.kind = "generator", .gen_packets = 40000, .gen_flows = 500, .gen_zipf = 1.1, .gen_sizes = "imix", .gen_seed = 9};
      c.output = {.kind = "null"};
      c.native_lanes = 2;
      Summary s = run_to_end(c);
      check_books(s);
      CHECK(s.rx_packets == 40000);
    }
  }
}

TEST_CASE("changing lane weights mid-run moves new flows without reordering") {
  RunConfig c = base_config();
  c.input = {.kind = "generator", .gen_packets = 0, .gen_flows = 3000, .gen_sizes = "fixed:64", .gen_seed = 2};
  c.output = {.kind = "null"};
  c.devices = {"none"};
  c.native_lanes = 3;
  c.max_batch = 512;
  c.batch_timeout_us = 2'000'000;  // batches close at their size (or at the stop), never by time: the check below
                                   // must not depend on how fast a loaded or sanitized machine generates
  c.native_run_what_arrived = false;  // nor when a native lane's queue runs empty
  auto ctx = prepare_run(c);
  REQUIRE(ctx.is_ok());
  Pipeline* p = (*ctx)->pipeline.get();
  CHECK_FALSE(p->set_lane_weights({1, 2}).is_ok());
  std::thread ctl([p] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    REQUIRE(p->set_lane_weights({0, 1, 1}).is_ok());  // take lane 0 out for new flows
    p->set_lane_batch(1, 512);
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    p->request_stop();
  });
  Summary s = p->run();
  ctl.join();
  check_books(s);
  CHECK(s.lanes[1].mean_batch > 64);
}

TEST_CASE("run to completion: weights that give every flow to one native lane run it in place; others switch back") {
  RunConfig c = base_config();
  c.input = {.kind = "generator", .gen_packets = 0, .gen_flows = 500, .gen_sizes = "fixed:128", .gen_seed = 3};
  c.output = {.kind = "null"};
  c.devices = {"none"};
  c.native_lanes = 2;
  c.run_to_completion = true;
  c.run_to_completion_given = true;
  auto ctx = prepare_run(c);
  REQUIRE(ctx.is_ok());
  Pipeline* p = (*ctx)->pipeline.get();
  auto in_place = [p](size_t lane) {
    return p->snapshot().lanes.at(lane).executor == "native, in place on the rx burst";
  };
  // Waits for a condition the dispatcher reaches by itself (no time bound: a loaded machine is only slower).
  auto wait_for = [](auto cond) {
    while (!cond()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  };
  bool saw_in_place = false, saw_back = false;
  uint64_t lane0_before = 0;
  std::thread ctl([&] {
    wait_for([&] { return p->snapshot().lanes.at(0).packets > 1000; });
    CHECK_FALSE(in_place(0));
    REQUIRE(p->set_lane_weights({0, 1}).is_ok());  // every new flow to lane 1: the lanes drain, then lane 1 in place
    wait_for([&] { return in_place(1); });
    saw_in_place = true;
    lane0_before = p->snapshot().lanes.at(0).packets;
    REQUIRE(p->set_lane_weights({1, 1}).is_ok());  // both again: lane path, lane 0 gets flows again
    wait_for([&] { return p->snapshot().lanes.at(0).packets > lane0_before + 1000; });
    saw_back = !in_place(1);
    p->request_stop();
  });
  Summary s = p->run();
  ctl.join();
  check_books(s);  // no reorder across both switches: egress expects the sequence numbers the worker path used
  CHECK(saw_in_place);
  CHECK(saw_back);
}

TEST_CASE("a flow that is never idle still moves lane, its new packets held until the old lane sent the older") {
  // Four flows, unpaced: each always has packets in flight, so without holding none could ever move.
  RunConfig c = base_config();
  c.input = {.kind = "generator", .gen_packets = 0, .gen_flows = 4, .gen_sizes = "fixed:64", .gen_seed = 3};
  c.output = {.kind = "null"};
  c.devices = {"none"};
  c.native_lanes = 2;
  c.lane_weights = {{"native0", 1}, {"native1", 0}};
  // Lane 0 takes 2 ms a batch: its queue stays full (back-pressure), so when the weights change every flow has
  // packets in flight there, however fast or slow the machine (a sanitizer build) runs the rest.
  c.slow_lane_us = {{"native0", 2000}};
  c.run_to_completion = GENERATE(false, true);
  c.run_to_completion_given = true;
  auto ctx = prepare_run(c);
  REQUIRE(ctx.is_ok());
  Pipeline* p = (*ctx)->pipeline.get();
  std::thread ctl([p] {
    // Each step waits for what it changed to show (not for a time: a sanitizer build is many times slower).
    auto until = [p](auto done) {
      for (int i = 0; i < 6000 && !done(p->snapshot()); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    };
    until([](const Summary& s) { return s.lanes[0].packets > 1000; });
    (void)p->set_lane_weights({0, 1});
    until([](const Summary& s) { return s.lanes[1].packets > 1000; });
    (void)p->set_lane_weights({1, 0});
    uint64_t back = p->snapshot().lanes[0].packets;
    until([back](const Summary& s) { return s.lanes[0].packets > back + 1000; });
    p->request_stop();
  });
  Summary s = p->run();
  ctl.join();
  check_books(s);
  INFO("run to completion " << c.run_to_completion);
  CHECK(s.reorders == 0);
  CHECK(s.lanes[1].packets > 1000);
  REQUIRE(s.balance.has_value());
  if (!c.run_to_completion) {
    CHECK(s.move_held > 0);
    CHECK(s.balance->moves >= 4);
  }
  // Run to completion: lanes drain between bursts, and lane 1 alone runs in place (the worker path), which moves
  // the flows without the balancer.
}

TEST_CASE("run to completion: flows move between a native lane run in place and a device lane, never reordered") {
  // native0 runs in place on the dispatcher (run_direct, lane_in_place); the pthread device's batches complete
  // asynchronously, so its flows have packets in flight when the weights change under them: moving them to native0
  // holds their new packets, which then go through native0's queue ahead of the burst's direct packets.
  RunConfig c = base_config();
  c.input = {.kind = "generator", .gen_packets = 0, .gen_flows = 64, .gen_sizes = "fixed:64", .gen_seed = 3};
  c.output = {.kind = "null"};
  c.devices = {"pthread"};
  c.native_lanes = 1;
  c.adapt_static = true;
  c.run_to_completion = true;
  c.run_to_completion_given = true;
  auto ctx = prepare_run(c);
  REQUIRE(ctx.is_ok());
  Pipeline* p = (*ctx)->pipeline.get();
  REQUIRE(p->snapshot().lanes.size() == 2);
  std::thread ctl([p] {
    auto until = [p](auto done) {
      for (int i = 0; i < 6000 && !done(p->snapshot()); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    };
    for (int k = 0; k < 8; ++k) {
      (void)p->set_lane_weights(k % 2 == 0 ? std::vector<float>{4, 1} : std::vector<float>{1, 4});
      const Summary b = p->snapshot();
      until([&b](const Summary& s) {
        return s.lanes[0].packets > b.lanes[0].packets + 500 && s.lanes[1].packets > b.lanes[1].packets + 500;
      });
    }
    p->request_stop();
  });
  Summary s = p->run();
  ctl.join();
  check_books(s);
  CHECK(s.reorders == 0);
  CHECK(s.lanes[1].executor == "native, in place on its queue's packets");
  CHECK(s.lanes[0].executor == "opencl (mapped)");
  CHECK(s.lanes[0].packets > 1000);
  CHECK(s.lanes[1].packets > 1000);
  CHECK(s.move_held > 0);
  REQUIRE(s.balance.has_value());
  CHECK(s.balance->moves > 0);
}

TEST_CASE("egress shaping delays packets per flow without losing or reordering them") {
  RunConfig c = base_config();
  c.input = {.kind = "generator", .gen_packets = 3000, .gen_flows = 20, .gen_sizes = "fixed:1000", .gen_seed = 4};
  c.output = {.kind = "null"};
  c.max_frame = 4096;  // the 4096-byte buckets hold the largest frame
  c.shaping = {.enabled = true,
               .by = ShapeBy::kFlow,
               .rate_bytes_per_s = 2'000'000,
               .burst_bytes = 4096,
               .queue_packets = 4095,
               .waiting_packets = 8192};
  Summary s = run_to_end(c);
  check_books(s);
  CHECK(s.shaping);
  CHECK(s.shaper_delayed > 0);
  CHECK(s.shaper_reschedules > 0);
  CHECK(s.tx_packets == 3000);
}

TEST_CASE("packets still shaped when the drain timeout runs out are counted, not lost") {
  RunConfig c = base_config();
  c.input = {.kind = "generator", .gen_packets = 2000, .gen_flows = 4, .gen_sizes = "fixed:1000", .gen_seed = 4};
  c.output = {.kind = "null"};
  c.max_frame = 4096;  // the 4096-byte buckets hold the largest frame
  c.shaping = {.enabled = true,
               .by = ShapeBy::kPort,
               .rate_bytes_per_s = 100'000,
               .burst_bytes = 4096,
               .queue_packets = 4095,
               .waiting_packets = 4096,
               .drain_timeout_ns = 200'000'000};
  Summary s = run_to_end(c);
  check_books(s);
  uint64_t drained = 0;
  for (const auto& [r, n] : s.drops)
    if (r == "shaper_drain") drained = n;
  CHECK(drained > 0);
}

TEST_CASE("a lane that fails mid-run leaves the set; its packets go to the others, none lost or reordered") {
  RunConfig c = base_config();
  c.input = {.kind = "generator", .gen_packets = 100000, .gen_flows = 2000, .gen_zipf = 1.0, .gen_sizes = "imix", .gen_seed = 5};
  c.output = {.kind = "null"};
  c.native_lanes = 2;
  c.fail_after = {{"basic", 20}, {"native1", 50}};
  Summary s = run_to_end(c);
  check_books(s);
  CHECK(s.lane_failures == 2);
  CHECK(s.rx_packets == 100000);
  int removed = 0;
  for (const auto& l : s.lanes) removed += l.state == "removed";
  CHECK(removed == 2);
  // Nothing was dropped for lack of a lane or room: only the app's own verdicts.
  for (const auto& [r, n] : s.drops) CHECK((r == "no_route" || r == "ttl_exceeded"));
}

TEST_CASE("stop requested mid-run (as on SIGTERM) drains everything in flight: books balance") {
  RunConfig c = base_config();
  const bool worker = GENERATE(false, true);
  INFO((worker ? "in-place worker path" : "lanes"));
  if (worker) worker_path(c);
  // A third with TTL 1: the app drops them (and answers with ICMP), their buffers go back where they leave.
  c.input = {.kind = "generator", .gen_packets = 0, .gen_flows = 1000, .gen_sizes = "fixed:64", .gen_ttl_low_share = 0.3};
  c.output = {.kind = "null"};
  auto ctx = prepare_run(c);
  REQUIRE(ctx.is_ok());
  Pipeline* p = (*ctx)->pipeline.get();
  std::thread stopper([p] {
    std::this_thread::sleep_for(std::chrono::milliseconds(400));
    p->request_stop();
  });
  Summary s = p->run();
  stopper.join();
  check_books(s);
  CHECK(s.rx_packets > 0);
  CHECK(took_worker_path(s) == worker);
  uint64_t ttl = 0;
  for (const auto& [r, n] : s.drops)
    if (r == "ttl_exceeded") ttl = n;
  CHECK(ttl > 0);
  CHECK(s.rx_buffers_in_use == 0);
  CHECK(p->descriptors_in_use() == 0);
}

TEST_CASE("overload: a generator faster than the lanes gets queue_full drops, counted by lane queue, and the run goes on") {
  RunConfig c = base_config();
  c.input = {.kind = "generator", .gen_packets = 300000, .gen_flows = 1000, .gen_sizes = "fixed:64"};
  c.output = {.kind = "null"};
  c.backpressure = false;
  c.queue = 64;
  c.devices = {"none"};
  c.native_lanes = 1;
  c.batch = 32;
  Summary s = run_to_end(c);
  check_books(s);
  uint64_t qf = 0;
  for (const auto& [r, n] : s.drops)
    if (r == "queue_full") qf = n;
  CHECK(qf > 0);
  CHECK(s.tx_packets > 0);
  REQUIRE(s.lanes.size() == 1);
  CHECK(s.lanes[0].queue_full == qf);  // the summary says which lane's queue was full
  CHECK(s.rx_buffers_in_use == 0);     // every buffer of the bounded pool came back
}

TEST_CASE("backpressure off: a paced generator is a line-rate port; what hpr cannot take in time is port_missed") {
  RunConfig c = base_config();
  // 100 kpps for 0.5 s, one thread for everything (run to completion) and a lane that sleeps 20 ms a batch: the
  // thread is away from the port too long for the port to hold what is due, so the rest is missed.
  c.input = {.kind = "generator", .gen_packets = 0, .gen_flows = 100, .gen_sizes = "fixed:64",
             .gen_rate_steps = "0.5:100000"};
  c.output = {.kind = "null"};
  c.backpressure = false;
  c.devices = {"none"};
  c.native_lanes = 1;
  c.batch = 32;
  c.slow_lane_us = {{"native", 20000}};
  c.run_to_completion = true;
  c.run_to_completion_given = true;
  Summary s = run_to_end(c);
  check_books(s);
  INFO(s.to_text());
  CHECK(s.port_missed > 0);
  // Every packet offered was received or missed (before, the generator owed them and the run lasted ~15 s).
  CHECK(s.rx_packets + s.port_missed == 50000);
}

TEST_CASE("the host threads' busy time is measured beside the lanes' (the power model counts it)") {
  RunConfig c = base_config();
  c.input = {.kind = "generator", .gen_packets = 20000, .gen_flows = 100, .gen_sizes = "fixed:128"};
  c.output = {.kind = "null"};
  c.devices = {"none"};
  c.native_lanes = 2;  // the dispatcher path (the worker path's time is its lane's)
  c.run_to_completion = false;
  c.run_to_completion_given = true;
  Summary s = run_to_end(c);
  check_books(s);
  CHECK(s.dispatch_busy_s > 0);
  CHECK(s.egress_busy_s > 0);
  CHECK(s.dispatch_busy_s <= s.seconds);
  CHECK(s.egress_busy_s <= s.seconds);
}

// One thread does everything, so its busy times, each counted once, add up to no more than the run (the power model
// adds them as busy cores). The in-place lanes' share of each burst (run_direct) was counted as the dispatcher's too.
TEST_CASE("run to completion: the dispatcher's busy time leaves out the in-place lanes' (no core counted twice)") {
  RunConfig c = base_config();
  c.app = "md5";  // the lanes' work is most of the run's time, so counting it twice would pass the run's length
  c.input = {.kind = "generator", .gen_packets = 100000, .gen_flows = 100, .gen_sizes = "fixed:1500"};
  c.output = {.kind = "null"};
  c.devices = {"none"};
  c.native_lanes = 2;  // several lanes: dispatch_burst, each native lane in place (run_direct)
  c.run_to_completion = true;
  c.run_to_completion_given = true;
  Summary s = run_to_end(c);
  check_books(s);
  INFO(s.to_text());
  double lanes = 0;
  for (const auto& l : s.lanes) {
    CHECK(l.executor == "native, in place on its queue's packets");
    lanes += l.utilisation * s.seconds;
  }
  CHECK(lanes > 0);
  CHECK(s.dispatch_busy_s > 0);
  CHECK(s.dispatch_busy_s + s.egress_busy_s + lanes <= s.seconds);
}

TEST_CASE("the generator offers the Holt-Winters rate of LAPS Table IV; a wrong model name is refused") {
  RunConfig c = base_config();
  c.input = {.kind = "generator",
             .gen_packets = 0,
             .gen_flows = 200,
             .gen_sizes = "fixed:128",
             .gen_seed = 4,
             .gen_rate_model = "laps-set1",
             .gen_rate_scale = 0.01};  // 4 services, ~36 kpps in all
  c.devices = {"none"};
  c.duration_s = 0.5;
  Summary s = run_to_end(c);
  check_books(s);
  CHECK(s.rx_packets > 0);
  CHECK(s.rx_packets < 100'000);  // paced: far below what an unpaced generator sends in 0.5 s
  c.input.gen_rate_model = "holt";
  auto r = prepare_run(c);
  REQUIRE_FALSE(r.is_ok());
  CHECK_THAT(r.status().message(), Catch::Contains("input.rate_model: 'holt' is not laps-set1 or laps-set2"));
}

TEST_CASE("static lane weights: a lane of weight 0 takes no flow, the others share them") {
  RunConfig c = base_config();
  c.input = {.kind = "generator", .gen_packets = 20000, .gen_flows = 500, .gen_sizes = "fixed:128", .gen_seed = 3};
  c.devices = {"none"};
  c.native_lanes = 3;
  c.lane_weights = {{"native1", 0}};
  Summary s = run_to_end(c);
  check_books(s);
  REQUIRE(s.lanes.size() == 3);
  CHECK(s.lanes[0].packets > 0);
  CHECK(s.lanes[1].packets == 0);
  CHECK(s.lanes[2].packets > 0);
  REQUIRE(s.balance.has_value());  // the final summary carries the balancer's counters
  CHECK(s.balancer == c.balancer);
}

TEST_CASE("the input's buffers hold what the lanes can hold at once: known answers (ports.buffers)") {
  RunConfig c;  // batch 256, in_flight 2, one native lane
  CHECK(input_buffers(c, 2, 1, 8191) == 8191);  // 2*3*256 + 2*256 + 2048 = 4096: the port's own default
  c.batch = 8192;
  c.native_lanes = 0;
  CHECK(input_buffers(c, 1, 1, 8191) == 3 * 8192 + 2048);  // one device lane: two batches in flight, one filling
  c.native_lanes = 1;
  c.max_batch = 8192;  // learning's bound is the largest batch
  c.batch = 256;
  CHECK(input_buffers(c, 1, 1, 16384) == 3 * 8192 + 2 * 8192 + 2048);
  CHECK(input_buffers(c, 2, 16, 8191) == kMaxAutoBuffers);  // within the EAL's default memory
  // Learning on a discrete GPU goes further (hpr run sets max_batch_discrete): its lane's batches, the others' as before.
  c.max_batch = 4096;
  c.max_batch_discrete = 16384;
  CHECK(lane_max_batch(c, false) == 4096);
  CHECK(lane_max_batch(c, true) == 16384);
  // Its buffers are for the batch it starts at (8,192), not its bound: more buffers wait and ran slower on an H200.
  CHECK(lane_start_batch(c, true) == kLearnStartBatchDiscrete);
  CHECK(lane_start_batch(c, false) == c.batch);
  CHECK(input_buffers(c, 1, 1, 8191, 1) == 3 * 8192 + 2 * 4096 + 2048);
  CHECK(input_buffers(c, 2, 1, 8191, 1) == 3 * 8192 + 3 * 4096 + 2 * 4096 + 2048);
  CHECK(input_buffers(c, 4, 1, 8191, 4) == kMaxAutoBuffers);  // 4 * 3 * 8192 + 2 * 4096 + 2048 is above it
  c.batch = 12288;  // a larger lanes.batch is the start
  CHECK(lane_start_batch(c, true) == 12288);
  c.batch = 256;
  CHECK(input_buffers(c, 2, 1, 8191) == 2 * 3 * 4096 + 2 * 4096 + 2048);  // no discrete GPU: no change
  c.max_batch_discrete = 0;
  CHECK(lane_max_batch(c, true) == 4096);
  c.buffers = 5000;  // given: taken as it is
  CHECK(input_buffers(c, 2, 16, 8191) == 5000);
}

TEST_CASE("bad configuration: a clear error naming the setting, nothing started") {
  RunConfig c = base_config();
  SECTION("unknown app") {
    c.app = "nat";
    auto r = prepare_run(c);
    REQUIRE_FALSE(r.is_ok());
    CHECK(r.status().message().find("app.name") != std::string::npos);
    CHECK(r.status().message().find("ipv4") != std::string::npos);
  }
  SECTION("missing route file") {
    c.app_opts.routes = "/nonexistent/routes.txt";
    auto r = prepare_run(c);
    REQUIRE_FALSE(r.is_ok());
    CHECK(r.status().message().find("/nonexistent/routes.txt") != std::string::npos);
    CHECK(r.status().message().find("app.routes") != std::string::npos);
  }
  SECTION("lane weights: negative, not a number, or all zero") {
    c.lane_weights["native"] = -1;
    auto r = prepare_run(c);
    REQUIRE_FALSE(r.is_ok());
    CHECK(r.status().message().find("lanes.weights.\"native\"") != std::string::npos);
    c.devices = {"none"};
    c.lane_weights["native"] = 0;
    auto r2 = prepare_run(c);
    REQUIRE_FALSE(r2.is_ok());
    CHECK(r2.status().message().find("every lane has weight 0") != std::string::npos);
    std::string p = tmp_path("weights.toml");
    std::ofstream(p) << "[lanes.weights]\nnative = \"big\"\n";
    auto r3 = load_run_config(p);
    REQUIRE_FALSE(r3.is_ok());
    CHECK(r3.status().message().find("lanes.weights.\"native\" must be a number") != std::string::npos);
  }
  SECTION("a device that does not exist") {
    c.devices = {"TeslaV100"};
    auto r = prepare_run(c);
    REQUIRE_FALSE(r.is_ok());
    CHECK(r.status().message().find("lanes.devices") != std::string::npos);
    CHECK(r.status().message().find("pthread") != std::string::npos);  // lists what is there
  }
  SECTION("queue size 0") {
    c.queue = 0;
    auto r = prepare_run(c);
    REQUIRE_FALSE(r.is_ok());
    CHECK(r.status().message().find("lanes.queue") != std::string::npos);
  }
  SECTION("the same DPDK port as input and output") {
    c.input = {.kind = "dpdk", .dpdk_port = "net_ring0"};
    c.output = {.kind = "dpdk", .dpdk_port = "net_ring0"};
    auto r = prepare_run(c);
    REQUIRE_FALSE(r.is_ok());
    CHECK(r.status().code() == Code::kInvalidArgument);
    CHECK(r.status().message().find("output.dpdk_port: 'net_ring0' is also the input") != std::string::npos);
  }
  SECTION("unknown balancer") {
    c.balancer = "magic";
    auto r = prepare_run(c);
    REQUIRE_FALSE(r.is_ok());
    CHECK(r.status().message().find("lanes.balancer") != std::string::npos);
  }
  SECTION("aes without keys") {
    c.app = "aes";
    auto r = prepare_run(c);
    REQUIRE_FALSE(r.is_ok());
    CHECK(r.status().message().find("app.master_key") != std::string::npos);
  }
  SECTION("a TOML file with an unknown section and a wrong type") {
    std::string p = tmp_path("bad.toml");
    std::ofstream(p) << "[lanes]\nbatch = \"big\"\n";
    auto r = load_run_config(p);
    REQUIRE_FALSE(r.is_ok());
    CHECK(r.status().message().find("lanes.batch") != std::string::npos);
    std::ofstream(p) << "[lane]\nbatch = 3\n";
    auto r2 = load_run_config(p);
    REQUIRE_FALSE(r2.is_ok());
    CHECK(r2.status().message().find("unknown section [lane]") != std::string::npos);
  }
  SECTION("an integer setting given as a float, too large for its field, or negative") {
    std::string p = tmp_path("ints.toml");
    auto message = [&](const std::string& text) {
      std::ofstream(p, std::ios::trunc) << text;
      auto r = load_run_config(p);
      return r.is_ok() ? std::string("accepted") : r.status().message();
    };
    CHECK_THAT(message("[lanes]\nbatch = 12222223222222221111.5\n"),
               Catch::Contains("lanes.batch (--batch): want an integer in 1..65536 (line 2)"));
    CHECK_THAT(message("[lanes]\nbatch = 4294967296\n"), Catch::Contains("lanes.batch (--batch): 4294967296 is not in 1..65536"));
    CHECK_THAT(message("[lanes]\nqueue = -1\n"), Catch::Contains("lanes.queue (--queue): -1 is not in 1..1048576"));
    CHECK_THAT(message("[faults.fail_after_batches]\ncl = 2.5\n"), Catch::Contains("must be an integer 0.."));
  }
  SECTION("unknown keys in any section, numbers out of range, NaN and infinities are refused") {
    std::string p = tmp_path("keys.toml");
    auto message = [&](const std::string& text) {
      std::ofstream(p, std::ios::trunc) << text;
      auto r = load_run_config(p);
      if (r.is_ok()) {
        Status v = validate(*r);
        return v.is_ok() ? std::string("accepted") : v.message();
      }
      return r.status().message();
    };
    CHECK_THAT(message("[lanes]\nbacth = 0\n"), Catch::Contains("unknown key lanes.bacth (line 2; known in [lanes]: devices"));
    CHECK_THAT(message("[input]\nzipf = nan\n"), Catch::Contains("input.zipf (--zipf): nan is not in 0..10"));
    CHECK_THAT(message("[input]\nrate_pps = -5.0\n"), Catch::Contains("input.rate_pps (--rate-pps): -5 is not in"));
    CHECK_THAT(message("[run]\nduration_s = inf\n"), Catch::Contains("run.duration_s (--duration): inf is not in"));
    CHECK_THAT(message("[flows]\nidle_s = -1\n"), Catch::Contains("flows.idle_s: -1 is not in"));
    CHECK_THAT(message("[flows]\ncapacity = 100000000\n"), Catch::Contains("flows.capacity: 100000000 is not in 1..16777216"));
    CHECK_THAT(message("[app]\nnmae = \"aes\"\n"), Catch::Contains("unknown key app.nmae"));
    CHECK_THAT(message("[telemetry]\nprometheus = 9464\n"), Catch::Contains("telemetry.prometheus (--prometheus): want a string"));
    CHECK_THAT(message("input = 3\n"), Catch::Contains("input must be a section [input]"));
    CHECK(message("[lanes]\nbatch = 64\n[input]\nzipf = 0.5\n") == "accepted");
  }
}

TEST_CASE("run to completion: one thread does everything, with the same output, books and order") {
  SECTION("pcap to pcap on both devices and a native lane equals the native reference") {
    for (std::string app : {"ipv4", "md5", "aes"}) {
      for (const char* cap_name : {"pcap/ndpi/443-chrome.pcap", "pcap/ndpi/skype.pcap"}) {
        INFO(app << " " << cap_name);
        Summary s = check_against_reference(app, data_path(cap_name), [](RunConfig& c) { c.run_to_completion = true; });
        int busy = 0;
        for (const auto& l : s.lanes) {
          busy += l.packets > 0;
          // The native lane's share runs in place on the dispatcher (lane_in_place), the devices' through egress.
          if (l.name == "native0") CHECK(l.executor == "native, in place on its queue's packets");
        }
        if (std::string(cap_name).find("skype") != std::string::npos) CHECK(busy == 3);  // many flows: every lane
      }
    }
  }
  SECTION("one native lane, no device: the in-place worker path equals the native reference for every app") {
    for (std::string app : {"ipv4", "dpi", "md5", "aes"}) {
      for (const char* cap_name : {"pcap/ndpi/443-chrome.pcap", "pcap/ndpi/badpackets.pcap", "pcap/ndpi/webex.pcap"}) {
        INFO(app << " " << cap_name);
        Summary s = check_against_reference(app, data_path(cap_name), worker_path);
        CHECK(took_worker_path(s));
        CHECK(s.reorders == 0);
      }
    }
  }
  SECTION("a native lane with fault injection keeps the lane path (its failure handling is under test)") {
    RunConfig c = base_config();
    worker_path(c);
    c.input = {.kind = "generator", .gen_packets = 5000, .gen_flows = 100, .gen_sizes = "imix", .gen_seed = 2};
    c.output = {.kind = "null"};
    c.fail_after = {{"native0", 10}};
    Summary s = run_to_end(c);
    check_books(s);
    CHECK_FALSE(took_worker_path(s));
    CHECK(s.lane_failures == 1);
  }
  SECTION("tiny queues with backpressure: the dispatcher serves the lanes it waits for, nothing dropped") {
    RunConfig c = base_config();
    c.input = {.kind = "generator", .gen_packets = 100000, .gen_flows = 5000, .gen_zipf = 1.2, .gen_sizes = "imix", .gen_seed = 3};
    c.output = {.kind = "null"};
    c.run_to_completion = true;
    c.queue = 16;
    c.batch = 64;
    Summary s = run_to_end(c);
    check_books(s);
    CHECK(s.rx_packets == 100000);
    for (const auto& [r, n] : s.drops) CHECK((r == "no_route" || r == "ttl_exceeded"));
  }
  SECTION("lanes that fail mid-run: their packets go to the others, none lost or reordered") {
    RunConfig c = base_config();
    c.input = {.kind = "generator", .gen_packets = 100000, .gen_flows = 2000, .gen_zipf = 1.0, .gen_sizes = "imix", .gen_seed = 5};
    c.output = {.kind = "null"};
    c.run_to_completion = true;
    c.native_lanes = 2;
    c.fail_after = {{"basic", 20}, {"native1", 50}};
    Summary s = run_to_end(c);
    check_books(s);
    CHECK(s.lane_failures == 2);
    for (const auto& [r, n] : s.drops) CHECK((r == "no_route" || r == "ttl_exceeded"));
  }
  SECTION("every lane fails: no_lane counted, books balance") {
    RunConfig c = base_config();
    c.input = {.kind = "generator", .gen_packets = 20000, .gen_flows = 500, .gen_sizes = "imix", .gen_seed = 6};
    c.output = {.kind = "null"};
    c.run_to_completion = true;
    c.fail_after = {{"cl", 3}, {"native", 3}};
    Summary s = run_to_end(c);
    check_books(s);
    CHECK(s.rx_buffers_in_use == 0);
    CHECK(s.lane_failures == 3);
  }
  SECTION("egress shaping, on the lane path and on the in-place worker path") {
    RunConfig c = base_config();
    const bool worker = GENERATE(false, true);
    INFO((worker ? "in-place worker path" : "lanes"));
    if (worker) worker_path(c);
    c.input = {.kind = "generator", .gen_packets = 3000, .gen_flows = 20, .gen_sizes = "fixed:1000", .gen_seed = 4};
    c.output = {.kind = "null"};
    c.run_to_completion = true;
    c.max_frame = 4096;  // the 4096-byte buckets hold the largest frame
    c.shaping = {.enabled = true,
                 .by = ShapeBy::kFlow,
                 .rate_bytes_per_s = 2'000'000,
                 .burst_bytes = 4096,
                 .queue_packets = 4095,
                 .waiting_packets = 8192};
    Summary s = run_to_end(c);
    check_books(s);
    CHECK(s.shaper_delayed > 0);
    CHECK(s.tx_packets == 3000);
    CHECK(took_worker_path(s) == worker);
  }
}

TEST_CASE("the generator's packet count: 1,000,000 by default, unlimited when a duration is given and it is not") {
  // A learning run of `--duration 10` had ended after 0.4 s, its 1,000,000 packets sent; the start line shows it.
  struct Case {
    double duration;
    std::optional<uint64_t> packets;  // given
    const char* shown;
  };
  for (const Case& k : {Case{0, {}, "packets:1000000"}, Case{2, {}, "packets:unlimited"}, Case{2, 5000, "packets:5000"},
                        Case{0, 0, "packets:unlimited"}}) {
    RunConfig c = base_config();
    c.input = {.kind = "generator"};
    c.output = {.kind = "null"};
    c.devices = {"none"};
    c.duration_s = k.duration;
    if (k.packets) {
      const Setting* flag = find_setting("--packets");
      REQUIRE(flag != nullptr);
      REQUIRE(flag->apply(c, SettingValue{.args = {std::to_string(*k.packets)}}).is_ok());
    }
    auto ctx = prepare_run(c);
    REQUIRE(ctx.is_ok());
    INFO((*ctx)->rx->describe());
    CHECK((*ctx)->rx->describe().find(k.shown) != std::string::npos);
  }
}
