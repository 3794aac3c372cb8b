// Route loading (both formats, every error) and the flat DIR-24-8 table against the binary-trie oracle.
#include <catch2/catch.hpp>

#include <fstream>
#include <random>

#include "hpr/data_dir.hpp"
#include "ipv4_test_util.hpp"
#include "kernels/ipv4/lpm.hpp"
#include "kernels/ipv4/routes.hpp"

using namespace hpr::kernels::ipv4;
using hpr::ipv4_test::full_table;

namespace {

std::string write_tmp(const std::string& name, const std::string& text) {
  std::string path = std::filesystem::temp_directory_path() / ("hpr_ipv4_" + name);
  std::ofstream(path) << text;
  return path;
}

}  // namespace

TEST_CASE("parse_ipv4 accepts dotted quads only") {
  uint32_t a = 0;
  CHECK(parse_ipv4("1.2.3.4", a));
  CHECK(a == 0x01020304u);
  CHECK(parse_ipv4("255.255.255.255", a));
  CHECK(a == 0xffffffffu);
  for (const char* bad : {"", "1.2.3", "1.2.3.4.5", "256.1.1.1", "1..2.3", "a.b.c.d", "1.2.3.4 ", "01234.1.1.1"}) {
    CHECK_FALSE(parse_ipv4(bad, a));
  }
  CHECK(format_ipv4(0xc0a80001u) == "192.168.0.1");
}

TEST_CASE("the RouteViews table loads with next hop = AS mod num_ports") {
  const auto& routes = full_table();
  REQUIRE(routes.size() == 512621);
  CHECK(routes[0] == Route{0x01000000u, 24, 15169 % 16});  // 1.0.0.0/24 AS15169
  CHECK(routes[1] == Route{0x01000400u, 24, 56203 % 16});
  size_t n24 = 0, longer = 0;
  for (const auto& r : routes) {
    n24 += r.len == 24;
    longer += r.len > 24;
  }
  CHECK(n24 == 270023);  // the length mix in ../shared/data/README.md
  CHECK(longer == 3465);
}

TEST_CASE("plain route text parses, comments and blank lines skipped") {
  auto r = parse_route_text("# a comment\n\n10.0.0.0/8 1\n10.1.0.0/16\t2\r\n0.0.0.0/0 3\n; another\n", "t.txt");
  REQUIRE(r);
  REQUIRE(r->routes.size() == 3);
  CHECK(r->routes[0] == Route{0x0a000000u, 8, 1});
  CHECK(r->routes[1] == Route{0x0a010000u, 16, 2});
  CHECK(r->routes[2] == Route{0, 0, 3});
  CHECK(r->ipv6_skipped == 0);
  CHECK(r->duplicates == 0);
}

TEST_CASE("malformed route lines name file and line") {
  struct Case { const char* text; const char* expect; };
  const Case cases[] = {
      {"10.0.0.0/8 1\n10.0.0.0 2\n", "t.txt:2: '10.0.0.0' is not a prefix"},
      {"10.0.0.0/33 1\n", "t.txt:1: bad prefix length '33'"},
      {"10.0.0.1/8 1\n", "t.txt:1: host bits set in '10.0.0.1/8'"},
      {"300.0.0.0/8 1\n", "t.txt:1: bad IPv4 address '300.0.0.0'"},
      {"\n\n10.0.0.0/8 x\n", "t.txt:3: bad next hop 'x'"},
      {"10.0.0.0/8 1 2\n", "t.txt:1: expected 'prefix/len nexthop', got 3 field(s)"},
      {"10.0.0.0/8\n", "t.txt:1: expected 'prefix/len nexthop', got 1 field(s)"},
      {"10.0.0.0/8 16777215\n", "t.txt:1: next hop 16777215 too large"},
  };
  for (const auto& c : cases) {
    INFO(c.text);
    auto r = parse_route_text(c.text, "t.txt");
    REQUIRE_FALSE(r);
    CHECK(r.status().code() == hpr::Code::kInvalidArgument);
    CHECK_THAT(r.status().message(), Catch::Contains(c.expect));
  }
  auto a = parse_ipasn("; c\n1.0.0.0/24\tAS15169\n", "x.dat", 4);
  REQUIRE_FALSE(a);
  CHECK_THAT(a.status().message(), Catch::Contains("x.dat:2: bad origin AS 'AS15169'"));
  CHECK_FALSE(parse_ipasn("1.0.0.0/24\t1\n", "x.dat", 0));
}

TEST_CASE("empty tables and missing files are clear errors") {
  auto e = parse_route_text("# only comments\n\n", "empty.txt");
  REQUIRE_FALSE(e);
  CHECK_THAT(e.status().message(), Catch::Contains("empty.txt: no routes"));
  auto e2 = parse_ipasn("; IP-ASN32-DAT file\n; Prefixes : 0\n", "e.dat", 4);
  REQUIRE_FALSE(e2);
  CHECK_THAT(e2.status().message(), Catch::Contains("no routes"));
  auto f = load_route_text(write_tmp("empty.txt", ""));
  REQUIRE_FALSE(f);
  CHECK_THAT(f.status().message(), Catch::Contains("no routes"));
  auto m = load_route_text("/nonexistent/routes.txt");
  REQUIRE_FALSE(m);
  CHECK(m.status().code() == hpr::Code::kNotFound);
  CHECK_THAT(m.status().message(), Catch::Contains("/nonexistent/routes.txt"));
  CHECK_FALSE(FlatLpm::build({}));
}

TEST_CASE("a route file on disk loads; the later duplicate wins in both structures") {
  auto path = write_tmp("routes.txt", "10.0.0.0/8 1\n10.0.0.0/24 2\n10.0.0.128/25 3\n10.0.0.0/8 4\n");
  auto loaded = load_route_text(path);
  REQUIRE(loaded);
  CHECK(loaded->duplicates == 1);
  const auto& r = loaded->routes;
  auto flat = FlatLpm::build(r);
  REQUIRE(flat);
  TrieLpm trie(r);
  CHECK(flat->num_groups() == 1);
  for (uint32_t a : {0x0a000001u, 0x0a000081u, 0x0a0000ffu, 0x0a010203u, 0x0b000000u}) {
    CHECK(flat->lookup(a) == trie.lookup(a));
  }
  CHECK(flat->lookup(0x0a010203u) == 4);
  CHECK(flat->lookup(0x0a000001u) == 2);
  CHECK(flat->lookup(0x0a000081u) == 3);
  CHECK(flat->lookup(0x0b000000u) == kNoNextHop);
}

TEST_CASE("hand-made LPM cases, narrow and wide entries") {
  const std::vector<Route> routes = {
      {0, 0, 7},                 // default route
      {0xc0a80000u, 16, 1},      // 192.168.0.0/16
      {0xc0a80100u, 24, 2},      // 192.168.1.0/24
      {0xc0a80180u, 25, 3},      // 192.168.1.128/25
      {0xc0a801ffu, 32, 4},      // 192.168.1.255/32
      {0xc0a80200u, 31, 5},      // 192.168.2.0/31 (splits a /24 covered only by the /16)
      {0xffffffffu, 32, 6},
  };
  for (auto w : {LpmWidth::kNarrow, LpmWidth::kWide}) {
    auto t = FlatLpm::build(routes, w);
    REQUIRE(t);
    CHECK(t->wide() == (w == LpmWidth::kWide));
    CHECK(t->num_groups() == 3);
    CHECK(t->lookup(0x01020304u) == 7);
    CHECK(t->lookup(0xc0a80001u) == 1);
    CHECK(t->lookup(0xc0a80101u) == 2);
    CHECK(t->lookup(0xc0a80180u) == 3);
    CHECK(t->lookup(0xc0a801feu) == 3);
    CHECK(t->lookup(0xc0a801ffu) == 4);
    CHECK(t->lookup(0xc0a80200u) == 5);
    CHECK(t->lookup(0xc0a80201u) == 5);
    CHECK(t->lookup(0xc0a80202u) == 1);
    CHECK(t->lookup(0xffffffffu) == 6);
    CHECK(t->lookup(0xfffffffeu) == 7);
  }
  // Narrow cannot hold a next hop >= 32765; auto then picks wide.
  const std::vector<Route> big = {{0x0a000000u, 8, 40000}};
  CHECK_FALSE(FlatLpm::build(big, LpmWidth::kNarrow));
  auto t = FlatLpm::build(big);
  REQUIRE(t);
  CHECK(t->wide());
  CHECK(t->lookup(0x0a0a0a0au) == 40000);
}

TEST_CASE("flat == trie on the full table: every capture address and 1,000,000 random addresses") {
  const auto& routes = full_table();
  auto flat = FlatLpm::build(routes);
  REQUIRE(flat);
  CHECK_FALSE(flat->wide());
  CHECK(flat->num_groups() > 0);
  CHECK(flat->num_groups() <= 3465);
  TrieLpm trie(routes);

  std::vector<uint32_t> addrs;
  size_t files = 0;
  for (const auto& f : hpr::list_captures(hpr::data_path("pcap/ndpi"))) {
    auto a = hpr::ipv4_test::capture_ipv4_addresses(f);
    files += !a.empty();
    addrs.insert(addrs.end(), a.begin(), a.end());
  }
  INFO("capture addresses: " << addrs.size() << " from " << files << " files");
  CHECK(files > 150);
  CHECK(addrs.size() > 100000);
  std::mt19937 rng(20140513);
  for (int i = 0; i < 1000000; ++i) addrs.push_back(rng());
  // Addresses inside the longer-than-/24 prefixes, where the second level is used.
  for (const auto& r : routes) {
    if (r.len > 24) {
      addrs.push_back(r.prefix);
      addrs.push_back(r.prefix | ((1u << (32 - r.len)) - 1));
    }
  }

  std::vector<uint32_t> bulk(addrs.size());
  flat->lookup_bulk(addrs.data(), bulk.data(), static_cast<uint32_t>(addrs.size()));
  size_t mismatches = 0, hits = 0;
  for (size_t i = 0; i < addrs.size(); ++i) {
    const uint32_t want = trie.lookup(addrs[i]);
    hits += want != kNoNextHop;
    if (bulk[i] != want || flat->lookup(addrs[i]) != want) {
      if (++mismatches < 10) UNSCOPED_INFO("mismatch at " << format_ipv4(addrs[i]) << ": flat " << bulk[i] << " trie " << want);
    }
  }
  CHECK(mismatches == 0);
  CHECK(hits > addrs.size() / 4);  // the test would be weak if almost everything missed
}
