#pragma once
// Helpers shared by the pipeline's translation units (pipeline.cpp, dispatch.cpp, egress.cpp).
#include <pthread.h>
#include <sched.h>
#include <spdlog/spdlog.h>
#include <sys/prctl.h>

#include <cstring>

#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

namespace hpr::detail {

inline constexpr uint8_t kNoLane = 0xff;

// A sleep of a few microseconds lasts the thread's timer slack longer (50 us by default on Linux):
// pollers that back off set 1 us, so an idle lane or egress thread wakes within ~10 us, not ~60 us.
inline void fine_timer_slack() { ::prctl(PR_SET_TIMERSLACK, 1000UL, 0UL, 0UL, 0UL); }

// Pins the calling thread to one core (the run's core budget); a warning when the kernel refuses.
inline void pin_to_cpu(int cpu, const char* what) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  if (int rc = pthread_setaffinity_np(pthread_self(), sizeof set, &set); rc != 0)
    spdlog::warn("{} thread: cannot pin to core {}: {}", what, cpu, std::strerror(rc));
}

// Spin, then yield, then sleep a little: a poller that found no work.
inline void backoff(int& rounds) {
  if (++rounds > 64) std::this_thread::sleep_for(std::chrono::microseconds(rounds > 1024 ? 50 : 5));
  else std::this_thread::yield();
}

// The policies want weights > 0: a lane of weight 0 (no new flows; the dispatcher disables it for the
// policy) gets a token one.
inline float policy_weight(float w) { return w > 0 ? w : 1e-6f; }
inline std::vector<float> policy_weights(const std::vector<float>& w) {
  std::vector<float> out;
  for (float x : w) out.push_back(policy_weight(x));
  return out;
}

}  // namespace hpr::detail
