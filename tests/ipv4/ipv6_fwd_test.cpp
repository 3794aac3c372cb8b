// Native IPv6 forwarding of the ipv4 app (issue 18): header checks with their drop reasons, hop limit,
// LPM6 next hops, defaults, the neighbour rewrite, ICMPv6 Time Exceeded (known answer), and no change at
// all for IPv6 when the route file has no IPv6 prefix.
#include <catch2/catch.hpp>

#include "ipv6_test_util.hpp"
#include "ipv4_run_util.hpp"
#include "kernels/ipv4/ipv4_app.hpp"
#include "kernels/runner.hpp"

using namespace hpr;
using namespace hpr::kernels::ipv4;
using hpr::ipv4_test::Frame;
using hpr::ipv4_test::run;
using hpr::ipv4_test::run_one;
using hpr::ipv6_test::addr6;
using hpr::ipv6_test::make_ipv6_frame;

namespace {

const std::vector<Route> kRoutes = {{0x01000000u, 8, 1}};
const std::vector<Route6> kRoutes6 = {{addr6("2001:db8::"), 32, 1}, {addr6("2001:db8:2::"), 48, 2},
                                      {addr6("2001:db8:2:3::"), 64, 3}};

std::unique_ptr<Ipv4App> make_app(Ipv4Config cfg = {}, std::span<const Route6> r6 = kRoutes6) {
  auto a = Ipv4App::create(kRoutes, cfg, r6);
  if (!a) FAIL(a.status().to_string());
  return std::move(a).value();
}


}  // namespace

TEST_CASE("IPv6: routed packets get hop limit - 1 and the LPM6 next hop; nothing else changes") {
  auto app = make_app();
  struct Case {
    const char* dst;
    uint32_t nh;
  };
  for (const Case& c : {Case{"2001:db8:1::5", 1}, Case{"2001:db8:2:4::1", 2}, Case{"2001:db8:2:3::9", 3}}) {
    INFO(c.dst);
    for (bool vlan : {false, true}) {
      Frame f = make_ipv6_frame({.dst = addr6(c.dst), .hop_limit = 2, .vlan = vlan});
      std::vector<uint8_t> want = f.bytes;
      want[f.pkt.l3_off + 7] = 1;
      auto r = run_one(*app, f);
      CHECK(r.drop == 0);
      CHECK(r.next_hop == c.nh);
      CHECK(r.out_port == c.nh);
      CHECK(r.flags == kResIpv6);
      CHECK(f.pkt.out_port == c.nh);
      CHECK(f.bytes == want);
    }
  }
  const hpr::kernels::Slice s = app->slice(make_ipv6_frame({.payload = 1000}).pkt);
  CHECK(s.len == 40);
  CHECK(s.flags == (kDescNotIpv4 | (40 + 1000)));
}

TEST_CASE("IPv6: each malformed header is dropped with its reason and left untouched") {
  auto app = make_app();
  struct Case {
    const char* what;
    void (*mutate)(Frame&);
    DropReason want;
  };
  const std::vector<Case> cases = {
      {"header cut", [](Frame& f) { f.bytes.resize(f.pkt.l3_off + 39); }, DropReason::kTruncated},
      {"one byte of header", [](Frame& f) { f.bytes.resize(f.pkt.l3_off + 1); }, DropReason::kTruncated},
      {"no header byte", [](Frame& f) { f.bytes.resize(f.pkt.l3_off); }, DropReason::kTruncated},
      {"version 4", [](Frame& f) { f.bytes[f.pkt.l3_off] = 0x40; }, DropReason::kBadVersion},
      {"payload length beyond the frame", [](Frame& f) { f.bytes.resize(f.bytes.size() - 1); },
       DropReason::kBadTotalLength},
      {"hop limit 1", [](Frame& f) { f.bytes[f.pkt.l3_off + 7] = 1; }, DropReason::kTtlExceeded},
      {"hop limit 0", [](Frame& f) { f.bytes[f.pkt.l3_off + 7] = 0; }, DropReason::kTtlExceeded},
      {"no route", [](Frame& f) { f.bytes[f.pkt.l3_off + 24] = 0x30; }, DropReason::kNoRoute},
  };
  for (const auto& c : cases) {
    INFO(c.what);
    Frame f = make_ipv6_frame({});
    c.mutate(f);
    hpr::ipv4_test::refresh(f);
    const std::vector<uint8_t> before = f.bytes;
    auto r = run_one(*app, f);
    CHECK(static_cast<DropReason>(r.drop) == c.want);
    CHECK(f.pkt.drop == c.want);
    CHECK(r.next_hop == kNoNextHop);
    const bool empty_slice = f.bytes.size() == f.pkt.l3_off;  // the IPv4 path's empty slice: kTruncated, no flag
    CHECK(r.flags == (c.want == DropReason::kTtlExceeded ? (kResIpv6 | kResIcmpTimeExceeded)
                                                         : (empty_slice ? 0 : kResIpv6)));
    CHECK(f.bytes == before);
  }
  // Ethernet padding after the payload is fine.
  Frame pad = make_ipv6_frame({.payload = 4});
  pad.bytes.resize(pad.bytes.size() + 20, 0);
  CHECK(run_one(*app, pad).drop == 0);
}

TEST_CASE("IPv6: default next hop on a miss, neighbour rewrite, and mixed batches") {
  auto app = make_app({.num_ports = 4, .default_next_hop = 0, .non_ipv4_port = 2});
  std::vector<Neighbour> nb(4);
  for (uint16_t i = 0; i < 4; ++i) nb[i] = {static_cast<uint16_t>(10 + i), {0xaa, 0, 0, 0, 0, static_cast<uint8_t>(i)},
                                            {0xbb, 0, 0, 0, 0, static_cast<uint8_t>(i)}};
  REQUIRE(app->set_neighbours(nb));
  std::vector<Frame> v;
  for (int i = 0; i < 150; ++i) {  // across the native path's chunks of 64
    if (i % 3 == 0) v.push_back(hpr::ipv4_test::make_ipv4_frame({.dst = 0x01020304u}));
    if (i % 3 == 1) v.push_back(make_ipv6_frame({.dst = addr6(i % 2 ? "2001:db8:2:3::1" : "3fff::1")}));
    if (i % 3 == 2) {
      Frame arp;
      arp.bytes.assign(60, 0);
      arp.pkt.l3 = hpr::L3::kOther;
      v.push_back(arp);
    }
  }
  auto r = run(*app, v);
  for (size_t i = 0; i < v.size(); ++i) {
    INFO(i);
    CHECK(r[i].drop == 0);
    if (i % 3 == 1) {
      const uint32_t want = i % 2 ? 3 : 0;
      CHECK(r[i].next_hop == want);
      CHECK(r[i].flags == (want == 0 ? (kResIpv6 | kResDefaultRoute) : kResIpv6));
      CHECK(v[i].pkt.out_port == 10 + want);
      CHECK(v[i].bytes[0] == 0xaa);
      CHECK(v[i].bytes[5] == want);
      CHECK(v[i].bytes[6] == 0xbb);
      CHECK(v[i].bytes[v[i].pkt.l3_off + 7] == 63);
    } else if (i % 3 == 0) {
      CHECK(v[i].pkt.out_port == 11);
    } else {
      CHECK(v[i].pkt.out_port == 2);
    }
  }
}

TEST_CASE("IPv6 without IPv6 routes: passed to non_ipv4_port or dropped as before") {
  auto plain = make_app({}, {});
  CHECK(plain->lpm6() == nullptr);
  CHECK_THAT(plain->build_options(), !Catch::Contains("IPV6_ROUTES"));
  Frame f = make_ipv6_frame({.hop_limit = 1});
  const std::vector<uint8_t> before = f.bytes;
  CHECK(plain->slice(f.pkt).flags == kDescNotIpv4);
  auto r = run_one(*plain, f);
  CHECK(static_cast<DropReason>(r.drop) == DropReason::kNotIPv4);
  CHECK(r.flags == kResNotIpv4);
  auto lenient = make_app({.num_ports = 4, .non_ipv4_port = 3}, {});
  Frame g = make_ipv6_frame({});
  const std::vector<uint8_t> g_before = g.bytes;
  auto q = run_one(*lenient, g);
  CHECK(q.drop == 0);
  CHECK(q.out_port == 3);
  CHECK(g.bytes == g_before);  // hop limit untouched
  CHECK(f.bytes == before);
  CHECK(make_app()->lpm6() != nullptr);
  CHECK_THAT(make_app()->build_options(), Catch::Contains("-DIPV6_ROUTES"));
  auto bad = Ipv4App::create(kRoutes, {.num_ports = 2}, kRoutes6);
  REQUIRE_FALSE(bad);
  CHECK_THAT(bad.status().message(), Catch::Contains("2001:db8:2::/48 has next hop 2 but num_ports is 2"));
}

TEST_CASE("ICMPv6 Time Exceeded (RFC 4443 3.3): known answer with checksum") {
  auto app = make_app();
  Frame f = make_ipv6_frame({.src = addr6("2001:db8:1::1"), .dst = addr6("2001:db8:2::2"), .hop_limit = 1,
                             .payload = 8});
  for (size_t i = 0; i < 8; ++i) f.bytes[f.pkt.l3_off + 40 + i] = static_cast<uint8_t>(i);
  auto r = run_one(*app, f);
  REQUIRE(static_cast<DropReason>(r.drop) == DropReason::kTtlExceeded);
  REQUIRE((r.flags & kResIcmpTimeExceeded) != 0);
  std::vector<uint8_t> out(200, 0xcc);
  auto n = build_icmpv6_time_exceeded(f.pkt, addr6("2001:db8::fe"), out);
  REQUIRE(n);
  REQUIRE(*n == 14 + 40 + 8 + 48);
  // Known answer: the IPv6 header and ICMPv6 head of the reply, checksum 0xa443 (computed independently
  // with the RFC 1071 sum over the RFC 8200 pseudo-header in Python).
  const std::vector<uint8_t> want = {
      0x02, 0, 0, 0, 0, 0x02, 0x02, 0, 0, 0, 0, 0x01, 0x86, 0xdd,  // MACs swapped
      0x60, 0, 0, 0, 0, 56, 58, 64,                                 // IPv6: length 56, ICMPv6, hop limit 64
      0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xfe,   // src = router
      0x20, 0x01, 0x0d, 0xb8, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01,   // dst = original source
      3, 0, 0xa4, 0x43, 0, 0, 0, 0};
  CHECK(std::vector<uint8_t>(out.begin(), out.begin() + static_cast<long>(want.size())) == want);
  CHECK(std::equal(out.begin() + 62, out.begin() + 62 + 48, f.bytes.begin() + 14));  // the packet, quoted
  // A large packet is quoted up to the 1280-byte minimum MTU.
  Frame big = make_ipv6_frame({.hop_limit = 0, .payload = 1400});
  std::vector<uint8_t> out2(2000);
  auto m = build_icmpv6_time_exceeded(big.pkt, addr6("::1"), out2);
  REQUIRE(m);
  CHECK(*m == 14 + 1280);
  std::vector<uint8_t> tiny(60);
  CHECK_FALSE(build_icmpv6_time_exceeded(f.pkt, addr6("::1"), tiny));
  Frame v4 = hpr::ipv4_test::make_ipv4_frame({});
  hpr::ipv4_test::refresh(v4);
  CHECK_FALSE(build_icmpv6_time_exceeded(v4.pkt, addr6("::1"), out));
  // The IPv4 builder refuses an IPv6 packet (the pipeline then sends nothing).
  CHECK_FALSE(build_icmp_time_exceeded(f.pkt, 1, out));
}
