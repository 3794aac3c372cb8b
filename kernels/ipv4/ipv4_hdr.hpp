#pragma once
// IPv4 header arithmetic shared by the native path, the ICMP builder and the tests.
//  * ip_checksum: the Internet checksum (RFC 1071) over a byte range, as stored in the header.
//  * ttl_decrement_checksum: incremental update for TTL-1 (RFC 1624 eq. 3: HC' = ~(~HC + ~m + m'),
//    m = the 16-bit word holding TTL and protocol). For a header whose checksum was valid it gives
//    exactly the value a full recompute gives (tests/ipv4 check that on many headers).
#include <cstddef>
#include <cstdint>

namespace hpr::kernels::ipv4 {

// One's complement sum of big-endian 16-bit words, folded to 16 bits (not complemented).
inline uint32_t ones_sum(const uint8_t* p, size_t len, uint32_t sum = 0) {
  for (size_t i = 0; i + 1 < len; i += 2) sum += (uint32_t{p[i]} << 8) | p[i + 1];
  if (len & 1) sum += uint32_t{p[len - 1]} << 8;
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  return sum;
}

// Checksum field value for the bytes (with the checksum field itself zero).
inline uint16_t ip_checksum(const uint8_t* p, size_t len) { return static_cast<uint16_t>(~ones_sum(p, len) & 0xffff); }

// New checksum after TTL -= 1 (old_ttl >= 1). RFC 1624 eq. 3.
inline uint16_t ttl_decrement_checksum(uint16_t old_csum, uint8_t old_ttl, uint8_t proto) {
  uint32_t m = (uint32_t{old_ttl} << 8) | proto;
  uint32_t m2 = m - 0x100;
  uint32_t sum = (~old_csum & 0xffffu) + (~m & 0xffffu) + m2;
  sum = (sum & 0xffff) + (sum >> 16);
  sum = (sum & 0xffff) + (sum >> 16);
  return static_cast<uint16_t>(~sum & 0xffff);
}

}  // namespace hpr::kernels::ipv4
