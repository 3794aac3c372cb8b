// Lpm6 == DPDK rte_lpm6 (22.11, rte_lpm6_lookup_bulk_func), the peer of issue 18, on the SYNTHETIC IPv6
// table (with routes covering the captures): random addresses inside its prefixes, uniform random
// addresses, and every IPv6 address of the real captures.
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_lpm6.h>

#include <catch2/catch.hpp>

#include <random>

#include "ipv6_test_util.hpp"
#include "kernels/ipv4/lpm6.hpp"

using namespace hpr::kernels::ipv4;

TEST_CASE("Lpm6 lookups equal rte_lpm6's on random and capture addresses") {
  const char* eal_argv[] = {"ipv6_rte_lpm6_test", "--no-huge", "--no-shconf", "--no-pci", "-m", "512",
                            "--log-level=error"};
  REQUIRE(rte_eal_init(7, const_cast<char**>(eal_argv)) >= 0);

  const auto table = hpr::ipv6_test::test_table6(20000);
  auto routes = hpr::synth6::to_routes6(table, 64);
  routes.push_back(routes[7]);  // a duplicate: the later one wins in both
  routes.back().next_hop = (routes.back().next_hop + 1) % 64;
  auto lpm = Lpm6::build(routes);
  REQUIRE(lpm);

  rte_lpm6_config cfg{};
  cfg.max_rules = static_cast<uint32_t>(routes.size());
  cfg.number_tbl8s = lpm->num_groups() * 2 + 1024;
  rte_lpm6* peer = rte_lpm6_create("ipv6_test", 0, &cfg);
  REQUIRE(peer != nullptr);
  for (const Route6& r : routes) REQUIRE(rte_lpm6_add(peer, r.prefix.data(), r.len, r.next_hop) == 0);

  std::vector<Ipv6Addr> addrs = hpr::synth6::addresses_in(table, 20000, 9);
  std::mt19937_64 rng(10);
  for (int i = 0; i < 20000; ++i) {
    Ipv6Addr a;
    for (auto& b : a) b = static_cast<uint8_t>(rng());
    if (i % 2 == 0) a[0] = static_cast<uint8_t>(0x20 | (a[0] & 0x1f));
    addrs.push_back(a);
  }
  const auto& cap = hpr::ipv6_test::capture_ipv6_addresses();
  addrs.insert(addrs.end(), cap.begin(), cap.end());

  const auto n = static_cast<uint32_t>(addrs.size());
  std::vector<uint32_t> ours(n);
  std::vector<int32_t> theirs(n);
  lpm->lookup_bulk(reinterpret_cast<const uint8_t(*)[16]>(addrs.data()), ours.data(), n);
  REQUIRE(rte_lpm6_lookup_bulk_func(peer, reinterpret_cast<uint8_t(*)[16]>(addrs.data()), theirs.data(), n) == 0);
  size_t bad = 0, hits = 0;
  for (uint32_t i = 0; i < n; ++i) {
    const uint32_t want = theirs[i] < 0 ? kNoNextHop : static_cast<uint32_t>(theirs[i]);
    hits += want != kNoNextHop;
    if (ours[i] != want && ++bad < 5) UNSCOPED_INFO(format_ipv6(addrs[i]) << ": rte_lpm6 " << theirs[i] << ", hpr " << ours[i]);
  }
  CHECK(bad == 0);
  CHECK(hits > n / 2);
  rte_lpm6_free(peer);
  rte_eal_cleanup();
}
