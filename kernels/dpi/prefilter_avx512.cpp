// Fingerprint filter, AVX-512 (F, BW, VBMI): 16 windows a step. vpermb builds the 4-byte windows of
// positions i..i+15 from one 32-byte load; they are case-folded (byte masks), hashed (vpmulld,
// shift) and their bits read with one vpgatherdd.
#include <immintrin.h>

// GCC 12's AVX-512 headers pass _mm512_undefined_epi32() (`__m512i __Y = __Y;`), which
// -Wmaybe-uninitialized reports once inlined (as in kernels/md5/md5_avx512.cpp): a header false positive.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <array>
#include <bit>

#include "kernels/dpi/prefilter.hpp"

namespace hpr::dpi::detail {
namespace {

// vpermb indices: window j (j = 0..15) is bytes j..j+3.
alignas(64) constexpr std::array<uint8_t, 64> kWindowIdx = [] {
  std::array<uint8_t, 64> v{};
  for (int j = 0; j < 16; ++j)
    for (int b = 0; b < 4; ++b) v[4 * j + b] = static_cast<uint8_t>(j + b);
  return v;
}();

}  // namespace

__attribute__((target("avx512f,avx512bw,avx512vbmi"))) uint32_t next_avx512(const FingerprintFilter& f,
                                                                             const uint8_t* p, uint32_t len,
                                                                             uint32_t from, bool* found) {
  const __m512i windows = _mm512_load_si512(kWindowIdx.data());
  const __m512i a = _mm512_set1_epi8('A'), z25 = _mm512_set1_epi8(25), case_bit = _mm512_set1_epi8(0x20);
  const __m512i mul = _mm512_set1_epi32(static_cast<int>(kFingerprintMul)), low5 = _mm512_set1_epi32(31);
  const __m512i one = _mm512_set1_epi32(1);
  const __m128i shift = _mm_cvtsi32_si128(static_cast<int>(f.shift()));
  const uint32_t* bits = f.bits();
  uint32_t i = from;
  for (; i + 32 <= len; i += 16) {
    const __m512i raw = _mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i)));
    __m512i w = _mm512_permutexvar_epi8(windows, raw);
    const __mmask64 upper = _mm512_cmple_epu8_mask(_mm512_sub_epi8(w, a), z25);
    w = _mm512_mask_blend_epi8(upper, w, _mm512_or_si512(w, case_bit));
    const __m512i h = _mm512_srl_epi32(_mm512_mullo_epi32(w, mul), shift);
    const __m512i word = _mm512_i32gather_epi32(_mm512_srli_epi32(h, 5), bits, 4);
    const __mmask16 m = _mm512_test_epi32_mask(_mm512_srlv_epi32(word, _mm512_and_si512(h, low5)), one);
    if (m != 0) {
      *found = true;
      return i + static_cast<uint32_t>(std::countr_zero(static_cast<uint32_t>(m)));
    }
  }
  *found = false;
  return i;
}

}  // namespace hpr::dpi::detail
