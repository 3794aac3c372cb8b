// The whole pipeline through DPDK: net_pcap in, net_pcap out, on a capture of 3,284 frames (its own binary: one EAL
// per process).
#include <catch2/catch.hpp>

#include "kernels/registry.hpp"
#include "tests/pipeline/pipeline_fixture.hpp"

using namespace hpr;
using namespace hpr::test;

TEST_CASE("hpr run over DPDK net_pcap in and out forwards like the native reference") {
  const std::string in = data_path("pcap/ndpi/skype.pcap");
  const std::string out = tmp_path("dpdk_out.pcap");
  RunConfig c = base_config();
  c.input = {.kind = "dpdk", .dpdk_port = "net_pcap0"};
  c.output = {.kind = "dpdk", .dpdk_port = "net_pcap1"};
  c.vdevs = {"net_pcap0,rx_pcap=" + in, "net_pcap1,tx_pcap=" + out};
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
