#include "scheduler/balance/linear_hash.hpp"

#include <algorithm>

namespace hpr::balance {

Result<LinearHashTable> LinearHashTable::create(std::vector<uint16_t> lanes) {
  if (lanes.empty()) return error(Code::kInvalidArgument, "linear hash: a service needs at least one lane");
  LinearHashTable t;
  t.m_ = static_cast<uint32_t>(lanes.size());
  t.buckets_ = std::move(lanes);
  t.recompute();
  return t;
}

void LinearHashTable::recompute() {
  // b = 2^i m + p with 0 <= p < 2^i m  (LAPS §III-C-8: i = floor(log2(b/m)), p = b - 2^i m)
  uint32_t b = size();
  round_ = 0;
  level_size_ = m_;
  while (level_size_ * 2 <= b) {
    level_size_ *= 2;
    ++round_;
  }
  split_ = b - level_size_;
  pow2_ = (level_size_ & (level_size_ - 1)) == 0;
}

void LinearHashTable::grow(uint16_t lane) {
  buckets_.push_back(lane);
  recompute();
}

Status LinearHashTable::remove(uint16_t lane) {
  auto it = std::find(buckets_.begin(), buckets_.end(), lane);
  if (it == buckets_.end()) return error(Code::kNotFound, "linear hash: lane {} is not in the table", lane);
  if (buckets_.size() == 1) return error(Code::kInvalidArgument, "linear hash: cannot remove the last lane {}", lane);
  if (buckets_.size() <= m_) {
    // Below the initial size the family h_0 = f mod m would change for every key; shrink m instead
    // (rare: a service donating its last original cores).
    *it = buckets_.back();
    buckets_.pop_back();
    m_ = static_cast<uint32_t>(buckets_.size());
  } else {
    *it = buckets_.back();
    buckets_.pop_back();
  }
  recompute();
  return Status::ok();
}

}  // namespace hpr::balance
