#pragma once
// Bounded lock-free queues for the data path.
//   SpscRing<T>: one producer thread, one consumer thread (lane queues, completion queues).
//   MpmcRing<T>: any number of each (buffer free lists); Dmitry Vyukov's bounded MPMC queue.
// Capacity is rounded up to a power of two and fixed at creation: no allocation afterwards.
#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>

namespace hpr {

inline constexpr size_t kCacheLine = 64;

template <typename T>
class SpscRing {
 public:
  explicit SpscRing(size_t capacity)
      : cap_(std::bit_ceil(capacity < 2 ? size_t{2} : capacity)), mask_(cap_ - 1), buf_(new T[cap_]) {}

  size_t capacity() const { return cap_; }
  size_t size() const { return tail_.load(std::memory_order_acquire) - head_.load(std::memory_order_acquire); }
  bool empty() const { return size() == 0; }

  // Producer side. Returns how many of n were pushed (all or a prefix).
  size_t push_burst(const T* items, size_t n) {
    size_t t = tail_.load(std::memory_order_relaxed);
    size_t free = cap_ - (t - head_cache_);
    if (free < n) {
      head_cache_ = head_.load(std::memory_order_acquire);
      free = cap_ - (t - head_cache_);
    }
    if (n > free) n = free;
    for (size_t i = 0; i < n; ++i) buf_[(t + i) & mask_] = items[i];
    tail_.store(t + n, std::memory_order_release);
    return n;
  }
  bool push(const T& item) { return push_burst(&item, 1) == 1; }

  // Consumer side.
  size_t pop_burst(T* items, size_t n) {
    size_t h = head_.load(std::memory_order_relaxed);
    size_t avail = tail_cache_ - h;
    if (avail < n) {
      tail_cache_ = tail_.load(std::memory_order_acquire);
      avail = tail_cache_ - h;
    }
    if (n > avail) n = avail;
    for (size_t i = 0; i < n; ++i) items[i] = buf_[(h + i) & mask_];
    head_.store(h + n, std::memory_order_release);
    return n;
  }
  bool pop(T& item) { return pop_burst(&item, 1) == 1; }
  // Consumer side: the oldest item without removing it (nullptr when empty).
  const T* front() {
    size_t h = head_.load(std::memory_order_relaxed);
    if (tail_cache_ == h) tail_cache_ = tail_.load(std::memory_order_acquire);
    return tail_cache_ == h ? nullptr : &buf_[h & mask_];
  }

 private:
  const size_t cap_;
  const size_t mask_;
  std::unique_ptr<T[]> buf_;
  alignas(kCacheLine) std::atomic<size_t> head_{0};
  size_t tail_cache_ = 0;  // consumer's view of tail
  alignas(kCacheLine) std::atomic<size_t> tail_{0};
  size_t head_cache_ = 0;  // producer's view of head
};

template <typename T>
class MpmcRing {
 public:
  explicit MpmcRing(size_t capacity)
      : cap_(std::bit_ceil(capacity < 2 ? size_t{2} : capacity)), mask_(cap_ - 1), cells_(new Cell[cap_]) {
    for (size_t i = 0; i < cap_; ++i) cells_[i].seq.store(i, std::memory_order_relaxed);
  }
  size_t capacity() const { return cap_; }

  bool push(const T& v) {
    size_t pos = enq_.load(std::memory_order_relaxed);
    for (;;) {
      Cell& c = cells_[pos & mask_];
      size_t seq = c.seq.load(std::memory_order_acquire);
      auto dif = static_cast<intptr_t>(seq) - static_cast<intptr_t>(pos);
      if (dif == 0) {
        if (enq_.compare_exchange_weak(pos, pos + 1, std::memory_order_relaxed)) {
          c.v = v;
          c.seq.store(pos + 1, std::memory_order_release);
          return true;
        }
      } else if (dif < 0) {
        return false;  // full
      } else {
        pos = enq_.load(std::memory_order_relaxed);
      }
    }
  }
  bool pop(T& v) {
    size_t pos = deq_.load(std::memory_order_relaxed);
    for (;;) {
      Cell& c = cells_[pos & mask_];
      size_t seq = c.seq.load(std::memory_order_acquire);
      auto dif = static_cast<intptr_t>(seq) - static_cast<intptr_t>(pos + 1);
      if (dif == 0) {
        if (deq_.compare_exchange_weak(pos, pos + 1, std::memory_order_relaxed)) {
          v = c.v;
          c.seq.store(pos + mask_ + 1, std::memory_order_release);
          return true;
        }
      } else if (dif < 0) {
        return false;  // empty
      } else {
        pos = deq_.load(std::memory_order_relaxed);
      }
    }
  }
  // Approximate (exact when quiescent).
  size_t size() const { return enq_.load(std::memory_order_acquire) - deq_.load(std::memory_order_acquire); }

 private:
  struct Cell {
    std::atomic<size_t> seq;
    T v;
  };
  const size_t cap_;
  const size_t mask_;
  std::unique_ptr<Cell[]> cells_;
  alignas(kCacheLine) std::atomic<size_t> enq_{0};
  alignas(kCacheLine) std::atomic<size_t> deq_{0};
};

}  // namespace hpr
