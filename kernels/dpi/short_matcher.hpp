#pragma once
// Patterns of 1..3 bytes without an automaton (the short part of the prefilter path,
// prefilter_matcher.hpp): the matches ending at byte i depend only on bytes i-2..i, so each byte is
// looked up in tables indexed by the raw bytes (nocase patterns are entered under every case
// variant, at most 8), with no dependency from one byte to the next:
//   one1[b]          matches of 1-byte patterns on raw byte b
//   two[a << 8 | b]  matches of 2-byte patterns on raw pair (a, b), and bit 15: some 3-byte pattern
//                    starts with (a, b)
//   three            open-addressing hash of the raw 3-byte strings of 3-byte patterns (looked up
//                    only where the pair before says so)
// Until the first K ids are recorded each end's id lists are merged (by id); after that the
// scan only adds counts. Case is exact: a case-sensitive pattern is entered only as written.
#include <cstdint>
#include <vector>

#include "hpr/status.hpp"
#include "kernels/dpi/rules.hpp"

namespace hpr::dpi {

class ShortMatcher {
 public:
  ShortMatcher() = default;
  // `patterns` of 1..3 bytes; `global[j]` is the id reported for patterns[j] (increasing).
  // Errors: kInvalidArgument for a pattern of another length.
  static Result<ShortMatcher> build(const std::vector<Pattern>& patterns, const std::vector<uint32_t>& global);

  // Count of matches in p[0, len); the first min(count, k) (end offset, id) pairs, in order, to
  // `ids` and `ends`.
  uint32_t scan(const uint8_t* p, uint32_t len, uint32_t* ids, uint32_t* ends, uint32_t k) const;
  uint64_t table_bytes() const;

 private:
  static constexpr uint16_t kStarts3 = 0x8000;
  static constexpr uint32_t kMaxAt = 1024;  // matches ending on one byte (build refuses more)
  struct Entry3 {
    uint32_t key = kEmpty;  // a << 16 | b << 8 | c
    uint32_t count = 0, off = 0;
    static constexpr uint32_t kEmpty = 0xffffffffu;
  };
  const Entry3* find3(uint32_t key) const;
  // Appends the ids of the matches ending at i (sorted) to `out`; returns how many.
  uint32_t ids_at(const uint8_t* p, uint32_t i, uint32_t* out) const;

  std::vector<uint16_t> one_, two_;         // counts (two_: | kStarts3)
  std::vector<uint32_t> one_off_, two_off_;  // id lists in `pool_`: [off[x], off[x + 1])
  std::vector<Entry3> three_;                // size a power of two, at most half full
  uint32_t three_shift_ = 32;
  std::vector<uint32_t> pool_;
};

}  // namespace hpr::dpi
