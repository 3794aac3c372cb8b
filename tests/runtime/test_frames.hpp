#pragma once
// Hand-made frames for parser and pipeline tests.
#include <cstdint>
#include <cstring>
#include <vector>

#include "runtime/packet.hpp"
#include "runtime/parser.hpp"

namespace hpr::test {

// Ethernet + IPv4 (+ options) + TCP/UDP with payload; checksum correct.
inline std::vector<uint8_t> ipv4_frame(uint8_t proto = 17, uint16_t payload = 10, uint8_t ttl = 64,
                                       uint32_t src = 0x0a000001, uint32_t dst = 0x0a000002, uint16_t sport = 1234,
                                       uint16_t dport = 80, uint8_t options_words = 0) {
  uint32_t ihl = 20 + options_words * 4u;
  uint32_t l4 = proto == 6 ? 20 : 8;
  std::vector<uint8_t> f(14 + ihl + l4 + payload, 0);
  f[12] = 0x08;
  f[13] = 0x00;
  uint8_t* ip = f.data() + 14;
  ip[0] = static_cast<uint8_t>(0x40 | (ihl / 4));
  uint16_t total = static_cast<uint16_t>(ihl + l4 + payload);
  ip[2] = static_cast<uint8_t>(total >> 8);
  ip[3] = static_cast<uint8_t>(total);
  ip[8] = ttl;
  ip[9] = proto;
  for (int i = 0; i < 4; ++i) {
    ip[12 + i] = static_cast<uint8_t>(src >> (24 - 8 * i));
    ip[16 + i] = static_cast<uint8_t>(dst >> (24 - 8 * i));
  }
  uint16_t c = ip_checksum(ip, ihl);
  ip[10] = static_cast<uint8_t>(c >> 8);
  ip[11] = static_cast<uint8_t>(c);
  uint8_t* t = ip + ihl;
  t[0] = static_cast<uint8_t>(sport >> 8);
  t[1] = static_cast<uint8_t>(sport);
  t[2] = static_cast<uint8_t>(dport >> 8);
  t[3] = static_cast<uint8_t>(dport);
  if (proto == 6) t[12] = 0x50;
  for (uint16_t i = 0; i < payload; ++i) t[l4 + i] = static_cast<uint8_t>('a' + i % 26);
  return f;
}

inline Packet view(std::vector<uint8_t>& f) {
  Packet p;
  p.data = f.data();
  p.len = static_cast<uint16_t>(f.size());
  return p;
}

// Every named field of two descriptors (not the padding): equal or not.
inline bool same_fields(const Packet& a, const Packet& b) {
  return a.data == b.data && a.buf == b.buf && a.rx_ns == b.rx_ns && a.flow_id == b.flow_id && a.hash == b.hash &&
         a.seq == b.seq && a.len == b.len && a.l3_off == b.l3_off && a.l4_off == b.l4_off &&
         a.payload_off == b.payload_off && a.payload_len == b.payload_len && a.out_port == b.out_port &&
         a.l3 == b.l3 && a.l4 == b.l4 && a.drop == b.drop && a.lane == b.lane && a.flags == b.flags &&
         a.service == b.service && a.port == b.port && a.buf_kind == b.buf_kind && a.svc == b.svc;
}

// A descriptor whose every byte is `fill` (a reused descriptor's stale fields, at their worst).
inline Packet stale_packet(uint8_t fill = 0xa5) {
  Packet p;
  std::memset(static_cast<void*>(&p), fill, sizeof p);
  return p;
}

inline void fix_ipv4_checksum(std::vector<uint8_t>& f, uint32_t l3 = 14) {
  uint8_t* ip = f.data() + l3;
  uint32_t ihl = (ip[0] & 0xf) * 4u;
  ip[10] = ip[11] = 0;
  uint16_t c = ip_checksum(ip, ihl);
  ip[10] = static_cast<uint8_t>(c >> 8);
  ip[11] = static_cast<uint8_t>(c);
}

}  // namespace hpr::test
