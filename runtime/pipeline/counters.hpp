#pragma once
// Counters of the data path. Each is written by one thread and read by the control thread
// (relaxed atomics: no locks, no shared writes on the hot path).
#include <array>
#include <atomic>
#include <cstdint>

#include "runtime/packet.hpp"

namespace hpr {

struct DropCounters {
  std::array<std::atomic<uint64_t>, static_cast<size_t>(DropReason::kCount)> by_reason{};
  void add(DropReason r, uint64_t n = 1) { by_reason[static_cast<size_t>(r)].fetch_add(n, std::memory_order_relaxed); }
  uint64_t get(DropReason r) const { return by_reason[static_cast<size_t>(r)].load(std::memory_order_relaxed); }
  uint64_t total() const {
    uint64_t t = 0;
    for (const auto& c : by_reason) t += c.load(std::memory_order_relaxed);
    return t;
  }
};

// Fixed-bucket latency histogram (log2 buckets of ns), written by one thread.
struct LatencyHistogram {
  static constexpr int kBuckets = 40;
  std::array<std::atomic<uint64_t>, kBuckets> b{};
  void add(uint64_t ns) {
    int i = ns == 0 ? 0 : 64 - __builtin_clzll(ns);
    if (i >= kBuckets) i = kBuckets - 1;
    b[i].fetch_add(1, std::memory_order_relaxed);
  }
  // Upper bound of the bucket holding the p-th percentile (p in 0..100).
  uint64_t percentile_ns(double p) const {
    uint64_t total = 0;
    for (const auto& x : b) total += x.load(std::memory_order_relaxed);
    if (total == 0) return 0;
    auto want = static_cast<uint64_t>(p / 100.0 * static_cast<double>(total));
    uint64_t acc = 0;
    for (int i = 0; i < kBuckets; ++i) {
      acc += b[i].load(std::memory_order_relaxed);
      if (acc > want) return i == 0 ? 0 : (1ull << i);
    }
    return 1ull << (kBuckets - 1);
  }
};

}  // namespace hpr
