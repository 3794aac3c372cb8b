#pragma once
// Counters of the data path. Each is written by one thread and read by others (status line,
// Prometheus, summary): the writer adds with a relaxed load and store (no locked read-modify-write
// on the hot path), readers load relaxed and sum (VPP's per-thread counters).
#include <array>
#include <atomic>
#include <cstdint>

#include "hpr/histogram.hpp"
#include "runtime/drop_reason.hpp"

namespace hpr {

// Adds to a single-writer counter.
inline void bump(std::atomic<uint64_t>& c, uint64_t n = 1) {
  c.store(c.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
}

struct DropCounters {
  std::array<std::atomic<uint64_t>, kDropReasonCount> by_reason{};
  void add(DropReason r, uint64_t n = 1) { bump(by_reason[static_cast<size_t>(r)], n); }
  uint64_t get(DropReason r) const { return by_reason[static_cast<size_t>(r)].load(std::memory_order_relaxed); }
  uint64_t total() const {
    uint64_t t = 0;
    for (const auto& c : by_reason) t += c.load(std::memory_order_relaxed);
    return t;
  }
};

// Per [[service]] (Packet::svc): the packets its chain passed to the output, their bytes and rx-to-tx latency, the
// packets its chain dropped (the apps' verdicts), and those lost on the way to a lane (a full lane queue, no lane).
// out, dropped and latency are written where packets leave (egress, or the worker path: one at a time, as the run's
// latency histogram), lost by the dispatcher; read by the summary.
struct ServiceBooks {
  std::atomic<uint64_t> out{0}, out_bytes{0}, dropped{0}, lost{0};
  LatencyHistogram latency;
};
inline constexpr size_t kServiceBooks = 8;  // kernels::kMaxServices (pipeline.cpp checks)

}  // namespace hpr
