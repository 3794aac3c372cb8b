#pragma once
// A SYNTHETIC IPv6 route table (issue 18), for the IPv6 tests and benchmarks: the shared RouteViews table
// (../shared/data/routes/ipasn_20140513.dat.gz) holds no IPv6 prefix, and no other IPv6 table is in the
// shared data. Deterministic for a seed. Shaped like a real IPv6 BGP table (length histogram close to the
// RouteViews/potaroo tables of the 2020s: /48 about half the prefixes, then /32, /44, /40, /36, /29, ...),
// clustered the way real tables are: prefixes sit inside RIR blocks (2001::/16, 2400::/12, 2600::/12,
// 2800::/12, 2a00::/12, 2c00::/12), longer ones inside a few thousand "allocations" (/29 and /32, chosen
// with a skew: big allocations carry many more-specifics), and the /48s of one allocation in a few /40s.
// Optionally every address in `cover` gets a route (its /48 for global unicast, its /16 otherwise), so
// the real captures' IPv6 destinations are routed. Origin ASes are random 32-bit-range numbers.
// Not real routing data: every output and doc that uses it says "synthetic".
#include <algorithm>
#include <array>
#include <cstdint>
#include <random>
#include <set>
#include <span>
#include <string>
#include <unordered_set>
#include <vector>

#include <fmt/format.h>

#include "kernels/ipv4/routes.hpp"

namespace hpr::synth6 {

using kernels::ipv4::Ipv6Addr;
using kernels::ipv4::Route6;

struct SynthRoute6 {
  Ipv6Addr prefix{};
  uint8_t len = 0;
  uint32_t as = 0;
};

inline Ipv6Addr mask6(Ipv6Addr a, uint32_t len) {
  for (uint32_t b = 0; b < 16; ++b) {
    const uint32_t keep = len >= 8 * (b + 1) ? 8 : (len > 8 * b ? len - 8 * b : 0);
    a[b] &= static_cast<uint8_t>(keep == 0 ? 0 : 0xffu << (8 - keep));
  }
  return a;
}

// Sets bits [from, to) of `a` from the low bits of `v` (most significant first).
inline void set_bits(Ipv6Addr& a, uint32_t from, uint32_t to, uint64_t v) {
  for (uint32_t b = from; b < to; ++b) {
    const uint32_t bit = static_cast<uint32_t>((v >> (to - 1 - b)) & 1);
    a[b / 8] = static_cast<uint8_t>((a[b / 8] & ~(0x80u >> (b % 8))) | (bit << (7 - b % 8)));
  }
}

// Prefix lengths per 1000 routes (approximately a 2020s IPv6 BGP table).
inline const std::vector<std::pair<uint8_t, uint32_t>>& length_mix() {
  static const std::vector<std::pair<uint8_t, uint32_t>> mix = {
      {16, 1}, {19, 1}, {20, 1}, {22, 1}, {23, 1}, {24, 2}, {26, 1}, {28, 8}, {29, 40}, {30, 4}, {31, 3},
      {32, 140}, {33, 6}, {34, 6}, {35, 5}, {36, 40}, {37, 4}, {38, 6}, {39, 5}, {40, 70}, {41, 4}, {42, 12},
      {43, 5}, {44, 75}, {45, 15}, {46, 25}, {47, 20}, {48, 480}, {52, 2}, {56, 6}, {60, 1}, {64, 6}};
  return mix;
}

inline std::vector<SynthRoute6> synthetic_routes6(uint32_t count, uint32_t seed, std::span<const Ipv6Addr> cover = {}) {
  std::mt19937_64 rng(seed);
  std::vector<uint8_t> lens;
  for (const auto& [len, per_mille] : length_mix()) lens.insert(lens.end(), per_mille, len);
  const std::array<std::pair<uint16_t, uint32_t>, 6> rir = {
      {{0x2001, 16}, {0x2400, 12}, {0x2600, 12}, {0x2800, 12}, {0x2a00, 12}, {0x2c00, 12}}};
  auto in_rir = [&](uint32_t len) {
    const auto& [top, plen] = rir[rng() % rir.size()];
    Ipv6Addr a{};
    a[0] = static_cast<uint8_t>(top >> 8);
    a[1] = static_cast<uint8_t>(top);
    set_bits(a, plen, 64, rng());
    return mask6(a, len);
  };
  // Allocations: /29 (1 in 4) and /32.
  std::vector<std::pair<Ipv6Addr, uint8_t>> allocs(std::max<uint32_t>(count / 12, 16));
  for (auto& [a, l] : allocs) {
    l = rng() % 4 == 0 ? 29 : 32;
    a = in_rir(l);
  }
  std::uniform_real_distribution<double> u(0, 1);
  std::set<std::pair<Ipv6Addr, uint8_t>> seen;
  std::vector<SynthRoute6> out;
  out.reserve(count + cover.size());
  auto add = [&](const Ipv6Addr& p, uint8_t len, uint32_t as) {
    if (seen.emplace(p, len).second) out.push_back({p, len, as});
  };
  while (out.size() < count) {
    const uint8_t len = lens[rng() % lens.size()];
    const uint32_t as = static_cast<uint32_t>(1 + rng() % 400000);
    if (len <= 32) {
      // Allocations themselves (their own length), or shorter/other blocks in the RIR ranges.
      if ((len == 29 || len == 32) && rng() % 2 == 0) {
        const auto& [a, l] = allocs[rng() % allocs.size()];
        add(mask6(a, len), len, as);
      } else {
        add(in_rir(len), len, as);
      }
      continue;
    }
    // More-specifics inside an allocation, skewed towards the first (biggest) allocations.
    const auto& [a, l] = allocs[static_cast<size_t>(allocs.size() * u(rng) * u(rng))];
    Ipv6Addr p = a;
    set_bits(p, l, 40, rng() % 8);  // the more-specifics of an allocation sit in 8 /40s
    set_bits(p, 40, 64, rng());
    add(mask6(p, len), len, as);
  }
  // Coverage of given addresses (the real captures' destinations).
  std::unordered_set<std::string> have;
  auto key = [](const Ipv6Addr& a, uint32_t len) {
    return std::string(reinterpret_cast<const char*>(a.data()), 16) + static_cast<char>(len);
  };
  for (const auto& r : out) have.insert(key(r.prefix, r.len));
  for (const Ipv6Addr& c : cover) {
    bool covered = false;
    for (uint32_t len = 0; len <= 128 && !covered; ++len) covered = have.count(key(mask6(c, len), len)) != 0;
    if (covered) continue;
    const uint32_t len = (c[0] & 0xe0) == 0x20 ? 48 : 16;
    const Ipv6Addr p = mask6(c, len);
    have.insert(key(p, len));
    add(p, static_cast<uint8_t>(len), static_cast<uint32_t>(64512 + rng() % 1000));
  }
  return out;
}

// Next hop = AS mod num_ports, as load_ipasn does.
inline std::vector<Route6> to_routes6(std::span<const SynthRoute6> s, uint32_t num_ports) {
  std::vector<Route6> out;
  out.reserve(s.size());
  for (const auto& r : s) out.push_back({r.prefix, r.len, r.as % num_ports});
  return out;
}

// pyasn text (`prefix/len<TAB>AS`), with a header comment saying it is synthetic.
inline std::string to_ipasn_text(std::span<const SynthRoute6> s, uint32_t seed) {
  std::string t = fmt::format("; SYNTHETIC IPv6 table (hpr bench/ipv4/synth_routes6.hpp, seed {}, {} prefixes): not "
                              "real routing data\n",
                              seed, s.size());
  for (const auto& r : s) t += fmt::format("{}/{}\t{}\n", kernels::ipv4::format_ipv6(r.prefix), r.len, r.as);
  return t;
}

// Random addresses inside the table's prefixes (random host bits): the "random" benchmark set.
inline std::vector<Ipv6Addr> addresses_in(std::span<const SynthRoute6> s, size_t n, uint32_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<Ipv6Addr> out(n);
  for (auto& a : out) {
    const auto& r = s[rng() % s.size()];
    a = r.prefix;
    set_bits(a, r.len, std::min<uint32_t>(128, r.len + 64), rng());
    if (r.len + 64 < 128) set_bits(a, r.len + 64, 128, rng());
  }
  return out;
}

}  // namespace hpr::synth6
