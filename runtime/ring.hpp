#pragma once
// Bounded lock-free queue for the data path.
//   SpscRing<T>: one producer thread, one consumer thread (lane queues, completion queues).
// (Buffer free lists are stacks: runtime/pool.hpp. The MPMC ring that was here lost a slot whenever a popper was
// preempted between its claim and its release and a push came round to that cell: the push saw "full".)
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
  // Producer side: whether a push would fail now (the consumer may make room at any time after).
  bool full() {
    const size_t t = tail_.load(std::memory_order_relaxed);
    if (t - head_cache_ < cap_) return false;
    head_cache_ = head_.load(std::memory_order_acquire);
    return t - head_cache_ >= cap_;
  }

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

}  // namespace hpr
