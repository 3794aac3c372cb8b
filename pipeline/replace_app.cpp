// Live reloads: Pipeline::replace_app builds a new version of the app beside the running one and swaps it in at the
// dispatchers' next burst and the lanes' next batch (pipeline.hpp, app_swap.hpp).
#include <chrono>
#include <map>

#include "hpr/clock.hpp"
#include "hpr/resident.hpp"
#include "pipeline/pipeline.hpp"

namespace hpr {
namespace {

double seconds_since(uint64_t t0) { return static_cast<double>(monotonic_ns() - t0) / 1e9; }

}  // namespace

Result<Pipeline::Replaced> Pipeline::replace_app(const MakeApp& make, int timeout_ms) {
  if (stages_on_)
    return error(Code::kUnimplemented,
                 "app.place: a live reload of a chain whose apps are on lanes of their own is not built yet; restart "
                 "the run with the new files");
  const std::vector<Pipeline*> all = all_workers();
  Replaced r;
  // 1. Build everything beside the running versions; one failure and nothing is swapped.
  std::vector<std::shared_ptr<const AppVersion>> running;
  for (Pipeline* p : all) running.push_back(p->swap_->current());
  uint64_t t = monotonic_ns();
  std::map<const kernels::App*, std::shared_ptr<const kernels::App>> apps;  // running → new (shared apps once)
  for (const auto& cur : running) {
    auto& a = apps[cur->app.get()];
    if (a) continue;
    auto made = make(*cur->app);
    if (!made) return made.status();
    a = std::move(*made);
  }
  r.build_s = seconds_since(t);
  t = monotonic_ns();
  std::map<std::pair<const kernels::AppProgram*, const kernels::App*>, std::shared_ptr<kernels::AppProgram>> progs;
  std::vector<std::shared_ptr<const AppVersion>> next;
  for (const auto& cur : running) {
    auto v = std::make_shared<AppVersion>();
    v->generation = cur->generation + 1;
    v->app = apps[cur->app.get()];
    for (const auto& prog : cur->programs) {
      v->kernels.emplace_back();
      if (!prog) {
        v->programs.push_back(nullptr);
        continue;
      }
      auto& np = progs[{prog.get(), v->app.get()}];
      if (!np) {
        auto made = prog->for_next(*cur->app, *v->app);
        if (!made) return error(made.status().code(), "{}: {}", prog->device.getInfo<CL_DEVICE_NAME>(),
                                made.status().message());
        np = std::move(*made);
      }
      v->programs.push_back(np);
      auto k = np->make_kernels(*v->app);  // each lane kernels of its own (clSetKernelArg is per kernel)
      if (!k) return k.status();
      v->kernels.back() = std::move(*k);
    }
    next.push_back(std::move(v));
  }
  r.upload_s = seconds_since(t);
  r.rss_both_kib = resident_kib();
  r.generation = next[0]->generation;
  // 2. Swap, pipeline by pipeline.
  t = monotonic_ns();
  const uint64_t deadline = t + static_cast<uint64_t>(timeout_ms) * 1'000'000;
  for (size_t i = 0; i < all.size(); ++i) {
    auto rx = all[i]->swap_to(next[i], deadline);
    if (!rx) return rx.status();
    r.rx_at_swap.push_back(*rx);
  }
  r.swap_s = seconds_since(t);
  // 3. Once every lane and batch has let go of the old versions, they are freed here: freeing a 64 MiB table on the
  // dispatcher's thread stalled rx for milliseconds (and lost packets at half the native rate). Not let go of in
  // time: the last lane frees it.
  next.clear();
  for (;;) {
    r.old_freed = std::all_of(running.begin(), running.end(), [](const auto& v) { return v.use_count() == 1; });
    if (r.old_freed || monotonic_ns() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  running.clear();
  return r;
}

Result<uint64_t> Pipeline::swap_to(std::shared_ptr<const AppVersion> v, uint64_t deadline_ns) {
  const uint64_t gen = v->generation;
  std::unique_lock<std::mutex> l(swap_mu_);
  swap_next_ = std::move(v);
  swap_pending_.store(true, std::memory_order_release);
  for (;;) {
    if (swapped_generation_ >= gen) return swapped_rx_;
    if (stop_rx_.load(std::memory_order_relaxed) || dispatch_done_.load(std::memory_order_acquire)) {
      swap_next_.reset();
      swap_pending_.store(false, std::memory_order_relaxed);
      return error(Code::kUnavailable, "the run is stopping: the new version was not swapped in");
    }
    if (monotonic_ns() >= deadline_ns) {
      swap_next_.reset();
      swap_pending_.store(false, std::memory_order_relaxed);
      return error(Code::kUnavailable, "the dispatcher did not take the new version in time (is the run started?)");
    }
    swap_cv_.wait_for(l, std::chrono::milliseconds(5));
  }
}

// The dispatcher, between bursts: the new version's flow state for every live flow first (AES: the keys of the
// connections in the flow table, from the new key source, with fresh IV counters), then the new version is the one
// new packets are classified and, from their next batch, processed with.
void Pipeline::adopt_app() {
  std::shared_ptr<const AppVersion> v;
  {
    std::lock_guard<std::mutex> g(swap_mu_);
    v = std::move(swap_next_);
    swap_pending_.store(false, std::memory_order_relaxed);
  }
  if (!v) return;
  v->app->take_over_from(*app_);
  if (v->app->keeps_flow_state())
    flows_->for_each_live([&](uint32_t id, const FlowKey& k) { v->app->flow_started(id, k); });
  app_ = v->app;
  svc_books_on_ = !app_->service_names().empty();
  swap_->publish(v);
  // Lanes this thread polls take it now: the in-place worker path polls none, and would keep the old one alive.
  if (cfg_.run_to_completion)
    for (auto& l : lanes_) l->follow_swap();
  const PortStats rs = rx_->stats();
  {
    std::lock_guard<std::mutex> g(swap_mu_);
    swapped_generation_ = v->generation;
    swapped_rx_ = rs.rx_packets + rs.rx_too_long + rs.rx_pool_empty;
  }
  swap_cv_.notify_all();
}

}  // namespace hpr
