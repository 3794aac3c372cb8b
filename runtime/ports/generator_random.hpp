#pragma once
// Fixed pseudo-random generators and an alias table for the traffic generator.
//
// The generator must give the same bytes for the same seed on every standard library, so it never
// uses std::*_distribution (whose algorithms are implementation-defined). Instead:
//  - splitmix64 (Steele, Lea, Flood, "Fast splittable pseudorandom number generators", OOPSLA 2014)
//    seeds streams and hashes counters (flow index -> header fields, noise step -> Gaussian);
//  - xoshiro256** 1.0 (Blackman & Vigna, "Scrambled linear pseudorandom number generators", 2018)
//    is the per-packet stream;
//  - AliasTable is Walker's alias method in Vose's O(n) construction (Vose, IEEE TSE 17(9), 1991):
//    O(1) sampling of a discrete distribution with one 64-bit draw, 8 bytes per outcome.
#include <cmath>
#include <cstdint>
#include <vector>

namespace hpr::gen {

inline uint64_t splitmix64_next(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// Stateless mix of one value (splitmix64 finaliser of x + golden gamma).
inline uint64_t mix64(uint64_t x) {
  uint64_t s = x;
  return splitmix64_next(s);
}

class Xoshiro256 {
 public:
  explicit Xoshiro256(uint64_t seed = 1) {
    uint64_t sm = seed;
    for (auto& w : s_) w = splitmix64_next(sm);
  }
  uint64_t next() {
    const uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }
  // Uniform in [0, n) by multiply-shift (Lemire); bias below 2^-32 for n < 2^32, which is fine here.
  uint32_t below(uint32_t n) { return static_cast<uint32_t>(((next() >> 32) * static_cast<uint64_t>(n)) >> 32); }
  // Uniform double in [0, 1) with 53 random bits.
  double unit() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

 private:
  static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t s_[4];
};

inline double unit_from(uint64_t r) { return static_cast<double>(r >> 11) * 0x1.0p-53; }

// Standard normal from one 64-bit hash (Box-Muller on two 32-bit halves); deterministic.
inline double gaussian_from(uint64_t r) {
  double u1 = (static_cast<double>(r >> 32) + 0.5) * 0x1.0p-32;  // (0, 1)
  double u2 = static_cast<double>(r & 0xffffffffu) * 0x1.0p-32;
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
}

class AliasTable {
 public:
  AliasTable() = default;
  // weights: non-negative, at least one positive (the caller checks). Probabilities are quantised
  // to 2^-32.
  explicit AliasTable(const std::vector<double>& weights) { build(weights); }

  void build(const std::vector<double>& weights) {
    const size_t n = weights.size();
    entries_.assign(n, Entry{0xffffffffu, 0});
    double sum = 0;
    for (double w : weights) sum += w;
    std::vector<double> scaled(n);
    std::vector<uint32_t> small, large;
    small.reserve(n);
    large.reserve(n);
    for (size_t i = 0; i < n; ++i) {
      scaled[i] = weights[i] * static_cast<double>(n) / sum;
      (scaled[i] < 1.0 ? small : large).push_back(static_cast<uint32_t>(i));
    }
    while (!small.empty() && !large.empty()) {
      uint32_t s = small.back();
      small.pop_back();
      uint32_t l = large.back();
      entries_[s].threshold = to_threshold(scaled[s]);
      entries_[s].alias = l;
      scaled[l] = (scaled[l] + scaled[s]) - 1.0;
      if (scaled[l] < 1.0) {
        large.pop_back();
        small.push_back(l);
      }
    }
    // Leftovers are 1 up to rounding: they keep themselves.
    for (uint32_t i : small) entries_[i] = Entry{0xffffffffu, i};
    for (uint32_t i : large) entries_[i] = Entry{0xffffffffu, i};
  }

  // One 64-bit draw: high half picks the column, low half the coin.
  uint32_t sample(uint64_t r) const {
    const uint32_t col = column(r);
    const Entry& e = entries_[col];
    return (static_cast<uint32_t>(r) < e.threshold || e.threshold == 0xffffffffu) ? col : e.alias;
  }
  // Start loading the entry sample(r) will read (a large table lives in DRAM: ~70% of the time of a
  // million-flow generator went to this one load before it was prefetched a few packets ahead).
  void prefetch(uint64_t r) const { __builtin_prefetch(&entries_[column(r)]); }
  size_t size() const { return entries_.size(); }
  size_t memory_bytes() const { return entries_.size() * sizeof(Entry); }

 private:
  struct Entry {
    uint32_t threshold;  // keep the column when the coin < threshold (0xffffffff: always)
    uint32_t alias;
  };
  uint32_t column(uint64_t r) const { return static_cast<uint32_t>(((r >> 32) * entries_.size()) >> 32); }
  static uint32_t to_threshold(double p) {
    if (p <= 0) return 0;
    double t = p * 4294967296.0;
    return t >= 4294967295.0 ? 0xfffffffeu : static_cast<uint32_t>(t);
  }
  std::vector<Entry> entries_;
};

}  // namespace hpr::gen
