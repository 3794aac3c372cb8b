#include "pipeline/lane.hpp"

#include <algorithm>

#include "pipeline/pipeline_internal.hpp"

#include <spdlog/spdlog.h>

#include "hpr/clock.hpp"
#include "kernels/batch_bytes.hpp"

namespace hpr {

Lane::Lane(LaneConfig cfg, const kernels::App& app, std::unique_ptr<Executor> exec, uint32_t completion_ring)
    : cfg_(std::move(cfg)), exec_(std::move(exec)), input_(cfg_.queue_size), completions_(completion_ring) {
  max_batch_ = std::max(cfg_.max_batch, cfg_.batch_size);
  batch_target_.store(cfg_.batch_size);
  batch_.reserve(max_batch_);
  slice_capacity_ = kernels::slice_capacity(app, max_batch_);  // every version keeps the layout (Executor::adopt)
  max_slice_ = app.max_slice_bytes();
  app_books_ = app.chain_length() > 1 || cfg_.chain_part;
  largest_slice_ = kernels::align_slice(max_slice_);
  done_.reserve(static_cast<size_t>(max_batch_) * (exec_->slots() + 1));
  account_fn_ = [this](std::span<const Packet> pk, const kernels::BatchView& v, const kernels::App& a, uint32_t k) {
    account(pk, v, a, k);
  };
  exec_->set_batch_fn(account_fn_);
}

Lane::~Lane() { join(); }

void Lane::start() {
  thread_ = std::thread([this] {
    detail::fine_timer_slack();
    run();
  });
}
void Lane::join() {
  if (thread_.joinable()) thread_.join();
}

std::string Lane::log_drain() {
  std::lock_guard<std::mutex> g(log_mu_);
  std::string s;
  s.swap(log_buf_);
  return s;
}

void Lane::fail(const Status& st) {
  failure_ = st.message();
  spdlog::error("lane {} failed and leaves the lane set: {}", cfg_.name, st.message());
  state_.store(LaneState::kFailed, std::memory_order_release);
  // Hand back every packet still here, oldest first: the outstanding batches, the batch being
  // built, then the queue. The dispatcher re-routes them once egress has drained this lane.
  exec_->take_outstanding(orphans_);
  orphans_.insert(orphans_.end(), batch_.begin(), batch_.end());
  clear_batch();
  Packet* p;
  while (input_.pop(p)) orphans_.push_back(p);
  state_.store(LaneState::kDrained, std::memory_order_release);
}

void Lane::account(std::span<const Packet> pk, const kernels::BatchView& v, const kernels::App& app, uint32_t k) {
  k += cfg_.first_app;
  bump(stats_.events[k], app.count_events(pk, v));
  if (app_books_) {
    bump(stats_.app_in[k], pk.size());
    bump(stats_.app_out[k], static_cast<uint64_t>(std::count_if(pk.begin(), pk.end(), [](const Packet& p) {
           return p.drop == DropReason::kNone;
         })));
  }
  if (!log_on_) return;
  std::string lines;
  app.append_log(pk, v, [&](uint32_t i) { return log_prefix_(pk[i]); }, lines);
  if (lines.empty()) return;
  std::lock_guard<std::mutex> g(log_mu_);
  log_buf_ += lines;
}

// Pushes completed packets to egress; waits (yields) while egress is behind: back-pressure.
bool Lane::reap(bool wait) {
  done_.clear();
  auto r = exec_->reap(wait, done_, account_fn_);
  if (!r) {
    fail(r.status());
    return false;
  }
  if (!*r) return false;
  // Before the push: once on the completion ring a descriptor is egress's, and then the dispatcher's again.
  const uint64_t now = monotonic_ns();
  for (const Packet* p : done_) stats_.batch_latency.add(now - p->rx_ns);
  size_t off = 0;
  while (off < done_.size()) {
    off += completions_.push_burst(done_.data() + off, done_.size() - off);
    if (off < done_.size()) {
      if (on_completions_full_) on_completions_full_();
      else std::this_thread::yield();
    }
  }
  bump(stats_.batches, 1);
  bump(stats_.packets, done_.size());
  bump(stats_.batch_pkts_sum, done_.size());
  return true;
}

bool Lane::finished() const {
  if (state_.load(std::memory_order_acquire) != LaneState::kRunning) return true;
  return stop_.load(std::memory_order_acquire) && batch_.empty() && exec_->outstanding() == 0 && input_.empty();
}

void Lane::run() {
  int idle_rounds = 0;
  while (!finished()) {
    if (poll()) {
      idle_rounds = 0;
      continue;
    }
    // Nothing to do: spin briefly, then yield, then sleep, so idle lanes leave the cores to busy ones.
    detail::backoff(idle_rounds);
  }
}

Status Lane::follow(const AppSwap* swap, size_t index) {
  swap_ = swap;
  swap_index_ = index;
  std::shared_ptr<const AppVersion> v = swap_->current();
  generation_ = v->generation;
  HPR_RETURN_IF_ERROR(exec_->adopt(std::move(v), swap_index_));
  seen_generation_.store(generation_, std::memory_order_relaxed);
  return Status::ok();
}

// A new version (app_swap.hpp) from this batch on. One that the executor refuses leaves the lane on the old one: the
// reload's report shows the lane's generation behind.
void Lane::follow_swap() {
  if (swap_ == nullptr || swap_->generation() == generation_) return;
  std::shared_ptr<const AppVersion> v = swap_->current();
  generation_ = v->generation;
  if (Status st = exec_->adopt(v, swap_index_); !st.is_ok()) {
    spdlog::error("lane {} keeps generation {} of the app: {}", cfg_.name, seen_generation_.load(), st.message());
    return;
  }
  seen_generation_.store(generation_, std::memory_order_relaxed);
}

bool Lane::slow_now(uint64_t now) const {
  return in_slow_window(now - slow_origin_ns_, cfg_.slow_from_ns, cfg_.slow_until_ns);
}

bool Lane::poll() {
  if (state_.load(std::memory_order_relaxed) != LaneState::kRunning) return false;
  if (slow_origin_ns_ == 0 && cfg_.slow_batch_ns != 0) slow_origin_ns_ = monotonic_ns();  // the run's start
  bool did = false;
  // Fill the batch.
  const uint32_t target = batch_target_.load(std::memory_order_relaxed);
  // Each packet taken may be a largest one: take no more than the batch buffer surely holds (kernels/batch_bytes.hpp).
  const size_t room = (slice_capacity_ - batch_bytes_) / largest_slice_;
  if (batch_.size() < target && room > 0) {
    size_t want = std::min<size_t>({kernels::kBatchFill, target - batch_.size(), room});
    const size_t had = batch_.size();
    batch_.resize(had + want);  // references straight from the queue into the batch
    const size_t n = input_.pop_burst(batch_.data() + had, want);
    batch_.resize(had + n);
    if (n > 0) {
      if (had == 0) first_ns_ = monotonic_ns();
      for (size_t i = had; i < had + n; ++i) batch_bytes_ += kernels::slice_bound(max_slice_, *batch_[i]);
      did = true;
    }
  }
  uint64_t now = monotonic_ns();
  bool stopping = stop_.load(std::memory_order_acquire);
  const bool full = batch_.size() >= target || slice_capacity_ - batch_bytes_ < largest_slice_;
  bool close = !batch_.empty() && (full || now - first_ns_ >= cfg_.batch_timeout_ns ||
                                   ((stopping || cfg_.run_what_arrived) && input_.empty()));
  if (close && exec_->outstanding() == exec_->slots()) {
    // Every slot busy. A full batch waits for the oldest (polled: takes it only if it is done). One that reached its
    // timeout keeps filling instead: it could not run sooner, so under load it grows to what arrives while the
    // device is busy (a GPU's batch pays for its copies and launch), where waiting would run it at the timeout's size.
    did |= reap(/*wait=*/!polled_ && (full || stopping));
    if (state_.load(std::memory_order_relaxed) != LaneState::kRunning) return true;
    close = exec_->outstanding() < exec_->slots();
  }
  if (close) {
    follow_swap();
    if (exec_->outstanding() == 0) busy_since_ = now;
    ++submitted_;
    if (cfg_.slow_batch_ns != 0 && slow_now(now)) std::this_thread::sleep_for(std::chrono::nanoseconds(cfg_.slow_batch_ns));
    const bool inject = cfg_.fail_after_batches != 0 && submitted_ >= cfg_.fail_after_batches;
    Status st = inject ? error(Code::kUnavailable, "fault injected at batch {}", submitted_)
                       : exec_->submit(batch_.data(), static_cast<uint32_t>(batch_.size()));
    if (!st.is_ok()) {
      // A real submit error leaves the batch outstanding in the executor (fail() takes it back
      // from there); an injected one never reached it, so it is still in batch_.
      if (!inject) clear_batch();
      fail(st);
      return true;
    }
    clear_batch();
    did = true;
  }
  // Reap whatever completed.
  while (exec_->outstanding() > 0 && reap(false)) did = true;
  if (state_.load(std::memory_order_relaxed) != LaneState::kRunning) return true;
  if (busy_since_ != 0) {
    if (exec_->outstanding() == 0) {
      bump(stats_.busy_ns, monotonic_ns() - busy_since_);
      busy_since_ = 0;
    } else if (now - busy_since_ >= kBusyCheckpointNs) {
      // A device kept busy (a batch always outstanding: saturated, >= 2 in flight) shows it while it lasts, not
      // only when it next runs dry: its utilisation (power model, the learner's lane rates) was 0 until then.
      bump(stats_.busy_ns, now - busy_since_);
      busy_since_ = now;
    }
  }
  // An idle lane takes a new version too, so that the old one is freed without waiting for traffic.
  if (!did && batch_.empty() && exec_->outstanding() == 0) follow_swap();
  return did;
}

}  // namespace hpr
