#pragma once
// Linear hashing map table (Litwin 1980), as LAPS uses it to grow and shrink a service's set of
// cores one bucket at a time (laps-hash-afd-load-balancing.txt §III-C-3..8, Figs. 5-7):
// m initial buckets, round i, split pointer p, b = 2^i m + p buckets; h_i(k) = f(k) mod 2^i m and
//   bucket(k) = h_{i+1}(k) if h_i(k) < p, else h_i(k).
// grow(lane) splits bucket p into p and b (only flows of bucket p can move, and only to the new
// bucket). remove(lane) undoes one split: the last bucket's flows go back to their buddy bucket;
// the removed lane's slot takes the last bucket's lane (a swap, where the paper shifts the list:
// the swap moves fewer flows). Each bucket holds a lane id.
#include <cstdint>
#include <vector>

#include "hpr/status.hpp"

namespace hpr::balance {

class LinearHashTable {
 public:
  // Errors: kInvalidArgument when `lanes` is empty.
  static Result<LinearHashTable> create(std::vector<uint16_t> lanes);

  uint32_t bucket(uint32_t key) const {
    if (pow2_) {  // 2^i m is a power of two when m is: masks instead of divisions
      uint32_t h = key & (level_size_ - 1);
      return h < split_ ? key & (level_size_ * 2 - 1) : h;
    }
    uint32_t h = key % level_size_;
    if (h < split_) h = key % (level_size_ * 2);
    return h;
  }
  uint16_t lane(uint32_t key) const { return buckets_[bucket(key)]; }

  void grow(uint16_t lane);
  // Errors: kNotFound when `lane` is not in the table; kInvalidArgument when it is the last lane.
  Status remove(uint16_t lane);

  const std::vector<uint16_t>& lanes() const { return buckets_; }
  uint32_t size() const { return static_cast<uint32_t>(buckets_.size()); }
  uint32_t round() const { return round_; }
  uint32_t split_pointer() const { return split_; }

 private:
  void recompute();
  uint32_t m_ = 1;           // initial bucket count
  uint32_t round_ = 0;       // i
  uint32_t split_ = 0;       // p
  uint32_t level_size_ = 1;  // 2^i m
  bool pow2_ = true;
  std::vector<uint16_t> buckets_;
};

}  // namespace hpr::balance
