// Egress: completions in per-flow order, the shaper, tx and buffer release.
#include "pipeline/pipeline.hpp"

#include <spdlog/spdlog.h>

#include "hpr/clock.hpp"
#include "pipeline/pipeline_internal.hpp"
#include "runtime/balance_glue.hpp"

namespace hpr {
using detail::backoff;

void Pipeline::send(size_t port, Packet* pkts, uint16_t n) {
  Port& tx = *txs_[port];
  uint16_t sent = tx.tx_burst_release(pkts, n, *rx_);
  const uint64_t bytes = frame_bytes(pkts, sent);  // the descriptors: the buffers have left
  bump(tx_packets_, sent);
  bump(tx_bytes_, bytes);
  if (sent < n) drops_egress_.add(tx.unsent_reason(), n - sent);
  if (tx_counters_) {
    TxCounters& c = tx_counters_[port];
    bump(c.packets, sent);
    bump(c.bytes, bytes);
    if (sent < n) bump(c.failed, n - sent);
  }
}

// One output: the burst as it is. Several: split by the output port_of_ gives the app's out_port (the order within
// each port kept; a flow's packets all take one route), then one tx burst per port.
void Pipeline::transmit(Packet* pkts, uint16_t n) {
  if (n == 0) return;
  if (txs_.size() == 1) {
    send(0, pkts, n);
    return;
  }
  auto& split = eg_.split;
  const size_t m = port_of_.size();
  for (uint16_t i = 0; i < n; ++i) split[port_of_[pkts[i].out_port % m]].push_back(pkts[i]);
  for (size_t q = 0; q < split.size(); ++q) {
    if (split[q].empty()) continue;
    send(q, split[q].data(), static_cast<uint16_t>(split[q].size()));
    split[q].clear();
  }
}

void Pipeline::transmit(std::vector<Packet>& txq) {
  transmit(txq.data(), static_cast<uint16_t>(txq.size()));
  txq.clear();
}

// drop_at_egress's reply: the host frame the run makes for the drop (ICMP Time Exceeded), sent on the first output
// port. The caller returns the dropped packet's buffer.
void Pipeline::reply_to_drop(const Packet& p) {
  auto frame = cfg_.on_drop(p, eg_.scratch);
  if (!frame.empty()) {
    Packet h;
    h.data = const_cast<uint8_t*>(frame.data());
    h.len = static_cast<uint16_t>(frame.size());
    h.buf_kind = kBufPool;
    bump(host_frames_, txs_[0]->tx_burst(&h, 1));
  }
}

// Egress state is owned by the egress thread (the dispatcher's in run-to-completion mode).
void Pipeline::init_egress() {
  Egress& e = eg_;
  e.refs.resize(256);
  e.dropped.resize(e.refs.size());
  e.txq.reserve(512);
  e.ready.resize(256);
  if (shaper_) {
    e.waiting.resize(cfg_.shaping.waiting_packets);
    for (uint32_t i = 0; i < cfg_.shaping.waiting_packets; ++i) e.free_items.push_back(cfg_.shaping.waiting_packets - 1 - i);
    if (cfg_.shaping.by == ShapeBy::kClass) {
      e.waiting_class.resize(cfg_.shaping.waiting_packets);
      e.classes.resize(cfg_.shaping.classes.size());
    }
  }
}

// The first class whose DSCP, output-port and service lists all match (an empty list matches anything).
uint32_t Pipeline::shaper_class(const Packet& p) const {
  int dscp = -1;  // non-IP: matches only classes with no DSCP list
  if (p.l3_off != kNoOffset && p.l3 == L3::kIPv4)
    dscp = p.data[p.l3_off + 1] >> 2;
  else if (p.l3_off != kNoOffset && p.l3 == L3::kIPv6)
    dscp = ((p.data[p.l3_off] & 0x0f) << 2) | (p.data[p.l3_off + 1] >> 6);
  for (size_t i = 0; i < class_match_.size(); ++i) {
    const ClassMatch& m = class_match_[i];
    if (!m.any_dscp && (dscp < 0 || ((m.dscp_mask >> dscp) & 1) == 0)) continue;
    if (!m.ports.empty() && std::find(m.ports.begin(), m.ports.end(), p.out_port) == m.ports.end()) continue;
    if (m.svc_mask != 0 && (p.svc >= 32 || ((m.svc_mask >> p.svc) & 1) == 0)) continue;
    return static_cast<uint32_t>(i);
  }
  return kNoClass;
}

// Shaped packets wait in eg_.waiting, indexed by the shaper's item number, with their buffers.
void Pipeline::shape(Packet& p, uint64_t now) {
  Egress& e = eg_;
  uint32_t q = 0;
  Summary::ShaperClass* cls = nullptr;
  switch (cfg_.shaping.by) {
    case ShapeBy::kFlow:
      q = p.flow_id == kNoFlow ? flows_->capacity() : p.flow_id;
      break;
    case ShapeBy::kPort:
      q = p.out_port;
      break;
    case ShapeBy::kClass:
      q = shaper_class(p);
      if (q == kNoClass) {  // no class: leaves unshaped
        ++e.unclassified;
        e.txq.push_back(p);
        return;
      }
      cls = &e.classes[q];
      break;
  }
  if (e.free_items.empty()) {  // cannot happen: the shaper's pool is the same size
    drops_egress_.add(DropReason::kShaperQueueFull);
    if (cls != nullptr) ++cls->dropped;
    rx_->release(&p, 1);
    return;
  }
  uint64_t item = e.free_items.back();
  switch (shaper_->enqueue(q, item, p.len, now)) {
    case shaper::Verdict::kSend:
      e.txq.push_back(p);
      if (cls != nullptr) {
        ++cls->packets;
        cls->bytes += p.len;
      }
      break;
    case shaper::Verdict::kQueued:
      e.free_items.pop_back();
      e.waiting[item] = p;
      if (cls != nullptr) e.waiting_class[item] = q;
      bump(shaper_delayed_, 1);
      break;
    case shaper::Verdict::kDropTooLarge:
      drops_egress_.add(DropReason::kFrameTooLong);
      if (cls != nullptr) ++cls->dropped;
      rx_->release(&p, 1);
      break;
    default:
      drops_egress_.add(DropReason::kShaperQueueFull);
      if (cls != nullptr) ++cls->dropped;
      rx_->release(&p, 1);
  }
}

void Pipeline::release_shaped(uint64_t now) {
  if (!shaper_) return;
  Egress& e = eg_;
  const bool by_class = cfg_.shaping.by == ShapeBy::kClass;
  for (;;) {
    size_t k = shaper_->poll(now, e.ready);
    for (size_t i = 0; i < k; ++i) {
      const Packet& w = e.waiting[e.ready[i]];
      if (by_class) {
        Summary::ShaperClass& c = e.classes[e.waiting_class[e.ready[i]]];
        ++c.packets;
        c.bytes += w.len;
      }
      e.txq.push_back(w);
      e.free_items.push_back(e.ready[i]);
    }
    transmit(e.txq);
    if (k < e.ready.size()) break;
  }
  std::lock_guard<std::mutex> g(shaper_mu_);
  shaper_stats_ = shaper_->stats();
  shaper_unclassified_ = e.unclassified;
  for (uint32_t i = 0; i < shaper_classes_.size(); ++i) {
    Summary::ShaperClass& c = shaper_classes_[i];
    c.packets = e.classes[i].packets;
    c.bytes = e.classes[i].bytes;
    c.dropped = e.classes[i].dropped;
    c.waiting = shaper_->backlog(i);
    c.throttled = shaper_->throttled(i);
    c.alpha_bytes = shaper_->alpha_bytes(i);
  }
}

// One pass over every lane's completions: order check, drops, shaping, tx. Returns whether any came.
bool Pipeline::egress_poll() {
  Egress& e = eg_;
  bool any = false;
  uint64_t t0 = 0;
  for (size_t li = 0; li < lanes_.size(); ++li) {
    if (stages_on_ && stage_of_[li] + size_t{1} < stage_lanes_.size()) {  // on to the next stage's lanes (stages.cpp)
      any |= forward(li);
      continue;
    }
    size_t n = lanes_[li]->completions().pop_burst(e.refs.data(), e.refs.size());
    if (n == 0) continue;
    uint64_t now = monotonic_ns();
    if (!any) t0 = now;
    any = true;
    uint16_t nd = 0;
    for (size_t i = 0; i < n; ++i) {
      if (i + 4 < n) __builtin_prefetch(e.refs[i + 4]);  // the store's descriptors are not in ring order
      Packet& p = *e.refs[i];
      off_lane(p);
      if (p.drop != DropReason::kNone) {
        drop_at_egress(p);
        Port::buffer_ref(e.dropped[nd++], p);
        continue;
      }
      latency_.add(now - p.rx_ns);
      if (p.svc < kServiceBooks) book_service(p, now - p.rx_ns);
      if (shaper_) shape(p, now);
      else e.txq.push_back(p);
    }
    rx_->release(e.dropped.data(), nd);
    store_->give_back(e.refs.data(), n);  // every descriptor is copied where it goes on (txq, the shaper) or done
    transmit(e.txq);
    egress_handled_[li]->store(egress_handled_[li]->load(std::memory_order_relaxed) + n, std::memory_order_release);  // egress is the one writer
  }
  const uint64_t end = monotonic_ns();
  release_shaped(end);
  if (any) bump(egress_busy_ns_, end - t0);
  return any;
}

// Runs until every lane has ended and what they completed is sent (or, for shaped packets still
// waiting past the drain timeout, counted).
void Pipeline::egress_loop() {
  Egress& e = eg_;
  int idle = 0;
  uint64_t drain_deadline = 0;
  for (;;) {
    if (egress_poll()) {
      idle = 0;
      continue;
    }
    if (lanes_done_.load(std::memory_order_acquire)) {
      // Every lane has ended: what is left is in the completion rings and the shaper.
      bool empty = true;
      for (auto& l : lanes_) empty &= l->completions().empty();
      if (empty) {
        bool shaped_left = shaper_ && e.free_items.size() < e.waiting.size();
        if (!shaped_left) break;
        uint64_t now = monotonic_ns();
        if (drain_deadline == 0) drain_deadline = now + cfg_.shaping.drain_timeout_ns;
        if (now >= drain_deadline) {
          // Whatever still waits is counted, never lost silently.
          std::vector<bool> is_free(e.waiting.size(), false);
          for (uint64_t f : e.free_items) is_free[f] = true;
          for (size_t i = 0; i < e.waiting.size(); ++i)
            if (!is_free[i]) {
              drops_egress_.add(DropReason::kShaperDrain);
              rx_->release(&e.waiting[i], 1);
            }
          break;
        }
      }
    }
    backoff(idle);
  }
  for (Port* tx : txs_) tx->flush();
}

}  // namespace hpr
