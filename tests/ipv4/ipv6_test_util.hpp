#pragma once
// Helpers for the IPv6 tests of the ipv4 app (issue 18): hand-made IPv6 frames, the IPv6 addresses of the
// real captures, and the synthetic IPv6 table (bench/ipv4/synth_routes6.hpp) covering them.
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "bench/ipv4/capture_addrs6.hpp"
#include "bench/ipv4/synth_routes6.hpp"
#include "ipv4_test_util.hpp"

namespace hpr::ipv6_test {

using hpr::ipv4_test::Frame;
using kernels::ipv4::Ipv6Addr;

inline Ipv6Addr addr6(const char* text) {
  Ipv6Addr a{};
  if (!kernels::ipv4::parse_ipv6(text, a)) FAIL("bad IPv6 literal " << text);
  return a;
}

struct Header6Spec {
  Ipv6Addr src = addr6("2001:db8:1::1");
  Ipv6Addr dst = addr6("2001:db8:2::2");
  uint8_t hop_limit = 64;
  uint8_t next_header = 17;
  uint16_t payload = 26;
  bool vlan = false;
};

// Ethernet (+ optional 802.1Q) + IPv6 + payload of 0xab.
inline Frame make_ipv6_frame(const Header6Spec& s) {
  Frame f;
  const size_t l2 = s.vlan ? 18 : 14;
  f.bytes.assign(l2 + 40 + s.payload, 0xab);
  uint8_t* b = f.bytes.data();
  const uint8_t dmac[6] = {0x02, 0, 0, 0, 0, 0x01}, smac[6] = {0x02, 0, 0, 0, 0, 0x02};
  std::memcpy(b, dmac, 6);
  std::memcpy(b + 6, smac, 6);
  if (s.vlan) {
    b[12] = 0x81; b[13] = 0x00; b[14] = 0x00; b[15] = 0x05; b[16] = 0x86; b[17] = 0xdd;
  } else {
    b[12] = 0x86; b[13] = 0xdd;
  }
  uint8_t* h = b + l2;
  h[0] = 0x60; h[1] = 0x01; h[2] = 0x23; h[3] = 0x45;  // traffic class 0, flow label 0x12345
  h[4] = static_cast<uint8_t>(s.payload >> 8); h[5] = static_cast<uint8_t>(s.payload);
  h[6] = s.next_header; h[7] = s.hop_limit;
  std::memcpy(h + 8, s.src.data(), 16);
  std::memcpy(h + 24, s.dst.data(), 16);
  f.pkt.len = static_cast<uint16_t>(f.bytes.size());
  f.pkt.l3 = L3::kIPv6;
  f.pkt.l3_off = static_cast<uint16_t>(l2);
  ipv4_test::refresh(f);
  return f;
}

// Source and destination of every IPv6 header of the real captures (bench/ipv4/capture_addrs6.hpp), read once.
inline const std::vector<Ipv6Addr>& capture_ipv6_addresses() {
  static const std::vector<Ipv6Addr> all = synth6::capture_addresses6();
  return all;
}

// The synthetic table of the IPv6 tests: `count` prefixes (seed 18) plus routes covering every IPv6
// address of the captures.
inline std::vector<synth6::SynthRoute6> test_table6(uint32_t count = 3000) {
  return synth6::synthetic_routes6(count, 18, capture_ipv6_addresses());
}

// Generated IPv6 traffic that reaches every IPv6 verdict with `table` (device and in-place tests).
inline std::vector<Frame> generated6(uint32_t n, uint32_t seed, const std::vector<hpr::synth6::SynthRoute6>& table) {
  std::mt19937_64 rng(seed);
  const auto in_table = hpr::synth6::addresses_in(table, n, seed + 1);
  const auto& cap = capture_ipv6_addresses();
  std::vector<Frame> out;
  for (uint32_t i = 0; i < n; ++i) {
    Header6Spec s;
    switch (rng() % 3) {
      case 0: s.dst = in_table[i]; break;
      case 1: s.dst = cap[rng() % cap.size()]; break;
      default:
        for (auto& b : s.dst) b = static_cast<uint8_t>(rng());
    }
    s.hop_limit = static_cast<uint8_t>(rng() % 8 == 0 ? rng() % 3 : rng());
    s.payload = static_cast<uint16_t>(rng() % 1400);
    s.vlan = rng() % 5 == 0;
    Frame f = make_ipv6_frame(s);
    switch (rng() % 12) {
      case 0: f.bytes.resize(f.pkt.l3_off + rng() % 40); break;  // truncated
      case 1: f.bytes[f.pkt.l3_off] = static_cast<uint8_t>((rng() % 16) << 4); break;  // version
      case 2: f.bytes.resize(f.bytes.size() - 1 - rng() % 8); break;  // payload length > frame
      case 3: f.bytes.resize(f.bytes.size() + rng() % 30, 0); break;  // padding
      default: break;
    }
    hpr::ipv4_test::refresh(f);
    out.push_back(std::move(f));
  }
  return out;
}

}  // namespace hpr::ipv6_test
