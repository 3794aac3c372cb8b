#include "scheduler/balance/afd.hpp"

#include <algorithm>

#include "scheduler/balance/hash.hpp"

namespace hpr::balance {

Result<AggressiveFlowDetector> AggressiveFlowDetector::create(const AfdConfig& cfg) {
  if (cfg.afc_entries == 0 || cfg.afc_entries > 64)
    return error(Code::kInvalidArgument, "afd: afc_entries must be in 1..64 (got {})", cfg.afc_entries);
  if (cfg.annex_ways == 0 || cfg.annex_entries == 0 || cfg.annex_entries % cfg.annex_ways != 0)
    return error(Code::kInvalidArgument, "afd: annex_entries ({}) must be a positive multiple of annex_ways ({})",
                 cfg.annex_entries, cfg.annex_ways);
  if (cfg.sample_every == 0) return error(Code::kInvalidArgument, "afd: sample_every must be >= 1");
  return AggressiveFlowDetector(cfg);
}

AggressiveFlowDetector::AggressiveFlowDetector(const AfdConfig& cfg)
    : cfg_(cfg),
      sets_(cfg.annex_entries / cfg.annex_ways),
      afc_words_((cfg.afc_entries + 3) / 4 * 4),
      afc_(cfg.afc_entries),
      annex_(cfg.annex_entries) {}

void AggressiveFlowDetector::observe(uint32_t key) {
  // Sampling: every sample_every-th packet (a countdown: no division on the hot path).
  if (--sample_left_ != 0) return;
  sample_left_ = cfg_.sample_every;
  ++seen_;
  if (cfg_.decay_packets && seen_ % cfg_.decay_packets == 0) decay();
  if (int i = afc_find(key); i >= 0) {
    ++afc_[i].count;
    if (static_cast<uint32_t>(i) == afc_min_) {  // the LFU entry grew: find the new minimum
      afc_min_ = 0;
      for (uint32_t k = 1; k < afc_.size(); ++k)
        if (afc_[k].count < afc_[afc_min_].count) afc_min_ = k;
    }
    return;
  }
  Entry* set = &annex_[static_cast<size_t>(set_index(key)) * cfg_.annex_ways];
  Entry* hit = nullptr;
  Entry* lfu = set;
  for (uint32_t w = 0; w < cfg_.annex_ways; ++w) {
    if (set[w].count && set[w].key == key) hit = &set[w];
    if (set[w].count < lfu->count) lfu = &set[w];
  }
  if (!hit) {
    *lfu = Entry{key, 1};
    hit = lfu;
  } else {
    ++hit->count;
  }
  if (hit->count > afc_[afc_min_].count) {  // promotion: the annex count exceeds the AFC's least count
    Entry promoted = *hit;
    *hit = Entry{};
    Entry old = afc_[afc_min_];
    afc_set(afc_min_, promoted);
    ++promotions_;
    if (old.count) insert_annex(old.key, old.count);
    afc_min_ = 0;
    for (uint32_t i = 1; i < afc_.size(); ++i)
      if (afc_[i].count < afc_[afc_min_].count) afc_min_ = i;
  }
}

void AggressiveFlowDetector::insert_annex(uint32_t key, uint32_t count) {
  Entry* set = &annex_[static_cast<size_t>(set_index(key)) * cfg_.annex_ways];
  Entry* lfu = set;
  for (uint32_t w = 0; w < cfg_.annex_ways; ++w)
    if (set[w].count < lfu->count) lfu = &set[w];
  if (lfu->count <= count) *lfu = Entry{key, count};
}

void AggressiveFlowDetector::decay() {
  for (auto& e : afc_) e.count = e.count ? std::max(1u, e.count / 2) : 0;  // stays valid
  for (auto& e : annex_) e.count /= 2;
}

bool AggressiveFlowDetector::is_aggressive(uint32_t key) const { return afc_find(key) >= 0; }

std::vector<uint32_t> AggressiveFlowDetector::aggressive_flows() const {
  std::vector<Entry> v;
  for (const auto& e : afc_)
    if (e.count) v.push_back(e);
  std::sort(v.begin(), v.end(), [](const Entry& a, const Entry& b) { return a.count > b.count; });
  std::vector<uint32_t> keys;
  keys.reserve(v.size());
  for (const auto& e : v) keys.push_back(e.key);
  return keys;
}

}  // namespace hpr::balance
