#pragma once
// One OpenCL device's executor shared by the workers' lanes on it (issue 12; docs/pipeline.md, "One device lane
// shared by the workers").
//
// Each worker keeps its own lane on the device (its queue, batch builder, counters, failure and re-routing), so
// dispatch, egress, the move rule, the summary and the learner see what they saw with a lane per worker. What the
// workers share is the device's executor: a worker's closed batch (8-byte references into that worker's packet
// store) waits for the device, and whichever worker holds the device's lock launches what waits, several workers'
// batches as one, when a slot is free, and reaps what completed, marking each worker's part done. The part's owner
// takes it back in its own reap and sends it. While the device is busy the workers' batches wait together, so one
// launch carries what all W workers sent meanwhile, where a lane per worker launched W batches of 1/W of the traffic.
//
// Order: parts launch in the order they were submitted and device batches complete in order, so each worker's
// batches (and each flow, which lives on one worker) complete in the order they entered. A device error fails every
// worker's lane: each takes back its own parts that were not done, untouched, and re-routes them. The part's
// accounting (events, result log) runs on the thread that reaped, through the owner lane's account function
// (Executor::set_batch_fn), under the device's lock.
//
// For apps and chains without per-flow state (IPv4, DPI, MD5, and chains of them: each app of a chain runs on every
// packet of the batch, so each worker's part is a run of rows in every app's descriptors and results). AES keys are
// indexed by each worker's flow ids, and [[service]] runs each app on its service's packets only (rows that are not
// a run per worker): those keep a device lane per worker.
#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <vector>

#include "pipeline/lane.hpp"

namespace hpr {

class SharedDevice : public std::enable_shared_from_this<SharedDevice> {
 public:
  // Make with std::make_shared (its clients hold it).
  explicit SharedDevice(uint32_t workers) : workers_(workers) {}
  ~SharedDevice();
  // Whether workers may share a device lane of `app` (above).
  static bool can_share(const kernels::App& app);
  // A worker lane's executor on this device. The first call makes the device's executor; the others share it
  // (every worker asks with the same program and settings). Errors: make_cl_executor's.
  Result<std::unique_ptr<Executor>> client(const kernels::App& app, std::shared_ptr<kernels::AppProgram> prog,
                                           bool host_unified, const ExecutorConfig& cfg);

 private:
  friend class SharedClient;
  struct Part {  // one worker's batch
    uint32_t client = 0;
    std::vector<Packet*> refs;
    size_t bytes = 0;  // upper bound of its gathered slice bytes
    // Set (release) under the lock by the worker that reaped it; its owner may read it (acquire) without the lock.
    std::atomic<bool> done{false};
  };
  // Under mu_: reaps the device's completed batches (wait: at least one), then launches what waits while slots are
  // free. A device error fails the device for every client.
  Status pump(bool wait);
  Status launch();
  void fail(const Status& st);
  void account(std::span<const Packet> pk, const kernels::BatchView& v, const kernels::App& app, uint32_t k);

  static constexpr uint32_t kMaxMerged = 65536;  // packets in one launch (Settings: lanes.batch's largest)
  const uint32_t workers_;
  std::mutex mu_;
  std::unique_ptr<Executor> real_;
  std::string describe_;
  uint32_t max_batch_ = 0;
  uint32_t max_slice_ = 0;
  size_t capacity_ = 0;  // slice bytes of the device's batch buffer
  uint64_t generation_ = 0;
  Status failed_ = Status::ok();
  std::vector<class SharedClient*> clients_;
  std::deque<Part*> pending_;                // submitted, not launched, in submission order
  std::deque<std::vector<Part*>> launched_;  // the device's batches in flight, oldest first: their parts in order
  std::vector<std::vector<Part*>> spare_launches_;  // reaped batches' part lists, for the next launches
  std::vector<Packet*> refs_, reaped_;
};

}  // namespace hpr
