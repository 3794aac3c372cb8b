#include <catch2/catch.hpp>

#include <filesystem>
#include <thread>

#include "hpr/data_dir.hpp"
#include "runtime/pcap_file.hpp"
#include "runtime/ports/file_ports.hpp"
#include "runtime/ring.hpp"

using namespace hpr;

TEST_CASE("pcap port reads every frame, writes them back, and returns every buffer") {
  std::string in = data_path("pcap/ndpi/dns_doh.pcap");
  std::string out = (std::filesystem::temp_directory_path() / "hpr_ports_test.pcap").string();
  auto cap = load_capture(in);
  REQUIRE(cap.is_ok());
  {
    auto port = make_pcap_port({.rx_path = in, .tx_path = out, .loops = 2, .pool_slots = 64});
    REQUIRE(port.is_ok());
    Packet pkts[32];
    size_t total = 0;
    while (!(*port)->rx_done()) {
      uint16_t n = (*port)->rx_burst(pkts, 32, 1);
      REQUIRE((*port)->tx_burst(pkts, n) == n);
      (*port)->release(pkts, n);
      total += n;
    }
    CHECK(total + (*port)->stats().rx_too_long == 2 * cap->size());
  }
  auto back = load_capture(out);
  REQUIRE(back.is_ok());
  size_t j = 0;
  for (int loop = 0; loop < 2; ++loop)
    for (const auto& f : cap->frames)
      if (f.size() <= 2048) CHECK(back->frames[j++] == f);
}

TEST_CASE("frames longer than a slot are counted, not lost silently") {
  // webex.pcap has frames up to 29,696 bytes (captured with segmentation offload).
  auto port = make_pcap_port({.rx_path = data_path("pcap/ndpi/webex.pcap"), .slot_bytes = 2048});
  REQUIRE(port.is_ok());
  Packet pkts[64];
  uint64_t n = 0;
  while (!(*port)->rx_done()) {
    uint16_t k = (*port)->rx_burst(pkts, 64, 0);
    (*port)->release(pkts, k);
    n += k;
  }
  auto cap = load_capture(data_path("pcap/ndpi/webex.pcap"));
  CHECK((*port)->stats().rx_too_long > 0);
  CHECK(n + (*port)->stats().rx_too_long == cap->size());
}

TEST_CASE("an exhausted pool stalls rx without losing the frame") {
  auto port = make_pcap_port({.rx_path = data_path("pcap/ndpi/dns_doh.pcap"), .pool_slots = 4});
  REQUIRE(port.is_ok());
  Packet a[8], b[8];
  CHECK((*port)->rx_burst(a, 8, 0) == 4);
  CHECK((*port)->rx_burst(b, 8, 0) == 0);
  std::vector<uint8_t> fourth(a[3].data, a[3].data + a[3].len);
  (*port)->release(a, 4);
  uint16_t n = (*port)->rx_burst(b, 8, 0);
  REQUIRE(n >= 1);
  auto cap = load_capture(data_path("pcap/ndpi/dns_doh.pcap"));
  CHECK(std::vector<uint8_t>(b[0].data, b[0].data + b[0].len) == cap->frames[4]);
  (*port)->release(b, n);
}

TEST_CASE("SPSC ring passes every item in order across threads") {
  SpscRing<uint64_t> r(256);
  constexpr uint64_t kN = 1'000'000;
  std::thread prod([&] {
    for (uint64_t i = 0; i < kN;) i += r.push(i) ? 1 : 0;
  });
  uint64_t expect = 0;
  bool ordered = true;
  while (expect < kN) {
    uint64_t v[32];
    size_t n = r.pop_burst(v, 32);
    for (size_t i = 0; i < n; ++i) ordered &= v[i] == expect++;
  }
  prod.join();
  CHECK(ordered);
}

TEST_CASE("MPMC ring loses nothing with two producers and two consumers") {
  MpmcRing<uint32_t> r(1024);
  constexpr uint32_t kPer = 200'000;
  std::atomic<uint64_t> sum{0}, count{0};
  auto producer = [&](uint32_t base) {
    for (uint32_t i = 0; i < kPer;) i += r.push(base + i) ? 1 : 0;
  };
  auto consumer = [&] {
    uint32_t v;
    while (count.load() < 2 * kPer) {
      if (r.pop(v)) {
        sum += v;
        ++count;
      }
    }
  };
  std::thread p1(producer, 0), p2(producer, kPer), c1(consumer), c2(consumer);
  p1.join();
  p2.join();
  c1.join();
  c2.join();
  uint64_t n = 2ull * kPer;
  CHECK(sum.load() == n * (n - 1) / 2);
}
