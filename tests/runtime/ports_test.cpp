#include <catch2/catch.hpp>

#include <sys/resource.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <thread>

#include "hpr/data_dir.hpp"
#include "runtime/pcap_file.hpp"
#include "runtime/ports/file_ports.hpp"
#include "runtime/ring.hpp"

using namespace hpr;

TEST_CASE("pcap port reads every frame, writes them back, and returns every buffer") {
  std::string in = data_path("pcap/ndpi/dns_doh.pcap");
  std::string out = (std::filesystem::temp_directory_path() / "hpr_ports_test.pcap").string();
  std::filesystem::remove(out);
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
    CHECK(!std::filesystem::exists(out));  // renamed into place by close(), not before
    REQUIRE((*port)->close().is_ok());
  }
  auto back = load_capture(out);
  REQUIRE(back.is_ok());
  size_t j = 0;
  for (int loop = 0; loop < 2; ++loop)
    for (const auto& f : cap->frames)
      if (f.size() <= kDefaultMaxFrame) CHECK(back->frames[j++] == f);
}

TEST_CASE("frames longer than max_frame are counted, not lost silently") {
  // webex.pcap has frames up to 29,696 bytes (captured with segmentation offload).
  auto port = make_pcap_port({.rx_path = data_path("pcap/ndpi/webex.pcap"), .max_frame = 2048});
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

TEST_CASE("a capture that cannot be written counts tx_error, fails at close and leaves no file") {
  namespace fs = std::filesystem;
  std::string in = data_path("pcap/ndpi/dns_doh.pcap");
  fs::path dir = fs::temp_directory_path() / "hpr_ports_full";
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::string out = (dir / "out.pcap").string();
  // A file-size limit stands in for a full disk (EFBIG instead of ENOSPC): no mount needed.
  rlimit old{};
  getrlimit(RLIMIT_FSIZE, &old);
  auto prev = std::signal(SIGXFSZ, SIG_IGN);
  rlimit small = old;
  small.rlim_cur = 4096;
  REQUIRE(setrlimit(RLIMIT_FSIZE, &small) == 0);
  uint64_t sent = 0, unsent = 0;
  Status closed;
  {
    auto port = make_pcap_port({.rx_path = in, .tx_path = out, .pool_slots = 64});
    REQUIRE(port.is_ok());
    Packet pkts[32];
    while (!(*port)->rx_done()) {
      uint16_t n = (*port)->rx_burst(pkts, 32, 1);
      uint16_t s = (*port)->tx_burst(pkts, n);
      sent += s;
      if (s < n) {
        CHECK((*port)->unsent_reason() == DropReason::kTxError);
        unsent += n - s;
      }
      (*port)->release(pkts, n);
    }
    CHECK((*port)->stats().tx_packets == sent);
    closed = (*port)->close();
  }
  setrlimit(RLIMIT_FSIZE, &old);
  std::signal(SIGXFSZ, prev);
  CHECK(unsent > 0);
  CHECK(closed.code() == Code::kIoError);
  CHECK(closed.message().find(out) != std::string::npos);
  CHECK(!fs::exists(out));
  CHECK(fs::is_empty(dir));  // no temporary file left behind
  fs::remove_all(dir);
}

TEST_CASE("a capture target that is not a regular file is refused") {
  auto dev = make_pcap_port({.tx_path = "/dev/null"});
  REQUIRE(!dev.is_ok());
  CHECK(dev.status().message().find("/dev/null") != std::string::npos);
  CHECK(dev.status().message().find("not a regular file") != std::string::npos);
  auto dir = make_pcap_port({.tx_path = std::filesystem::temp_directory_path().string()});
  REQUIRE(!dir.is_ok());
}

TEST_CASE("a capture with no usable record ends even with loops = 0 (no endless re-reading)") {
  namespace fs = std::filesystem;
  std::string p = (fs::temp_directory_path() / "hpr_ports_empty.pcap").string();
  {
    // A pcap header and no record.
    const unsigned char hdr[24] = {0xd4, 0xc3, 0xb2, 0xa1, 2, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0, 0, 1, 0, 0, 0};
    std::ofstream(p, std::ios::binary).write(reinterpret_cast<const char*>(hdr), sizeof hdr);
  }
  auto port = make_pcap_port({.rx_path = p, .loops = 0, .pool_slots = 8});
  REQUIRE(port.is_ok());
  Packet pkts[8];
  int calls = 0;
  while (!(*port)->rx_done() && calls < 1000) {
    CHECK((*port)->rx_burst(pkts, 8, 1) == 0);
    ++calls;
  }
  CHECK((*port)->rx_done());
  CHECK(calls <= 2);
  // Every frame longer than max_frame (9,216 bytes): the same.
  std::string q = (fs::temp_directory_path() / "hpr_ports_long.pcap").string();
  {
    auto w = PcapWriter::open(q);
    REQUIRE(w.is_ok());
    std::vector<uint8_t> frame(9217, 0xab);
    w->write(1, frame);
    REQUIRE(w->finish().is_ok());
  }
  auto big = make_pcap_port({.rx_path = q, .loops = 0, .pool_slots = 8});
  REQUIRE(big.is_ok());
  uint64_t got = 0;
  calls = 0;
  while (!(*big)->rx_done() && calls < 1000) {
    uint16_t n = (*big)->rx_burst(pkts, 8, 1);
    (*big)->release(pkts, n);
    got += n;
    ++calls;
  }
  CHECK((*big)->rx_done());
  CHECK(got == 0);
  CHECK((*big)->stats().rx_too_long == 1);
  fs::remove(q);
  fs::remove(p);
}
