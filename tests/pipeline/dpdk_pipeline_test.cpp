// The whole pipeline through DPDK: net_pcap in, net_pcap out, on a capture of 3,284 frames (its own binary: one EAL
// per process).
#include <catch2/catch.hpp>

#include "kernels/registry.hpp"
#include "tests/pipeline/pipeline_fixture.hpp"

using namespace hpr;
using namespace hpr::test;

namespace {
// One EAL per process, so every case's vdevs are given at once: skype.pcap for ipv4, wechat.pcap (14 frames of
// 2,179..8,291 bytes) for md5.
const std::string kSkype = data_path("pcap/ndpi/skype.pcap");
const std::string kJumbo = data_path("pcap/ndpi/wechat.pcap");
std::vector<std::string> vdevs() {
  return {"net_pcap0,rx_pcap=" + kSkype, "net_pcap1,tx_pcap=" + tmp_path("dpdk_out.pcap"),
          "net_pcap2,rx_pcap=" + kJumbo, "net_pcap3,tx_pcap=" + tmp_path("dpdk_jumbo_out.pcap")};
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
  Summary s;
  {
    auto ctx = prepare_run(c);
    REQUIRE(ctx.is_ok());
    s = (*ctx)->pipeline->run();
  }  // ports closed: tx_pcap flushed
  check_books(s);
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
  Summary s;
  {
    auto ctx = prepare_run(c);
    REQUIRE(ctx.is_ok());
    s = (*ctx)->pipeline->run();
  }
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
