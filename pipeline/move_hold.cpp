// Moving a flow without reordering it: its new packets wait here until the old lane has sent every older one.
#include "pipeline/pipeline.hpp"
#include "pipeline/pipeline_internal.hpp"

namespace hpr {
using detail::kNoLane;

namespace {
constexpr uint16_t kGo = 0x8000;  // held_count_ flag: the flow has nothing in flight, its held packets go now
}  // namespace

bool Pipeline::hold_for_move(Packet& p, FlowState& fs, uint8_t to) {
  uint16_t& c = held_count_[p.flow_id];
  if (c == 0 && held_.size() >= cfg_.move_hold) return false;
  // A flow that already holds packets must hold this one behind them: wait for room. (move_hold <= 32767, checked
  // at create, keeps a flow's count below kGo.)
  int rounds = 0;
  while (held_.size() >= cfg_.move_hold)
    if (!flush_held()) wait_step(rounds);
  p.seq = kernels::take_seq(fs, p.flow_id, *app_);
  fs.packets++;
  fs.bytes += p.len;
  held_to_[p.flow_id] = to;  // the latest wish
  ++c;
  held_.push_back(p);
  bump(move_held_, 1);
  return true;
}

bool Pipeline::flush_held() {
  if (held_.empty()) return false;
  // Mark first (enqueueing a flow's first held packet puts it in flight again).
  for (const Packet& p : held_) {
    uint16_t& c = held_count_[p.flow_id];
    if ((c & kGo) == 0 && flows_->in_flight(p.flow_id).load(std::memory_order_acquire) == 0) c |= kGo;
  }
  bool did = false;
  size_t w = 0;
  for (size_t r = 0; r < held_.size(); ++r) {
    Packet& p = held_[r];
    uint16_t& c = held_count_[p.flow_id];
    if ((c & kGo) == 0) {
      held_[w++] = p;
      continue;
    }
    // The flow's first packet out picks a running lane; the ones after it follow it there even if that lane has
    // failed meanwhile (its queue is handed back in order), or they would overtake it (faults_test, two lanes
    // failing: 1 run in 40 reordered).
    uint8_t& lane = held_to_[p.flow_id];
    const bool first_out = flows_->in_flight(p.flow_id).load(std::memory_order_acquire) == 0;
    if (first_out && (lane >= lanes_.size() || lanes_[lane]->state() != LaneState::kRunning)) lane = pick_lane(p.hash, lanes_for(p));
    if (lane == kNoLane) {
      drop_at_dispatch(&p, 1, DropReason::kNoLane);
    } else {
      p.lane = lane;
      flight_add(p.flow_id);
      if (!enqueue(p, lane)) {  // a full queue without backpressure: this packet and the flow's rest wait
        flight_sub(p.flow_id);
        c &= static_cast<uint16_t>(~kGo);
        held_[w++] = p;
        continue;
      }
      flows_->state(p.flow_id).lane = lane;
    }
    did = true;
    c = static_cast<uint16_t>(((c & ~kGo) - 1) | (c & kGo));
    if ((c & ~kGo) == 0) c = 0;
  }
  held_.resize(w);
  return did;
}

}  // namespace hpr
