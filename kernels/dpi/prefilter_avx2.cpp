// Fingerprint filter, AVX2: 8 windows a step. One 16-byte load is broadcast to both 128-bit lanes,
// pshufb builds the 4-byte windows of positions i..i+3 (low lane) and i+4..i+7 (high lane), they are
// case-folded, hashed (vpmulld, shift) and their bits read with one vpgatherdd.
#include <immintrin.h>

#include <bit>

#include "kernels/dpi/prefilter.hpp"

namespace hpr::dpi::detail {

__attribute__((target("avx2"))) uint32_t next_avx2(const FingerprintFilter& f, const uint8_t* p, uint32_t len,
                                                   uint32_t from, bool* found) {
  const __m256i windows = _mm256_setr_epi8(0, 1, 2, 3, 1, 2, 3, 4, 2, 3, 4, 5, 3, 4, 5, 6,  //
                                           4, 5, 6, 7, 5, 6, 7, 8, 6, 7, 8, 9, 7, 8, 9, 10);
  const __m256i a = _mm256_set1_epi8('A'), z25 = _mm256_set1_epi8(25), case_bit = _mm256_set1_epi8(0x20);
  const __m256i mul = _mm256_set1_epi32(static_cast<int>(kFingerprintMul)), low5 = _mm256_set1_epi32(31);
  const __m128i shift = _mm_cvtsi32_si128(static_cast<int>(f.shift()));
  const int* bits = reinterpret_cast<const int*>(f.bits());
  uint32_t i = from;
  for (; i + 16 <= len; i += 8) {
    __m256i w = _mm256_shuffle_epi8(_mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + i))), windows);
    const __m256i x = _mm256_sub_epi8(w, a);
    const __m256i upper = _mm256_cmpeq_epi8(_mm256_min_epu8(x, z25), x);
    w = _mm256_or_si256(w, _mm256_and_si256(upper, case_bit));
    const __m256i h = _mm256_srl_epi32(_mm256_mullo_epi32(w, mul), shift);
    const __m256i word = _mm256_i32gather_epi32(bits, _mm256_srli_epi32(h, 5), 4);
    const __m256i bit = _mm256_srlv_epi32(word, _mm256_and_si256(h, low5));
    const uint32_t m = static_cast<uint32_t>(_mm256_movemask_ps(_mm256_castsi256_ps(_mm256_slli_epi32(bit, 31))));
    if (m != 0) {
      *found = true;
      return i + static_cast<uint32_t>(std::countr_zero(m));
    }
  }
  *found = false;
  return i;
}

}  // namespace hpr::dpi::detail
