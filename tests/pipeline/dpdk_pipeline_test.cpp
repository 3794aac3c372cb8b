// The whole pipeline through DPDK: net_pcap in, net_pcap out, on a capture of 3,284 frames (its own binary: one EAL
// per process).
#include <catch2/catch.hpp>

#include "kernels/registry.hpp"
#include "runtime/ports/spread_port.hpp"
#include "tests/pipeline/pipeline_fixture.hpp"

using namespace hpr;
using namespace hpr::test;

namespace {
// One EAL per process, so every case's vdevs are given at once: skype.pcap for ipv4, wechat.pcap (14 frames of
// 2,179..8,291 bytes) for md5.
const std::string kSkype = data_path("pcap/ndpi/skype.pcap");
const std::string kJumbo = data_path("pcap/ndpi/wechat.pcap");
const std::string kVnc = data_path("pcap/ndpi/vnc.pcap");  // 4,551 frames, replayed: net_pcap keeps them in mbufs
// net_pcap4: one rx queue per half of skype.pcap split by flow (a NIC with symmetric RSS stands in), for two workers.
const std::string kQ0 = tmp_path("dpdk_q0.pcap"), kQ1 = tmp_path("dpdk_q1.pcap");
std::vector<std::string> vdevs() {
  static const bool split = split_capture_by_flow(kSkype, {kQ0, kQ1}).is_ok();
  REQUIRE(split);
  return {"net_pcap0,rx_pcap=" + kSkype, "net_pcap1,tx_pcap=" + tmp_path("dpdk_out.pcap"),
          "net_pcap2,rx_pcap=" + kJumbo, "net_pcap3,tx_pcap=" + tmp_path("dpdk_jumbo_out.pcap"),
          "net_pcap4,rx_pcap=" + kSkype, "net_pcap5,tx_pcap=" + tmp_path("dpdk_port0.pcap"),
          "net_pcap6,tx_pcap=" + tmp_path("dpdk_port1.pcap"),
          "net_pcap7,rx_pcap=" + kQ0 + ",rx_pcap=" + kQ1, "net_pcap8,tx_pcap=" + tmp_path("dpdk_workers_out.pcap"),
          "net_pcap9,rx_pcap=" + kSkype, "net_null0", "net_null1,no-rx=1",
          "net_pcap10,rx_pcap=" + kQ0 + ",rx_pcap=" + kQ1,  // net_pcap10: auto's test
          "net_pcap11,rx_pcap=" + kVnc + ",infinite_rx=1", "net_null2,no-rx=1"};  // net_pcap11, net_null2: buffers
}
}  // namespace

TEST_CASE("hpr run over DPDK net_pcap in and out forwards like the native reference") {
  const std::string in = kSkype;
  const std::string out = tmp_path("dpdk_out.pcap");
  RunConfig c = base_config();
  c.input = {.kind = "dpdk", .dpdk_port = "net_pcap0"};
  c.output = {.kind = "dpdk", .dpdk_port = "net_pcap1"};
  c.vdevs = vdevs();
  c.backpressure = true;  // a file behind the port: every packet counts
  c.duration_s = 3;       // net_pcap without infinite_rx delivers the file once, then idles
  const Summary s = run_to_end(c);  // the ports are closed when it returns (net_pcap writes its tx capture)
  check_books(s);
  CHECK(s.dropped > 0);
  CHECK(s.rx_buffers_in_use == 0);  // every mbuf back in the pool, the dropped ones' too (net_pcap keeps no rx ring)
  auto cap = load_capture(in);
  REQUIRE(cap.is_ok());
  CHECK(s.rx_packets == cap->size());
  auto app = kernels::make_app("ipv4", c.app_opts);
  REQUIRE(app.is_ok());
  Reference ref = native_reference(**app, *cap, c);
  auto got = load_capture(out);
  REQUIRE(got.is_ok());
  CHECK(s.dropped == ref.dropped);
  CHECK(sorted(got->frames) == sorted(ref.out));
}

TEST_CASE("jumbo frames over DPDK: md5 on both devices and a native lane equals the native reference, none dropped") {
  const std::string out = tmp_path("dpdk_jumbo_out.pcap");
  RunConfig c = base_config();
  c.app = "md5";
  c.input = {.kind = "dpdk", .dpdk_port = "net_pcap2"};
  c.output = {.kind = "dpdk", .dpdk_port = "net_pcap3"};
  c.vdevs = vdevs();
  c.backpressure = true;
  c.duration_s = 3;
  const Summary s = run_to_end(c);  // the ports are closed when it returns (net_pcap writes its tx capture)
  check_books(s);
  auto cap = load_capture(kJumbo);
  REQUIRE(cap.is_ok());
  CHECK(s.rx_packets == cap->size());
  CHECK(s.dropped == 0);
  auto app = kernels::make_app("md5", c.app_opts);
  REQUIRE(app.is_ok());
  Reference ref = native_reference(**app, *cap, c);
  auto got = load_capture(out);
  REQUIRE(got.is_ok());
  CHECK(sorted(got->frames) == sorted(ref.out));
  CHECK(std::count_if(got->frames.begin(), got->frames.end(), [](const auto& f) { return f.size() > 2048; }) == 14);
}

TEST_CASE("two workers on two rx queues of one DPDK port forward like the native reference") {
  if (cores_here().size() < 2) return;
  const std::string out = tmp_path("dpdk_workers_out.pcap");
  RunConfig c = base_config();
  c.input = {.kind = "dpdk", .dpdk_port = "net_pcap7"};
  c.output = {.kind = "dpdk", .dpdk_port = "net_pcap8"};
  c.vdevs = vdevs();
  c.backpressure = true;
  c.duration_s = 3;
  c.workers = 2;
  c.devices = {"none"};
  c.rx_spread = "queues";
  Summary s;
  {
    auto ctx = prepare_run(c);
    REQUIRE(ctx.is_ok());
    CHECK_THAT((*ctx)->rx->describe(), Catch::Contains("rx queue 0 of 2"));
    s = (*ctx)->pipeline->run();
  }
  check_books(s);
  auto cap = load_capture(kSkype);
  REQUIRE(cap.is_ok());
  CHECK(s.rx_packets == cap->size());
  REQUIRE(s.lanes.size() == 2);
  auto q0 = load_capture(kQ0);
  REQUIRE(q0.is_ok());
  CHECK(s.lanes[0].packets <= q0->size());  // worker 0 received queue 0 only
  CHECK(s.lanes[0].packets > 0);
  CHECK(s.lanes[1].packets > 0);
  auto app = kernels::make_app("ipv4", c.app_opts);
  REQUIRE(app.is_ok());
  Reference ref = native_reference(**app, *cap, c);
  auto got = load_capture(out);
  REQUIRE(got.is_ok());
  CHECK(s.dropped == ref.dropped);
  CHECK(sorted(got->frames) == sorted(ref.out));
}

TEST_CASE("two workers on a DPDK port with one rx queue: refused with --rx-spread queues, naming the setting") {
  if (cores_here().size() < 2) return;
  RunConfig c = base_config();
  c.input = {.kind = "dpdk", .dpdk_port = "net_pcap9"};
  c.output = {.kind = "null"};
  c.vdevs = vdevs();
  c.workers = 2;
  c.devices = {"none"};
  c.rx_spread = "queues";
  auto bad = prepare_run(c);
  REQUIRE_FALSE(bad.is_ok());
  CHECK_THAT(bad.status().message(), Catch::Contains("lanes.workers") && Catch::Contains("net_pcap9") &&
                                         Catch::Contains("--rx-spread hash"));
  // Nothing was started: the same port then runs with the reader spreading its one queue (and is closed after).
  c.rx_spread = "hash";
  c.backpressure = true;
  c.duration_s = 2;
  const Summary s = run_to_end(c);  // the ports are closed when it returns (net_pcap writes its tx capture)
  check_books(s);
  auto cap = load_capture(kSkype);
  REQUIRE(cap.is_ok());
  CHECK(s.rx_packets == cap->size());
}

TEST_CASE("lanes.workers = auto: one worker unless the input is a DPDK port whose queues the workers can take") {
  RunConfig c = base_config();
  c.vdevs = vdevs();
  REQUIRE(c.workers_auto);  // the default
  c.input = {.kind = "generator", .gen_packets = 100};
  auto r = resolve_workers(c);
  REQUIRE(r.is_ok());
  CHECK(c.workers == 1);
  CHECK_FALSE(c.workers_auto);
  CHECK_THAT(*r, Catch::StartsWith("1 (auto: the input has no RSS"));
  // net_pcap has no RSS: one worker, and the words say how to take its queues anyway.
  c.workers_auto = true;
  c.input = {.kind = "dpdk", .dpdk_port = "net_pcap10"};
  r = resolve_workers(c);
  REQUIRE(r.is_ok());
  CHECK(c.workers == 1);
  CHECK_THAT(*r, Catch::Contains("net_pcap10") && Catch::Contains("no RSS") && Catch::Contains("--rx-spread queues"));
  // Its two rx queues taken as they are: a worker on each, as many as there are cores.
  c.workers_auto = true;
  c.rx_spread = "queues";
  r = resolve_workers(c);
  REQUIRE(r.is_ok());
  CHECK(c.workers == std::min<size_t>(2, cores_here().size()));
  {
    // ... and the run takes them (which also closes the port: net_pcap keeps its capture files open until then).
    RunConfig run = c;
    run.output = {.kind = "null"};
    run.devices = {"none"};
    run.backpressure = true;
    run.duration_s = 1;  // a DPDK port does not say when its capture ends
    const Summary s = run_to_end(run);
    check_books(s);
    CHECK(s.lanes.size() == c.workers);
    CHECK(s.rx_packets > 0);
  }
  // A count given is kept; an unknown port is an error naming it.
  c.workers_auto = false;
  c.workers = 1;
  r = resolve_workers(c);
  REQUIRE(r.is_ok());
  CHECK(r->empty());
  CHECK(c.workers == 1);
  c.workers_auto = true;
  c.input = {.kind = "dpdk", .dpdk_port = "net_nothere"};
  CHECK_THAT(resolve_workers(c).status().message(), Catch::Contains("net_nothere"));
}

TEST_CASE("two DPDK outputs with a neighbour table: each packet leaves by its next hop's port, MACs rewritten") {
  RunConfig c = base_config();
  c.input = {.kind = "dpdk", .dpdk_port = "net_pcap4"};
  c.output = {.kind = "dpdk", .dpdk_port = "net_pcap5"};
  c.more_outputs = {{.kind = "dpdk", .dpdk_port = "net_pcap6"}};
  c.vdevs = vdevs();
  c.backpressure = true;
  c.duration_s = 3;
  // No ports.macs: the source MAC is each ethdev's own (rte_eth_macaddr_get).
  const std::vector<uint16_t> port_of_hop = {1, 0, 1, 0};
  for (uint32_t h = 0; h < 4; ++h)
    c.neighbours.push_back({.next_hop = h, .port = port_of_hop[h], .mac = fmt::format("0a:0b:0c:0d:0e:{:02x}", h)});
  Summary s;
  std::array<uint8_t, 6> port_mac[2];
  {
    auto ctx = prepare_run(c);
    REQUIRE(ctx.is_ok());
    auto m0 = (*ctx)->tx->mac();
    auto m1 = (*ctx)->more_tx.at(0)->mac();
    REQUIRE((m0 && m1));
    port_mac[0] = *m0;
    port_mac[1] = *m1;
    s = (*ctx)->pipeline->run();
  }
  check_books(s);
  REQUIRE(s.out_ports.size() == 2);
  CHECK(s.out_ports[0].packets + s.out_ports[1].packets == s.tx_packets);
  auto cap = load_capture(kSkype);
  REQUIRE(cap.is_ok());
  auto app = kernels::make_app("ipv4", c.app_opts);
  REQUIRE(app.is_ok());
  Reference ref = native_reference(**app, *cap, c);
  std::vector<std::vector<uint8_t>> want[2];
  for (size_t i = 0; i < ref.out.size(); ++i) {
    std::vector<uint8_t> f = ref.out[i];
    size_t q = ref.out_port[i] % 2;  // not IPv4 (or ICMP): as it came, by out_port mod 2
    if (ref.out_ipv4[i]) {
      q = port_of_hop[ref.out_port[i]];
      for (int b = 0; b < 5; ++b) f[b] = static_cast<uint8_t>(0x0a + b);
      f[5] = static_cast<uint8_t>(ref.out_port[i]);
      std::copy(port_mac[q].begin(), port_mac[q].end(), f.begin() + 6);
    }
    want[q].push_back(std::move(f));
  }
  for (size_t q = 0; q < 2; ++q) {
    auto got = load_capture(tmp_path(fmt::format("dpdk_port{}.pcap", q)));
    REQUIRE(got.is_ok());
    CHECK(got->size() == s.out_ports[q].packets + (q == 0 ? s.host_frames : 0));
    CHECK(sorted(got->frames) == sorted(want[q]));
  }
}

TEST_CASE("two workers on a DPDK port with RSS: a queue each, the symmetric key taken, the books balance") {
  if (cores_here().size() < 2) return;
  RunConfig c = base_config();
  c.input = {.kind = "dpdk", .dpdk_port = "net_null0"};  // net_null has RSS; each rx queue makes its own frames
  c.output = {.kind = "dpdk", .dpdk_port = "net_null1"};
  c.vdevs = vdevs();
  c.duration_s = 0.3;
  c.workers = 2;
  c.devices = {"none"};
  Summary s;
  {
    auto ctx = prepare_run(c);
    REQUIRE(ctx.is_ok());
    CHECK_THAT((*ctx)->rx->describe(), Catch::Contains("rx queue 0 of 2 (RSS)"));
    s = (*ctx)->pipeline->run();
  }
  check_books(s);
  REQUIRE(s.lanes.size() == 2);
  CHECK(s.lanes[0].packets > 0);
  CHECK(s.lanes[1].packets > 0);
}

TEST_CASE("a device lane's batches fill: the input port has the buffers its batches in flight hold (ports.buffers)") {
  // 4,096-packet batches, two in flight and one filling: the lane holds up to 12,288 mbufs, and net_pcap's replay
  // keeps the capture's 4,551. The 8,191 mbufs of DPDK's usual pool left fewer than 3,640 for a batch, which then
  // closed on its timeout (on an H200 beside a 6,000-frame replay: at 1,920 packets; docs/gpu/nvidia-h200/chains).
  RunConfig c = base_config();
  c.app = "md5";
  c.input = {.kind = "dpdk", .dpdk_port = "net_pcap11"};
  c.output = {.kind = "dpdk", .dpdk_port = "net_null2"};
  c.vdevs = vdevs();
  c.devices = {"pthread"};
  c.native_lanes = 0;
  c.batch = 4096;
  c.queue = 8192;
  c.in_flight = 2;
  c.batch_timeout_us = 300'000;  // a batch closes full, not on time
  c.backpressure = true;
  c.duration_s = 2;
  const Summary s = run_to_end(c);
  check_books(s);
  REQUIRE(s.lanes.size() == 1);
  INFO("batches " << s.lanes[0].batches << ", mean " << s.lanes[0].mean_batch);
  CHECK(s.lanes[0].batches >= 4);
  CHECK(s.lanes[0].mean_batch > 0.95 * 4096);  // the last batch, at the stop, may be partial
}
