// IPv6 routes and LPM6 (issue 18): IPv6 lines of the route files load into RouteLoad::routes6 (and a
// malformed one names its file and line); Lpm6 equals a linear longest-match oracle on the synthetic
// table, on random addresses inside and outside its prefixes and on every IPv6 address of the captures.
#include <catch2/catch.hpp>

#include <random>

#include "ipv6_test_util.hpp"
#include "kernels/ipv4/lpm6.hpp"

using namespace hpr::kernels::ipv4;
using hpr::ipv6_test::addr6;

namespace {

bool matches(const Ipv6Addr& a, const Route6& r) { return hpr::synth6::mask6(a, r.len) == r.prefix; }

// Linear scan: the longest matching prefix, the later route among equal ones.
uint32_t oracle(std::span<const Route6> routes, const Ipv6Addr& a) {
  int best = -1;
  uint32_t nh = kNoNextHop;
  for (const Route6& r : routes) {
    if (static_cast<int>(r.len) >= best && matches(a, r)) {
      best = r.len;
      nh = r.next_hop;
    }
  }
  return nh;
}

void check_all(const Lpm6& lpm, std::span<const Route6> routes, const std::vector<Ipv6Addr>& addrs) {
  std::vector<uint32_t> bulk(addrs.size());
  lpm.lookup_bulk(reinterpret_cast<const uint8_t(*)[16]>(addrs.data()), bulk.data(), static_cast<uint32_t>(addrs.size()));
  size_t bad = 0;
  for (size_t i = 0; i < addrs.size(); ++i) {
    const uint32_t want = oracle(routes, addrs[i]);
    if ((lpm.lookup(addrs[i].data()) != want || bulk[i] != want) && ++bad < 5)
      UNSCOPED_INFO(format_ipv6(addrs[i]) << ": want " << want << ", lookup " << lpm.lookup(addrs[i].data())
                                          << ", bulk " << bulk[i]);
  }
  CHECK(bad == 0);
}

}  // namespace

TEST_CASE("IPv6 lines load into routes6 with the IPv4 next-hop rules") {
  auto r = parse_ipasn("1.0.0.0/24\t13335\n2001:db8::/32\t64500\n2a00:1450::/29\t15169\n::/0\t7\n", "t.dat", 4);
  REQUIRE(r);
  CHECK(r->routes.size() == 1);
  CHECK(r->ipv6_skipped == 3);
  REQUIRE(r->routes6.size() == 3);
  CHECK(r->routes6[0] == Route6{addr6("2001:db8::"), 32, 64500 % 4});
  CHECK(r->routes6[1] == Route6{addr6("2a00:1450::"), 29, 15169 % 4});
  CHECK(r->routes6[2] == Route6{addr6("::"), 0, 7 % 4});
  auto t = parse_route_text("10.0.0.0/8 1\nfe80::/10 2\n2001:db8::/32 3\n", "t.txt");
  REQUIRE(t);
  REQUIRE(t->routes6.size() == 2);
  CHECK(t->routes6[1] == Route6{addr6("2001:db8::"), 32, 3});
}

TEST_CASE("a malformed IPv6 route names the file and line") {
  struct Case {
    const char* line;
    const char* what;
  };
  for (const Case& c : {Case{"2001:db8::/129\t1", "bad IPv6 prefix length '129'"},
                        Case{"2001:zz8::/32\t1", "bad IPv6 address '2001:zz8::'"},
                        Case{"2001:db8::\t1", "is not a prefix"},
                        Case{"2001:db8::1/32\t1", "host bits set in '2001:db8::1/32' (did you mean 2001:db8::/32?)"},
                        Case{"2001:db8::/32\tx", "bad origin AS 'x'"}}) {
    INFO(c.line);
    auto e = parse_ipasn(std::string("1.0.0.0/24\t1\n") + c.line + "\n", "x.dat", 4);
    REQUIRE_FALSE(e);
    CHECK(e.status().code() == hpr::Code::kInvalidArgument);
    CHECK_THAT(e.status().message(), Catch::StartsWith("x.dat:2: ") && Catch::Contains(c.what));
  }
  auto nh = parse_route_text("10.0.0.0/8 1\n2001:db8::/32 fe80::1\n", "r.txt");
  REQUIRE_FALSE(nh);
  CHECK_THAT(nh.status().message(), Catch::StartsWith("r.txt:2: bad next hop 'fe80::1'"));
}

TEST_CASE("Lpm6 on hand-made routes: every level boundary, /0, /128, nesting, duplicates") {
  const std::vector<Route6> routes = {
      {addr6("2001:db8::"), 32, 1},          {addr6("2001:db8:ab00::"), 40, 2},  {addr6("2001:db8:abcd::"), 48, 3},
      {addr6("2001:db8:abcd:12::"), 63, 4},  {addr6("2001:db8:abcd:12::1"), 128, 5}, {addr6("2001:d00::"), 24, 6},
      {addr6("2001:d80::"), 25, 7},          {addr6("2001:db8::"), 32, 8},          {addr6("fe80::"), 10, 9},
      {addr6("2001:db8:abcd:12:8000::"), 65, 10}};
  auto lpm = Lpm6::build(routes);
  REQUIRE(lpm);
  CHECK(lpm->lookup(addr6("2001:db8:abcd:12::1").data()) == 5);
  CHECK(lpm->lookup(addr6("2001:db8:abcd:12::2").data()) == 4);
  CHECK(lpm->lookup(addr6("2001:db8:abcd:12:8000::2").data()) == 10);
  CHECK(lpm->lookup(addr6("2001:db8:abcd:ff::").data()) == 3);
  CHECK(lpm->lookup(addr6("2001:db8:ab01::").data()) == 2);
  CHECK(lpm->lookup(addr6("2001:db8:1::").data()) == 8);  // the later duplicate wins
  CHECK(lpm->lookup(addr6("2001:d90::").data()) == 7);
  CHECK(lpm->lookup(addr6("2001:d01::").data()) == 6);
  CHECK(lpm->lookup(addr6("fe80::1").data()) == 9);
  CHECK(lpm->lookup(addr6("2002::").data()) == kNoNextHop);
  std::vector<Ipv6Addr> probe;
  std::mt19937_64 rng(1);
  for (const Route6& r : routes) {
    for (int k = 0; k < 200; ++k) {
      Ipv6Addr a = r.prefix;
      for (uint32_t b = 0; b < 16; ++b)
        if (rng() % 3 == 0) a[b] ^= static_cast<uint8_t>(1u << (rng() % 8));
      probe.push_back(a);
    }
  }
  check_all(*lpm, routes, probe);
  auto def = Lpm6::build(std::vector<Route6>{{addr6("::"), 0, 3}});
  REQUIRE(def);
  CHECK(def->lookup(addr6("1234::5").data()) == 3);
  CHECK_FALSE(Lpm6::build({}));
  CHECK_FALSE(Lpm6::build(std::vector<Route6>{{addr6("::"), 0, kMaxNextHop}}));
}

TEST_CASE("Lpm6 equals the oracle on the synthetic table, random and capture addresses") {
  const auto synth = hpr::ipv6_test::test_table6(3000);
  const auto routes = hpr::synth6::to_routes6(synth, 16);
  auto lpm = Lpm6::build(routes);
  REQUIRE(lpm);
  INFO("SYNTHETIC table: " << routes.size() << " prefixes, " << lpm->num_groups() << " groups");
  std::vector<Ipv6Addr> addrs = hpr::synth6::addresses_in(synth, 4000, 5);
  std::mt19937_64 rng(6);
  for (int i = 0; i < 2000; ++i) {  // uniform over 2000::/3 and over everything
    Ipv6Addr a;
    for (auto& b : a) b = static_cast<uint8_t>(rng());
    if (i % 2 == 0) a[0] = static_cast<uint8_t>(0x20 | (a[0] & 0x1f));
    addrs.push_back(a);
  }
  const auto& cap = hpr::ipv6_test::capture_ipv6_addresses();
  REQUIRE(cap.size() > 1000);
  for (size_t i = 0; i < cap.size(); i += std::max<size_t>(1, cap.size() / 5000)) addrs.push_back(cap[i]);
  check_all(*lpm, routes, addrs);
  size_t routed = 0;
  for (const auto& a : cap) routed += lpm->lookup(a.data()) != kNoNextHop;
  CHECK(routed == cap.size());  // the synthetic table covers every capture address
}

TEST_CASE("the synthetic table is deterministic and shaped like a BGP table") {
  const auto a = hpr::synth6::synthetic_routes6(20000, 3);
  const auto b = hpr::synth6::synthetic_routes6(20000, 3);
  REQUIRE(a.size() == 20000);
  CHECK(std::equal(a.begin(), a.end(), b.begin(), [](const auto& x, const auto& y) {
    return x.prefix == y.prefix && x.len == y.len && x.as == y.as;
  }));
  size_t n48 = 0, n32 = 0;
  for (const auto& r : a) {
    n48 += r.len == 48;
    n32 += r.len == 32;
    CHECK(hpr::synth6::mask6(r.prefix, r.len) == r.prefix);
  }
  CHECK(n48 > 20000 * 4 / 10);
  CHECK(n32 > 20000 * 8 / 100);
  const std::string text = hpr::synth6::to_ipasn_text(a, 3);
  CHECK_THAT(text, Catch::StartsWith("; SYNTHETIC IPv6 table"));
  auto parsed = parse_ipasn("1.0.0.0/8\t1\n" + text, "synthetic.dat", 16);
  REQUIRE(parsed);
  CHECK(parsed->routes6 == hpr::synth6::to_routes6(a, 16));
}
