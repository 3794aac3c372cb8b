#pragma once
// Helpers for the ipv4 tests: hand-made frames and address extraction from captures.
#include <cstdint>
#include <cstring>
#include <algorithm>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "hpr/data_dir.hpp"
#include "kernels/app.hpp"
#include "kernels/ipv4/routes.hpp"
#include "kernels/ipv4/ipv4_hdr.hpp"
#include "runtime/packet.hpp"
#include "runtime/parser.hpp"
#include "runtime/opencl/devices.hpp"
#include "runtime/pcap_file.hpp"

namespace hpr::ipv4_test {

// An owned frame plus its Packet view.
struct Frame {
  std::vector<uint8_t> bytes;
  Packet pkt;
};

struct HeaderSpec {
  uint32_t src = 0x0a000001;
  uint32_t dst = 0x01000001;
  uint8_t ttl = 64;
  uint8_t proto = 17;
  uint8_t ihl = 5;
  uint16_t payload = 26;
  bool vlan = false;
};

// Ethernet (+ optional 802.1Q) + IPv4 (+ options of 0x01 NOPs) + payload of 0xab; valid checksum.
inline Frame make_ipv4_frame(const HeaderSpec& s) {
  Frame f;
  const size_t l2 = s.vlan ? 18 : 14;
  const size_t ih = s.ihl * 4u;
  f.bytes.assign(l2 + ih + s.payload, 0xab);
  uint8_t* b = f.bytes.data();
  const uint8_t dmac[6] = {0x02, 0, 0, 0, 0, 0x01}, smac[6] = {0x02, 0, 0, 0, 0, 0x02};
  std::memcpy(b, dmac, 6);
  std::memcpy(b + 6, smac, 6);
  if (s.vlan) {
    b[12] = 0x81; b[13] = 0x00; b[14] = 0x00; b[15] = 0x05; b[16] = 0x08; b[17] = 0x00;
  } else {
    b[12] = 0x08; b[13] = 0x00;
  }
  uint8_t* h = b + l2;
  const uint16_t tot = static_cast<uint16_t>(ih + s.payload);
  h[0] = static_cast<uint8_t>(0x40 | (s.ihl & 0xf));
  h[1] = 0;
  h[2] = static_cast<uint8_t>(tot >> 8); h[3] = static_cast<uint8_t>(tot);
  h[4] = 0x12; h[5] = 0x34; h[6] = 0x40; h[7] = 0;
  h[8] = s.ttl; h[9] = s.proto; h[10] = h[11] = 0;
  for (int i = 0; i < 4; ++i) {
    h[12 + i] = static_cast<uint8_t>(s.src >> (24 - 8 * i));
    h[16 + i] = static_cast<uint8_t>(s.dst >> (24 - 8 * i));
  }
  for (size_t i = 20; i < ih; ++i) h[i] = 0x01;
  const uint16_t c = ip_checksum(h, ih);
  h[10] = static_cast<uint8_t>(c >> 8); h[11] = static_cast<uint8_t>(c);
  f.pkt.len = static_cast<uint16_t>(f.bytes.size());
  f.pkt.l3 = L3::kIPv4;
  f.pkt.l3_off = static_cast<uint16_t>(l2);
  return f;
}

inline void refresh(Frame& f) { f.pkt.data = f.bytes.data(); f.pkt.len = static_cast<uint16_t>(f.bytes.size()); }

inline void fix_checksum(Frame& f) {
  uint8_t* h = f.bytes.data() + f.pkt.l3_off;
  h[10] = h[11] = 0;
  const uint16_t c = ip_checksum(h, (h[0] & 0xfu) * 4u);
  h[10] = static_cast<uint8_t>(c >> 8); h[11] = static_cast<uint8_t>(c);
}

// Source and destination of every IPv4 header the runtime parser finds in a capture (all link types
// load_capture converts to Ethernet; VLAN tags; malformed packets included when their header is there).
inline std::vector<uint32_t> capture_ipv4_addresses(const std::string& path) {
  std::vector<uint32_t> out;
  auto c = load_capture(path);
  if (!c) return out;
  for (auto& f : c->frames) {
    Packet p;
    p.data = f.data();
    p.len = static_cast<uint16_t>(f.size());
    parse(p, {.verify_ipv4_checksum = false});
    if (p.l3 != L3::kIPv4 || p.l3_off == kNoOffset || p.l3_off + 20u > p.len) continue;
    const uint8_t* h = p.data + p.l3_off;
    auto rd = [&](int o) { return (uint32_t{h[o]} << 24) | (uint32_t{h[o + 1]} << 16) | (uint32_t{h[o + 2]} << 8) | h[o + 3]; };
    out.push_back(rd(12));
    out.push_back(rd(16));
  }
  return out;
}

// The full BGP table (512,621 routes, next hop = AS mod 16), loaded once per test binary.
inline const std::vector<kernels::ipv4::Route>& full_table() {
  static const std::vector<kernels::ipv4::Route> routes = [] {
    auto r = kernels::ipv4::load_ipasn(data_path("routes/ipasn_20140513.dat.gz"), 16);
    if (!r) FAIL(r.status().to_string());
    return std::move(r->routes);
  }();
  return routes;
}

// Generated traffic (device and in-place tests): valid packets to random and routed addresses with IHL 5..15 and random TTLs, and
// every kind of damage the app checks, plus non-IPv4 frames.
inline std::vector<Frame> generated_frames(uint32_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  const auto& routes = full_table();
  std::vector<Frame> out;
  out.reserve(n);
  for (uint32_t i = 0; i < n; ++i) {
    HeaderSpec s;
    s.dst = rng() % 2 ? static_cast<uint32_t>(rng()) : routes[rng() % routes.size()].prefix | (rng() & 0xff);
    s.src = static_cast<uint32_t>(rng());
    s.ttl = static_cast<uint8_t>(rng() % 8 == 0 ? rng() % 3 : rng());
    s.ihl = static_cast<uint8_t>(rng() % 4 == 0 ? 5 + rng() % 11 : 5);
    s.payload = static_cast<uint16_t>(rng() % 1400);
    s.vlan = rng() % 5 == 0;
    Frame f = make_ipv4_frame(s);
    uint8_t* h = f.bytes.data() + f.pkt.l3_off;
    switch (rng() % 16) {
      case 0: f.bytes.resize(f.pkt.l3_off + rng() % 20); break;                 // truncated
      case 1: h[0] = static_cast<uint8_t>((rng() % 16) << 4 | (h[0] & 15)); break;  // version
      case 2: h[0] = static_cast<uint8_t>(0x40 | (rng() % 5)); break;            // IHL < 5
      case 3: f.bytes.resize(f.bytes.size() - 1 - rng() % 8); break;             // total length > frame
      case 4: h[10 + rng() % 2] ^= static_cast<uint8_t>(1 + rng() % 255); break; // checksum
      case 5: h[2] = 0; h[3] = static_cast<uint8_t>(rng() % 20); fix_checksum(f); break;
      case 6: f.pkt.l3 = hpr::L3::kIPv6; break;                                  // not IPv4
      case 7: f.bytes.resize(f.bytes.size() + rng() % 30, 0); break;             // Ethernet padding: fine
      default: break;
    }
    refresh(f);
    out.push_back(std::move(f));
  }
  return out;
}

// The OpenCL devices the device tests compare against the native path: both PoCL devices where ctest asks for them
// (POCL_DEVICES="pthread basic"), none (with a warning) on a machine without any.
inline std::vector<DeviceInfo> test_devices() {
  auto found = discover_devices();
  REQUIRE(found);
  if (const char* env = std::getenv("POCL_DEVICES"); env != nullptr && std::string(env) == "pthread basic") {
    REQUIRE(found->size() >= 2);
  }
  if (found->empty()) WARN("no OpenCL device: device tests skipped");
  return *found;
}

}  // namespace hpr::ipv4_test
