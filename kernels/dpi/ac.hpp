#pragma once
// Aho-Corasick (Aho & Corasick, CACM 1975; the paper's DPI, §3.2.2) compiled into a dense DFA table
// with alphabet compression, one table for the host and every device.
//
// Layout (all uint32, one contiguous array `trans`, so it fits one device allocation):
//   - Input bytes map to classes through `byte_class[256]`. ASCII letters are folded ('A' and 'a'
//     are the same class); bytes that occur in no pattern share one class. Class values are the
//     word index inside a row: 4..C+3.
//   - Row of state s starts at word s * W, W = C + 4 rounded up to 16 (rows start on a 64-byte
//     cache line). Words 0..3 of a row are the state's output record (StateOut: exact count, list
//     offset, list length, verify count; zero when it has none); words 4..C+3 are the transitions,
//     already resolved through the failure links (a real DFA: one table load per input byte).
//   - A transition word is  kHasOutput (bit 31, the target has matches)
//                         | inline count << kRowBits   (bits 27..30)
//                         | target row offset          (bits 0..26: the table is at most 2^27
//                                                       words = 512 MB; ET needs 184 MB)
//     The inline count is the target's exact_count when it has no entry to verify and the count
//     fits, else all ones ("read the header"). Once the first K ids are recorded, a byte that lands
//     on such a state costs no memory access beyond the transition itself. The scan loop needs no
//     multiply or divide, and the output record is in the row it just moved to.
// Why this layout: the ET set gives ~198k states and 231 classes (the folded bytes that occur in
//   patterns + one for the rest): 198k x 240 x 4 B = 181 MB, under every device's max allocation
//   (PoCL here: 2 GB; CL_DEVICE_MAX_MEM_ALLOC_SIZE is checked in DpiApp::make_device_tables). A
//   full 256-wide table would be 203 MB; the win from classes is small on ET (hex patterns use most
//   byte values), the win that matters is folding: one automaton for nocase and exact patterns.
// Case: the automaton runs on case-folded input, so it finds every nocase pattern directly. A
//   case-sensitive pattern that contains a letter is a candidate there and is confirmed by comparing
//   its bytes against the raw payload (kVerify bit in its output entry); a case-sensitive pattern
//   with no letter needs no check (folding does not change it). One pass over the payload, instead
//   of two automata (one exact, one folded), and verification only where a candidate ends.
// Outputs: each state's list holds every pattern ending there, including through suffix (failure)
//   links, sorted by pattern id, precomputed at build. `exact_count` is the number of entries that
//   need no verification, so once the first K ids are recorded a state adds its count in one step.
//
// Match semantics (as Hyperscan block mode without HS_FLAG_SINGLEMATCH): a match is one (pattern,
// end offset) pair; matches are ordered by end offset, then pattern id; the first K ids are kept.
// Counts are uint32: a payload is < 65,536 bytes and a state has < 65,536 outputs in practice
// (checked at build), so the count of one payload cannot overflow.
#include <array>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "hpr/status.hpp"
#include "kernels/dpi/rules.hpp"

namespace hpr::dpi {

inline constexpr uint32_t kHasOutput = 0x80000000u;
inline constexpr uint32_t kVerify = 0x80000000u;  // in out_ids: confirm against the raw bytes
inline constexpr uint32_t kNoId = 0xffffffffu;    // unused id slot in a result

inline constexpr uint32_t kRowBits = 27;  // row offset bits of a transition word (fixed: constant masks)
inline constexpr uint32_t kRowMask = (1u << kRowBits) - 1;
inline constexpr uint32_t kInlineEscape = (kHasOutput - 1) >> kRowBits;  // 15: "read the header"
inline constexpr uint64_t kMaxTableBytes = (uint64_t{1} << kRowBits) * 4;
inline constexpr uint32_t kRowHeader = 4;  // words of StateOut at the start of each row

// Output record of one state: the first 4 words of its row (dpi.cl reads it with vload4).
struct StateOut {
  uint32_t exact_count;  // entries that need no verification
  uint32_t list_off;     // first entry in out_ids; the list_len entries (all, by id) are followed by
                         // a copy of the verify_n entries that need verification
  uint32_t list_len;     // entries (exact + verify)
  uint32_t verify_n;     // entries with kVerify
};
static_assert(sizeof(StateOut) == 16);

struct AcStats {
  uint32_t patterns = 0;
  uint32_t states = 0;
  uint32_t classes = 0;        // C
  uint32_t output_states = 0;  // states with at least one output
  uint64_t out_entries = 0;    // total entries of all output lists
  uint32_t verify_patterns = 0;// case-sensitive patterns with letters
  uint64_t table_bytes = 0;    // trans + out_ids + pattern bytes
  double build_s = 0;
  // Visit order only (AcOrder with training payloads; zero otherwise): bytes scanned to count the
  // visits, and the share of those visits that land on the first 1 MB of rows, in BFS order and in
  // the order built (a measure of what the reordering packs into a cache-sized prefix).
  uint64_t train_bytes = 0;
  double visit_share_1mb_bfs = 0, visit_share_1mb = 0;
};

// State order of AcDfa::build (issue 18, "a smaller hot DFA"; kernels/dpi/hot_order.cpp).
// Default (no training payloads): BFS order. With training payloads: the BFS table is built, the
// payloads are scanned on it counting the visits of each state, and the states are renumbered by
// (depth band, visits descending, BFS number): every transition word is rewritten to the new row
// offsets (a permutation: the matches are identical, the kernel reads the table unchanged). The
// depth band is min(depth, keep_depths): depths below keep_depths stay grouped in BFS depth order
// (the root, band 0, stays state 0), all deeper states form one band ordered by visits alone.
// depth_row(d) stays valid for d <= keep_depths (the prefilter path needs 4: it asks for 4 at least).
struct AcOrder {
  std::vector<std::span<const uint8_t>> train;  // payloads (the caller keeps them alive during build)
  uint32_t keep_depths = 1;                    // >= 1
};

// Raw table pointers for the scan loop.
struct AcTables {
  const uint32_t* trans;
  const uint8_t* cls;
  const uint32_t* out_ids;
  const uint8_t* pat_bytes;
  const uint32_t* pat_off;
};

class AcDfa {
 public:
  // Errors: kInvalidArgument (no patterns, an empty pattern, or the table would exceed
  // min(`max_table_bytes`, kMaxTableBytes = 512 MB), e.g. a device's CL_DEVICE_MAX_MEM_ALLOC_SIZE; the message gives both sizes).
  static Result<AcDfa> build(const std::vector<Pattern>& patterns, uint64_t max_table_bytes = 2ull << 30);
  // The same, states in the order `order` asks for (AcOrder above).
  static Result<AcDfa> build(const std::vector<Pattern>& patterns, const AcOrder& order,
                             uint64_t max_table_bytes = 2ull << 30);

  const std::array<uint8_t, 256>& byte_class() const { return byte_class_; }
  uint32_t row_words() const { return row_words_; }
  std::span<const uint32_t> trans() const { return {trans_.get(), trans_words_}; }
  const std::vector<uint32_t>& out_ids() const { return out_ids_; }
  const std::vector<uint8_t>& pat_bytes() const { return pat_bytes_; }  // all patterns, raw, concatenated
  const std::vector<uint32_t>& pat_off() const { return pat_off_; }     // n + 1 offsets into pat_bytes
  const AcStats& stats() const { return stats_; }
  AcTables tables() const { return {trans_.get(), byte_class_.data(), out_ids_.data(), pat_bytes_.data(), pat_off_.data()}; }
  uint32_t num_patterns() const { return static_cast<uint32_t>(pat_off_.size() - 1); }
  // Row offset of the first state of depth `d` (states are numbered in BFS order, so depth never
  // decreases with the row); past the deepest depth it is the table's end. The prefilter path
  // (prefilter.hpp) stops an automaton run when the state is shallower than its fingerprint.
  // Built in visit order (AcOrder), only d <= keep_depths is meaningful: row >= depth_row(d) still
  // means depth >= d there.
  uint32_t depth_row(uint32_t d) const {
    return d < depth_row_.size() ? depth_row_[d] : static_cast<uint32_t>(trans_words_);
  }

  // Scans one payload. Writes min(count, k) ids to `ids` (the rest untouched) and returns the count.
  uint32_t scan(const uint8_t* p, uint32_t len, uint32_t* ids, uint32_t k) const;

 private:
  std::array<uint8_t, 256> byte_class_{};
  struct Free {
    void operator()(uint32_t* p) const { std::free(p); }
  };
  // 2 MB aligned, THP-advised, zeroed; null when out of memory.
  static uint32_t* alloc_table(size_t words);
  void reorder_by_visits(const AcOrder& order);  // hot_order.cpp
  uint32_t row_words_ = 0;
  // 2 MB aligned and madvise(MADV_HUGEPAGE): the table is far larger than the TLB reach of 4 KB
  // pages and rows are visited at random.
  std::unique_ptr<uint32_t[], Free> trans_;
  size_t trans_words_ = 0;
  std::vector<uint32_t> out_ids_;
  std::vector<uint8_t> pat_bytes_;
  std::vector<uint32_t> pat_off_;
  std::vector<uint32_t> depth_row_;  // depth -> row offset of its first state
  AcStats stats_;
};

// Naive oracle: at every start offset, every pattern whose first byte fits is compared byte by byte
// (nocase folds ASCII letters); the (end offset, id) matches are sorted. Same result convention as
// AcDfa::scan. No automaton, no shared code with it: tests only (O(len * patterns per first byte)).
class NaiveMatcher {
 public:
  explicit NaiveMatcher(const std::vector<Pattern>& patterns);
  uint32_t scan(const uint8_t* p, uint32_t len, uint32_t* ids, uint32_t k) const;

 private:
  const std::vector<Pattern>* patterns_;
  std::array<std::vector<uint32_t>, 256> by_first_;  // folded first byte -> pattern ids
};

inline uint8_t fold_ascii(uint8_t b) { return (b >= 'A' && b <= 'Z') ? static_cast<uint8_t>(b + 32) : b; }

// ---- inline hot loop (shared by AcDfa::scan and the batch native path) ----
// Scan state of one payload; several are stepped in lockstep by the batch path (dpi_ref.cpp) so
// that their table misses overlap.
struct AcLane {
  const uint8_t* p = nullptr;
  uint32_t len = 0, i = 0;
  uint32_t row = 0, count = 0, nid = 0;
  uint32_t* ids = nullptr;
  uint32_t* ends = nullptr;  // optional: the end offset (last byte) of each recorded id
};

// Matches ending at lane position l.i (the byte just consumed) in the state at l.row.
inline void ac_outputs(const AcTables& t, AcLane& l, uint32_t k) {
  const uint32_t* h = t.trans + l.row;  // StateOut header
  uint32_t j = 0, jend = h[2];
  if (l.nid >= k) {  // ids full: add the exact count, check only the candidates that need it
    l.count += h[0];
    j = h[2];
    jend = h[2] + h[3];
  }
  const uint32_t* list = t.out_ids + h[1];
  for (; j < jend; ++j) {
    uint32_t id = list[j];
    if (id & kVerify) {
      id &= ~kVerify;
      uint32_t b = t.pat_off[id], n = t.pat_off[id + 1] - b;
      const uint8_t* s = l.p + l.i + 1 - n;
      uint32_t m = 0;
      while (m < n && s[m] == t.pat_bytes[b + m]) ++m;
      if (m != n) continue;
    }
    ++l.count;
    if (l.nid < k) {
      if (l.ends != nullptr) l.ends[l.nid] = l.i;
      l.ids[l.nid++] = id;
    }
  }
}

// Moves lane `l` along transition word `e` on the byte at l.i (its outputs end there) and past it.
// Always inlined, as ac_step: the prefilter path (prefilter_matcher.cpp) calls them from several
// places, where GCC otherwise keeps them out of line.
[[gnu::always_inline]] inline void ac_enter(const AcTables& t, AcLane& l, uint32_t k, uint32_t e) {
  l.row = e & kRowMask;
  if (e & kHasOutput) {
    const uint32_t inl = (e & ~kHasOutput) >> kRowBits;
    if (l.nid >= k && inl != kInlineEscape) l.count += inl;
    else ac_outputs(t, l, k);
  }
  ++l.i;
}

[[gnu::always_inline]] inline void ac_step(const AcTables& t, AcLane& l, uint32_t k) {
  ac_enter(t, l, k, t.trans[l.row + t.cls[l.p[l.i]]]);
}

inline uint32_t ac_scan(const AcTables& t, const uint8_t* p, uint32_t len, uint32_t* ids, uint32_t k) {
  AcLane l;
  l.p = p;
  l.len = len;
  l.ids = ids;
  while (l.i < l.len) ac_step(t, l, k);
  return l.count;
}

inline uint32_t AcDfa::scan(const uint8_t* p, uint32_t len, uint32_t* ids, uint32_t k) const {
  return ac_scan(tables(), p, len, ids, k);
}

}  // namespace hpr::dpi
