// Prefilter path: short-pattern automaton + fingerprint filter and long-pattern automaton, merged
// (see prefilter_matcher.hpp).
#include "kernels/dpi/prefilter_matcher.hpp"

#include <algorithm>

namespace hpr::dpi {

Result<std::unique_ptr<PrefilterMatcher>> PrefilterMatcher::build(const std::vector<Pattern>& patterns, SimdPath simd,
                                                                  uint64_t max_table_bytes) {
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
    auto d = AcDfa::build(lp, max_table_bytes);
    if (!d.is_ok()) return d.status();
    m->long_.dfa = std::make_unique<AcDfa>(std::move(*d));
    m->stats_.table_bytes += m->long_.dfa->stats().table_bytes;
  }
  m->filter_ = FingerprintFilter(lp, simd);
  if (m->long_.dfa) {
    for (uint32_t d = 0; d < kFingerprintBytes; ++d) m->depth_rows_[d] = m->long_.dfa->depth_row(d);
    m->deep_row_ = m->long_.dfa->depth_row(kFingerprintBytes);
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
    l.row = 0;
    l.i = s;
    for (uint32_t j = 1; j < kFingerprintBytes; ++j) ac_step(t, l, k);  // depth <= 3: no match yet
    do {
      ac_step(t, l, k);
    } while (l.row >= deep_row_ && l.i < len);
    if (l.row >= deep_row_) break;  // the payload ended inside a run
    uint32_t depth = 0;
    while (depth + 1 < kFingerprintBytes && l.row >= depth_rows_[depth + 1]) ++depth;
    from = l.i - depth;  // the `depth` bytes just read may start a pattern
  }
  return l.count;
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
