// Ipv4App::run_in_place (one pass over the packets, what the worker path and native lanes run) == the gathered batch
// (gather, run_native, scatter_back, finish), byte for byte: frames, packets and results, on every packet of every
// capture of ../shared/data/pcap/ndpi (those the parser dropped included) and on generated IPv4 and IPv6 traffic that
// reaches every verdict, in three configurations. The hand-made forwarding tests check both ways too
// (ipv4_run_util.hpp).
#include <catch2/catch.hpp>

#include "ipv4_run_util.hpp"
#include "ipv6_test_util.hpp"
#include "kernels/ipv4/ipv4_app.hpp"

using namespace hpr::kernels::ipv4;
using hpr::ipv4_test::Frame;

TEST_CASE("run_in_place equals the gathered batch on every capture and on generated traffic") {
  const auto table6 = hpr::ipv6_test::test_table6(3000);  // SYNTHETIC IPv6 table + the captures' addresses
  const auto routes6 = hpr::synth6::to_routes6(table6, 16);
  struct Setup {
    Ipv4Config config;
    bool v6;
    bool neighbours;
  };
  const Setup setups[] = {
      {{.num_ports = 16, .lpm_width = LpmWidth::kNarrow}, false, false},
      {{.num_ports = 16, .default_next_hop = 5, .non_ipv4_port = 7, .lpm_width = LpmWidth::kWide}, true, true},
      {{.num_ports = 16}, true, false},
  };

  std::vector<Frame> frames;
  size_t parser_dropped = 0;
  for (const auto& path : hpr::list_captures(hpr::data_path("pcap/ndpi"))) {
    auto c = hpr::load_capture(path);
    REQUIRE(c);
    for (auto& bytes : c->frames) {
      Frame f;
      f.bytes = std::move(bytes);
      hpr::ipv4_test::refresh(f);
      hpr::parse(f.pkt, {.verify_ipv4_checksum = false});  // what fails here reaches the app with its reason
      parser_dropped += f.pkt.drop != hpr::DropReason::kNone;
      frames.push_back(std::move(f));
    }
  }
  REQUIRE(frames.size() > 90000);
  CHECK(parser_dropped > 0);
  for (auto& f : hpr::ipv4_test::generated_frames(20000, 7)) frames.push_back(std::move(f));
  for (auto& f : hpr::ipv6_test::generated6(20000, 11, table6)) frames.push_back(std::move(f));

  for (const Setup& s : setups) {
    auto app = Ipv4App::create(hpr::ipv4_test::full_table(), s.config,
                               s.v6 ? std::span<const Route6>(routes6) : std::span<const Route6>());
    REQUIRE(app);
    if (s.neighbours) {
      std::vector<Neighbour> nb(16);
      for (uint16_t i = 0; i < 16; ++i)
        nb[i] = {static_cast<uint16_t>(i % 3), {0xaa, 0, 0, 0, 0, static_cast<uint8_t>(i)}, {0xbb, 0, 0, 0, 0, 1}};
      REQUIRE((*app)->set_neighbours(nb));
    }
    INFO("options " << (*app)->build_options() << (s.neighbours ? ", neighbours" : ""));
    std::vector<uint32_t> verdicts(static_cast<size_t>(hpr::DropReason::kCount));
    size_t v6_forwarded = 0;
    constexpr size_t kBatch = 256;  // a worker's burst at most; crosses run_native's chunks of 64
    for (size_t at = 0; at < frames.size(); at += kBatch) {
      std::vector<Frame> batch(frames.begin() + static_cast<std::ptrdiff_t>(at),
                               frames.begin() + static_cast<std::ptrdiff_t>(std::min(frames.size(), at + kBatch)));
      const auto res = hpr::ipv4_test::run(**app, batch);  // both ways, REQUIREs them equal
      for (const Ipv4Result& r : res) {
        ++verdicts[r.drop];
        v6_forwarded += r.drop == 0 && (r.flags & kResIpv6) != 0;
      }
    }
    // The comparison covers every verdict (IPv6 ones where IPv6 is routed).
    CHECK(verdicts[0] > 0);
    CHECK((v6_forwarded > 0) == s.v6);
    for (auto r : {hpr::DropReason::kTruncated, hpr::DropReason::kBadVersion, hpr::DropReason::kBadIhl,
                   hpr::DropReason::kBadTotalLength, hpr::DropReason::kBadChecksum, hpr::DropReason::kTtlExceeded}) {
      INFO(hpr::drop_reason_name(r));
      CHECK(verdicts[static_cast<size_t>(r)] > 0);
    }
    if (!s.config.default_next_hop) CHECK(verdicts[static_cast<size_t>(hpr::DropReason::kNoRoute)] > 0);
    if (!s.config.non_ipv4_port) CHECK(verdicts[static_cast<size_t>(hpr::DropReason::kNotIPv4)] > 0);
  }
}

// A descriptor says at most 32,767 bytes after the header's start (kDescAvailMask): a longer datagram fails the total
// length check when gathered, and run_in_place, which otherwise trusts the parser's length checks, says the same.
TEST_CASE("run_in_place: a datagram longer than a descriptor can say is checked as gathered") {
  auto app = Ipv4App::create(hpr::ipv4_test::full_table(), {.num_ports = 16});
  REQUIRE(app);
  Frame f = hpr::ipv4_test::make_ipv4_frame({.payload = 40000});
  REQUIRE(f.bytes.size() > size_t{kDescAvailMask} + 14);
  const Ipv4Result r = hpr::ipv4_test::run_one(**app, f);  // both ways, REQUIREs them equal
  CHECK(r.drop == static_cast<uint8_t>(hpr::DropReason::kBadTotalLength));
}
