// The in-place worker path: run to completion with one native lane and no device (issue 12), or with several lanes
// while the weights give every flow to one native lane (learning mode settled there; issue 13).
//
// One thread, one burst at a time, as DPDK's l3fwd does it: rx burst → parse → canonical key and
// hash for the whole burst, each flow's index slot prefetched before the first lookup → the app in
// place on the burst's frames → drops counted, the rest transmitted from the same array → buffers
// released. No lane queue, batch copy, completion ring or egress pass in between: a descriptor is
// written by rx and read where it lies. Per-flow order holds by construction (the burst is never
// reordered), so nothing checks sequence numbers; books, drop reasons, latency, the lane's counters,
// the result log and the shaper are the same as on the lane path.
//
// Beside device lanes (run to completion) a native lane's share goes through its queue, and lane_in_place runs what
// the queue holds the same way: the app in place, then out from here (send_in_place, shared with the burst path).
#include <span>

#include "hpr/clock.hpp"
#include "pipeline/pipeline.hpp"
#include "pipeline/pipeline_internal.hpp"

namespace hpr {

bool Pipeline::worker_eligible(const LaneSpec& l) {
  // A lane with fault injection keeps the lane path: its failure handling is what is being tested.
  return l.kind == LaneSpec::Kind::kNative && !l.lane.injects_faults();
}

bool Pipeline::use_worker_path(const PipelineConfig& cfg) {
  return cfg.run_to_completion && cfg.lanes.size() == 1 && worker_eligible(cfg.lanes[0]);
}

void Pipeline::update_worker_mode(uint64_t now) {
  worker_pending_ = detail::kNoLane;
  size_t alone = lanes_.size(), with_weight = 0;
  bool all_running = true;
  for (size_t i = 0; i < lanes_.size(); ++i) {
    all_running &= lanes_[i]->state() == LaneState::kRunning;
    if (weights_[i] > 0) {
      ++with_weight;
      alone = i;
    }
  }
  bool ok = all_running && with_weight == 1 && worker_eligible(cfg_.lanes[alone]);
  for (const auto& allow : svc_lanes_) ok = ok && (allow.empty() || allow[alone] != 0);  // a service placed elsewhere
  if (worker_on_.load(std::memory_order_relaxed) && (!ok || alone != worker_lane_.load(std::memory_order_relaxed)))
    worker_on_.store(false, std::memory_order_relaxed);  // synchronous: nothing of it is in flight
  if (ok && !worker_on_.load(std::memory_order_relaxed)) {
    worker_pending_ = static_cast<uint8_t>(alone);
    worker_pending_since_ = now;
  }
}

// While a switch waits: true (no rx this round) until every lane has handed egress all it was given and no moving
// flow holds packets; then the worker path goes on. A switch that waits 20 ms gives up and is tried again in 1 s.
bool Pipeline::worker_switch_waits(uint64_t now) {
  bool drained = held_.empty();
  for (size_t i = 0; drained && i < lanes_.size(); ++i)
    drained = egress_handled_[i]->load(std::memory_order_acquire) == enqueued_[i];
  if (drained) {
    worker_lane_.store(worker_pending_, std::memory_order_relaxed);
    worker_pending_ = detail::kNoLane;
    worker_on_.store(true, std::memory_order_relaxed);
    return false;
  }
  if (now - worker_pending_since_ > 20'000'000) {
    worker_pending_ = detail::kNoLane;
    worker_retry_ns_ = now + 1'000'000'000;
    return false;
  }
  return true;
}

void Pipeline::init_worker() {
  worker_ = std::make_unique<WorkerBurst>();
  worker_->desc.resize(size_t{Burst::kMax} * app_->desc_slots());
  worker_->slices.resize(worker_->desc.size());
  worker_->out.resize(size_t{Burst::kMax} * std::max<uint32_t>(app_->result_bytes(), 1));
}

uint16_t Pipeline::worker_burst(uint64_t now) {
  Packet* pkts = burst_->pkts;
  const uint16_t n = rx_->rx_burst(pkts, std::min<uint16_t>(cfg_.rx_burst, Burst::kMax), now);
  if (n == 0) return 0;
  FlowKey* keys = burst_->keys;
  // What the loops read through `this` held in locals: read through `this` they were loaded again for every packet
  // (the loops store to packets, which could alias them as far as the compiler knows).
  FlowTable& flows = *flows_;
  const kernels::App& app = *app_;
  const ParseOptions opt = cfg_.parse;
  // Parse, key and hash; what fails to parse is dropped here, the rest is compacted in arrival order. From a port
  // whose descriptors arrive fresh (Port::fresh_rx: DPDK's), the parsed fields, hash and flow id need no reset.
  auto classify = [&]<bool kFresh>() {
    uint16_t m = 0;
    for (uint16_t i = 0; i < n; ++i) {
      Packet& p = pkts[i];
      if (parse<kFresh>(p, opt) != DropReason::kNone) {
        drop_at_dispatch(&p, 1, p.drop);
        continue;
      }
      if constexpr (!kFresh) {
        p.hash = 0;
        p.flow_id = kNoFlow;
      }
      if (p.l3 == L3::kIPv4 || p.l3 == L3::kIPv6) {
        p.hash = canonical_flow_key<true>(p, keys[m]);
        flows.prefetch(p.hash);
      }
      if (m != i) pkts[m] = p;
      ++m;
    }
    return m;
  };
  const uint16_t m = rx_->fresh_rx() ? classify.template operator()<true>() : classify.template operator()<false>();
  // Look the flows up, their index slots on the way from memory since the pass above.
  uint64_t inserted_total = 0;
  const uint8_t lane = worker_lane_.load(std::memory_order_relaxed);
  uint32_t* const expected = worker_dynamic_ ? expected_seq_.data() : nullptr;
  const FlowKey* key = keys;
  for (Packet* p = pkts; p != pkts + m; ++p, ++key) {
    if (p->l3 != L3::kIPv4 && p->l3 != L3::kIPv6) continue;
    bool inserted = false;
    const uint32_t id = flows.lookup_or_insert(*key, p->hash, now, &inserted);
    p->flow_id = id;
    inserted_total += inserted;
    if (id == kNoFlow) continue;
    if (inserted) app.flow_started(id, *key);
    FlowState& fs = flows.state(id);
    fs.lane = lane;
    p->seq = kernels::take_seq(fs, id, app);  // the app may use it (AES: the IV), as on the lane path
    // Egress checks each flow's order when lanes run again: it expects the next sequence number.
    if (expected != nullptr) expected[id] = p->seq + 1;
    fs.packets++;
    fs.bytes += p->len;
  }
  bump(flows_seen_, inserted_total);
  send_in_place(*lanes_[lane], pkts, m, now, false);
  return n;
}

// Run to completion with several lanes: an eligible native lane's queued packets run in place on the dispatcher's
// thread and leave from here, in the order egress would send them (they are all this lane's, and a flow is on one
// lane at a time): no batch copy, executor slot, completion ring or egress pass. So a small share on a device lane
// no longer sends the native lane's share the long way round (issues 12 and 13).
bool Pipeline::lane_in_place(size_t li) {
  Lane& lane = *lanes_[li];
  if (lane.state() != LaneState::kRunning) return false;
  Packet* pkts = worker_->queued;
  Packet** refs = worker_->queued_refs;
  const auto n = static_cast<uint16_t>(lane.input().pop_burst(refs, Burst::kMax));
  if (n == 0) return false;
  for (uint16_t i = 0; i < n; ++i) {
    pkts[i] = *refs[i];
    store_->give_back_here(refs[i]);
  }
  leave_in_place(lane, pkts, n);
  egress_handled_[li]->store(egress_handled_[li]->load(std::memory_order_relaxed) + n, std::memory_order_release);
  return true;
}

// dispatch_burst's packets for lanes run in place, never queued (so neither enqueued_ nor egress_handled_ counts
// them), each lane's after everything its queue holds: a flow's older packets may wait there (held for a move, or
// re-routed from a failed lane).
void Pipeline::run_direct(Packet* pkts, uint16_t n) {
  for (size_t li = 0; li < lanes_.size(); ++li) {
    if (!in_place_[li]) continue;
    uint16_t m = 0;
    for (uint16_t i = 0; i < n; ++i) m += pkts[i].lane == li;
    if (m == 0) continue;
    while (lane_in_place(li)) {
    }
    if (m == n) {
      leave_in_place(*lanes_[li], pkts, n);
      return;
    }
    Packet* mine = worker_->queued;
    m = 0;
    for (uint16_t i = 0; i < n; ++i)
      if (pkts[i].lane == li) mine[m++] = pkts[i];
    leave_in_place(*lanes_[li], mine, m);
  }
}

// Egress' order check and in-flight count (off_lane, as egress_poll), then the app in place and out.
void Pipeline::leave_in_place(Lane& lane, Packet* pkts, uint16_t n) {
  const uint64_t t0 = monotonic_ns();
  for (uint16_t i = 0; i < n; ++i) off_lane(pkts[i]);
  send_in_place(lane, pkts, n, t0, true);
}

// The app in place on m packets that leave from here (the worker path's burst, or a native lane's queued packets):
// the lane's counters, drops out (their buffers back in one call), books and latency, the rest shaped or transmitted
// from the same array, in order. `own_rx_times` false: every packet was received at t0 (one latency for all).
void Pipeline::send_in_place(Lane& lane, Packet* pkts, uint16_t m, uint64_t t0, bool own_rx_times) {
  WorkerBurst& w = *worker_;
  if (m > 0) {
    // The app, in place on the frames (what the native executor does with a batch).
    std::span<Packet> batch(pkts, m);
    app_->run_in_place(batch, w.desc.data(), w.slices.data(), w.out.data(),
                       [&](uint32_t k, const kernels::App& a, std::span<const Packet> p, const kernels::BatchView& v) {
                         lane.account(p, v, a, k);
                       });
  }
  const uint64_t done = monotonic_ns();
  LaneStats& st = lane.stats();
  bump(st.batches, 1);
  bump(st.packets, m);
  bump(st.batch_pkts_sum, m);
  bump(st.busy_ns, done - t0);
  // Pointers and the shaper test held in registers: with indices and shaper_ read through `this`, the loop kept its
  // counters on the stack.
  const bool shaping = shaper_ != nullptr;
  Packet* keep = pkts;  // where the next packet that leaves goes: in order, over the dropped ones
  Packet* dropped = w.dropped;
  for (Packet* p = pkts; p != pkts + m; ++p) {
    if (p->drop != DropReason::kNone) {
      drop_at_egress(*p);
      Port::buffer_ref(*dropped++, *p);
      continue;
    }
    const uint64_t lat = done - (own_rx_times ? p->rx_ns : t0);
    if (own_rx_times) {
      st.batch_latency.add(lat);
      latency_.add(lat);
    }
    if (p->svc < kServiceBooks) book_service(*p, lat);
    if (shaping) {
      shape(*p, done);
    } else {
      if (keep != p) *keep = *p;
      ++keep;
    }
  }
  const auto nd = static_cast<uint16_t>(dropped - w.dropped);
  if (!own_rx_times) {  // every packet of a burst carries the burst's rx time: one latency for all that leave
    const uint16_t leaving = m - nd;
    st.batch_latency.add(done - t0, leaving);
    latency_.add(done - t0, leaving);
  }
  rx_->release(w.dropped, nd);
  if (shaping) {
    transmit(eg_.txq);
    release_shaped(done);
  } else {
    transmit(pkts, static_cast<uint16_t>(keep - pkts));
  }
}

}  // namespace hpr
