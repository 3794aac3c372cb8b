// The dispatcher: rx burst, parse and classify, lane choice, hand-off to the lane queues.
#include "pipeline/pipeline.hpp"

#include <spdlog/spdlog.h>

#include "hpr/clock.hpp"
#include "pipeline/pipeline_internal.hpp"
#include "runtime/balance_glue.hpp"

namespace hpr {
using detail::backoff;
using detail::kNoLane;
using detail::policy_weight;
using detail::policy_weights;

void Pipeline::drop_at_dispatch(Packet* p, uint16_t n, DropReason r) {
  drops_dispatch_.add(r, n);
  if (svc_books_on_)
    for (uint16_t i = 0; i < n; ++i)
      if (p[i].svc < kServiceBooks) bump((*svc_books_)[p[i].svc].lost);
  rx_->release(p, n);
}

// Puts p on lane `li` (its descriptor into the store, its reference on the queue); false when the queue is full (and
// backpressure is off).
bool Pipeline::enqueue(Packet& p, uint8_t li) {
  int rounds = 0;
  SpscRing<Packet*>& q = lanes_[li]->input();
  Packet* r = nullptr;
  // Room on the queue first: a packet dropped for a full queue costs no copy. The store runs dry only when every
  // lane is full (it holds what they can), so in practice take() finds one.
  while (q.full() || (r = store_->take(p)) == nullptr) {
    if (!cfg_.backpressure || lanes_[li]->state() != LaneState::kRunning) return false;
    wait_step(rounds);
  }
  q.push(r);  // room seen above stays: this thread is the queue's one producer
  ++enqueued_[li];
  return true;
}

// Waits for room or for egress: in run-to-completion mode by doing the lanes' and egress' work
// (nobody else will), otherwise by backing off.
void Pipeline::wait_step(int& rounds) {
  if (cfg_.run_to_completion) {
    const uint64_t t0 = monotonic_ns();
    const bool did = service();
    lane_work_ns_ += monotonic_ns() - t0;
    if (did) return;
  }
  backoff(rounds);
}

// Run-to-completion: one round of every lane and of egress, on the dispatcher's thread.
bool Pipeline::service() {
  bool did = false;
  for (size_t i = 0; i < lanes_.size(); ++i) did |= in_place_[i] ? lane_in_place(i) : lanes_[i]->poll();
  did |= egress_poll();
  return did;
}

void Pipeline::dispatch_loop() {
  int idle = 0;
  if (worker_dynamic_) update_worker_mode(monotonic_ns());  // the weights given at start may choose one lane
  while (!stop_rx_.load(std::memory_order_relaxed)) {
    handle_failed_lanes();
    if (swap_pending_.load(std::memory_order_acquire)) adopt_app();  // a live reload (replace_app.cpp)
    if (weights_dirty_.load(std::memory_order_acquire)) {
      std::lock_guard<std::mutex> g(weights_mu_);
      if (!pending_weights_.empty()) {
        weights_ = pending_weights_;
        (void)balancer_->set_lane_weights(policy_weights(weights_));  // validated in set_lane_weights
      }
      if (pending_place_) adopt_placement(*pending_place_);
      pending_place_.reset();
      weights_dirty_.store(false, std::memory_order_relaxed);
      if (worker_dynamic_) update_worker_mode(monotonic_ns());
    }
    uint64_t now = monotonic_ns();
    if (top_wanted_.load(std::memory_order_acquire)) answer_top(now);  // hpr ctl flows top (flows_top.cpp)
    if (worker_retry_ns_ != 0 && now >= worker_retry_ns_) {
      worker_retry_ns_ = 0;
      update_worker_mode(now);
    }
    if (cfg_.max_duration_ns != 0 && now - start_ns_.load(std::memory_order_relaxed) >= cfg_.max_duration_ns) break;
    bool did = flush_held();
    const uint64_t waited = lane_work_ns_;
    const bool switching = worker_pending_ != kNoLane && worker_switch_waits(now);  // no rx while the lanes drain
    const bool in_place = worker_on_.load(std::memory_order_relaxed);
    uint16_t n = switching ? 0 : in_place ? worker_burst(now) : dispatch_burst(now);
    did |= n > 0;
    // The worker path's burst is its lane's busy time already.
    if (n > 0 && !in_place) bump(dispatch_busy_ns_, monotonic_ns() - now - (lane_work_ns_ - waited));
    if (did && now - last_expire_ns_ > 10'000'000) {  // age idle flows a slice at a time, every 10 ms
      flows_->expire(now, 4096);
      last_expire_ns_ = now;
    }
    // The worker path leaves the lanes and egress nothing, but shaped packets wait for their time.
    if (cfg_.run_to_completion && (!in_place || shaper_)) did |= service();
    if (n == 0 && rx_->rx_done() && held_.empty()) break;
    if (did) idle = 0;
    else backoff(idle);
  }
  // Stopped: a port that holds frames it took from its source (a spreading view) hands them out now.
  if (rx_->stop_rx())
    for (int rounds = 0; !rx_->rx_done();) {
      const uint64_t now = monotonic_ns();
      const bool in_place = worker_on_.load(std::memory_order_relaxed);
      bool did = (in_place ? worker_burst(now) : dispatch_burst(now)) > 0;
      if (cfg_.run_to_completion && (!in_place || shaper_)) did |= service();
      if (!did) backoff(rounds);
    }
  for (int rounds = 0; !held_.empty();) {  // stopped: what moving flows hold goes on before the drain
    bool did = handle_failed_lanes();
    if (!(flush_held() || did)) wait_step(rounds);
  }
  handle_failed_lanes();
  if (cfg_.run_to_completion) {
    // Drain on this thread what the lane and egress threads would: lanes until they are empty
    // (re-routing what a lane that fails now hands back), then egress and the shaper.
    for (auto& l : lanes_) l->request_stop();
    int rounds = 0;
    for (;;) {
      bool did = service();
      did = handle_failed_lanes() || did;
      bool all = true;
      for (auto& l : lanes_) all &= l->finished();
      if (all && !did) break;
      if (!did) backoff(rounds);
    }
    lanes_done_.store(true, std::memory_order_release);
    egress_loop();
  }
  dispatch_done_.store(true, std::memory_order_release);
}

// One rx burst: classify, choose lanes, enqueue in arrival order. Returns the packets received.
uint16_t Pipeline::dispatch_burst(uint64_t now) {
  // Arrays that live as long as the pipeline: constructing 256 descriptors per burst cost more
  // than classifying them.
  Packet* pkts = burst_->pkts;
  balance::PacketMeta* metas = burst_->metas;
  uint16_t* chosen = burst_->chosen;
  uint8_t* what = burst_->what;
  enum : uint8_t { kDropped, kFlow, kNoFlowPkt, kPinned };  // kPinned: a flow its service places (service_lanes)
  const uint16_t burst = std::min<uint16_t>(cfg_.rx_burst, Burst::kMax);
  uint16_t n = rx_->rx_burst(pkts, burst, now);
  if (n == 0) return 0;
  // Pass 1: parse, key and hash, each flow's index slot prefetched (as the worker path does); then classify, the
  // slots on their way from memory. Flows go to the balancer in one call per burst.
  FlowKey* keys = burst_->keys;
  for (uint16_t i = 0; i < n; ++i) {
    Packet& p = pkts[i];
    if (parse(p, cfg_.parse) != DropReason::kNone) {
      drop_at_dispatch(&p, 1, p.drop);
      what[i] = kDropped;
      continue;
    }
    what[i] = kNoFlowPkt;
    p.hash = 0;
    p.flow_id = kNoFlow;
    if (p.l3 != L3::kIPv4 && p.l3 != L3::kIPv6) continue;
    p.hash = canonical_flow_key<true>(p, keys[i]);
    flows_->prefetch(p.hash);
  }
  uint16_t nm = 0;
  for (uint16_t i = 0; i < n; ++i) {
    Packet& p = pkts[i];
    if (what[i] == kDropped || (p.l3 != L3::kIPv4 && p.l3 != L3::kIPv6)) continue;
    const FlowKey& k = keys[i];
    bool inserted = false;
    p.flow_id = flows_->lookup_or_insert(k, p.hash, now, &inserted);
    bump(flows_seen_, inserted);
    if (p.flow_id == kNoFlow) continue;
    if (inserted) app_->flow_started(p.flow_id, k);
    what[i] = kFlow;
    // With move holding the balancer may move any flow (a busy one's packets wait in move_hold.cpp); without
    // it, a flow with packets in flight stays where they are.
    flow_pending_[p.flow_id] = held_to_.empty() ? flows_->in_flight(p.flow_id).load(std::memory_order_acquire) : 0;
    // Services: the packet's, so that a drop on the way to its lane (full queue, no lane) is in its books too
    // (and the balancer reads it from there).
    if (svc_books_on_) p.svc = app_->service_index(p);
    if (lanes_for(p) != nullptr) {  // placed among its service's lanes, not by the balancer
      what[i] = kPinned;
      continue;
    }
    metas[nm++] = {to_five_tuple(k), p.hash, p.flow_id, p.len, app_->balance_service(p), 0};
  }
  if (nm > 0) {
    for (size_t l = 0; l < lanes_.size(); ++l) {
      auto& ls = lane_states_[l];
      ls.queued = static_cast<uint32_t>(lanes_[l]->input().size());
      ls.capacity = static_cast<uint32_t>(lanes_[l]->input().capacity());
      ls.weight = policy_weight(weights_[l]);
      ls.enabled = lanes_[l]->state() == LaneState::kRunning && weights_[l] > 0;
    }
    balance::LaneTable table{lane_states_, flow_pending_, now};
    balancer_->assign({metas, nm}, table, {chosen, nm});
  }
  // Pass 2: enqueue in arrival order. Packets for a lane run in place (run to completion) are compacted to the front
  // of the burst instead and run after the pass, behind what that lane's queue holds.
  uint16_t j = 0, direct = 0;
  for (uint16_t i = 0; i < n; ++i) {
    if (what[i] == kDropped) continue;
    Packet& p = pkts[i];
    FlowState* fs = nullptr;
    uint8_t lane;
    if (what[i] == kFlow || what[i] == kPinned) {
      fs = &flows_->state(p.flow_id);
      lane = what[i] == kFlow ? static_cast<uint8_t>(chosen[j++]) : pick_lane(p.hash, lanes_for(p));
      if (!held_to_.empty() && (held_count_[p.flow_id] != 0 ||
                                (fs->lane != kNoLane && lane != fs->lane &&
                                 flows_->in_flight(p.flow_id).load(std::memory_order_acquire) > 0)))
        if (hold_for_move(p, *fs, lane)) continue;
      // Whatever the policy wanted, a flow with packets in flight stays where they are.
      auto stay = [&] {
        if (fs->lane != kNoLane && flows_->in_flight(p.flow_id).load(std::memory_order_acquire) > 0) lane = fs->lane;
      };
      stay();
      // The state is read once per decision: a lane that fails after it was seen running takes
      // this packet into its queue, which it hands back in order. One that has failed has its
      // packets (maybe this flow's) re-routed first, which this one would otherwise overtake;
      // they may have moved the flow.
      LaneState ls = lane < lanes_.size() ? lanes_[lane]->state() : LaneState::kRemoved;
      while (ls == LaneState::kFailed || ls == LaneState::kDrained) {
        handle_failed_lanes();
        stay();
        ls = lanes_[lane]->state();
      }
      if (ls != LaneState::kRunning) lane = pick_lane(p.hash, lanes_for(p));
      fs->lane = lane;
      p.seq = kernels::take_seq(*fs, p.flow_id, *app_);
      fs->packets++;
      fs->bytes += p.len;
    } else {
      if (pins_on_) p.svc = app_->service_index(p);  // a packet without a flow goes to its service's lanes too
      lane = pick_lane(p.hash, lanes_for(p));
    }
    if (lane == kNoLane) {
      if (fs != nullptr) fs->next_seq--;
      drop_at_dispatch(&p, 1, DropReason::kNoLane);
      continue;
    }
    p.lane = lane;
    if (fs != nullptr) flight_add(p.flow_id);
    if (in_place_[lane]) {
      if (direct != i) pkts[direct] = p;
      ++direct;
      continue;
    }
    if (!enqueue(p, lane)) {
      if (fs != nullptr) {
        flight_sub(p.flow_id);
        fs->next_seq--;  // keep the flow's sequence contiguous: this packet never existed for egress
      }
      bump(lanes_[lane]->stats().queue_full, 1);
      drop_at_dispatch(&p, 1, DropReason::kQueueFull);
    }
  }
  if (direct > 0) {  // the in-place lanes' work: their busy time (send_in_place), not the dispatcher's
    const uint64_t t0 = monotonic_ns();
    run_direct(pkts, direct);
    lane_work_ns_ += monotonic_ns() - t0;
  }
  return n;
}

// Sends what egress decided to send, counts what the port refused, and returns every buffer.
}  // namespace hpr
