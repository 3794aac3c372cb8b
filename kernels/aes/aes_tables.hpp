#pragma once
// AES tables generated at compile time from the GF(2^8) definition (FIPS-197 §4, §5.1.1):
// S-box, inverse S-box, and the encryption T-table Te0 (Te0[x] = {02}S[x}, S[x], S[x], {03}S[x} as a
// big-endian word; Te1..Te3 are its byte rotations). Used by the table AES and the OpenCL source.
#include <cstdint>

namespace hpr::kernels::aes {

constexpr uint8_t xtime(uint8_t x) { return static_cast<uint8_t>((x << 1) ^ ((x & 0x80) ? 0x1b : 0)); }
constexpr uint8_t gmul(uint8_t a, uint8_t b) {
  uint8_t p = 0;
  while (b != 0) {
    if (b & 1) p ^= a;
    a = xtime(a);
    b >>= 1;
  }
  return p;
}

struct Tables {
  uint8_t sbox[256];
  uint8_t inv_sbox[256];
  uint32_t te0[256];
};

constexpr Tables make_tables() {
  Tables t{};
  for (int x = 0; x < 256; ++x) {
    // Multiplicative inverse by brute force (compile time only), then the affine map.
    uint8_t inv = 0;
    for (int y = 1; y < 256 && x != 0; ++y)
      if (gmul(static_cast<uint8_t>(x), static_cast<uint8_t>(y)) == 1) { inv = static_cast<uint8_t>(y); break; }
    uint8_t s = inv;
    for (int r = 1; r <= 4; ++r) s ^= static_cast<uint8_t>((inv << r) | (inv >> (8 - r)));
    s ^= 0x63;
    t.sbox[x] = s;
    t.inv_sbox[s] = static_cast<uint8_t>(x);
  }
  for (int x = 0; x < 256; ++x) {
    uint8_t s = t.sbox[x];
    t.te0[x] = (uint32_t{gmul(s, 2)} << 24) | (uint32_t{s} << 16) | (uint32_t{s} << 8) | uint32_t{gmul(s, 3)};
  }
  return t;
}

inline constexpr Tables kTables = make_tables();
static_assert(kTables.sbox[0] == 0x63 && kTables.sbox[0x53] == 0xed && kTables.inv_sbox[0x63] == 0);

}  // namespace hpr::kernels::aes
