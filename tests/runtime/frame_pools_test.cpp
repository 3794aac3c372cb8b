// Jumbo and large frames (issue 16, item 10): small and large buffer pools, the pcap port on frames of
// 2,049..9,216 bytes, longer frames counted as frame_too_long, an exhausted large pool counted as pool_empty.
#include "runtime/frame_pools.hpp"

#include <catch2/catch.hpp>
#include <atomic>
#include <cstring>
#include <filesystem>
#include <set>
#include <thread>

#include "runtime/pcap_file.hpp"
#include "runtime/ports/file_ports.hpp"
#include "tests/runtime/test_frames.hpp"

using namespace hpr;

namespace {

// A UDP/IPv4 frame of exactly `bytes` bytes (valid lengths and checksum).
std::vector<uint8_t> frame_of(uint32_t bytes) { return test::ipv4_frame(17, static_cast<uint16_t>(bytes - 42)); }

std::string write_capture(const std::string& name, const std::vector<std::vector<uint8_t>>& frames) {
  std::string p = (std::filesystem::temp_directory_path() / ("hpr_frame_pools_" + name + ".pcap")).string();
  auto w = PcapWriter::open(p);
  REQUIRE(w.is_ok());
  for (const auto& f : frames) w->write(1, f);
  REQUIRE(w->finish().is_ok());
  return p;
}

// Everything the port gives, buffers held until the end (so that a pool can run dry), then released.
std::vector<std::vector<uint8_t>> read_all(Port& port) {
  std::vector<std::vector<uint8_t>> got;
  std::vector<Packet> held;
  Packet pkts[16];
  for (int calls = 0; !port.rx_done() && calls < 10000; ++calls) {
    uint16_t n = port.rx_burst(pkts, 16, 0);
    for (uint16_t i = 0; i < n; ++i) {
      got.emplace_back(pkts[i].data, pkts[i].data + pkts[i].len);
      held.push_back(pkts[i]);
    }
  }
  CHECK(port.rx_done());
  port.release(held.data(), static_cast<uint16_t>(held.size()));
  return got;
}

}  // namespace

TEST_CASE("a frame goes into the smallest slot that holds it; longer than max_frame is refused") {
  auto pools = FramePools::create(4, 2, 9216);
  REQUIRE(pools.is_ok());
  FramePools& fp = **pools;
  Packet small, edge, big, biggest, too_long, none;
  CHECK(fp.alloc(small, 60) == FrameAlloc::kOk);
  CHECK(fp.alloc(edge, 2048) == FrameAlloc::kOk);
  CHECK(fp.alloc(big, 2049) == FrameAlloc::kOk);
  CHECK(fp.alloc(biggest, 9216) == FrameAlloc::kOk);
  CHECK(fp.alloc(too_long, 9217) == FrameAlloc::kTooLong);
  CHECK(fp.alloc(none, 3000) == FrameAlloc::kNoLarge);  // both large slots taken: the small ones do not help
  CHECK(fp.in_use() == 4);
  // Large slots are max_frame apart, small ones 2048: the two large buffers hold 9216 bytes each.
  CHECK(static_cast<uint8_t*>(biggest.buf) - static_cast<uint8_t*>(big.buf) == 9216);
  std::memset(big.data, 0xab, 9216);
  std::memset(biggest.data, 0xcd, 9216);
  CHECK(big.data[9215] == 0xab);
  fp.free_one(big.buf);
  CHECK(fp.alloc(none, 9000) == FrameAlloc::kOk);
  for (Packet* p : {&small, &edge, &biggest, &none}) fp.free_one(p->buf);
  CHECK(fp.in_use() == 0);
  // The small pool runs dry separately: the caller stalls on it (rx_no_buffer), it is not a drop.
  Packet s[5];
  for (int i = 0; i < 4; ++i) CHECK(fp.alloc(s[i], 100) == FrameAlloc::kOk);
  CHECK(fp.alloc(s[4], 100) == FrameAlloc::kNoSmall);
  fp.free(s, 4);
  CHECK(fp.in_use() == 0);
}

TEST_CASE("max_frame out of range is refused, naming the setting") {
  for (uint32_t bad : {0u, 63u, 65536u, 100000u}) {
    auto p = FramePools::create(4, 4, bad);
    REQUIRE(!p.is_ok());
    CHECK_THAT(p.status().message(), Catch::Contains("ports.max_frame (--max-frame)"));
  }
  // Up to 2048 there is no large pool: every frame fits a small slot or is too long.
  auto p = FramePools::create(4, 4, 1518);
  REQUIRE(p.is_ok());
  CHECK((*p)->large_slots() == 0);
  Packet a;
  CHECK((*p)->alloc(a, 1519) == FrameAlloc::kTooLong);
}

TEST_CASE("pcap port: frames of 2,049..9,216 bytes are delivered whole; 9,217 bytes is frame_too_long") {
  std::vector<std::vector<uint8_t>> frames;
  for (uint32_t n : {60u, 1514u, 2048u, 2049u, 4000u, 9000u, 9216u, 9217u, 12000u, 100u}) frames.push_back(frame_of(n));
  std::string in = write_capture("sizes", frames);
  auto port = make_pcap_port({.rx_path = in, .pool_slots = 8});
  REQUIRE(port.is_ok());
  auto got = read_all(**port);
  std::vector<std::vector<uint8_t>> want;
  for (const auto& f : frames)
    if (f.size() <= 9216) want.push_back(f);
  CHECK(got == want);
  PortStats s = (*port)->stats();
  CHECK(s.rx_too_long == 2);
  CHECK(s.rx_pool_empty == 0);
  CHECK(s.rx_packets + s.rx_too_long == frames.size());
  CHECK(s.buffers_in_use == 0);
  std::filesystem::remove(in);
}

TEST_CASE("pcap port: a smaller max_frame drops what is longer, a larger one keeps it") {
  std::vector<std::vector<uint8_t>> frames = {frame_of(1514), frame_of(1600), frame_of(20000)};
  std::string in = write_capture("max", frames);
  auto small = make_pcap_port({.rx_path = in, .max_frame = 1518});
  REQUIRE(small.is_ok());
  CHECK(read_all(**small).size() == 1);
  CHECK((*small)->stats().rx_too_long == 2);
  auto large = make_pcap_port({.rx_path = in, .max_frame = 65535});
  REQUIRE(large.is_ok());
  CHECK(read_all(**large) == frames);
  std::filesystem::remove(in);
}

TEST_CASE("pcap port: an exhausted large pool is a counted pool_empty drop; small frames go on; books balance") {
  std::vector<std::vector<uint8_t>> frames;
  for (int i = 0; i < 6; ++i) {
    frames.push_back(frame_of(3000 + i));
    frames.push_back(frame_of(100 + i));
  }
  frames.push_back(frame_of(9217));
  std::string in = write_capture("exhausted", frames);
  auto port = make_pcap_port({.rx_path = in, .pool_slots = 64, .large_slots = 2});
  REQUIRE(port.is_ok());
  auto got = read_all(**port);  // holds every buffer: the third large frame finds the large pool empty
  PortStats s = (*port)->stats();
  CHECK(got.size() == 8);  // 6 small, 2 large
  CHECK(s.rx_pool_empty == 4);
  CHECK(s.rx_too_long == 1);
  CHECK(s.rx_packets + s.rx_pool_empty + s.rx_too_long == frames.size());
  CHECK(s.buffers_in_use == 0);
  // No large pool at all: every large frame is pool_empty, none stalls rx.
  auto none = make_pcap_port({.rx_path = in, .large_slots = 0});
  REQUIRE(none.is_ok());
  CHECK(read_all(**none).size() == 6);
  CHECK((*none)->stats().rx_pool_empty == 6);
  std::filesystem::remove(in);
}

TEST_CASE("PacketPool hands out the slot freed last first (a stack: its bytes are still in the cache)") {
  auto p = PacketPool::create(64, 2048);
  REQUIRE(p.is_ok());
  PacketPool& pool = **p;
  Packet a[4];
  REQUIRE(pool.alloc(a, 4) == 4);
  pool.free(a, 4);  // a[3] freed last
  Packet b;
  REQUIRE(pool.alloc(&b, 1) == 1);
  CHECK(b.buf == a[3].buf);
  pool.free_one(b.buf);
  REQUIRE(pool.alloc(&b, 1) == 1);
  CHECK(b.buf == a[3].buf);
  pool.free_one(b.buf);
  CHECK(pool.in_use() == 0);
}

TEST_CASE("PacketPool: every slot once, none twice, also with threads allocating and freeing at once") {
  constexpr uint32_t kSlots = 1000;
  auto p = PacketPool::create(kSlots, 64);
  REQUIRE(p.is_ok());
  PacketPool& pool = **p;
  auto all_distinct = [&] {
    std::vector<Packet> v(kSlots + 1);
    const uint32_t got = pool.alloc(v.data(), kSlots + 1);
    std::set<void*> bufs;
    for (uint32_t i = 0; i < got; ++i) bufs.insert(v[i].buf);
    CHECK(got == kSlots);
    CHECK(bufs.size() == kSlots);
    CHECK(pool.in_use() == kSlots);
    pool.free(v.data(), got);
    CHECK(pool.in_use() == 0);
  };
  all_distinct();
  // Four threads take bursts, mark each buffer as theirs, check the marks are still theirs and give them back: a
  // slot handed to two threads at once shows as a mark overwritten.
  std::atomic<int> clashes{0};
  std::vector<std::thread> ts;
  for (uint8_t t = 1; t <= 4; ++t)
    ts.emplace_back([&, t] {
      Packet burst[32];
      for (uint32_t it = 0; it < 20000; ++it) {
        const uint32_t n = pool.alloc(burst, 1 + (it * 7 + t) % 32);
        for (uint32_t i = 0; i < n; ++i) std::memset(burst[i].data, t, 64);
        for (uint32_t i = 0; i < n; ++i)
          if (burst[i].data[0] != t || burst[i].data[63] != t) clashes.fetch_add(1);
        if (it % 2 == 0) {
          pool.free(burst, n);
        } else {
          for (uint32_t i = 0; i < n; ++i) pool.free_one(burst[i].buf);
        }
      }
    });
  for (auto& t : ts) t.join();
  CHECK(clashes.load() == 0);
  all_distinct();
}
