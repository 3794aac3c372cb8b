#pragma once
// A lane: one device slot (an OpenCL device or a native CPU worker) with its own input queue,
// batch builder and executor, running on its own thread (or polled by the dispatcher in
// run-to-completion mode) (architecture.md, "The data path";
// hetero-opencl-adaptive-scheduler.txt §3.3.1: per-device queues, batching, flow affinity).
//
// The batch builder closes a batch at `batch_size` packets or when the oldest packet has waited
// `batch_timeout_ns`, so latency stays bounded at low rates; while every slot is busy, a batch past its timeout
// keeps filling until one frees (it could not run sooner). The executor keeps up to `in_flight`
// batches submitted; batches complete in submission order, so a flow's packets leave the lane in
// the order they entered it. When the executor fails, the lane stops, hands back every packet it
// still holds (failed batch first, then the queue, in order) and reports itself failed.
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "kernels/app.hpp"
#include "kernels/batch_bytes.hpp"
#include "kernels/runner.hpp"
#include "pipeline/app_swap.hpp"
#include "pipeline/counters.hpp"
#include "runtime/ring.hpp"

namespace hpr {

// Runs batches of one app. Implementations: native (host thread) and OpenCL.
class Executor {
 public:
  // A finished batch: its packets, its view, the app (version) it ran, and k: which app of a chain that was (the
  // executor calls it once per app of a chain, with that app's part of the batch; one app: k = 0).
  using BatchFn =
      std::function<void(std::span<const Packet>, const kernels::BatchView&, const kernels::App&, uint32_t k)>;
  virtual ~Executor() = default;
  virtual std::string describe() const = 0;
  virtual uint32_t slots() const = 0;
  // Start a batch of the packets `refs` point to (8-byte references: packet_store.hpp); the executor reads them
  // now and writes them at the reap. Precondition: fewer than slots() batches outstanding.
  virtual Status submit(Packet* const* refs, uint32_t n) = 0;
  // The oldest outstanding batch, if it is complete (wait: block until it is). Its packets get their verdicts and
  // modified bytes written back (through the references submit() was given), the references are appended to `done`,
  // and the batch view is passed to `on_batch` for logs and counters before the slot is reused. Returns false when
  // nothing completed. An error means the device failed: the batch stays outstanding.
  virtual Result<bool> reap(bool wait, std::vector<Packet*>& done, const BatchFn& on_batch) = 0;
  // Live reloads (app_swap.hpp): batches submitted from now on run `v`'s app (an OpenCL lane: with v.programs[lane],
  // the tables on its device); each batch keeps the version it was submitted with until it is reaped. Errors: the
  // kernel cannot be made from the new program, or the new app's batch layout differs (the executor keeps the old).
  virtual Status adopt(std::shared_ptr<const AppVersion> v, size_t lane) = 0;
  virtual uint32_t outstanding() const = 0;
  // The lane's accounting, for an executor that finishes batches on other threads and calls it there (a device
  // shared by the workers, shared_device.hpp) instead of reap's `on_batch`. Others ignore it.
  virtual void set_batch_fn(BatchFn /*fn*/) {}
  // After a failure: every outstanding batch's references, oldest first, their packets untouched by the app.
  virtual void take_outstanding(std::vector<Packet*>& out) = 0;
};

struct ExecutorConfig {
  uint32_t max_batch = 1024;
  uint32_t in_flight = 2;  // OpenCL: batches outstanding at once (>= 2 overlaps copy and compute)
  // HPR_FAULT_CL's failing calls (alloc, map, enqueue) apply to this executor. Off for `hpr run`'s start-up check
  // (device_check.hpp), which meets only the lasting fault, corrupt, so the others still hit the run's lanes.
  bool call_faults = true;
};

std::unique_ptr<Executor> make_native_executor(const kernels::App& app, const ExecutorConfig& cfg);
// Errors: program build (with the log), buffer allocation, table upload.
Result<std::unique_ptr<Executor>> make_cl_executor(const kernels::App& app, std::shared_ptr<kernels::AppProgram> prog,
                                                   bool host_unified, const ExecutorConfig& cfg);

struct LaneConfig {
  std::string name;                 // "native0", "cl:pthread-haswell"
  uint32_t batch_size = 256;
  uint32_t max_batch = 0;           // largest batch the scheduler may ask for (buffers); 0: batch_size
  uint64_t batch_timeout_ns = 100'000;
  uint32_t queue_size = 4096;
  double weight = 1.0;              // share of new flows
  uint64_t fail_after_batches = 0;  // fault injection: fail at this submit (0: never)
  uint64_t slow_batch_ns = 0;       // fault injection: a slow lane, sleeping this long before each submit
  uint64_t slow_from_ns = 0;        // ... from this long after the lane's first poll
  uint64_t slow_until_ns = 0;       // ... until this long after it (0: to the end)
  // Close a batch as soon as the queue is empty instead of waiting for batch_size or the timeout:
  // a native lane runs what has arrived (at light load a batch would otherwise wait for its timeout;
  // under load the queue is never empty and batches fill). Devices keep timeout batching: a launch
  // costs them far more than a packet.
  bool run_what_arrived = false;
  // A stage of a chain's lanes (pipeline/stages.cpp): the lane runs the chain's apps from first_app on; its books
  // count them by their index in the chain.
  bool chain_part = false;
  uint32_t first_app = 0;
  // Fault injection on this lane alone (a failing or slow lane): it keeps the lane path and an executor of its own.
  bool injects_faults() const { return fail_after_batches != 0 || slow_batch_ns != 0; }
};

// Fault injection: whether a slow lane is slow `t` ns after its first poll ([faults] slow_from_s, slow_until_s;
// until 0: to the end).
inline bool in_slow_window(uint64_t t, uint64_t from, uint64_t until) { return t >= from && (until == 0 || t < until); }

enum class LaneState : uint8_t { kRunning, kFailed, kDrained, kRemoved };

struct LaneStats {
  std::atomic<uint64_t> batches{0}, packets{0};
  std::atomic<uint64_t> events[kernels::kMaxAppSlots] = {};  // app k's (App::chain_app; one app: events[0])
  // A chain's or services' app k: packets it was given, and those it passed on (not dropped by it or before it).
  std::atomic<uint64_t> app_in[kernels::kMaxAppSlots] = {}, app_out[kernels::kMaxAppSlots] = {};
  std::atomic<uint64_t> busy_ns{0};        // time with at least one batch outstanding
  std::atomic<uint64_t> batch_pkts_sum{0}; // for the mean batch size
  std::atomic<uint64_t> queue_full{0};     // packets dropped because this lane's queue was full (dispatcher)
  LatencyHistogram batch_latency;          // submit → complete, ns
};

class Lane {
 public:
  Lane(LaneConfig cfg, const kernels::App& app, std::unique_ptr<Executor> exec, uint32_t completion_ring);
  ~Lane();
  const LaneConfig& config() const { return cfg_; }
  const std::string& name() const { return cfg_.name; }
  std::string executor() const { return exec_->describe(); }  // "native", "opencl (mapped)", "opencl (copied)"

  // Dispatcher side (one producer). Both rings carry references to the pipeline's PacketStore.
  SpscRing<Packet*>& input() { return input_; }
  // Egress side (one consumer).
  SpscRing<Packet*>& completions() { return completions_; }
  // The most references this lane can hold at once: queue, batch, executor slots, completion ring.
  size_t holds() const { return input_.capacity() + size_t{max_batch_} * (exec_->slots() + 1) + completions_.capacity(); }

  // A thread of its own calls poll() until finished(); in run-to-completion mode the dispatcher
  // calls poll() instead and start() is not called.
  void start();
  // One round: fill the batch from the queue, close and submit it (at batch_size, at the timeout,
  // or when stopping), reap what completed. Returns whether anything happened.
  bool poll();
  // Not running any more (failed, drained, removed), or asked to stop with nothing left.
  bool finished() const;
  // Called when the completion ring is full (the lane waits for egress): run-to-completion mode
  // drains egress here; otherwise the lane yields.
  void on_completions_full(std::function<void()> f) { on_completions_full_ = std::move(f); }
  // Run to completion: the dispatcher polls this lane between its bursts, so poll() must never wait for the device.
  // With every executor slot busy the batch stays open (and keeps filling) instead of waiting for the oldest.
  void set_polled() { polled_ = true; }
  // Ask the lane to finish: it keeps running until its queue and executor are empty.
  void request_stop() { stop_.store(true, std::memory_order_release); }
  void join();

  LaneState state() const { return state_.load(std::memory_order_acquire); }
  void mark_removed() { state_.store(LaneState::kRemoved, std::memory_order_release); }
  // After kDrained: the packets to re-dispatch, oldest first (the dispatcher takes them).
  std::vector<Packet*>& orphans() { return orphans_; }
  const std::string& failure() const { return failure_; }

  LaneStats& stats() { return stats_; }
  void set_batch_size(uint32_t n) {
    batch_target_.store(std::clamp<uint32_t>(n, 1, max_batch_), std::memory_order_relaxed);
  }
  uint32_t batch_size() const { return batch_target_.load(std::memory_order_relaxed); }
  std::string log_drain();  // log lines produced since the last call
  // Counts a finished batch's events and appends its log lines (the executor's reap, or the
  // pipeline's in-place worker path, which runs this lane's app itself); `app`: the version the batch ran, or its
  // app k of a chain (Executor::BatchFn).
  void account(std::span<const Packet> pkts, const kernels::BatchView& v, const kernels::App& app, uint32_t k);
  // Live reloads: before each batch it submits, the lane takes `swap`'s current version if it has changed (as lane
  // `index` of its pipeline). Call before start(). Without it the lane runs the app it was made with.
  // Errors: the executor's (Executor::adopt) for the current version, which it holds from here on.
  Status follow(const AppSwap* swap, size_t index);
  // Takes the swap's version now if it has changed (poll() does before each batch and when idle). Only on the thread
  // that polls the lane: the dispatcher's in run-to-completion mode, whose in-place worker path polls no lane.
  void follow_swap();
  // The version this lane submits its next batch with (any thread; for the reload's report).
  uint64_t generation() const { return seen_generation_.load(std::memory_order_relaxed); }
  void set_logging(bool on, std::function<std::string(const Packet&)> prefix) {
    log_on_ = on;
    log_prefix_ = std::move(prefix);
  }

 private:
  void run();
  bool reap(bool wait);
  void fail(const Status& st);

  LaneConfig cfg_;
  std::unique_ptr<Executor> exec_;
  const AppSwap* swap_ = nullptr;
  size_t swap_index_ = 0;
  uint64_t generation_ = 0;
  std::atomic<uint64_t> seen_generation_{0};
  SpscRing<Packet*> input_;
  SpscRing<Packet*> completions_;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::atomic<LaneState> state_{LaneState::kRunning};
  std::vector<Packet*> batch_;
  size_t batch_bytes_ = 0;     // upper bound of batch_'s gathered slice bytes
  size_t slice_capacity_ = 0;  // slice bytes of the executor's batch buffer (kernels::slice_capacity)
  uint32_t max_slice_ = 0;     // App::max_slice_bytes()
  size_t largest_slice_ = 16;  // the same, aligned
  void clear_batch() {
    batch_.clear();
    batch_bytes_ = 0;
  }
  std::vector<Packet*> done_;
  Executor::BatchFn account_fn_;  // account(), for the executor's reap (and set_batch_fn)
  std::vector<Packet*> orphans_;
  std::string failure_;
  LaneStats stats_;
  uint64_t submitted_ = 0;
  uint64_t slow_origin_ns_ = 0;  // the first poll: fault injection's slow window counts from it
  bool slow_now(uint64_t now) const;
  uint64_t first_ns_ = 0;     // when the oldest packet of the batch being built arrived
  uint64_t busy_since_ = 0;   // when the executor last went from idle to busy (or the last checkpoint)
  static constexpr uint64_t kBusyCheckpointNs = 1'000'000;  // busy time is added to stats at least this often
  std::function<void()> on_completions_full_;
  bool polled_ = false;
  uint32_t max_batch_ = 1;
  std::atomic<uint32_t> batch_target_{1};
  bool log_on_ = false;
  bool app_books_ = false;  // a chain or services: each app's packets in and passed on (LaneStats::app_in, app_out)
  std::function<std::string(const Packet&)> log_prefix_;
  std::mutex log_mu_;
  std::string log_buf_;
};

}  // namespace hpr
