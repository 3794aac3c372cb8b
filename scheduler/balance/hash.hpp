#pragma once
// Hash functions of the CPU balancers.
//  - crc16(): CRC-16/ARC (poly 0x8005 reflected = 0xA001, init 0), the "CRC16" the LAPS paper
//    (laps-hash-afd-load-balancing.txt §III-B, after Cao et al.) uses to index its map table.
//    Known answer: crc16("123456789") == 0xBB3D.
//  - crc32(): CRC-32/IEEE 802.3 (reflected 0xEDB88320, init/xorout 0xFFFFFFFF), the "CRC32" peer
//    of subflow-adaptive-hrw.txt §4. Known answer: crc32("123456789") == 0xCBF43926.
//  Both are table driven, slicing-by-4 (13-byte 5-tuple: ~3 table rounds).
//  - hrw_weight(): the pseudo-random weight of subflow-adaptive-hrw.txt eq. 2 (after Thaler and
//    Ravishankar): (A * ((A * T + B) xor D) + B) mod 2^31, A = 1103515245, B = 12345,
//    T = lane id, D = 31-bit digest of the packet (flow) identifier.
#include <cstddef>
#include <cstdint>
#include <span>

#include "scheduler/balance/types.hpp"

namespace hpr::balance {

uint16_t crc16(std::span<const uint8_t> bytes);
uint32_t crc32(std::span<const uint8_t> bytes);

// The 13 canonical bytes of a 5-tuple: src_ip, dst_ip (big-endian), src_port, dst_port
// (big-endian), proto.
struct TupleBytes {
  uint8_t b[13];
  std::span<const uint8_t> span() const { return {b, sizeof b}; }
};
TupleBytes five_tuple_bytes(const FiveTuple& t);

// Over the 5-tuple's canonical bytes; equal to crc16/crc32(five_tuple_bytes(t).span()).
uint16_t crc16(const FiveTuple& t);
uint32_t crc32(const FiveTuple& t);

inline constexpr uint32_t kHrwA = 1103515245u;
inline constexpr uint32_t kHrwB = 12345u;

// Eq. 2. `digest` is reduced to 31 bits here.
inline uint32_t hrw_weight(uint32_t lane, uint32_t digest) {
  uint32_t d = digest & 0x7fffffffu;
  return (kHrwA * ((kHrwA * lane + kHrwB) ^ d) + kHrwB) & 0x7fffffffu;
}

// 32-bit finalizer (murmur3 fmix32): spreads a flow id over all bits (AFD set index, tests).
inline uint32_t mix32(uint32_t h) {
  h ^= h >> 16;
  h *= 0x85ebca6bu;
  h ^= h >> 13;
  h *= 0xc2b2ae35u;
  h ^= h >> 16;
  return h;
}

// Natural log for x in (0, 1], relative error < 1e-5 also near x = 1 (weighted HRW needs -ln(u)
// accurate where u is close to 1: those lanes win). Mantissa in [sqrt(1/2), sqrt(2)), then
// ln m = 2 atanh(s), s = (m-1)/(m+1), |s| < 0.172, series to s^7.
inline float fast_ln(float x) {
  union {
    float f;
    uint32_t i;
  } v{x};
  int32_t e = static_cast<int32_t>((v.i >> 23) & 0xff) - 127;
  v.i = (v.i & 0x007fffffu) | 0x3f800000u;  // m in [1,2)
  float m = v.f;
  if (m > 1.41421356f) {
    m *= 0.5f;
    e += 1;
  }
  float s = (m - 1.0f) / (m + 1.0f);
  float s2 = s * s;
  float lnm = 2.0f * s * (1.0f + s2 * (1.0f / 3 + s2 * (1.0f / 5 + s2 * (1.0f / 7))));
  return lnm + static_cast<float>(e) * 0.69314718f;
}

}  // namespace hpr::balance
