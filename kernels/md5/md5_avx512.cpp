// MD5 multi-buffer on AVX-512: sixteen packets at once, one per 32-bit lane of a zmm register, with
// vprold rotates and vpternlogd for F/G/H/I; lanes refilled as packets finish (md5_lanes.hpp).
#include <immintrin.h>

#include <utility>

// GCC 12's avx512fintrin.h: the unpack intrinsics pass _mm512_undefined_epi32() (`__m512i __Y = __Y;`), which
// -Wmaybe-uninitialized reports once inlined. A header false positive; nothing here is uninitialized.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include "kernels/md5/md5_lanes.hpp"

namespace hpr::kernels::md5::detail {
namespace {

#define HPR_AVX512 __attribute__((target("avx512f")))
#define HPR_AVX512_INLINE __attribute__((target("avx512f"), always_inline)) inline

// 16 lanes x 16 message words: load each lane's 64-byte block and transpose so that w[j] holds word j of
// every lane (unpack 32 / unpack 64 / two 128-bit shuffles; no gathers, which are slow on AMD).
HPR_AVX512_INLINE void load_transpose16(const uint8_t* const p[16], __m512i w[16]) {
  __m512i r[16], t[16];
#pragma GCC unroll 16
  for (int i = 0; i < 16; ++i) r[i] = _mm512_loadu_si512(p[i]);
#pragma GCC unroll 8
  for (int k = 0; k < 16; k += 2) {
    t[k] = _mm512_unpacklo_epi32(r[k], r[k + 1]);
    t[k + 1] = _mm512_unpackhi_epi32(r[k], r[k + 1]);
  }
  // r[4k + m]: in 128-bit chunk j, word 4j + m of lanes 4k..4k+3.
#pragma GCC unroll 4
  for (int k = 0; k < 16; k += 4) {
    r[k] = _mm512_unpacklo_epi64(t[k], t[k + 2]);
    r[k + 1] = _mm512_unpackhi_epi64(t[k], t[k + 2]);
    r[k + 2] = _mm512_unpacklo_epi64(t[k + 1], t[k + 3]);
    r[k + 3] = _mm512_unpackhi_epi64(t[k + 1], t[k + 3]);
  }
  // Per m, a 4x4 transpose of 128-bit chunks: w[4j + m] = chunk j of r[m], r[4 + m], r[8 + m], r[12 + m].
#pragma GCC unroll 4
  for (int m = 0; m < 4; ++m) {
    __m512i v0 = _mm512_shuffle_i32x4(r[m], r[4 + m], 0x44), v1 = _mm512_shuffle_i32x4(r[m], r[4 + m], 0xee);
    __m512i v2 = _mm512_shuffle_i32x4(r[8 + m], r[12 + m], 0x44), v3 = _mm512_shuffle_i32x4(r[8 + m], r[12 + m], 0xee);
    w[m] = _mm512_shuffle_i32x4(v0, v2, 0x88);
    w[4 + m] = _mm512_shuffle_i32x4(v0, v2, 0xdd);
    w[8 + m] = _mm512_shuffle_i32x4(v1, v3, 0x88);
    w[12 + m] = _mm512_shuffle_i32x4(v1, v3, 0xdd);
  }
}

// Step I: b += rotl(a + K[I] + w + f(b, c, d), S[I]), then the registers rotate (done by the caller's naming).
template <int I>
HPR_AVX512_INLINE void step(__m512i& a, __m512i b, __m512i c, __m512i d, const __m512i w[16]) {
  // F = d ^ (b & (c ^ d)) (b ? c : d), G = c ^ (d & (b ^ c)) (d ? b : c), H = b ^ c ^ d, I = c ^ (b | ~d).
  constexpr int kTern = I < 16 ? 0xca : I < 32 ? 0xe4 : I < 48 ? 0x96 : 0x39;
  __m512i f = _mm512_ternarylogic_epi32(b, c, d, kTern);
  __m512i kw = _mm512_add_epi32(_mm512_set1_epi32(static_cast<int>(kK[I])), w[msg_index(I)]);
  __m512i t = _mm512_add_epi32(_mm512_add_epi32(a, kw), f);  // f last: it is on the critical path
  constexpr int kRot = kS[I];  // a constant expression, as vprold's immediate must be at every -O level
  a = _mm512_add_epi32(b, _mm512_rol_epi32(t, kRot));
}

template <size_t... Q>
HPR_AVX512_INLINE void steps(__m512i& a, __m512i& b, __m512i& c, __m512i& d, const __m512i w[16],
                             std::index_sequence<Q...>) {
  // Four steps per Q, the registers named round-robin instead of moved: (a,b,c,d), (d,a,b,c), (c,d,a,b), (b,c,d,a).
  ((step<4 * Q>(a, b, c, d, w), step<4 * Q + 1>(d, a, b, c, w), step<4 * Q + 2>(c, d, a, b, w),
    step<4 * Q + 3>(b, c, d, a, w)),
   ...);
}

HPR_AVX512 void compress16(uint32_t st[4][16], const uint8_t* p[16], uint32_t blocks) {
  __m512i a0 = _mm512_load_si512(st[0]), b0 = _mm512_load_si512(st[1]);
  __m512i c0 = _mm512_load_si512(st[2]), d0 = _mm512_load_si512(st[3]);
  for (uint32_t blk = 0; blk < blocks; ++blk) {
    __m512i w[16];
    load_transpose16(p, w);
#pragma GCC unroll 16
    for (int l = 0; l < 16; ++l)
      if (p[l] != kDummy) p[l] += 64;
    __m512i a = a0, b = b0, c = c0, d = d0;
    steps(a, b, c, d, w, std::make_index_sequence<16>{});
    a0 = _mm512_add_epi32(a0, a); b0 = _mm512_add_epi32(b0, b);
    c0 = _mm512_add_epi32(c0, c); d0 = _mm512_add_epi32(d0, d);
  }
  _mm512_store_si512(st[0], a0); _mm512_store_si512(st[1], b0);
  _mm512_store_si512(st[2], c0); _mm512_store_si512(st[3], d0);
}

}  // namespace

bool cpu_has_avx512() {
  // GCC's avx512f check includes the OS saving the zmm and mask state (XCR0).
  static const bool has = __builtin_cpu_supports("avx512f");
  return has;
}

void md5_batch_avx512(const BatchView& batch) { run_lanes<16>(batch, compress16); }

}  // namespace hpr::kernels::md5::detail
