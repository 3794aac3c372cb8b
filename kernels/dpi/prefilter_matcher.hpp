#pragma once
// Prefilter path of the native DPI lane (issue 18): the same matches, count and first K ids as
// AcDfa::scan on the whole pattern set (the kernel's layout), found in two parts.
//
// Long patterns (>= 4 bytes): FingerprintFilter (prefilter.hpp, SIMD) finds the positions where
//   one may start; the automaton of the long patterns alone is run from its root at such a
//   position (entered directly at the fingerprint's depth-4 state, found by hash) and stopped at the first byte (at least 4 bytes on) where its state is shallower than
//   4 (states are BFS-numbered, so that is one compare of the row offset). Then the state's depth D
//   (<= 3) says where the next candidate may start: the D bytes just read. Why no match is lost or
//   counted twice: a run from root at s finds every match inside [s, i]; a match that started after s
//   and ends after i would make the state at i deeper than D; a pattern starting at or after i-D+1
//   ends after i (>= 4 bytes) and its start is a candidate again. Runs cover disjoint,
//   increasing end ranges, so their matches come out in (end, id) order as in one pass.
// Short patterns (1..3 bytes, e.g. 127 one-byte ones in ET): ShortMatcher (short_matcher.hpp),
//   table lookups on the last 1..3 raw bytes, no automaton and no byte-to-byte dependency.
// The two lists of first K (end, id) are merged. Ids are those of the whole set (the parts map
// their local ids back; local order is global order, so each part's list stays sorted).
#include <cstdint>
#include <memory>
#include <vector>

#include "hpr/status.hpp"
#include "kernels/dpi/ac.hpp"
#include "kernels/dpi/prefilter.hpp"
#include "kernels/dpi/short_matcher.hpp"

namespace hpr::dpi {

struct PrefilterStats {
  uint32_t short_patterns = 0, long_patterns = 0;
  uint32_t fingerprints = 0;  // distinct folded 4-byte prefixes of the long patterns
  uint32_t hash_bits = 0;
  uint64_t table_bytes = 0;  // both automata + the bitmap
};

class PrefilterMatcher {
 public:
  // Errors: as AcDfa::build (no patterns, an empty pattern, a table over `max_table_bytes`).
  // `order`: the long-pattern automaton's state order (AcOrder; keep_depths raised to 4, the depths
  // a run's end is read from).
  static Result<std::unique_ptr<PrefilterMatcher>> build(const std::vector<Pattern>& patterns,
                                                         SimdPath simd = SimdPath::kAuto,
                                                         uint64_t max_table_bytes = 2ull << 30,
                                                         const AcOrder& order = {});
  const AcDfa* long_automaton() const { return long_.dfa.get(); }  // null without long patterns

  // Same convention as AcDfa::scan: min(count, k) ids to `ids` (k <= kMaxIds), returns the count.
  uint32_t scan(const uint8_t* p, uint32_t len, uint32_t* ids, uint32_t k) const;

  static constexpr uint32_t kMaxIds = 64;
  SimdPath simd() const { return filter_.simd(); }
  void set_simd(SimdPath simd) { filter_.set_simd(simd); }  // tests and the bench; not while scanning
  const PrefilterStats& stats() const { return stats_; }
  const FingerprintFilter& filter() const { return filter_; }

 private:
  struct Part {
    std::unique_ptr<AcDfa> dfa;
    std::vector<uint32_t> global;  // local id -> id in the whole set
  };
  uint32_t scan_long(const uint8_t* p, uint32_t len, uint32_t* ids, uint32_t* ends, uint32_t k) const;

  bool has_short_ = false;
  ShortMatcher short_;
  // Transition word (from ac.hpp) into the depth-4 state of each fingerprint.
  uint32_t entry(uint32_t window) const;

  Part long_;
  FingerprintFilter filter_;
  // Fingerprint -> the transition word from the root's 4 steps into its depth-4 state (open
  // addressing; word 0 = empty: no depth-4 state is row 0). A candidate is confirmed here (no
  // false positive goes further) and its run starts at that state, 3 table loads later saved.
  std::vector<std::pair<uint32_t, uint32_t>> entry_;
  uint32_t entry_shift_ = 32;
  uint32_t deep_row_ = 0;  // long automaton: first row of depth kFingerprintBytes
  uint32_t depth_rows_[kFingerprintBytes] = {};
  PrefilterStats stats_;
};

}  // namespace hpr::dpi
