// hpr ctl flows top: the largest flows of each worker's flow table. The table belongs to the dispatcher, so the
// control thread posts a request (top_wanted_) and the dispatcher scans its own table at the top of its next loop
// (answer_top, from dispatch_loop, a slice of the table per loop iteration) and hands the result back under top_mu_.
// The scan reads every id once with a heap of n: O(capacity) in all, a few milliseconds for 2^20 ids, spread over the
// loop's iterations; a dispatcher starts a scan no sooner than 100 ms after the last, so requests however frequent
// cost it a small share of its time.
#include <arpa/inet.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>

#include "hpr/clock.hpp"
#include "pipeline/pipeline.hpp"

namespace hpr {
namespace {

// Most bytes first; ties: fewer packets, then the key's bytes (a stable order for equal flows).
bool larger(const TopFlow& a, const TopFlow& b) {
  if (a.bytes != b.bytes) return a.bytes > b.bytes;
  if (a.packets != b.packets) return a.packets < b.packets;
  return std::memcmp(&a.key, &b.key, sizeof(FlowKey)) < 0;
}

std::string endpoint(const FlowKey& k, const uint8_t* addr, uint16_t port, bool ports) {
  char a[INET6_ADDRSTRLEN] = "?";
  inet_ntop(k.family == 4 ? AF_INET : AF_INET6, addr, a, sizeof a);
  if (!ports) return a;
  return k.family == 4 ? fmt::format("{}:{}", a, port) : fmt::format("[{}]:{}", a, port);
}

}  // namespace

std::string flow_key_text(const FlowKey& k) {
  if (k.family != 4 && k.family != 6) return "non-ip";
  const char* proto = k.proto == 6 ? "tcp" : k.proto == 17 ? "udp" : k.proto == 132 ? "sctp" : nullptr;
  // Ports are those of TCP, UDP and SCTP (0 for fragments): others show the addresses alone.
  const bool ports = proto != nullptr && (k.sport != 0 || k.dport != 0);
  return fmt::format("{} {} <-> {}", proto ? std::string(proto) : fmt::format("proto {}", k.proto),
                     endpoint(k, k.src, k.sport, ports), endpoint(k, k.dst, k.dport, ports));
}

void top_flows_scan(const FlowTable& t, size_t n, uint64_t now_ns, uint32_t from, uint32_t to,
                    std::vector<TopFlow>& heap) {
  if (n == 0) return;
  to = std::min(to, t.capacity());
  for (uint32_t id = from; id < to; ++id) {
    if (!t.live(id)) continue;
    const FlowState& s = t.state(id);
    if (heap.size() == n && s.bytes < heap.front().bytes) continue;  // cheap reject before building an entry
    TopFlow f{t.key(id), s.packets, s.bytes, now_ns > s.last_seen_ns ? now_ns - s.last_seen_ns : 0, s.lane, {}};
    if (heap.size() < n) {
      heap.push_back(f);
      std::push_heap(heap.begin(), heap.end(), larger);
    } else if (larger(f, heap.front())) {
      std::pop_heap(heap.begin(), heap.end(), larger);
      heap.back() = f;
      std::push_heap(heap.begin(), heap.end(), larger);
    }
  }
}

void top_flows_sort(std::vector<TopFlow>& heap) { std::sort_heap(heap.begin(), heap.end(), larger); }

std::vector<TopFlow> top_flows(const FlowTable& t, size_t n, uint64_t now_ns) {
  std::vector<TopFlow> heap;  // the n largest so far, the smallest of them at the front
  top_flows_scan(t, n, now_ns, 0, t.capacity(), heap);
  top_flows_sort(heap);
  return heap;
}

// On the dispatcher's thread (dispatch_loop), while top_wanted_ is set: kTopChunk ids per loop iteration (a fraction of
// a millisecond), so that a large table's scan never holds up rx for long; the request is answered once the scan has
// gone round the whole table. A new scan starts at most kTopGapNs after the last one ended: a request sooner waits
// for it (its caller waits at most its timeout), so that however often clients ask, scans take a small share of the
// dispatcher's time.
void Pipeline::answer_top(uint64_t now) {
  constexpr uint32_t kTopChunk = 16384;
  constexpr uint64_t kTopGapNs = 100'000'000;
  TopScan& sc = top_scan_;
  if (!sc.active) {
    if (top_scanned_ns_ != 0 && now - top_scanned_ns_ < kTopGapNs) return;
    std::lock_guard<std::mutex> g(top_mu_);
    sc = TopScan{true, top_n_, top_asked_, 0, 0, {}};
    sc.heap.reserve(sc.n);
  }
  const uint64_t t0 = monotonic_ns();
  top_flows_scan(*flows_, sc.n, now, sc.next, sc.next + kTopChunk, sc.heap);
  sc.next = static_cast<uint32_t>(std::min<uint64_t>(uint64_t{sc.next} + kTopChunk, flows_->capacity()));
  top_scanned_ns_ = monotonic_ns();
  sc.busy_ns += top_scanned_ns_ - t0;
  if (sc.next < flows_->capacity()) return;
  top_flows_sort(sc.heap);
  for (auto& f : sc.heap)
    if (f.lane < lanes_.size()) f.lane_name = lanes_[f.lane]->name();
  sc.active = false;
  std::lock_guard<std::mutex> g(top_mu_);
  top_result_ = std::move(sc.heap);
  top_live_ = flows_->size();
  top_scan_ns_ = sc.busy_ns;
  top_answered_ = sc.asked;
  // A request posted while this scan ran is answered by the next one.
  top_wanted_.store(top_asked_ != sc.asked, std::memory_order_relaxed);
}

std::vector<Pipeline*> Pipeline::all_workers() {
  std::vector<Pipeline*> v{this};
  for (auto& w : workers_) v.push_back(w.get());
  return v;
}

std::vector<float> Pipeline::lane_weights() {
  std::lock_guard<std::mutex> g(weights_mu_);
  if (!pending_weights_.empty()) return pending_weights_;
  std::vector<float> w;
  for (const auto& l : cfg_.lanes) w.push_back(static_cast<float>(l.lane.weight));
  return w;
}

Result<Pipeline::FlowsTop> Pipeline::flows_top(size_t n, int timeout_ms) {
  std::lock_guard<std::mutex> one(top_call_mu_);  // the requests of two callers would share the workers' slots
  const std::vector<Pipeline*> ws = all_workers();
  auto ended = [](Pipeline* w) {
    return w->stop_rx_.load(std::memory_order_relaxed) || w->dispatch_done_.load(std::memory_order_acquire);
  };
  auto stopping = [] {
    return error(Code::kUnavailable,
                 "flows top: the run is stopping (stopped, or its input ended): its flow tables are no longer read");
  };
  if (start_ns_.load(std::memory_order_relaxed) == 0)
    return error(Code::kUnavailable, "flows top: the run has not started forwarding yet");
  std::vector<uint64_t> asked(ws.size());
  for (size_t i = 0; i < ws.size(); ++i) {
    if (ended(ws[i])) return stopping();
    std::lock_guard<std::mutex> g(ws[i]->top_mu_);
    ws[i]->top_n_ = n;
    asked[i] = ++ws[i]->top_asked_;
    ws[i]->top_wanted_.store(true, std::memory_order_release);
  }
  FlowsTop out;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  for (size_t i = 0; i < ws.size(); ++i) {
    Pipeline* w = ws[i];
    for (;;) {
      {
        std::lock_guard<std::mutex> g(w->top_mu_);
        if (w->top_answered_ == asked[i]) {
          for (auto& f : w->top_result_) out.flows.push_back(std::move(f));
          w->top_result_.clear();
          out.live += w->top_live_;
          out.scan_ns = std::max(out.scan_ns, w->top_scan_ns_);
          out.capacity += w->flows_->capacity();  // fixed at creation
          break;
        }
      }
      if (ended(w)) return stopping();
      if (std::chrono::steady_clock::now() >= deadline)
        return error(Code::kUnavailable,
                     "flows top: worker {}'s dispatcher did not answer within {} ms (busy); try again", i, timeout_ms);
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  std::sort(out.flows.begin(), out.flows.end(), larger);
  if (out.flows.size() > n) out.flows.resize(n);
  return out;
}

}  // namespace hpr
