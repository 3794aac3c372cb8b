// Fingerprint filter: build, scalar scan, run-time choice of the SIMD path (see prefilter.hpp).
#include "kernels/dpi/prefilter.hpp"

#include <algorithm>
#include <bit>
#include <cstdlib>
#include <cstring>
#include <string>

namespace hpr::dpi {
namespace {

uint32_t load32(const uint8_t* p) {
  uint32_t w;
  std::memcpy(&w, p, 4);
  return w;
}

SimdPath best_below(SimdPath cap) {
  if (cap >= SimdPath::kAvx512 && detail::cpu_has_avx512()) return SimdPath::kAvx512;
  if (cap >= SimdPath::kAvx2 && detail::cpu_has_avx2()) return SimdPath::kAvx2;
  return SimdPath::kScalar;
}

}  // namespace

namespace detail {
bool cpu_has_avx2() {
  static const bool has = __builtin_cpu_supports("avx2");
  return has;
}
bool cpu_has_avx512() {
  // AVX-512 F + BW (byte masks) + VBMI (vpermb); GCC's checks include the OS saving the zmm state.
  static const bool has = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                          __builtin_cpu_supports("avx512vbmi");
  return has;
}
}  // namespace detail

SimdPath resolve_simd(SimdPath want) {
  if (want != SimdPath::kAuto) return best_below(want);
  // AVX2 by default: on the AMD EPYC (Zen 4) of docs/dpi.md the AVX-512 path was slower (its
  // 16-lane gather; ET >= 4 on capture payloads 1.61x against 1.89x Hyperscan, 7 rounds).
  SimdPath pick = SimdPath::kAvx2;
  if (const char* env = std::getenv("HPR_DPI_SIMD")) {
    const std::string e = env;
    if (e == "scalar") pick = SimdPath::kScalar;
    else if (e == "avx2") pick = SimdPath::kAvx2;
    else if (e == "avx512") pick = SimdPath::kAvx512;
  }
  return best_below(pick);
}

std::string_view simd_name(SimdPath p) {
  switch (p) {
    case SimdPath::kAuto: return "auto";
    case SimdPath::kScalar: return "scalar";
    case SimdPath::kAvx2: return "avx2";
    case SimdPath::kAvx512: return "avx512";
  }
  return "?";
}

FingerprintFilter::FingerprintFilter(const std::vector<Pattern>& patterns, SimdPath simd) : simd_(resolve_simd(simd)) {
  std::vector<uint32_t> fps;
  for (const auto& p : patterns) {
    if (p.bytes.size() < kFingerprintBytes) continue;
    fps.push_back(fold4(load32(reinterpret_cast<const uint8_t*>(p.bytes.data()))));
  }
  std::sort(fps.begin(), fps.end());
  fps.erase(std::unique(fps.begin(), fps.end()), fps.end());
  fingerprints_ = static_cast<uint32_t>(fps.size());
  // 64 bits per fingerprint (false positives <= 1/64 on random windows), 2^12 .. 2^22 bits (512 KB).
  const uint32_t bits = std::clamp<uint32_t>(std::bit_width(std::max<uint32_t>(fingerprints_, 1) * 64u - 1), 12, 22);
  shift_ = 32 - bits;
  bits_.assign((size_t{1} << bits) / 32, 0);
  for (uint32_t w : fps) {
    const uint32_t h = (w * kFingerprintMul) >> shift_;
    bits_[h >> 5] |= 1u << (h & 31);
  }
}

uint32_t FingerprintFilter::next(const uint8_t* p, uint32_t len, uint32_t from) const {
  if (len < kFingerprintBytes || bits_.empty()) return len;
  const uint32_t last = len - kFingerprintBytes;  // last window start
  uint32_t i = from;
  if (i <= last && simd_ != SimdPath::kScalar) {
    bool found = false;
    i = simd_ == SimdPath::kAvx512 ? detail::next_avx512(*this, p, len, i, &found) : detail::next_avx2(*this, p, len, i, &found);
    if (found) return i;
  }
  for (; i <= last; ++i) {
    if (hit(load32(p + i))) return i;
  }
  return len;
}

}  // namespace hpr::dpi
