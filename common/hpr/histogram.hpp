#pragma once
// Log-linear histogram layout (HdrHistogram's): values below 2^kSubBits have a bucket each; above,
// every octave [2^e, 2^(e+1)) is cut into 2^kSubBits equal buckets, so a bucket is at most 1/16 of
// its value wide and a percentile read as the bucket's midpoint is within ±3.2 % of the true value
// (16 buckets per octave; the old log2 histogram reported the octave's upper bound, up to 2x off).
// Range: 0 .. 2^kMaxExp ns (about 73 minutes for ns); larger values land in the last bucket.
#include <array>
#include <atomic>
#include <cstdint>
#include <span>

namespace hpr {

struct LogLinear {
  static constexpr int kSubBits = 4;
  static constexpr uint64_t kSub = 1ull << kSubBits;  // buckets per octave
  static constexpr int kMaxExp = 42;
  static constexpr size_t kBuckets = kSub + (kMaxExp - kSubBits + 1) * kSub;

  static constexpr size_t index_of(uint64_t v) {
    if (v < kSub) return static_cast<size_t>(v);
    int e = 63 - __builtin_clzll(v);
    if (e > kMaxExp) return kBuckets - 1;
    uint64_t sub = (v >> (e - kSubBits)) - kSub;
    return static_cast<size_t>(kSub + static_cast<uint64_t>(e - kSubBits) * kSub + sub);
  }
  static constexpr uint64_t lower(size_t i) {
    if (i < kSub) return i;
    uint64_t e = (i - kSub) / kSub + kSubBits, sub = (i - kSub) % kSub;
    return (kSub + sub) << (e - kSubBits);
  }
  static constexpr uint64_t width(size_t i) { return i < kSub ? 1 : 1ull << ((i - kSub) / kSub); }
  // The value reported for a bucket: exact below kSub, else the midpoint.
  static constexpr uint64_t value(size_t i) { return i < kSub ? i : lower(i) + width(i) / 2; }

  // p-th percentile (0..100) of bucket counts in this layout (e.g. the difference of two snapshots).
  static uint64_t percentile(std::span<const uint64_t> counts, double p) {
    uint64_t total = 0;
    for (auto c : counts) total += c;
    if (total == 0) return 0;
    auto want = static_cast<uint64_t>(p / 100.0 * static_cast<double>(total));
    uint64_t acc = 0;
    for (size_t i = 0; i < counts.size(); ++i) {
      acc += counts[i];
      if (acc > want) return value(i);
    }
    return value(counts.size() - 1);
  }
};

// One writer (relaxed read-modify-write is not needed: a single thread adds), any number of readers.
struct LatencyHistogram {
  std::array<std::atomic<uint64_t>, LogLinear::kBuckets> b{};
  void add(uint64_t ns, uint64_t count = 1) {
    auto& c = b[LogLinear::index_of(ns)];
    c.store(c.load(std::memory_order_relaxed) + count, std::memory_order_relaxed);
  }
  std::array<uint64_t, LogLinear::kBuckets> counts() const {
    std::array<uint64_t, LogLinear::kBuckets> out{};
    for (size_t i = 0; i < out.size(); ++i) out[i] = b[i].load(std::memory_order_relaxed);
    return out;
  }
  uint64_t percentile_ns(double p) const {
    auto c = counts();
    return LogLinear::percentile(c, p);
  }
};

}  // namespace hpr
