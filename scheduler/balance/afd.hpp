#pragma once
// Aggressive Flow Detector (AFD) of the LAPS paper (laps-hash-afd-load-balancing.txt §III-B-1,
// Fig. 4, evaluated in §V-C): a small fully associative Aggressive Flow Cache (AFC, 16 entries in
// the paper) fed by a larger N-way set-associative annex cache (512 entries in §V-C), both LFU.
//  - hit in AFC: its counter += 1;
//  - hit in annex: counter += 1; if it now exceeds the least count in AFC, the flow is promoted and
//    the AFC's LFU victim goes back to the annex (into the victim's own set, replacing that set's
//    LFU entry): the annex is also a victim cache;
//  - miss in both: the flow replaces the LFU entry of its annex set with count 1.
// Options: sampling (only every k-th packet looks up the AFD, §V-C Fig. 13(c)) and aging (halve
// every counter each `decay_packets` lookups; 0 = never, as in the paper).
// Hot path: observe() and is_aggressive() do not allocate.
#include <cstdint>
#include <vector>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "hpr/status.hpp"

namespace hpr::balance {

struct AfdConfig {
  uint32_t afc_entries = 16;
  uint32_t annex_entries = 512;
  uint32_t annex_ways = 4;
  uint32_t sample_every = 1;   // 1: every packet
  uint32_t decay_packets = 0;  // 0: no aging
};

class AggressiveFlowDetector {
 public:
  // Errors: kInvalidArgument when afc_entries is 0 or > 64, annex_ways is 0, annex_entries is not a
  // multiple of annex_ways, or sample_every is 0.
  static Result<AggressiveFlowDetector> create(const AfdConfig& cfg);

  // Feeds one packet of flow `key` (any 32-bit flow identity; the balancers use flow_id).
  void observe(uint32_t key);
  // True when `key` is in the AFC (count > 0).
  bool is_aggressive(uint32_t key) const;
  // AFC content (keys with count > 0), most frequent first; for tests and the simulator.
  std::vector<uint32_t> aggressive_flows() const;
  uint64_t promotions() const { return promotions_; }

 private:
  explicit AggressiveFlowDetector(const AfdConfig& cfg);
  struct Entry {
    uint32_t key = 0;
    uint32_t count = 0;  // 0: empty
  };
  void insert_annex(uint32_t key, uint32_t count);
  void decay();

  // AFC lookup: compares all keys at once (SoA, vectorizes); count 0 marks an empty entry.
  int afc_find(uint32_t key) const {
    uint64_t hit = 0;
#if defined(__SSE2__)
    const __m128i k = _mm_set1_epi32(static_cast<int>(key));
    for (uint32_t i = 0; i < afc_words_; i += 4) {  // 4 keys per compare; movemask gives 4 bits
      __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(afc_key_ + i));
      hit |= static_cast<uint64_t>(_mm_movemask_ps(_mm_castsi128_ps(_mm_cmpeq_epi32(v, k)))) << i;
    }
#else
    for (uint32_t i = 0; i < afc_words_; ++i) hit |= static_cast<uint64_t>(afc_key_[i] == key) << i;
#endif
    hit &= valid_;
    return hit ? __builtin_ctzll(hit) : -1;
  }
  void afc_set(uint32_t i, Entry e) {
    afc_[i] = e;
    afc_key_[i] = e.key;
    valid_ = e.count ? (valid_ | (1ull << i)) : (valid_ & ~(1ull << i));
  }

  uint32_t set_index(uint32_t key) const {
    uint32_t h = mix(key);
    return (sets_ & (sets_ - 1)) == 0 ? h & (sets_ - 1) : h % sets_;
  }
  static uint32_t mix(uint32_t h) {  // murmur3 fmix32
    h ^= h >> 16;
    h *= 0x85ebca6bu;
    h ^= h >> 13;
    h *= 0xc2b2ae35u;
    return h ^ (h >> 16);
  }

  AfdConfig cfg_;
  uint32_t sets_ = 0;
  uint32_t sample_left_ = 1;
  uint64_t valid_ = 0;
  uint32_t afc_words_ = 64;  // afc_entries rounded up to a multiple of 4
  alignas(16) uint32_t afc_key_[64] = {};
  std::vector<Entry> afc_;
  std::vector<Entry> annex_;  // sets_ x ways
  uint32_t afc_min_ = 0;      // index of the AFC's LFU entry
  uint64_t seen_ = 0;
  uint64_t promotions_ = 0;
};

}  // namespace hpr::balance
