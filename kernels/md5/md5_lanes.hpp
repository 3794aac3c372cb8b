#pragma once
// MD5 internals shared by the scalar, AVX2 (md5_ref.cpp) and AVX-512 (md5_avx512.cpp) paths: the RFC 1321
// constants, tail padding, and the multi-buffer lane scheduler (refill as packets of different lengths finish).
#include <cstdint>
#include <cstring>

#include "kernels/md5/md5_app.hpp"

namespace hpr::kernels::md5::detail {

inline constexpr uint32_t kInit[4] = {0x67452301u, 0xefcdab89u, 0x98badcfeu, 0x10325476u};

inline constexpr uint32_t kK[64] = {
    0xd76aa478, 0xe8c7b756, 0x242070db, 0xc1bdceee, 0xf57c0faf, 0x4787c62a, 0xa8304613, 0xfd469501,
    0x698098d8, 0x8b44f7af, 0xffff5bb1, 0x895cd7be, 0x6b901122, 0xfd987193, 0xa679438e, 0x49b40821,
    0xf61e2562, 0xc040b340, 0x265e5a51, 0xe9b6c7aa, 0xd62f105d, 0x02441453, 0xd8a1e681, 0xe7d3fbc8,
    0x21e1cde6, 0xc33707d6, 0xf4d50d87, 0x455a14ed, 0xa9e3e905, 0xfcefa3f8, 0x676f02d9, 0x8d2a4c8a,
    0xfffa3942, 0x8771f681, 0x6d9d6122, 0xfde5380c, 0xa4beea44, 0x4bdecfa9, 0xf6bb4b60, 0xbebfbc70,
    0x289b7ec6, 0xeaa127fa, 0xd4ef3085, 0x04881d05, 0xd9d4d039, 0xe6db99e5, 0x1fa27cf8, 0xc4ac5665,
    0xf4292244, 0x432aff97, 0xab9423a7, 0xfc93a039, 0x655b59c3, 0x8f0ccc92, 0xffeff47d, 0x85845dd1,
    0x6fa87e4f, 0xfe2ce6e0, 0xa3014314, 0x4e0811a1, 0xf7537e82, 0xbd3af235, 0x2ad7d2bb, 0xeb86d391};

inline constexpr int kS[64] = {7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22, 5, 9,  14, 20, 5, 9,
                               14, 20, 5, 9,  14, 20, 5, 9,  14, 20, 4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23,
                               4, 11, 16, 23, 6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21};

// Message word index of step i.
constexpr int msg_index(int i) {
  return i < 16 ? i : i < 32 ? (5 * i + 1) % 16 : i < 48 ? (3 * i + 5) % 16 : (7 * i) % 16;
}

// Pad the last len % 64 bytes of a message of `len` bytes into `tail` (128 bytes); returns 1 or 2 blocks.
inline uint32_t build_tail(const uint8_t* data, size_t len, uint8_t tail[128]) {
  size_t rem = len % 64;
  uint32_t nblocks = rem + 9 > 64 ? 2 : 1;
  std::memset(tail, 0, 128);
  if (rem != 0) std::memcpy(tail, data + (len - rem), rem);  // data may be null when len == 0
  tail[rem] = 0x80;
  uint64_t bits = static_cast<uint64_t>(len) * 8;
  std::memcpy(tail + nblocks * 64 - 8, &bits, 8);
  return nblocks;
}

// The block an idle lane hashes (result discarded). It stays in place: a compress function does not advance a
// lane that points here, so a long run of the other lanes never reads past it (ASan: global-buffer-overflow).
alignas(64) inline constexpr uint8_t kDummy[64] = {};

// Lane scheduler for an L-lane compress(st[4][L], p[L], blocks) that hashes `blocks` consecutive 64-byte blocks
// per lane from p[l] (advancing p[l] unless it is kDummy): each lane walks its packet's full blocks in place, then
// its 1-2 padded tail blocks from a lane buffer; a finished lane writes its digest and takes the next packet.
template <int L, class Compress>
void run_lanes(const BatchView& batch, Compress&& compress) {
  alignas(64) uint32_t st[4][L];
  alignas(64) uint8_t tail[L][128];
  const uint8_t* p[L];
  uint32_t left[L];    // blocks left in the current segment
  uint8_t seg[L];      // 0: in-place full blocks, 1: tail blocks, 2: idle
  uint32_t idx[L];     // packet index of the lane
  uint32_t next = 0, active = 0;

  auto start_tail = [&](int l) {
    const Desc& d = batch.desc[idx[l]];
    left[l] = build_tail(batch.slice(idx[l]), d.len, tail[l]);
    p[l] = tail[l];
    seg[l] = 1;
  };
  auto load = [&](int l) {
    if (next < batch.n) {
      uint32_t i = next++;
      const Desc& d = batch.desc[i];
      idx[l] = i;
      for (int k = 0; k < 4; ++k) st[k][l] = kInit[k];
      uint32_t full = d.len / 64;
      if (full > 0) {
        p[l] = batch.slice(i);
        left[l] = full;
        seg[l] = 0;
      } else {
        start_tail(l);
      }
      ++active;
      return;
    }
    seg[l] = 2;
    p[l] = kDummy;
    left[l] = UINT32_MAX;
  };
  for (int l = 0; l < L; ++l) load(l);
  while (active > 0) {
    uint32_t run = UINT32_MAX;
    for (int l = 0; l < L; ++l)
      if (seg[l] != 2 && left[l] < run) run = left[l];
    compress(st, p, run);
    for (int l = 0; l < L; ++l) {
      if (seg[l] == 2) continue;
      left[l] -= run;
      if (left[l] != 0) continue;
      if (seg[l] == 0) { start_tail(l); continue; }
      uint32_t s[4] = {st[0][l], st[1][l], st[2][l], st[3][l]};
      std::memcpy(batch.out + static_cast<size_t>(idx[l]) * kDigestBytes, s, kDigestBytes);  // x86: little endian
      --active;
      load(l);
    }
  }
}

// The AVX-512 x16 batch (md5_avx512.cpp); call only where cpu_has_avx512() says so.
bool cpu_has_avx512();
void md5_batch_avx512(const BatchView& batch);

}  // namespace hpr::kernels::md5::detail
