// Native MD5 (RFC 1321): scalar one-shot and an AVX2 eight-lane multi-buffer batch.
#include <immintrin.h>

#include <cstring>

#include "kernels/md5/md5_app.hpp"

namespace hpr::kernels::md5 {
namespace {

constexpr uint32_t kInit[4] = {0x67452301u, 0xefcdab89u, 0x98badcfeu, 0x10325476u};

constexpr uint32_t kK[64] = {
    0xd76aa478, 0xe8c7b756, 0x242070db, 0xc1bdceee, 0xf57c0faf, 0x4787c62a, 0xa8304613, 0xfd469501,
    0x698098d8, 0x8b44f7af, 0xffff5bb1, 0x895cd7be, 0x6b901122, 0xfd987193, 0xa679438e, 0x49b40821,
    0xf61e2562, 0xc040b340, 0x265e5a51, 0xe9b6c7aa, 0xd62f105d, 0x02441453, 0xd8a1e681, 0xe7d3fbc8,
    0x21e1cde6, 0xc33707d6, 0xf4d50d87, 0x455a14ed, 0xa9e3e905, 0xfcefa3f8, 0x676f02d9, 0x8d2a4c8a,
    0xfffa3942, 0x8771f681, 0x6d9d6122, 0xfde5380c, 0xa4beea44, 0x4bdecfa9, 0xf6bb4b60, 0xbebfbc70,
    0x289b7ec6, 0xeaa127fa, 0xd4ef3085, 0x04881d05, 0xd9d4d039, 0xe6db99e5, 0x1fa27cf8, 0xc4ac5665,
    0xf4292244, 0x432aff97, 0xab9423a7, 0xfc93a039, 0x655b59c3, 0x8f0ccc92, 0xffeff47d, 0x85845dd1,
    0x6fa87e4f, 0xfe2ce6e0, 0xa3014314, 0x4e0811a1, 0xf7537e82, 0xbd3af235, 0x2ad7d2bb, 0xeb86d391};

constexpr int kS[64] = {7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22, 5, 9,  14, 20, 5, 9,
                        14, 20, 5, 9,  14, 20, 5, 9,  14, 20, 4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23,
                        4, 11, 16, 23, 6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21};

// Message word index of step i.
constexpr int msg_index(int i) {
  return i < 16 ? i : i < 32 ? (5 * i + 1) % 16 : i < 48 ? (3 * i + 5) % 16 : (7 * i) % 16;
}

inline uint32_t rotl(uint32_t x, int s) { return (x << s) | (x >> (32 - s)); }
inline uint32_t load_le32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);  // x86: little endian, like MD5
  return v;
}

void compress(uint32_t st[4], const uint8_t* block) {
  uint32_t w[16];
  for (int i = 0; i < 16; ++i) w[i] = load_le32(block + 4 * i);
  uint32_t a = st[0], b = st[1], c = st[2], d = st[3];
#pragma GCC unroll 64
  for (int i = 0; i < 64; ++i) {
    uint32_t f;
    if (i < 16) f = d ^ (b & (c ^ d));
    else if (i < 32) f = c ^ (d & (b ^ c));
    else if (i < 48) f = b ^ c ^ d;
    else f = c ^ (b | ~d);
    uint32_t t = d;
    d = c;
    c = b;
    b = b + rotl(a + f + kK[i] + w[msg_index(i)], kS[i]);
    a = t;
  }
  st[0] += a; st[1] += b; st[2] += c; st[3] += d;
}

// Pad the last len % 64 bytes of a message of `len` bytes into `tail` (128 bytes); returns 1 or 2 blocks.
uint32_t build_tail(const uint8_t* data, size_t len, uint8_t tail[128]) {
  size_t rem = len % 64;
  uint32_t nblocks = rem + 9 > 64 ? 2 : 1;
  std::memset(tail, 0, 128);
  if (rem != 0) std::memcpy(tail, data + (len - rem), rem);  // data may be null when len == 0
  tail[rem] = 0x80;
  uint64_t bits = static_cast<uint64_t>(len) * 8;
  std::memcpy(tail + nblocks * 64 - 8, &bits, 8);
  return nblocks;
}

void store_digest(const uint32_t st[4], uint8_t* out) { std::memcpy(out, st, kDigestBytes); }

bool cpu_has_avx2() {
  static const bool has = __builtin_cpu_supports("avx2");
  return has;
}

// ---------------------------------------------------------------- AVX2 multi-buffer (8 lanes)
#define HPR_AVX2 __attribute__((target("avx2")))

HPR_AVX2 inline __m256i rotl8(__m256i x, int s) {
  return _mm256_or_si256(_mm256_slli_epi32(x, s), _mm256_srli_epi32(x, 32 - s));
}

// Load word `w` block rows of the 8 lanes and transpose so that out[j] holds word j of every lane.
HPR_AVX2 inline void load_transpose8(const uint8_t* const p[8], int off, __m256i out[8]) {
  __m256i r0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p[0] + off));
  __m256i r1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p[1] + off));
  __m256i r2 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p[2] + off));
  __m256i r3 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p[3] + off));
  __m256i r4 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p[4] + off));
  __m256i r5 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p[5] + off));
  __m256i r6 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p[6] + off));
  __m256i r7 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p[7] + off));
  __m256i t0 = _mm256_unpacklo_epi32(r0, r1), t1 = _mm256_unpackhi_epi32(r0, r1);
  __m256i t2 = _mm256_unpacklo_epi32(r2, r3), t3 = _mm256_unpackhi_epi32(r2, r3);
  __m256i t4 = _mm256_unpacklo_epi32(r4, r5), t5 = _mm256_unpackhi_epi32(r4, r5);
  __m256i t6 = _mm256_unpacklo_epi32(r6, r7), t7 = _mm256_unpackhi_epi32(r6, r7);
  __m256i u0 = _mm256_unpacklo_epi64(t0, t2), u1 = _mm256_unpackhi_epi64(t0, t2);
  __m256i u2 = _mm256_unpacklo_epi64(t1, t3), u3 = _mm256_unpackhi_epi64(t1, t3);
  __m256i u4 = _mm256_unpacklo_epi64(t4, t6), u5 = _mm256_unpackhi_epi64(t4, t6);
  __m256i u6 = _mm256_unpacklo_epi64(t5, t7), u7 = _mm256_unpackhi_epi64(t5, t7);
  out[0] = _mm256_permute2x128_si256(u0, u4, 0x20);
  out[1] = _mm256_permute2x128_si256(u1, u5, 0x20);
  out[2] = _mm256_permute2x128_si256(u2, u6, 0x20);
  out[3] = _mm256_permute2x128_si256(u3, u7, 0x20);
  out[4] = _mm256_permute2x128_si256(u0, u4, 0x31);
  out[5] = _mm256_permute2x128_si256(u1, u5, 0x31);
  out[6] = _mm256_permute2x128_si256(u2, u6, 0x31);
  out[7] = _mm256_permute2x128_si256(u3, u7, 0x31);
}

// The block an idle lane hashes (result discarded). It stays in place: compress8 does not advance a lane that
// points here, so a long run of the other lanes never reads past it (ASan: global-buffer-overflow).
alignas(64) static const uint8_t kDummy[64] = {};

// `blocks` consecutive 64-byte blocks for each of the 8 lanes, starting at p[l] (advanced, except idle lanes).
HPR_AVX2 void compress8(uint32_t st[4][8], const uint8_t* p[8], uint32_t blocks) {
  __m256i a0 = _mm256_load_si256(reinterpret_cast<const __m256i*>(st[0]));
  __m256i b0 = _mm256_load_si256(reinterpret_cast<const __m256i*>(st[1]));
  __m256i c0 = _mm256_load_si256(reinterpret_cast<const __m256i*>(st[2]));
  __m256i d0 = _mm256_load_si256(reinterpret_cast<const __m256i*>(st[3]));
  const __m256i ones = _mm256_set1_epi32(-1);
  for (uint32_t blk = 0; blk < blocks; ++blk) {
    __m256i w[16];
    load_transpose8(p, 0, w);
    load_transpose8(p, 32, w + 8);
    for (int l = 0; l < 8; ++l)
      if (p[l] != kDummy) p[l] += 64;
    __m256i a = a0, b = b0, c = c0, d = d0;
#pragma GCC unroll 64
    for (int i = 0; i < 64; ++i) {
      __m256i f;
      if (i < 16) f = _mm256_xor_si256(d, _mm256_and_si256(b, _mm256_xor_si256(c, d)));
      else if (i < 32) f = _mm256_xor_si256(c, _mm256_and_si256(d, _mm256_xor_si256(b, c)));
      else if (i < 48) f = _mm256_xor_si256(_mm256_xor_si256(b, c), d);
      else f = _mm256_xor_si256(c, _mm256_or_si256(b, _mm256_xor_si256(d, ones)));
      __m256i t = _mm256_add_epi32(_mm256_add_epi32(a, f),
                                   _mm256_add_epi32(_mm256_set1_epi32(static_cast<int>(kK[i])), w[msg_index(i)]));
      __m256i nb = _mm256_add_epi32(b, rotl8(t, kS[i]));
      a = d; d = c; c = b; b = nb;
    }
    a0 = _mm256_add_epi32(a0, a); b0 = _mm256_add_epi32(b0, b);
    c0 = _mm256_add_epi32(c0, c); d0 = _mm256_add_epi32(d0, d);
  }
  _mm256_store_si256(reinterpret_cast<__m256i*>(st[0]), a0);
  _mm256_store_si256(reinterpret_cast<__m256i*>(st[1]), b0);
  _mm256_store_si256(reinterpret_cast<__m256i*>(st[2]), c0);
  _mm256_store_si256(reinterpret_cast<__m256i*>(st[3]), d0);
}

// Lane scheduler: each lane walks its packet's full blocks in place, then its 1-2 padded tail blocks
// from a lane buffer; a finished lane takes the next packet. Idle lanes hash a dummy block.
HPR_AVX2 void md5_batch_avx2(const BatchView& batch) {
  constexpr int kLanes = 8;
  alignas(32) uint32_t st[4][kLanes];
  alignas(64) uint8_t tail[kLanes][128];
  const uint8_t* p[kLanes];
  uint32_t left[kLanes];    // blocks left in the current segment
  uint8_t seg[kLanes];      // 0: in-place full blocks, 1: tail blocks, 2: idle
  uint32_t idx[kLanes];     // packet index of the lane
  uint32_t next = 0, active = 0;

  auto start_tail = [&](int l) {
    const Desc& d = batch.desc[idx[l]];
    left[l] = build_tail(batch.slice(idx[l]), d.len, tail[l]);
    p[l] = tail[l];
    seg[l] = 1;
  };
  auto load = [&](int l) {
    while (next < batch.n) {
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
  for (int l = 0; l < kLanes; ++l) load(l);
  while (active > 0) {
    uint32_t run = UINT32_MAX;
    for (int l = 0; l < kLanes; ++l) if (seg[l] != 2 && left[l] < run) run = left[l];
    compress8(st, p, run);
    for (int l = 0; l < kLanes; ++l) {
      if (seg[l] == 2) { p[l] = kDummy; continue; }
      left[l] -= run;
      if (left[l] != 0) continue;
      if (seg[l] == 0) { start_tail(l); continue; }
      uint32_t s[4] = {st[0][l], st[1][l], st[2][l], st[3][l]};
      store_digest(s, batch.out + static_cast<size_t>(idx[l]) * kDigestBytes);
      --active;
      load(l);
    }
  }
}

void md5_batch_scalar(const BatchView& batch) {
  for (uint32_t i = 0; i < batch.n; ++i)
    md5(batch.slice(i), batch.desc[i].len, batch.out + static_cast<size_t>(i) * kDigestBytes);
}

}  // namespace

bool impl_supported(Impl impl) { return impl != Impl::kAvx2 || cpu_has_avx2(); }

std::string_view impl_name(Impl impl) {
  switch (impl) {
    case Impl::kAuto: return "auto";
    case Impl::kScalar: return "scalar";
    case Impl::kAvx2: return "avx2x8";
  }
  return "?";
}

void md5(const uint8_t* data, size_t len, uint8_t digest[kDigestBytes]) {
  uint32_t st[4] = {kInit[0], kInit[1], kInit[2], kInit[3]};
  size_t full = len / 64;
  for (size_t b = 0; b < full; ++b) compress(st, data + 64 * b);
  alignas(16) uint8_t tail[128];
  uint32_t nb = build_tail(data, len, tail);
  for (uint32_t b = 0; b < nb; ++b) compress(st, tail + 64 * b);
  store_digest(st, digest);
}

void md5_batch(const BatchView& batch, Impl impl) {
  // kAuto: below a few packets the idle lanes cost more than they save.
  bool avx2 = cpu_has_avx2() && (impl == Impl::kAvx2 || (impl == Impl::kAuto && batch.n >= 4));
  if (avx2) md5_batch_avx2(batch);
  else md5_batch_scalar(batch);
}

}  // namespace hpr::kernels::md5
