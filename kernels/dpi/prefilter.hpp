#pragma once
// First stage of the prefilter path (prefilter_matcher.hpp): a hashed bitmap of the 4-byte
// fingerprints (first four bytes, ASCII-case-folded) of the patterns of >= 4 bytes, and a scan for
// the next payload position whose 4-byte window may be one (as Hyperscan's FDR hashes its
// literals' suffixes into buckets; here one bucket, and the automaton confirms).
//
// A position is a candidate when the bit of hash(fold(window)) is set: a superset of the positions
// where a pattern of >= 4 bytes starts (never a miss; false positives at about
// fingerprints / 2^bits of the positions, bits chosen at build so that this is <= 1/64, plus every
// start of a real fingerprint in the traffic).
//
// SIMD paths, chosen at run time by CPU feature (as the md5 and aes kernels do): AVX-512 (16
// windows a step: vpermb builds the windows, vpgatherdd reads the bitmap), AVX2 (8 windows a step:
// pshufb, vpgatherdd), scalar (one window a step). All give the same answer (tests force each).
// The automatic choice is AVX2 where the CPU has it (measured faster than the AVX-512 path on the
// Zen 4 of docs/dpi.md), else scalar; HPR_DPI_SIMD=scalar|avx2|avx512 or SimdPath picks another (a
// path the CPU lacks falls back to the best one below it).
#include <cstdint>
#include <string_view>
#include <vector>

#include "kernels/dpi/rules.hpp"

namespace hpr::dpi {

enum class SimdPath : uint8_t { kAuto, kScalar, kAvx2, kAvx512 };

// The path that `want` resolves to on this CPU: kAuto -> HPR_DPI_SIMD when set, else AVX2; a path
// the CPU lacks -> the best one below it.
SimdPath resolve_simd(SimdPath want);
std::string_view simd_name(SimdPath p);

inline constexpr uint32_t kFingerprintBytes = 4;

// ASCII case folding of the four bytes of a little-endian word (SWAR, no table).
inline uint32_t fold4(uint32_t w) {
  const uint32_t lo = w & 0x7f7f7f7fu;
  const uint32_t ge_a = lo + 0x3f3f3f3fu;  // high bit: (b & 0x7f) >= 'A'
  const uint32_t gt_z = lo + 0x25252525u;  // high bit: (b & 0x7f) >  'Z'
  return w | ((ge_a & ~gt_z & ~w & 0x80808080u) >> 2);
}

inline constexpr uint32_t kFingerprintMul = 0x9e3779b1u;

class FingerprintFilter {
 public:
  FingerprintFilter() = default;
  // Fingerprints of the patterns of >= 4 bytes (shorter ones are ignored: none may be given).
  FingerprintFilter(const std::vector<Pattern>& patterns, SimdPath simd);

  // First position in [from, len - 4] whose window is a candidate; `len` when there is none
  // (also when len < 4). `from` may be anything up to len.
  uint32_t next(const uint8_t* p, uint32_t len, uint32_t from) const;

  SimdPath simd() const { return simd_; }
  void set_simd(SimdPath simd) { simd_ = resolve_simd(simd); }  // not while another thread scans
  uint32_t hash_bits() const { return 32 - shift_; }
  uint32_t fingerprints() const { return fingerprints_; }  // distinct folded 4-byte prefixes

  // Raw parts for the SIMD paths.
  const uint32_t* bits() const { return bits_.data(); }
  uint32_t shift() const { return shift_; }
  bool hit(uint32_t window) const {
    const uint32_t h = (fold4(window) * kFingerprintMul) >> shift_;
    return (bits_[h >> 5] >> (h & 31)) & 1u;
  }

 private:
  std::vector<uint32_t> bits_;
  uint32_t shift_ = 32;
  uint32_t fingerprints_ = 0;
  SimdPath simd_ = SimdPath::kScalar;
};

namespace detail {
// SIMD block scans (prefilter_avx2.cpp, prefilter_avx512.cpp) over whole blocks that lie inside the
// payload, from `from` on: the first candidate (and *found = true), or the first position they did
// not examine (*found = false), where the caller goes on with the scalar loop.
uint32_t next_avx2(const FingerprintFilter& f, const uint8_t* p, uint32_t len, uint32_t from, bool* found);
uint32_t next_avx512(const FingerprintFilter& f, const uint8_t* p, uint32_t len, uint32_t from, bool* found);
bool cpu_has_avx2();
bool cpu_has_avx512();
}  // namespace detail

}  // namespace hpr::dpi
