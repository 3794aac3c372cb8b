#include "scheduler/balance/hash.hpp"

#include <array>

namespace hpr::balance {
namespace {

// Slicing-by-4 tables for a reflected CRC of width <= 32.
template <uint32_t kPoly>
struct Tables {
  std::array<std::array<uint32_t, 256>, 4> t{};
  constexpr Tables() {
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ kPoly : c >> 1;
      t[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; ++i)
      for (int s = 1; s < 4; ++s) t[s][i] = (t[s - 1][i] >> 8) ^ t[0][t[s - 1][i] & 0xff];
  }
};

constexpr Tables<0xEDB88320u> kCrc32;
constexpr Tables<0xA001u> kCrc16;

template <const auto& T>
uint32_t crc_reflected(uint32_t crc, std::span<const uint8_t> bytes) {
  const uint8_t* p = bytes.data();
  size_t n = bytes.size();
  while (n >= 4) {
    crc ^= static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) | (static_cast<uint32_t>(p[2]) << 16) |
           (static_cast<uint32_t>(p[3]) << 24);
    crc = T.t[3][crc & 0xff] ^ T.t[2][(crc >> 8) & 0xff] ^ T.t[1][(crc >> 16) & 0xff] ^ T.t[0][crc >> 24];
    p += 4;
    n -= 4;
  }
  while (n--) crc = (crc >> 8) ^ T.t[0][(crc ^ *p++) & 0xff];
  return crc;
}

}  // namespace

uint16_t crc16(std::span<const uint8_t> bytes) { return static_cast<uint16_t>(crc_reflected<kCrc16>(0, bytes)); }

uint32_t crc32(std::span<const uint8_t> bytes) { return ~crc_reflected<kCrc32>(0xffffffffu, bytes); }

namespace {
// The 13 canonical bytes fed as three little-endian words and one byte (same result as the byte
// loop over five_tuple_bytes(), without building the array).
template <const auto& T>
uint32_t crc_tuple(uint32_t crc, const FiveTuple& t) {
  auto round = [&](uint32_t w) {
    crc ^= w;
    crc = T.t[3][crc & 0xff] ^ T.t[2][(crc >> 8) & 0xff] ^ T.t[1][(crc >> 16) & 0xff] ^ T.t[0][crc >> 24];
  };
  round(__builtin_bswap32(t.src_ip));
  round(__builtin_bswap32(t.dst_ip));
  round(static_cast<uint32_t>(__builtin_bswap16(t.src_port)) |
        (static_cast<uint32_t>(__builtin_bswap16(t.dst_port)) << 16));
  return (crc >> 8) ^ T.t[0][(crc ^ t.proto) & 0xff];
}
}  // namespace

uint16_t crc16(const FiveTuple& t) { return static_cast<uint16_t>(crc_tuple<kCrc16>(0, t)); }
uint32_t crc32(const FiveTuple& t) { return ~crc_tuple<kCrc32>(0xffffffffu, t); }

TupleBytes five_tuple_bytes(const FiveTuple& t) {
  TupleBytes o{};
  auto put32 = [&](int at, uint32_t v) {
    o.b[at] = static_cast<uint8_t>(v >> 24);
    o.b[at + 1] = static_cast<uint8_t>(v >> 16);
    o.b[at + 2] = static_cast<uint8_t>(v >> 8);
    o.b[at + 3] = static_cast<uint8_t>(v);
  };
  put32(0, t.src_ip);
  put32(4, t.dst_ip);
  o.b[8] = static_cast<uint8_t>(t.src_port >> 8);
  o.b[9] = static_cast<uint8_t>(t.src_port);
  o.b[10] = static_cast<uint8_t>(t.dst_port >> 8);
  o.b[11] = static_cast<uint8_t>(t.dst_port);
  o.b[12] = t.proto;
  return o;
}

}  // namespace hpr::balance
