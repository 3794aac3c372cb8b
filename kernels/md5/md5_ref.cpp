// Native MD5 (RFC 1321): scalar one-shot, the AVX2 eight-lane multi-buffer batch, and the choice among scalar,
// AVX2 x8 and AVX-512 x16 (md5_avx512.cpp).
#include <immintrin.h>

#include <cstring>

#include "kernels/md5/md5_app.hpp"
#include "kernels/md5/md5_lanes.hpp"

namespace hpr::kernels::md5 {
namespace {

using detail::build_tail;
using detail::kInit;
using detail::kK;
using detail::kS;
using detail::msg_index;

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

using detail::kDummy;

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

HPR_AVX2 void md5_batch_avx2(const BatchView& batch) { detail::run_lanes<8>(batch, compress8); }

void md5_batch_scalar(const BatchView& batch) {
  for (uint32_t i = 0; i < batch.n; ++i)
    md5(batch.slice(i), batch.desc[i].len, batch.out + static_cast<size_t>(i) * kDigestBytes);
}

// The impl md5_batch runs for `impl` on a batch of n packets (never kAuto).
Impl resolve(Impl impl, uint32_t n) {
  if (impl == Impl::kAuto) {
    if (n < 4) return Impl::kScalar;  // below a few packets the idle lanes cost more than they save
    return auto_impl();
  }
  return impl_supported(impl) ? impl : Impl::kScalar;
}

}  // namespace

bool impl_supported(Impl impl) {
  switch (impl) {
    case Impl::kAuto:
    case Impl::kScalar: return true;
    case Impl::kAvx2: return cpu_has_avx2();
    case Impl::kAvx512X16: return detail::cpu_has_avx512();
  }
  return false;
}

Impl auto_impl() {
  // Measured (docs/crypto.md, Zen 4): zmm x16 > ymm x8 at 64 B, 1514 B and the mix.
  return detail::cpu_has_avx512() ? Impl::kAvx512X16 : cpu_has_avx2() ? Impl::kAvx2 : Impl::kScalar;
}

std::string_view impl_name(Impl impl) {
  switch (impl) {
    case Impl::kAuto: return "auto";
    case Impl::kScalar: return "scalar";
    case Impl::kAvx2: return "avx2x8";
    case Impl::kAvx512X16: return "avx512x16";
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
  switch (resolve(impl, batch.n)) {
    case Impl::kAvx512X16: detail::md5_batch_avx512(batch); return;
    case Impl::kAvx2: md5_batch_avx2(batch); return;
    default: md5_batch_scalar(batch); return;
  }
}

}  // namespace hpr::kernels::md5
