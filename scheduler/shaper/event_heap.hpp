#pragma once
// EventHeap: the array-based binary min-heap of reschedule events from Kim et al., "Scalable
// Bandwidth Shaping Scheme via Adaptively Managed Parallel Heaps", ACM TODAES 22(4) 2017, §3.1.2
// (Fig. 3): one heap per core, nodes stored in a flat array (children of i at 2i and 2i+1, the
// parent at i/2; index 0 unused), no pointers, capacity fixed at construction.
//
// Node layout (8 bytes, one uint64_t). The whole word is the sort key, so ties between equal times
// break by queue id and the order is total and deterministic:
//
//     bit 63 ........................ 24 | 23 ............ 0
//     reschedule time - epoch, in ns (40) | local queue id (24)
//
// 40 bits of nanoseconds span 2^40 ns = 1,099 s. Times are stored relative to an epoch that the
// heap moves forward when a push would not fit (rebase: one subtraction per node, at most once
// every ~550 s of real or simulated time). Callers must keep every delay (T_resch - now) below
// kMaxDelayNs (549 s); the Shaper checks this when a profile is added.
//
// kCountTouches = true counts every node read and write per tree level, so that memory traffic can
// be reported as in the paper's §5.1.1 (a node at index i lives on level floor(log2 i); a locked
// cache of L bytes holds levels 0..log2(L/8)-1).
#include <algorithm>
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

namespace hpr::shaper {

template <bool kCountTouches>
class EventHeapT {
 public:
  static constexpr int kIdBits = 24;
  static constexpr int kTimeBits = 64 - kIdBits;
  static constexpr uint32_t kMaxId = (1u << kIdBits) - 1;
  static constexpr uint64_t kIdMask = (uint64_t{1} << kIdBits) - 1;
  static constexpr uint64_t kTimeSpanNs = uint64_t{1} << kTimeBits;
  // Largest allowed (time - now); half the span so a rebase always leaves room.
  static constexpr uint64_t kMaxDelayNs = kTimeSpanNs / 2;
  static constexpr int kLevels = 32;

  EventHeapT() = default;
  // capacity: the most nodes ever held (a Shaper uses its queue count: a queue is in the heap at
  // most once). Allocates (capacity + 1) * 8 bytes here, never later.
  explicit EventHeapT(size_t capacity) : nodes_(capacity + 1, 0) {}

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  size_t capacity() const { return nodes_.empty() ? 0 : nodes_.size() - 1; }
  size_t memory_bytes() const { return nodes_.capacity() * sizeof(uint64_t); }
  size_t high_water() const { return high_water_; }

  // Inserts (time_ns, id). Requires size() < capacity(), id <= kMaxId and time_ns >= epoch
  // (i.e. not earlier than the earliest time the heap has been asked about). Returns false (and
  // inserts nothing) when the heap is full.
  bool push(uint64_t time_ns, uint32_t id) {
    if (size_ >= capacity()) return false;
    if (time_ns - epoch_ns_ >= kTimeSpanNs) rebase(time_ns);
    uint64_t node = ((time_ns - epoch_ns_) << kIdBits) | (id & kIdMask);
    size_t i = ++size_;
    // Sift up with a hole: a new reschedule time is usually the largest, so this loop rarely runs
    // (paper §5.1.3: insertion cost is flat in heap size).
    while (i > 1) {
      size_t parent = i >> 1;
      touch(parent);
      if (nodes_[parent] <= node) break;
      nodes_[i] = nodes_[parent];
      touch(i);
      i = parent;
    }
    nodes_[i] = node;
    touch(i);
    if (size_ > high_water_) high_water_ = size_;
    return true;
  }

  // Time and id of the root; only valid when !empty().
  uint64_t top_time_ns() const { return epoch_ns_ + (nodes_[1] >> kIdBits); }
  uint32_t top_id() const { return static_cast<uint32_t>(nodes_[1] & kIdMask); }

  // Removes the root (Delete(heap_j) in Algorithm 1). Requires !empty().
  // Floyd's bottom-up variant: the hole left by the root walks down along the smaller child to a
  // leaf (one branch-free comparison per level), then the last node sifts up from there. The last
  // node is usually among the largest, so the sift-up rarely moves; this saves the second
  // comparison per level of the textbook sift-down (heap_bench: measured, docs/shaper.md).
  void pop() {
    touch(1);
    const size_t n = --size_;
    const uint64_t last = nodes_[n + 1];
    touch(n + 1);
    if (n == 0) return;
    nodes_[n + 1] = ~uint64_t{0};  // sentinel: a missing right child never wins
    size_t i = 1;
    for (size_t c = 2; c <= n; c = i << 1) {
      // The grandchildren (4i..4i+3) and great-grandchildren (8i..8i+7) of i fill one or two cache
      // lines; fetching them before the comparison decides which child wins overlaps the next
      // levels' misses (without it the branch-free descent serialises one miss per level on big
      // heaps: 1.9 us vs 0.54 us per delete at 1 Mi nodes, docs/shaper.md).
      if (4 * i < n) __builtin_prefetch(&nodes_[4 * i]);
      if (8 * i < n) __builtin_prefetch(&nodes_[8 * i]);
      touch(c);
      touch(c + 1);
      c += nodes_[c + 1] < nodes_[c] ? 1 : 0;
      nodes_[i] = nodes_[c];
      touch(i);
      i = c;
    }
    while (i > 1) {
      size_t parent = i >> 1;
      touch(parent);
      if (nodes_[parent] <= last) break;
      nodes_[i] = nodes_[parent];
      touch(i);
      i = parent;
    }
    nodes_[i] = last;
    touch(i);
  }

  // Pops every node with time <= now_ns (lines 16-19 of Algorithm 1), calling f(id, time_ns) for
  // each in time order. Returns how many were popped.
  template <typename F>
  size_t pop_expired(uint64_t now_ns, F&& f) {
    size_t n = 0;
    while (size_ != 0) {
      // The root peek is not counted as a touch: one word read on every poll, always cached
      // (pop() counts the root read when a node is actually deleted).
      uint64_t t = top_time_ns();
      if (t > now_ns) break;
      uint32_t id = top_id();
      pop();
      f(id, t);
      ++n;
    }
    return n;
  }

  // Node touches (reads + writes of array elements) on tree level d (root = level 0).
  const std::array<uint64_t, kLevels>& touches_by_level() const { return touches_; }
  uint64_t touches_total() const {
    uint64_t s = 0;
    for (uint64_t t : touches_) s += t;
    return s;
  }
  // Touches of nodes that a locked cache of locked_bytes would not hold (levels >=
  // log2(locked_bytes / 8)): the paper's "DRAM accesses due to heap processing" (Table II).
  uint64_t touches_beyond(size_t locked_bytes) const {
    size_t nodes = locked_bytes / sizeof(uint64_t);
    int first_level = nodes == 0 ? 0 : std::bit_width(nodes) - 1;  // 1024 nodes -> levels 0..9
    uint64_t s = 0;
    for (int d = first_level; d < kLevels; ++d) s += touches_[static_cast<size_t>(d)];
    return s;
  }
  void reset_counters() {
    touches_.fill(0);
    high_water_ = size_;
  }

  // Checks the heap property over the whole array (tests).
  bool valid() const {
    for (size_t i = 2; i <= size_; ++i)
      if (nodes_[i >> 1] > nodes_[i]) return false;
    return true;
  }

 private:
  void touch(size_t i) {
    if constexpr (kCountTouches) ++touches_[static_cast<size_t>(std::bit_width(i | 1) - 1)];  // i >= 1 always
  }
  // Moves the epoch forward so that time_ns fits. Normally no live node is earlier than the new
  // epoch (it is at most the root's time), so subtracting keeps the order: O(size), no compare.
  // Only if the root is overdue by more than the span (no poll for ~9 minutes) are overdue nodes
  // clamped to the epoch and the array re-sorted (a sorted array is a valid 1-based min-heap).
  void rebase(uint64_t time_ns) {
    uint64_t new_epoch = time_ns - kMaxDelayNs;
    bool clamp = false;
    if (size_ != 0 && top_time_ns() < new_epoch) {
      if (time_ns - top_time_ns() < kTimeSpanNs) {
        new_epoch = top_time_ns();
      } else {
        clamp = true;
      }
    }
    if (new_epoch <= epoch_ns_) return;
    const uint64_t shift = new_epoch - epoch_ns_;
    for (size_t i = 1; i <= size_; ++i) {
      uint64_t t = nodes_[i] >> kIdBits;
      t = t > shift ? t - shift : 0;
      nodes_[i] = (t << kIdBits) | (nodes_[i] & kIdMask);
    }
    if (clamp) std::sort(nodes_.begin() + 1, nodes_.begin() + 1 + static_cast<std::ptrdiff_t>(size_));
    epoch_ns_ = new_epoch;
  }

  std::vector<uint64_t> nodes_;  // nodes_[0] unused; 1..size_ hold the heap
  size_t size_ = 0;
  size_t high_water_ = 0;
  uint64_t epoch_ns_ = 0;
  std::array<uint64_t, kLevels> touches_{};
};

using EventHeap = EventHeapT<false>;
using CountingEventHeap = EventHeapT<true>;

}  // namespace hpr::shaper
