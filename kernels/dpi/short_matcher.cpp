// Short-pattern tables (see short_matcher.hpp).
#include "kernels/dpi/short_matcher.hpp"

#include <algorithm>
#include <bit>
#include <map>

namespace hpr::dpi {
namespace {

constexpr uint32_t kMul3 = 0x9e3779b1u;

// Raw byte strings a pattern matches: its bytes, and both cases of each letter when nocase.
std::vector<uint32_t> raw_keys(const Pattern& p) {
  std::vector<uint32_t> keys{0};
  for (char ch : p.bytes) {
    const auto b = static_cast<uint8_t>(ch);
    const bool letter = (b | 0x20) >= 'a' && (b | 0x20) <= 'z';
    std::vector<uint32_t> next;
    for (uint32_t k : keys) {
      if (p.nocase && letter) {
        next.push_back(k << 8 | (b | 0x20u));
        next.push_back(k << 8 | (b & ~0x20u));
      } else {
        next.push_back(k << 8 | b);
      }
    }
    keys.swap(next);
  }
  return keys;
}

}  // namespace

Result<ShortMatcher> ShortMatcher::build(const std::vector<Pattern>& patterns, const std::vector<uint32_t>& global) {
  std::map<uint32_t, std::vector<uint32_t>> lists[3];  // by length - 1: raw key -> ids
  for (size_t j = 0; j < patterns.size(); ++j) {
    const size_t n = patterns[j].bytes.size();
    if (n < 1 || n > 3) return error(Code::kInvalidArgument, "short patterns: pattern {} has {} bytes (want 1..3)", j, n);
    for (uint32_t key : raw_keys(patterns[j])) lists[n - 1][key].push_back(global[j]);
  }
  ShortMatcher m;
  m.one_.assign(256, 0);
  m.two_.assign(65536, 0);
  m.one_off_.assign(257, 0);
  m.two_off_.assign(65537, 0);
  auto table = [&m](const std::map<uint32_t, std::vector<uint32_t>>& l, std::vector<uint16_t>& cnt,
                    std::vector<uint32_t>& off) -> Status {
    for (uint32_t x = 0; x < cnt.size(); ++x) {
      off[x] = static_cast<uint32_t>(m.pool_.size());
      auto it = l.find(x);
      if (it == l.end()) continue;
      if (it->second.size() >= kStarts3) return error(Code::kInvalidArgument, "short patterns: {} on one key", it->second.size());
      cnt[x] = static_cast<uint16_t>(it->second.size());
      m.pool_.insert(m.pool_.end(), it->second.begin(), it->second.end());
    }
    off[cnt.size()] = static_cast<uint32_t>(m.pool_.size());
    return Status::ok();
  };
  for (auto& l : lists)
    for (auto& [key, ids] : l) std::sort(ids.begin(), ids.end());
  if (Status s = table(lists[0], m.one_, m.one_off_); !s.is_ok()) return s;
  if (Status s = table(lists[1], m.two_, m.two_off_); !s.is_ok()) return s;
  const uint32_t bits = std::max<uint32_t>(4, std::bit_width(lists[2].size() * 2));
  m.three_.assign(size_t{1} << bits, Entry3{});
  m.three_shift_ = 32 - bits;
  uint32_t max1 = 0, max2 = 0, max3 = 0;
  for (uint16_t c : m.one_) max1 = std::max<uint32_t>(max1, c);
  for (uint16_t c : m.two_) max2 = std::max<uint32_t>(max2, c);
  for (auto& [key, ids] : lists[2]) max3 = std::max<uint32_t>(max3, static_cast<uint32_t>(ids.size()));
  if (max1 + max2 + max3 > kMaxAt)
    return error(Code::kInvalidArgument, "short patterns: up to {} may end on one byte (at most {})", max1 + max2 + max3, kMaxAt);
  for (auto& [key, ids] : lists[2]) {
    m.two_[key >> 8] |= kStarts3;
    uint32_t h = (key * kMul3) >> m.three_shift_;
    while (m.three_[h].key != Entry3::kEmpty) h = (h + 1) & (m.three_.size() - 1);
    m.three_[h] = {key, static_cast<uint32_t>(ids.size()), static_cast<uint32_t>(m.pool_.size())};
    m.pool_.insert(m.pool_.end(), ids.begin(), ids.end());
  }
  return m;
}

uint64_t ShortMatcher::table_bytes() const {
  return one_.size() * 2 + two_.size() * 2 + (one_off_.size() + two_off_.size() + pool_.size()) * 4 +
         three_.size() * sizeof(Entry3);
}

const ShortMatcher::Entry3* ShortMatcher::find3(uint32_t key) const {
  uint32_t h = (key * kMul3) >> three_shift_;
  for (;;) {
    const Entry3& e = three_[h];
    if (e.key == key) return &e;
    if (e.key == Entry3::kEmpty) return nullptr;
    h = (h + 1) & (three_.size() - 1);
  }
}

uint32_t ShortMatcher::ids_at(const uint8_t* p, uint32_t i, uint32_t* out) const {
  uint32_t n = 0;
  auto add = [&](uint32_t off, uint32_t cnt) {
    for (uint32_t j = 0; j < cnt; ++j) out[n++] = pool_[off + j];
  };
  add(one_off_[p[i]], one_[p[i]]);
  if (i >= 1) {
    const uint32_t pair = uint32_t{p[i - 1]} << 8 | p[i];
    add(two_off_[pair], two_[pair] & ~kStarts3);
  }
  if (i >= 2 && (two_[uint32_t{p[i - 2]} << 8 | p[i - 1]] & kStarts3)) {
    if (const Entry3* e = find3(uint32_t{p[i - 2]} << 16 | uint32_t{p[i - 1]} << 8 | p[i])) add(e->off, e->count);
  }
  std::sort(out, out + n);
  return n;
}

uint32_t ShortMatcher::scan(const uint8_t* p, uint32_t len, uint32_t* ids, uint32_t* ends, uint32_t k) const {
  if (one_.empty()) return 0;
  uint32_t count = 0, nid = 0, i = 0;
  uint32_t at[kMaxAt];  // ids ending at one position
  for (; i < len && (nid < k || i < 2); ++i) {  // ids still wanted (and the first two bytes)
    const uint32_t n = ids_at(p, i, at);
    count += n;
    for (uint32_t j = 0; j < n && nid < k; ++j, ++nid) {
      ids[nid] = at[j];
      ends[nid] = i;
    }
  }
  // Counts only: no dependency from byte to byte.
  for (; i < len; ++i) {
    const uint32_t pair = uint32_t{p[i - 1]} << 8 | p[i];
    count += one_[p[i]] + (two_[pair] & ~kStarts3);
    if (two_[uint32_t{p[i - 2]} << 8 | p[i - 1]] & kStarts3) {
      if (const Entry3* e = find3(uint32_t{p[i - 2]} << 16 | pair)) count += e->count;
    }
  }
  return count;
}

}  // namespace hpr::dpi
