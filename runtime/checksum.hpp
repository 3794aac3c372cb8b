#pragma once
// The Internet checksum and network byte order, for every part of hpr that reads or writes headers
// (parser, generator, the ipv4 app and its ICMP builder, tests, benchmarks). OpenCL kernels carry
// their own copy in OpenCL C.
//  * ones_sum: RFC 1071 one's complement sum of big-endian 16-bit words, folded to 16 bits (not
//    complemented). §2: the sum is independent of byte order, so it adds native 64-bit words with
//    end-around carry and swaps the folded result once (4x fewer operations than a byte-pair loop).
//  * ipv4_header_ok: whether ones_sum of an IPv4 header (a multiple of 4 bytes) is 0xffff (the checksum is
//    right), for the per-packet checks.
//  * ip_checksum: the checksum field value for bytes whose checksum field is zero; over a header
//    that includes a valid checksum it is 0.
//  * csum_replace16: RFC 1624 eq. 3, HC' = ~(~HC + ~m + m'), when one 16-bit word m becomes m'.
//    For a header whose checksum was valid it gives exactly what a full recompute gives.
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace hpr {

inline uint16_t load_be16(const uint8_t* p) { return static_cast<uint16_t>(p[0] << 8 | p[1]); }
inline uint32_t load_be32(const uint8_t* p) {
  return uint32_t{p[0]} << 24 | uint32_t{p[1]} << 16 | uint32_t{p[2]} << 8 | p[3];
}
inline void store_be16(uint8_t* p, uint16_t v) {
  p[0] = static_cast<uint8_t>(v >> 8);
  p[1] = static_cast<uint8_t>(v);
}
inline void store_be32(uint8_t* p, uint32_t v) {
  store_be16(p, static_cast<uint16_t>(v >> 16));
  store_be16(p + 2, static_cast<uint16_t>(v));
}

// `sum` continues an earlier ones_sum (e.g. of a pseudo header) or adds plain 16-bit values.
inline uint32_t ones_sum(const uint8_t* p, size_t len, uint32_t sum = 0) {
  static_assert(std::endian::native == std::endian::little || std::endian::native == std::endian::big);
  uint64_t acc = 0;
  auto add = [&acc](uint64_t v) {
    acc += v;
    acc += acc < v;  // end-around carry
  };
  for (; len >= 8; p += 8, len -= 8) {
    uint64_t v;
    std::memcpy(&v, p, 8);
    add(v);
  }
  if (len >= 4) {
    uint32_t v;
    std::memcpy(&v, p, 4);
    add(v);
    p += 4;
    len -= 4;
  }
  if (len >= 2) {
    uint16_t v;
    std::memcpy(&v, p, 2);
    add(v);
    p += 2;
    len -= 2;
  }
  // A trailing byte is the high byte of its big-endian word: the low byte in little-endian order.
  if (len != 0) add(std::endian::native == std::endian::little ? uint64_t{*p} : uint64_t{*p} << 8);
  acc = (acc & 0xffffffffu) + (acc >> 32);
  acc = (acc & 0xffffffffu) + (acc >> 32);
  while (acc >> 16) acc = (acc & 0xffff) + (acc >> 16);
  auto folded = static_cast<uint16_t>(acc);
  if constexpr (std::endian::native == std::endian::little) folded = static_cast<uint16_t>(folded << 8 | folded >> 8);
  uint64_t s = uint64_t{sum} + folded;
  while (s >> 16) s = (s & 0xffff) + (s >> 16);
  return static_cast<uint32_t>(s);
}

// ones_sum(h, len) == 0xffff for an IPv4 header (len a multiple of 4, 20..60): the header's checksum is right, as
// the parser and the ipv4 app check it on every packet. Its 32-bit words are added into 64 bits (up to 15 cannot
// carry out), with no end-around carry and no fold. The folded one's complement sum of the big-endian 16-bit words,
// S, is 0xffff exactly when S > 0 and S ≡ 0 (mod 0xffff). The words added as 32-bit words in either byte order are
// ≡ S or 2^8·S (mod 0xffff, as 2^16 ≡ 1), and 2^8 is prime to 0xffff; they are 0 only when every byte is.
inline bool ipv4_header_ok(const uint8_t* h, uint32_t len) {
  auto word = [h](uint32_t i) {
    uint32_t v;
    std::memcpy(&v, h + i, 4);
    return uint64_t{v};
  };
  uint64_t acc = word(0) + word(4) + word(8) + word(12) + word(16);
  for (uint32_t i = 20; i < len; i += 4) acc += word(i);
  return acc != 0 && acc % 0xffff == 0;
}

inline uint16_t ip_checksum(const uint8_t* p, size_t len) { return static_cast<uint16_t>(~ones_sum(p, len) & 0xffff); }

inline uint16_t csum_replace16(uint16_t old_csum, uint16_t old_word, uint16_t new_word) {
  uint32_t sum = (~old_csum & 0xffffu) + (~old_word & 0xffffu) + new_word;
  sum = (sum & 0xffff) + (sum >> 16);
  sum = (sum & 0xffff) + (sum >> 16);
  return static_cast<uint16_t>(~sum & 0xffff);
}

// IPv4 TTL -= 1 (old_ttl >= 1): the word holding TTL and protocol changes.
inline uint16_t ttl_decrement_checksum(uint16_t old_csum, uint8_t old_ttl, uint8_t proto) {
  uint16_t m = static_cast<uint16_t>(old_ttl << 8 | proto);
  return csum_replace16(old_csum, m, static_cast<uint16_t>(m - 0x100));
}

}  // namespace hpr
