// Prefilter path: short-pattern tables + fingerprint filter and long-pattern automaton, merged
// (see prefilter_matcher.hpp).
#include "kernels/dpi/prefilter_matcher.hpp"

#include <algorithm>
#include <bit>
#include <cstring>

namespace hpr::dpi {

Result<std::unique_ptr<PrefilterMatcher>> PrefilterMatcher::build(const std::vector<Pattern>& patterns, SimdPath simd,
                                                                  uint64_t max_table_bytes, const AcOrder& order) {
  if (patterns.empty()) return error(Code::kInvalidArgument, "DPI prefilter: no patterns");
  auto m = std::unique_ptr<PrefilterMatcher>(new PrefilterMatcher());
  std::vector<Pattern> sp, lp;
  std::vector<uint32_t> short_global;
  for (uint32_t id = 0; id < patterns.size(); ++id) {
    if (patterns[id].bytes.empty()) return error(Code::kInvalidArgument, "DPI prefilter: pattern {} is empty", id);
    const bool is_long = patterns[id].bytes.size() >= kFingerprintBytes;
    (is_long ? lp : sp).push_back(patterns[id]);
    (is_long ? m->long_.global : short_global).push_back(id);
  }
  if (!sp.empty()) {
    auto s = ShortMatcher::build(sp, short_global);
    if (!s.is_ok()) return s.status();
    m->short_ = std::move(*s);
    m->has_short_ = true;
    m->stats_.table_bytes += m->short_.table_bytes();
  }
  if (!lp.empty()) {
    AcOrder o = order;
    o.keep_depths = std::max(o.keep_depths, kFingerprintBytes);  // scan_long reads depths 0..4 from the row
    auto d = AcDfa::build(lp, o, max_table_bytes);
    if (!d.is_ok()) return d.status();
    m->long_.dfa = std::make_unique<AcDfa>(std::move(*d));
    m->stats_.table_bytes += m->long_.dfa->stats().table_bytes;
  }
  m->filter_ = FingerprintFilter(lp, simd);
  if (m->long_.dfa) {
    for (uint32_t d = 0; d < kFingerprintBytes; ++d) m->depth_rows_[d] = m->long_.dfa->depth_row(d);
    m->deep_row_ = m->long_.dfa->depth_row(kFingerprintBytes);
    const uint32_t bits = std::bit_width(m->filter_.fingerprints() * 2u);
    m->entry_.assign(size_t{1} << bits, {0, 0});
    m->entry_shift_ = 32 - bits;
    const AcTables t = m->long_.dfa->tables();
    for (const Pattern& p : lp) {
      uint32_t w;
      std::memcpy(&w, p.bytes.data(), 4);
      uint32_t e = 0;
      for (uint32_t j = 0; j < kFingerprintBytes; ++j) e = t.trans[(e & kRowMask) + t.cls[static_cast<uint8_t>(p.bytes[j])]];
      uint32_t h = (fold4(w) * kFingerprintMul) >> m->entry_shift_;
      while (m->entry_[h].second != 0 && m->entry_[h].first != fold4(w)) h = (h + 1) & (m->entry_.size() - 1);
      m->entry_[h] = {fold4(w), e};
    }
    m->stats_.table_bytes += m->entry_.size() * 8;
  }
  m->stats_.short_patterns = static_cast<uint32_t>(sp.size());
  m->stats_.long_patterns = static_cast<uint32_t>(lp.size());
  m->stats_.fingerprints = m->filter_.fingerprints();
  m->stats_.hash_bits = m->filter_.hash_bits();
  m->stats_.table_bytes += (uint64_t{1} << m->stats_.hash_bits) / 8;
  return m;
}

uint32_t PrefilterMatcher::scan_long(const uint8_t* p, uint32_t len, uint32_t* ids, uint32_t* ends, uint32_t k) const {
  if (!long_.dfa) return 0;
  const AcTables t = long_.dfa->tables();
  AcLane l;
  l.p = p;
  l.len = len;
  l.ids = ids;
  l.ends = ends;
  uint32_t from = 0;
  for (;;) {
    const uint32_t s = filter_.next(p, len, from);
    if (s >= len) break;  // no candidate (one needs 4 bytes: s <= len - 4)
    uint32_t w;
    std::memcpy(&w, p + s, 4);
    const uint32_t e = entry(w);
    if (e == 0) {  // a false positive of the bitmap
      from = s + 1;
      continue;
    }
    l.i = s + kFingerprintBytes - 1;
    ac_enter(t, l, k, e);  // the root's 4 steps: depth 4, the outputs of 4-byte patterns
    while (l.i < len) {
      ac_step(t, l, k);
      if (l.row < deep_row_) break;
    }
    if (l.row >= deep_row_) break;  // the payload ended inside a run
    uint32_t depth = 0;
    while (depth + 1 < kFingerprintBytes && l.row >= depth_rows_[depth + 1]) ++depth;
    from = l.i - depth;  // the `depth` bytes just read may start a pattern
  }
  return l.count;
}

uint32_t PrefilterMatcher::entry(uint32_t window) const {
  const uint32_t key = fold4(window);
  uint32_t h = (key * kFingerprintMul) >> entry_shift_;
  for (;;) {
    const auto& [k, e] = entry_[h];
    if (e == 0 || k == key) return e;
    h = (h + 1) & (entry_.size() - 1);
  }
}

uint32_t PrefilterMatcher::scan(const uint8_t* p, uint32_t len, uint32_t* ids, uint32_t k) const {
  k = std::min(k, kMaxIds);
  uint32_t sid[kMaxIds], send[kMaxIds], lid[kMaxIds], lend[kMaxIds];
  const uint32_t cs = has_short_ ? short_.scan(p, len, sid, send, k) : 0;
  const uint32_t cl = scan_long(p, len, lid, lend, k);
  const uint32_t ns = std::min(cs, k), nl = std::min(cl, k), n = std::min(ns + nl, k);
  // Merge the two (end, id) lists; ids mapped to the whole set.
  uint32_t a = 0, b = 0;
  for (uint32_t j = 0; j < n; ++j) {
    const bool take_short =
        b >= nl || (a < ns && (send[a] < lend[b] || (send[a] == lend[b] && sid[a] < long_.global[lid[b]])));
    ids[j] = take_short ? sid[a++] : long_.global[lid[b++]];
  }
  return cs + cl;
}

}  // namespace hpr::dpi
