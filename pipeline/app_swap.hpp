#pragma once
// Live reloads (issue 17): the app a pipeline runs, swapped at batch boundaries without stopping the data path.
//
// An AppVersion is one generation of the app: the host-side app (its tables: routes, rules, keys) and, for each
// OpenCL lane, the app's program with those tables on the lane's device. The dispatcher adopts a new version at the
// top of a burst (Pipeline::replace_app) and publishes it here; every lane checks the generation before it submits a
// batch and takes the new version then. A batch keeps the version it was submitted with until it is reaped, so the
// packets in it finish with the tables they started with; the old version is freed when the last batch and lane let
// go of it (reference counts: RCU's grace period, ended by each lane's next batch).
//
// Order: a packet is processed by the version current when its batch is submitted, which is never older than the one
// current when the dispatcher classified it (the lane reads the generation after it took the packet from its queue).
// So a flow's state set up under a version (AES: its key, from flow_started) is always found by the lane.
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "kernels/app.hpp"
#include "kernels/runner.hpp"

namespace hpr {

struct AppVersion {
  uint64_t generation = 0;
  std::shared_ptr<const kernels::App> app;
  std::vector<std::shared_ptr<kernels::AppProgram>> programs;  // per lane of the pipeline; null for native lanes
  // Per lane: the kernels with these tables bound (AppProgram::make_kernels: a chain's, one per app), made by the
  // reload's thread so that the lane (or the dispatcher polling it) does not make them (clCreateKernel took 10-15 ms
  // on PoCL); empty: the lane makes its own.
  std::vector<std::vector<cl::Kernel>> kernels;
};

// The current version, for every lane of one pipeline. publish() from the dispatcher; the rest from any thread.
class AppSwap {
 public:
  explicit AppSwap(std::shared_ptr<const AppVersion> first)
      : cur_(std::move(first)), gen_(cur_->generation) {}
  uint64_t generation() const { return gen_.load(std::memory_order_acquire); }
  std::shared_ptr<const AppVersion> current() const {
    std::lock_guard<std::mutex> g(mu_);
    return cur_;
  }
  void publish(std::shared_ptr<const AppVersion> v) {
    std::lock_guard<std::mutex> g(mu_);
    cur_ = std::move(v);
    gen_.store(cur_->generation, std::memory_order_release);
  }

 private:
  mutable std::mutex mu_;
  std::shared_ptr<const AppVersion> cur_;
  std::atomic<uint64_t> gen_;
};

}  // namespace hpr
