// Native IPv4 forwarding semantics: RFC 1624 checksum update, every drop reason, TTL and ICMP Time
// Exceeded, defaults, finish(), and the configuration errors of Ipv4App::create.
#include <catch2/catch.hpp>

#include <random>

#include "ipv4_test_util.hpp"
#include "ipv4_run_util.hpp"
#include "kernels/ipv4/ipv4_app.hpp"
#include "kernels/ipv4/ipv4_hdr.hpp"
#include "kernels/runner.hpp"

using namespace hpr;
using namespace hpr::kernels::ipv4;
using hpr::DropReason;
using hpr::ipv4_test::Frame;
using hpr::ipv4_test::run;
using hpr::ipv4_test::run_one;
using hpr::ipv4_test::HeaderSpec;
using hpr::ipv4_test::make_ipv4_frame;

namespace {

const std::vector<Route> kRoutes = {
    {0x01000000u, 8, 1},    // 1.0.0.0/8 → 1
    {0x01020300u, 24, 2},   // 1.2.3.0/24 → 2
    {0x01020380u, 25, 3},   // 1.2.3.128/25 → 3
};

std::unique_ptr<Ipv4App> make_app(Ipv4Config cfg = {}) {
  auto a = Ipv4App::create(kRoutes, cfg);
  if (!a) FAIL(a.status().to_string());
  return std::move(a).value();
}


}  // namespace

TEST_CASE("ipv4_header_ok is ones_sum's test for 0xffff on every header length, extreme sums included") {
  std::mt19937 rng(791);
  for (int i = 0; i < 200000; ++i) {
    uint8_t h[60];
    const uint32_t len = 4 * (5 + rng() % 11);
    const int fill = i % 5;  // random bytes, all 0xff, all zero, all 0xff but one word, one's complement zero
    for (uint32_t k = 0; k < len; ++k) h[k] = fill == 0 ? static_cast<uint8_t>(rng()) : fill == 2 ? 0 : 0xff;
    if (fill == 3) h[rng() % len] = static_cast<uint8_t>(rng());
    if (fill == 4) {  // a valid checksum over random bytes: the sum is 0xffff
      for (uint32_t k = 0; k < len; ++k) h[k] = static_cast<uint8_t>(rng());
      h[10] = h[11] = 0;
      const uint16_t c = ip_checksum(h, len);
      h[10] = static_cast<uint8_t>(c >> 8);
      h[11] = static_cast<uint8_t>(c);
      REQUIRE(ones_sum(h, len) == 0xffff);
      REQUIRE(ipv4_header_ok(h, len));
    }
    REQUIRE(ipv4_header_ok(h, len) == (ones_sum(h, len) == 0xffff));  // all zero: 0, not 0xffff; all 0xff: 0xffff
  }
}

TEST_CASE("RFC 1624 incremental update equals a full recompute on many headers") {
  std::mt19937 rng(1624);
  for (int i = 0; i < 200000; ++i) {
    uint8_t h[60];
    const uint32_t ihl4 = 4 * (5 + rng() % 11);
    for (uint32_t k = 0; k < ihl4; ++k) h[k] = static_cast<uint8_t>(rng());
    if (i % 7 == 0) std::memset(h + 12, 0xff, 8);   // extreme sums
    if (i % 11 == 0) std::memset(h + 12, 0x00, 8);
    h[0] = static_cast<uint8_t>(0x40 | (ihl4 / 4));
    h[8] = static_cast<uint8_t>(2 + rng() % 254);
    h[10] = h[11] = 0;
    const uint16_t c = ip_checksum(h, ihl4);
    h[10] = static_cast<uint8_t>(c >> 8);
    h[11] = static_cast<uint8_t>(c);
    REQUIRE(ones_sum(h, ihl4) == 0xffff);
    const uint16_t inc = ttl_decrement_checksum(c, h[8], h[9]);
    h[8] = static_cast<uint8_t>(h[8] - 1);
    h[10] = h[11] = 0;
    const uint16_t full = ip_checksum(h, ihl4);
    REQUIRE(inc == full);
  }
  // Boundary case of RFC 1624 §3-4: after the update the other words sum to 0xFFFF (one's complement
  // zero), so the correct checksum is 0x0000; eq. 3 must not produce the 0xFFFF variant.
  uint8_t h[20] = {0x45, 0, 0x00, 0x14, 0xb9, 0xeb, 0, 0, 2, 0};
  const uint16_t c = ip_checksum(h, 20);
  h[10] = static_cast<uint8_t>(c >> 8);
  h[11] = static_cast<uint8_t>(c);
  const uint16_t inc = ttl_decrement_checksum(c, 2, 0);
  CHECK(inc == 0x0000);
  h[8] = 1;
  h[10] = static_cast<uint8_t>(inc >> 8);
  h[11] = static_cast<uint8_t>(inc);
  CHECK(ones_sum(h, 20) == 0xffff);
}

TEST_CASE("a valid packet is forwarded: TTL - 1, checksum updated, next hop and port set") {
  auto app = make_app();
  for (bool vlan : {false, true}) {
    for (uint8_t ihl : {5, 6, 15}) {
      Frame f = make_ipv4_frame({.dst = 0x01020381u, .ttl = 64, .ihl = ihl, .vlan = vlan});
      const std::vector<uint8_t> before = f.bytes;
      auto r = run_one(*app, f);
      CHECK(r.drop == 0);
      CHECK(r.next_hop == 3);
      CHECK(r.out_port == 3);
      CHECK(r.flags == 0);
      CHECK(f.pkt.out_port == 3);
      CHECK(f.pkt.drop == DropReason::kNone);
      const uint8_t* h = f.bytes.data() + f.pkt.l3_off;
      CHECK(h[8] == 63);
      CHECK(ones_sum(h, ihl * 4u) == 0xffff);
      // Only TTL and checksum changed.
      for (size_t k = 0; k < before.size(); ++k) {
        if (k != f.pkt.l3_off + 8u && k != f.pkt.l3_off + 10u && k != f.pkt.l3_off + 11u) REQUIRE(before[k] == f.bytes[k]);
      }
    }
  }
  Frame a = make_ipv4_frame({.dst = 0x01020301u});
  CHECK(run_one(*app, a).next_hop == 2);
  Frame b = make_ipv4_frame({.dst = 0x01ffffffu, .ttl = 2});
  CHECK(run_one(*app, b).next_hop == 1);
  CHECK(b.bytes[b.pkt.l3_off + 8] == 1);
}

TEST_CASE("slice carries only the header and the bytes available in flags") {
  auto app = make_app();
  Frame f = make_ipv4_frame({.ihl = 7, .payload = 1000, .vlan = true});
  hpr::ipv4_test::refresh(f);
  auto s = app->slice(f.pkt);
  CHECK(s.offset == 18);
  CHECK(s.len == 28);
  CHECK(s.flags == 28 + 1000);
  hpr::Packet v6;
  v6.l3 = hpr::L3::kIPv6;
  CHECK(app->slice(v6).len == 0);
  CHECK(app->slice(v6).flags == kDescNotIpv4);
}

TEST_CASE("each malformed header is dropped with its reason and left untouched") {
  auto app = make_app();
  struct Case {
    const char* what;
    DropReason want;
    std::function<void(Frame&)> mutate;
  };
  const std::vector<Case> cases = {
      {"frame ends inside the header", DropReason::kTruncated, [](Frame& f) { f.bytes.resize(f.pkt.l3_off + 19); }},
      {"no L3 bytes at all", DropReason::kTruncated, [](Frame& f) { f.bytes.resize(f.pkt.l3_off); }},
      {"version 6 in an IPv4 frame", DropReason::kBadVersion, [](Frame& f) { f.bytes[f.pkt.l3_off] = 0x65; }},
      {"IHL 4", DropReason::kBadIhl, [](Frame& f) { f.bytes[f.pkt.l3_off] = 0x44; }},
      {"IHL beyond the frame", DropReason::kBadIhl, [](Frame& f) {
         f.bytes[f.pkt.l3_off] = 0x4f;
         f.bytes.resize(f.pkt.l3_off + 40);
       }},
      {"total length below the header", DropReason::kBadTotalLength, [](Frame& f) {
         f.bytes[f.pkt.l3_off + 2] = 0;
         f.bytes[f.pkt.l3_off + 3] = 19;
         hpr::ipv4_test::fix_checksum(f);
       }},
      {"total length beyond the frame", DropReason::kBadTotalLength, [](Frame& f) {
         f.bytes.resize(f.bytes.size() - 1);
       }},
      {"checksum off by one", DropReason::kBadChecksum, [](Frame& f) { f.bytes[f.pkt.l3_off + 11] ^= 1; }},
      {"option byte changed without checksum", DropReason::kBadChecksum, [](Frame& f) {
         f.bytes[f.pkt.l3_off] = 0x46;  // make it IHL 6 over the payload bytes
         f.bytes[f.pkt.l3_off + 21] ^= 0x40;
       }},
      {"TTL 1", DropReason::kTtlExceeded, [](Frame& f) {
         f.bytes[f.pkt.l3_off + 8] = 1;
         hpr::ipv4_test::fix_checksum(f);
       }},
      {"TTL 0", DropReason::kTtlExceeded, [](Frame& f) {
         f.bytes[f.pkt.l3_off + 8] = 0;
         hpr::ipv4_test::fix_checksum(f);
       }},
      {"no route", DropReason::kNoRoute, [](Frame& f) {
         f.bytes[f.pkt.l3_off + 16] = 9;
         hpr::ipv4_test::fix_checksum(f);
       }},
  };
  for (const auto& c : cases) {
    INFO(c.what);
    Frame f = make_ipv4_frame({.dst = 0x01020304u});
    c.mutate(f);
    const std::vector<uint8_t> before = f.bytes;
    auto r = run_one(*app, f);
    CHECK(static_cast<DropReason>(r.drop) == c.want);
    CHECK(f.pkt.drop == c.want);
    CHECK(r.next_hop == kNoNextHop);
    CHECK(r.flags == (c.want == DropReason::kTtlExceeded ? kResIcmpTimeExceeded : 0));
    CHECK(f.bytes == before);
  }
}

TEST_CASE("defaults: LPM miss and non-IPv4 packets") {
  Frame miss = make_ipv4_frame({.dst = 0x09000001u});
  Frame v6;
  v6.bytes.assign(80, 0x60);
  v6.pkt.l3 = hpr::L3::kIPv6;
  v6.pkt.l3_off = 14;
  Frame arp;
  arp.bytes.assign(60, 0);
  arp.pkt.l3 = hpr::L3::kOther;

  auto strict = make_app();
  std::vector<Frame> a{miss, v6, arp};
  auto r = run(*strict, a);
  CHECK(static_cast<DropReason>(r[0].drop) == DropReason::kNoRoute);
  CHECK(static_cast<DropReason>(r[1].drop) == DropReason::kNotIPv4);
  CHECK(r[1].flags == kResNotIpv4);
  CHECK(a[2].pkt.drop == DropReason::kNotIPv4);

  auto lenient = make_app({.num_ports = 4, .default_next_hop = 0, .non_ipv4_port = 2});
  std::vector<Frame> b{miss, v6, arp};
  auto q = run(*lenient, b);
  CHECK(q[0].drop == 0);
  CHECK(q[0].next_hop == 0);
  CHECK(q[0].flags == kResDefaultRoute);
  CHECK(b[0].bytes[b[0].pkt.l3_off + 8] == 63);
  CHECK(q[1].drop == 0);
  CHECK(q[1].out_port == 2);
  CHECK(b[1].pkt.out_port == 2);
  CHECK(b[2].pkt.out_port == 2);
  CHECK(b[2].pkt.drop == DropReason::kNone);
}

TEST_CASE("ICMP Time Exceeded reply (RFC 792)") {
  auto app = make_app();
  for (bool vlan : {false, true}) {
    Frame f = make_ipv4_frame({.src = 0xc0000201u, .dst = 0x01020304u, .ttl = 1, .ihl = 6, .payload = 100, .vlan = vlan});
    auto r = run_one(*app, f);
    REQUIRE(static_cast<DropReason>(r.drop) == DropReason::kTtlExceeded);
    REQUIRE(r.flags == kResIcmpTimeExceeded);
    std::vector<uint8_t> out(200, 0xcc);
    auto n = build_icmp_time_exceeded(f.pkt, 0xc6336401u, out);
    REQUIRE(n);
    const size_t l2 = vlan ? 18 : 14;
    CHECK(*n == l2 + 20 + 8 + 24 + 8);
    CHECK(std::equal(out.begin(), out.begin() + 6, f.bytes.begin() + 6));   // to the sender
    CHECK(std::equal(out.begin() + 6, out.begin() + 12, f.bytes.begin()));  // from us
    CHECK(std::equal(out.begin() + 12, out.begin() + l2, f.bytes.begin() + 12));  // VLAN + ethertype kept
    const uint8_t* ip = out.data() + l2;
    CHECK(ip[0] == 0x45);
    CHECK(((ip[2] << 8) | ip[3]) == 20 + 8 + 24 + 8);
    CHECK(ip[8] == 64);
    CHECK(ip[9] == 1);
    CHECK(ones_sum(ip, 20) == 0xffff);
    CHECK((uint32_t{ip[12]} << 24 | uint32_t{ip[13]} << 16 | uint32_t{ip[14]} << 8 | ip[15]) == 0xc6336401u);
    CHECK(std::equal(ip + 16, ip + 20, f.bytes.begin() + l2 + 12));  // dst = original source
    const uint8_t* ic = ip + 20;
    CHECK(ic[0] == 11);
    CHECK(ic[1] == 0);
    CHECK(ones_sum(ic, 8 + 24 + 8) == 0xffff);
    CHECK(std::equal(ic + 8, ic + 8 + 24 + 8, f.bytes.begin() + l2));  // original header + 8 data bytes
  }
  // A datagram with fewer than 8 data bytes quotes what it has.
  Frame s = make_ipv4_frame({.ttl = 0, .payload = 3});
  hpr::ipv4_test::refresh(s);
  std::vector<uint8_t> out(100);
  auto n = build_icmp_time_exceeded(s.pkt, 1, out);
  REQUIRE(n);
  CHECK(*n == 14 + 20 + 8 + 20 + 3);
  CHECK(ones_sum(out.data() + 34, 8 + 23) == 0xffff);
  std::vector<uint8_t> tiny(40);
  CHECK_FALSE(build_icmp_time_exceeded(s.pkt, 1, tiny));
  hpr::Packet none;
  CHECK_FALSE(build_icmp_time_exceeded(none, 1, out));
}

TEST_CASE("Ipv4App::create rejects inconsistent configuration") {
  CHECK_FALSE(Ipv4App::create({}, {}));
  auto bad_nh = Ipv4App::create(kRoutes, {.num_ports = 3});
  REQUIRE_FALSE(bad_nh);
  CHECK_THAT(bad_nh.status().message(), Catch::Contains("1.2.3.128/25 has next hop 3 but num_ports is 3"));
  CHECK_FALSE(Ipv4App::create(kRoutes, {.num_ports = 4, .default_next_hop = 4}));
  CHECK_FALSE(Ipv4App::create(kRoutes, {.num_ports = 4, .non_ipv4_port = 9}));
  CHECK_FALSE(Ipv4App::create(kRoutes, {.num_ports = 0}));
  auto f = Ipv4App::from_file("/nonexistent.dat.gz", {});
  REQUIRE_FALSE(f);
  CHECK(f.status().code() == hpr::Code::kNotFound);
}

TEST_CASE("kernel source and build options are complete") {
  auto app = make_app({.num_ports = 4, .default_next_hop = 1});
  const std::string src = app->kernel_source();
  CHECK_THAT(src, Catch::Contains("hpr_desc"));
  CHECK_THAT(src, Catch::Contains("__kernel void ipv4_fwd"));
  CHECK_THAT(app->build_options(), Catch::Contains("-DIPV4_DEFAULT_NH=1u"));
  CHECK_THAT(app->build_options(), Catch::Contains("-DDROP_NO_ROUTE=8"));
  CHECK(app->result_bytes() == 8);
  CHECK(app->writes_back());
}

TEST_CASE("default LPM width: 16-bit entries where the routes fit, 32-bit where they do not, same forwarding") {
  CHECK(Ipv4Config{}.lpm_width == LpmWidth::kAuto);
  // Next hops up to 32765 fit a 16-bit entry (next_hop + 1 below the tbl8 flag and its all-ones pattern).
  for (uint32_t nh : {3u, 32765u, 32766u, 40000u, 65535u, 1u << 20}) {
    INFO("largest next hop " << nh);
    const std::vector<Route> routes = {{0x01000000u, 8, 1}, {0x01020380u, 25, nh}};
    auto a = Ipv4App::create(routes, {.num_ports = nh + 1});
    REQUIRE(a);
    CHECK((*a)->lpm().wide() == (nh > 32765));
    CHECK(((*a)->build_options().find("-DLPM_WIDE") != std::string::npos) == (nh > 32765));  // the device's width
    Frame f = make_ipv4_frame({.dst = 0x01020381u});
    auto r = run_one(**a, f);
    CHECK(r.drop == 0);
    CHECK(r.next_hop == nh);
    Frame g = make_ipv4_frame({.dst = 0x01020301u});
    CHECK(run_one(**a, g).next_hop == 1);
  }
  // More /24 blocks with longer prefixes than 16-bit entries can index (32,768 tbl8 groups) → 32-bit.
  std::vector<Route> many;
  for (uint32_t b = 0; b <= 0x8000u; ++b) many.push_back({(0x0a000000u | b << 8) | 0x80u, 25, b % 4});
  auto w = Ipv4App::create(many, {.num_ports = 4});
  REQUIRE(w);
  CHECK((*w)->lpm().wide());
  CHECK((*w)->lpm().num_groups() == 0x8001u);
  many.pop_back();
  auto n = Ipv4App::create(many, {.num_ports = 4});
  REQUIRE(n);
  CHECK_FALSE((*n)->lpm().wide());
  for (const auto* app : {w->get(), n->get()}) {
    Frame f = make_ipv4_frame({.dst = 0x0a7fff81u});  // 10.127.255.128/25 → 0x7fff % 4
    CHECK(run_one(*app, f).next_hop == 3);
    Frame g = make_ipv4_frame({.dst = 0x0a7fff01u});  // the lower half of that /24: no route
    CHECK(run_one(*app, g).drop == static_cast<uint8_t>(DropReason::kNoRoute));
  }
}

TEST_CASE("finish keeps the reason of a packet dropped before the app, and counts forwarded packets") {
  auto app = make_app();
  std::vector<Frame> v{make_ipv4_frame({.dst = 0x01020304u}), make_ipv4_frame({.dst = 0x01020304u}),
                       make_ipv4_frame({.dst = 0x09000000u})};
  std::vector<hpr::Packet> pkts;
  for (auto& f : v) {
    hpr::ipv4_test::refresh(f);
    pkts.push_back(f.pkt);
  }
  pkts[1].drop = DropReason::kFrameTooLong;
  auto b = hpr::kernels::gather(*app, pkts);
  CHECK(b.desc[1].len == 0);
  app->run_native(b.view());
  app->finish(pkts, b.view());
  CHECK(pkts[0].drop == DropReason::kNone);
  CHECK(pkts[0].out_port == 2);
  CHECK(pkts[1].drop == DropReason::kFrameTooLong);
  CHECK(pkts[2].drop == DropReason::kNoRoute);
  CHECK(app->count_events(pkts, b.view()) == 1);
  CHECK(app->event_name() == "forwarded");
}
