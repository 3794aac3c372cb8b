// One EAL per process: every DPDK case lives in this binary, which initialises it once.
#include <catch2/catch.hpp>

#include <filesystem>
#include <set>

#include "hpr/data_dir.hpp"
#include "runtime/pcap_file.hpp"
#include "runtime/ports/dpdk_port.hpp"
#include "tests/runtime/test_frames.hpp"

using namespace hpr;

namespace {
const std::string kIn = data_path("pcap/ndpi/skype.pcap");
std::string out_path() { return (std::filesystem::temp_directory_path() / "hpr_dpdk_port_test_out.pcap").string(); }

// wechat.pcap: 14 of its 1,672 frames are 2,179..8,291 bytes; webex.pcap: 13 of its 1,580 are above 9,216.
const std::string kJumbo = data_path("pcap/ndpi/wechat.pcap");
const std::string kTooLong = data_path("pcap/ndpi/webex.pcap");
std::string jumbo_out_path() {
  return (std::filesystem::temp_directory_path() / "hpr_dpdk_port_test_jumbo.pcap").string();
}

Status init_once() {
  static Status st = dpdk_init(dpdk_default_args(
      {"net_pcap0,rx_pcap=" + kIn + ",tx_pcap=" + out_path(), "net_null0", "net_pcap1,rx_pcap=" + kIn, "net_ring0",
       "net_pcap2,rx_pcap=" + kJumbo + ",tx_pcap=" + jumbo_out_path(), "net_pcap3,rx_pcap=" + kTooLong, "net_null1",
       "net_null2", "net_pcap4,rx_pcap=" + kIn, "net_pcap5,rx_pcap=" + kJumbo}));
  return st;
}

// Every frame the port delivers (the file once), each sent back out on the same port and released.
uint64_t echo_all(Port& port, uint64_t want) {
  Packet pkts[64];
  uint64_t total = 0;
  for (int idle = 0; idle < 1000 && total < want;) {
    uint16_t n = port.rx_burst(pkts, 64, 0);
    if (n == 0) {
      ++idle;
      continue;
    }
    for (uint16_t i = 0; i < n; ++i) CHECK(pkts[i].buf_kind == (pkts[i].len > 2048 ? kBufPool : kBufMbuf));
    CHECK(port.tx_burst(pkts, n) == n);
    port.release(pkts, n);
    total += n;
  }
  return total;
}
}  // namespace

TEST_CASE("net_pcap in, tx_pcap out: the capture comes back byte for byte") {
  REQUIRE(init_once().is_ok());
  auto in = load_capture(kIn);
  REQUIRE(in.is_ok());
  {
    auto port = make_dpdk_port({.name = "net_pcap0"});
    REQUIRE(port.is_ok());
    Packet pkts[64];
    size_t total = 0;
    // net_pcap without infinite_rx delivers the file once, then nothing.
    for (int idle = 0; idle < 1000 && total < in->size();) {
      uint16_t n = (*port)->rx_burst(pkts, 64, 0);
      if (n == 0) {
        ++idle;
        continue;
      }
      for (uint16_t i = 0; i < n; ++i) CHECK(pkts[i].buf_kind == kBufMbuf);
      REQUIRE((*port)->tx_burst(pkts, n) == n);
      (*port)->release(pkts, n);
      total += n;
    }
    CHECK(total == in->size());
    CHECK((*port)->stats().tx_packets == in->size());
  }  // closing the port flushes tx_pcap
  auto out = load_capture(out_path());
  REQUIRE(out.is_ok());
  REQUIRE(out->size() == in->size());
  for (size_t i = 0; i < in->size(); ++i) {
    INFO("frame " << i);
    CHECK(out->frames[i] == in->frames[i]);
  }
}

TEST_CASE("DPDK rx hands out fresh descriptors whatever the array held (fresh_rx), jumbo chains included") {
  REQUIRE(init_once().is_ok());
  for (const char* name : {"net_pcap4", "net_pcap5"}) {  // skype.pcap; wechat.pcap has chains, linearised
    INFO(name);
    auto port = make_dpdk_port({.name = name});
    REQUIRE(port.is_ok());
    REQUIRE((*port)->fresh_rx());
    uint64_t total = 0, linearised = 0;
    for (int idle = 0; idle < 1000;) {  // the whole file
      Packet pkts[64];
      for (auto& p : pkts) p = test::stale_packet();
      const uint16_t n = (*port)->rx_burst(pkts, 64, 77);
      if (n == 0) {
        ++idle;
        continue;
      }
      for (uint16_t i = 0; i < n; ++i) {
        Packet expect;  // a default Packet with what rx sets
        expect.data = pkts[i].data;
        expect.len = pkts[i].len;
        expect.buf = pkts[i].buf;
        expect.buf_kind = pkts[i].buf_kind;
        expect.rx_ns = 77;
        expect.port = pkts[i].port;
        CHECK(test::same_fields(pkts[i], expect));
        linearised += pkts[i].buf_kind == kBufPool;
      }
      (*port)->release(pkts, n);
      total += n;
    }
    CHECK(total >= 1000);
    if (std::string(name) == "net_pcap5") CHECK(linearised == 14);
  }
}

TEST_CASE("pool buffers are copied into mbufs on a DPDK tx port") {
  REQUIRE(init_once().is_ok());
  auto port = make_dpdk_port({.name = "net_null0"});
  REQUIRE(port.is_ok());
  std::vector<uint8_t> frame(100, 0xab);
  Packet p;
  p.data = frame.data();
  p.len = 100;
  p.buf_kind = kBufPool;
  CHECK((*port)->tx_burst(&p, 1) == 1);
  CHECK((*port)->stats().tx_bytes == 100);
}

TEST_CASE("unknown port names and re-initialisation give clear errors") {
  REQUIRE(init_once().is_ok());
  auto bad = make_dpdk_port({.name = "net_nothere0"});
  REQUIRE_FALSE(bad.is_ok());
  CHECK(bad.status().message().find("--vdev") != std::string::npos);  // says how to add one
  auto again = dpdk_init({"--no-huge"});
  REQUIRE_FALSE(again.is_ok());
  CHECK(again.message().find("once per process") != std::string::npos);
}

TEST_CASE("tx_burst_release hands mbufs to the driver; what it refuses is freed and counted, none leaks") {
  REQUIRE(init_once().is_ok());
  auto in = make_dpdk_port({.name = "net_pcap1"});
  auto ring = make_dpdk_port({.name = "net_ring0"});  // rx and tx share one ring of 1,024: it fills up
  REQUIRE(in.is_ok());
  REQUIRE(ring.is_ok());
  const uint64_t base = (*in)->stats().buffers_in_use;
  Packet pkts[64];
  uint64_t received = 0, sent = 0;
  bool refused = false;
  for (int idle = 0; idle < 1000 && received < 3000;) {
    uint16_t n = (*in)->rx_burst(pkts, 64, 0);
    if (n == 0) {
      ++idle;
      continue;
    }
    received += n;
    uint16_t k = (*ring)->tx_burst_release(pkts, n, **in);
    CHECK(k <= n);
    refused |= k < n;
    sent += k;
  }
  REQUIRE(received > 1100);
  CHECK(refused);  // the ring took 1,023 and refused the rest
  PortStats rs = (*ring)->stats();
  CHECK(rs.tx_packets == sent);
  CHECK(rs.tx_failed == received - sent);
  // Everything the ring holds comes back out and is released: the pool is where it started.
  for (uint64_t got = 0, idle = 0; got < sent && idle < 1000;) {
    uint16_t n = (*ring)->rx_burst(pkts, 64, 0);
    if (n == 0) {
      ++idle;
      continue;
    }
    got += n;
    (*ring)->release(pkts, n);
  }
  CHECK((*in)->stats().buffers_in_use == base);
}

TEST_CASE("jumbo frames over net_pcap: a chain is copied whole into a large buffer, sent whole as a chain") {
  REQUIRE(init_once().is_ok());
  auto in = load_capture(kJumbo);
  REQUIRE(in.is_ok());
  {
    auto port = make_dpdk_port({.name = "net_pcap2"});
    REQUIRE(port.is_ok());
    CHECK(echo_all(**port, in->size()) == in->size());
    PortStats s = (*port)->stats();
    CHECK(s.rx_too_long == 0);
    CHECK(s.rx_pool_empty == 0);
    CHECK(s.tx_packets == in->size());
  }  // closing the port flushes tx_pcap
  auto out = load_capture(jumbo_out_path());
  REQUIRE(out.is_ok());
  REQUIRE(out->size() == in->size());
  size_t large = 0;
  for (size_t i = 0; i < in->size(); ++i) {
    INFO("frame " << i << ", " << in->frames[i].size() << " bytes");
    CHECK(out->frames[i] == in->frames[i]);
    large += in->frames[i].size() > 2048;
  }
  CHECK(large == 14);
}

TEST_CASE("DPDK: frames above max_frame are frame_too_long; a large pool buffer leaves as a chain") {
  REQUIRE(init_once().is_ok());
  auto in = load_capture(kTooLong);
  REQUIRE(in.is_ok());
  auto port = make_dpdk_port({.name = "net_pcap3"});
  REQUIRE(port.is_ok());
  Packet pkts[64];
  uint64_t total = 0;
  for (int idle = 0; idle < 1000 && total + (*port)->stats().rx_too_long < in->size();) {
    uint16_t n = (*port)->rx_burst(pkts, 64, 0);
    idle += n == 0;
    for (uint16_t i = 0; i < n; ++i) CHECK(pkts[i].len <= kDefaultMaxFrame);
    (*port)->release(pkts, n);
    total += n;
  }
  CHECK((*port)->stats().rx_too_long == 13);
  CHECK(total + 13 == in->size());

  auto null = make_dpdk_port({.name = "net_null1"});
  REQUIRE(null.is_ok());
  std::vector<uint8_t> frame(9216, 0xcd);
  Packet p;
  p.data = frame.data();
  p.len = 9216;
  p.buf_kind = kBufPool;
  CHECK((*null)->tx_burst(&p, 1) == 1);
  CHECK((*null)->stats().tx_bytes == 9216);
  CHECK((*null)->stats().tx_failed == 0);
}

TEST_CASE("the mbuf pool is packed: frames do not all start at one offset of a 4 KB page (no hugepages here)") {
  // One mbuf per 4 KB page (a pool whose objects must not span pages, without hugepages) put every frame at the same
  // offset mod 4096, and the AES engine's lanes stalled on 4K aliasing (dpdk_port.cpp, create_mbuf_pool).
  REQUIRE(init_once().is_ok());
  auto port = make_dpdk_port({.name = "net_null2"});  // net_null's rx hands out mbufs of our pool
  REQUIRE(port.is_ok());
  Packet pkts[64];
  const uint16_t n = (*port)->rx_burst(pkts, 64, 0);
  REQUIRE(n == 64);
  std::set<uintptr_t> offsets;
  for (uint16_t i = 0; i < n; ++i) offsets.insert(reinterpret_cast<uintptr_t>(pkts[i].data) % 4096);
  (*port)->release(pkts, n);
  CHECK(offsets.size() > 8);
}
