#pragma once
// Time is passed in (architecture.md, convention 4): algorithms take `now_ns`; this header gives the
// real monotonic clock and a manual clock for tests and simulators.
#include <chrono>
#include <cstdint>

namespace hpr {

inline uint64_t monotonic_ns() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
          .count());
}

// A clock the caller advances; for deterministic tests and discrete-event simulation.
class ManualClock {
 public:
  explicit ManualClock(uint64_t start_ns = 0) : now_ns_(start_ns) {}
  uint64_t now_ns() const { return now_ns_; }
  void advance_ns(uint64_t d) { now_ns_ += d; }
  void set_ns(uint64_t t) { now_ns_ = t; }

 private:
  uint64_t now_ns_;
};

struct SteadyClock {
  uint64_t now_ns() const { return monotonic_ns(); }
};

}  // namespace hpr
