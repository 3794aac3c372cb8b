#include "scheduler/balance/selection.hpp"

namespace hpr::balance {

Result<SelectionScheduler> SelectionScheduler::create(std::string_view name, const SelectionConfig& cfg) {
  SelectionPolicy p;
  if (name == "fcfs")
    p = SelectionPolicy::kFcfs;
  else if (name == "la")
    p = SelectionPolicy::kLa;
  else if (name == "lap")
    p = SelectionPolicy::kLap;
  else
    return error(Code::kInvalidArgument, "unknown selection scheduler '{}' (known: fcfs, la, lap)", name);
  if (cfg.buffer == 0 || cfg.buffer > (1u << 20))
    return error(Code::kInvalidArgument, "selection setting 'buffer' must be in 1..2^20 (got {})", cfg.buffer);
  if (cfg.apps == 0 || cfg.apps > 255)
    return error(Code::kInvalidArgument, "selection setting 'apps' must be in 1..255 (got {})", cfg.apps);
  if (cfg.processors == 0) return error(Code::kInvalidArgument, "selection setting 'processors' must be >= 1");
  return SelectionScheduler(p, cfg);
}

SelectionScheduler::SelectionScheduler(SelectionPolicy p, const SelectionConfig& cfg)
    : policy_(p),
      cfg_(cfg),
      slots_(cfg.buffer),
      ahead_(cfg.apps, kNil),
      atail_(cfg.apps, kNil),
      est_(cfg.apps, 0),
      warm_count_(cfg.apps, 0),
      warm_(cfg.processors, kCold) {
  free_.reserve(cfg.buffer);
  for (uint32_t i = cfg.buffer; i-- > 0;) free_.push_back(i);
}

bool SelectionScheduler::push(uint32_t id, uint8_t app, uint64_t est_ns) {
  if (free_.empty() || app >= cfg_.apps) return false;
  uint32_t s = free_.back();
  free_.pop_back();
  Slot& e = slots_[s];
  e = Slot{id, est_ns, app, tail_, kNil, atail_[app], kNil};
  if (tail_ != kNil)
    slots_[tail_].next = s;
  else
    head_ = s;
  tail_ = s;
  if (atail_[app] != kNil)
    slots_[atail_[app]].anext = s;
  else
    ahead_[app] = s;
  atail_[app] = s;
  est_[app] += est_ns;
  total_est_ += est_ns;
  ++size_;
  return true;
}

void SelectionScheduler::unlink(uint32_t s) {
  Slot& e = slots_[s];
  if (e.prev != kNil)
    slots_[e.prev].next = e.next;
  else
    head_ = e.next;
  if (e.next != kNil)
    slots_[e.next].prev = e.prev;
  else
    tail_ = e.prev;
  if (e.aprev != kNil)
    slots_[e.aprev].anext = e.anext;
  else
    ahead_[e.app] = e.anext;
  if (e.anext != kNil)
    slots_[e.anext].aprev = e.aprev;
  else
    atail_[e.app] = e.aprev;
  est_[e.app] -= e.est_ns;
  total_est_ -= e.est_ns;
  --size_;
  free_.push_back(s);
}

std::optional<SelectionScheduler::Pick> SelectionScheduler::pick(uint32_t u) {
  if (head_ == kNil || u >= cfg_.processors) return std::nullopt;
  uint8_t a = warm_[u];
  uint32_t s = head_;
  if (a != kCold && ahead_[a] != kNil) {
    if (policy_ == SelectionPolicy::kLa) {
      s = ahead_[a];
    } else if (policy_ == SelectionPolicy::kLap) {
      // keep u on a if leaving would drop w_t(a) below f_B(a):  w - 1/m < f  <=>  warm-1 < f*m
      double lhs = static_cast<double>(warm_count_[a]) - 1.0;
      double rhs = static_cast<double>(est_[a]) * cfg_.processors / static_cast<double>(total_est_);
      if (lhs < rhs) s = ahead_[a];
    }
  }
  Pick p{slots_[s].id, slots_[s].app, slots_[s].app != a};
  unlink(s);
  if (p.cold) {
    if (a != kCold) --warm_count_[a];
    ++warm_count_[p.app];
    warm_[u] = p.app;
  }
  return p;
}

}  // namespace hpr::balance
