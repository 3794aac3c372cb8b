// Token-bucket shapers: event-driven refill on a per-core heap, and the periodic baseline.
// Algorithm and sources: shaper.hpp.
#include "scheduler/shaper/shaper.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace hpr::shaper {

static_assert(sizeof(EventShaper::QueueState) == 40, "per-queue state is documented as 40 bytes");
static_assert(sizeof(EventShaper::Slot) == 16, "slot is documented as 16 bytes");
static_assert(EventShaper::kBytesPerQueue == 52);
static_assert(PeriodicShaper::kBytesPerQueue == 44);

template <RefillMode kMode>
Result<BasicShaper<kMode>> BasicShaper<kMode>::create(const ShaperConfig& c) {
  if (c.num_queues == 0 || c.num_queues > CountingEventHeap::kMaxId + 1)
    return error(Code::kInvalidArgument, "shaper: num_queues = {} must be in 1..{}", c.num_queues,
                 CountingEventHeap::kMaxId + 1);
  if (c.pool_slots == 0 || c.pool_slots == kNil)
    return error(Code::kInvalidArgument, "shaper: pool_slots = {} must be in 1..{}", c.pool_slots, kNil - 1);
  if (c.queue_limit_pkts == 0 || c.queue_limit_pkts > 4095)
    return error(Code::kInvalidArgument, "shaper: queue_limit_pkts = {} must be in 1..4095",
                 c.queue_limit_pkts);
  if (c.max_packet_bytes == 0 || c.max_packet_bytes > (1u << 20))
    return error(Code::kInvalidArgument, "shaper: max_packet_bytes = {} must be in 1..1048576",
                 c.max_packet_bytes);
  if (kMode == RefillMode::kPeriodic && (c.refill_period_ns == 0 || c.refill_period_ns > 1'000'000'000'000ull))
    return error(Code::kInvalidArgument, "shaper: refill_period_ns = {} must be in 1..1e12", c.refill_period_ns);
  if (kMode == RefillMode::kEvent && c.adaptive.enabled) {
    if (!(c.adaptive.gamma > 1.0) || c.adaptive.gamma > 1e3)
      return error(Code::kInvalidArgument, "shaper: adaptive.gamma = {} must be in (1, 1000]", c.adaptive.gamma);
    if (c.adaptive.period_ns == 0)
      return error(Code::kInvalidArgument, "shaper: adaptive.period_ns must be > 0");
  }
  BasicShaper s;
  s.config_ = c;
  s.queues_.assign(c.num_queues, QueueState{});
  s.slots_.resize(c.pool_slots);
  for (uint32_t i = 0; i < c.pool_slots; ++i) s.slots_[i].next = i + 1 < c.pool_slots ? i + 1 : kNil;
  s.free_head_ = 0;
  s.free_count_ = c.pool_slots;
  s.ring_.assign(c.num_queues, 0);
  if constexpr (kMode == RefillMode::kEvent) s.heap_ = CountingEventHeap(c.num_queues);
  s.next_sweep_ns_ = c.refill_period_ns;
  return s;
}

template <RefillMode kMode>
Result<uint16_t> BasicShaper<kMode>::add_profile(const ShapingProfile& p) {
  if (profiles_.size() >= 65536) return error(Code::kInvalidArgument, "shaper: 65536 profiles already defined");
  if (p.rate_bytes_per_s == 0 || p.rate_bytes_per_s > 1'000'000'000'000ull)
    return error(Code::kInvalidArgument, "shaper profile: rate_bytes_per_s = {} must be in 1..1e12",
                 p.rate_bytes_per_s);
  if (p.burst_bytes < config_.max_packet_bytes)
    return error(Code::kInvalidArgument,
                 "shaper profile: burst_bytes = {} is below max_packet_bytes = {} (such packets could never leave)",
                 p.burst_bytes, config_.max_packet_bytes);
  if (p.alpha_bytes > p.burst_bytes)
    return error(Code::kInvalidArgument, "shaper profile: alpha_bytes = {} exceeds burst_bytes = {}", p.alpha_bytes,
                 p.burst_bytes);
  // Longest reschedule delay: from -max_packet up to alpha <= burst.
  const unsigned __int128 need_nb =
      (static_cast<unsigned __int128>(p.burst_bytes) + config_.max_packet_bytes) * kNanoBytesPerByte;
  const unsigned __int128 max_delay_ns = need_nb / p.rate_bytes_per_s + 1;
  if (max_delay_ns >= CountingEventHeap::kMaxDelayNs)
    return error(Code::kInvalidArgument,
                 "shaper profile: rate_bytes_per_s = {} is too low for burst_bytes = {}: a reschedule could be "
                 "{:.0f} s away, the heap spans {:.0f} s",
                 p.rate_bytes_per_s, p.burst_bytes, static_cast<double>(max_delay_ns) / 1e9,
                 static_cast<double>(CountingEventHeap::kMaxDelayNs) / 1e9);
  if (kMode == RefillMode::kPeriodic &&
      static_cast<unsigned __int128>(p.rate_bytes_per_s) * config_.refill_period_ns > (uint64_t{1} << 62))
    return error(Code::kInvalidArgument, "shaper profile: rate_bytes_per_s * refill_period_ns overflows");
  if (kMode == RefillMode::kPeriodic &&
      static_cast<unsigned __int128>(p.rate_bytes_per_s) * config_.refill_period_ns >
          static_cast<unsigned __int128>(p.burst_bytes) * kNanoBytesPerByte)
    return error(Code::kInvalidArgument,
                 "shaper profile: burst_bytes = {} is below rate_bytes_per_s * refill_period_ns = {:.0f} bytes: each "
                 "refill would be capped and the queue could not reach its rate",
                 p.burst_bytes, static_cast<double>(p.rate_bytes_per_s) * config_.refill_period_ns / 1e9);
  Profile q{};
  q.rate_bytes_per_s = p.rate_bytes_per_s;
  q.burst_nb = static_cast<int64_t>(p.burst_bytes) * kNanoBytesPerByte;
  q.full_ns = static_cast<uint64_t>(max_delay_ns);
  q.burst_bytes = p.burst_bytes;
  q.alpha_min_bytes = p.alpha_bytes;
  profiles_.push_back(q);
  return static_cast<uint16_t>(profiles_.size() - 1);
}

template <RefillMode kMode>
Status BasicShaper<kMode>::configure_queue(uint32_t queue_id, uint16_t profile_id, uint64_t now_ns) {
  if (queue_id >= config_.num_queues)
    return error(Code::kInvalidArgument, "shaper: queue id {} >= num_queues {}", queue_id, config_.num_queues);
  if (profile_id >= profiles_.size())
    return error(Code::kInvalidArgument, "shaper: unknown profile id {} ({} defined)", profile_id, profiles_.size());
  QueueState& q = queues_[queue_id];
  if (q.backlog != 0 || (q.flags & kThrottled) != 0)
    return error(Code::kUnavailable, "shaper: queue {} is busy ({} packets waiting); reconfigure it when idle",
                 queue_id, q.backlog);
  if ((q.flags & kConfigured) == 0) ++st_.queues_configured;
  const Profile& p = profiles_[profile_id];
  q = QueueState{};
  q.tokens_nb = p.burst_nb;  // initial token fill
  q.last_update_ns = now_ns;
  q.alpha_bytes = p.alpha_min_bytes;
  q.profile = profile_id;
  q.flags = kConfigured;
  if (config_.adaptive.enabled) q.period = static_cast<uint32_t>(now_ns / config_.adaptive.period_ns);
  return Status::ok();
}

template <RefillMode kMode>
Status BasicShaper<kMode>::configure_all(uint16_t profile_id, uint64_t now_ns) {
  for (uint32_t i = 0; i < config_.num_queues; ++i) HPR_RETURN_IF_ERROR(configure_queue(i, profile_id, now_ns));
  return Status::ok();
}

// Eq. (1)-(2) with the cap applied before the deduction: TB = min(TB + (now - T_lu) * BW, burst) - size.
// PeriodicShaper adds no tokens here: only sweeps fill.
template <RefillMode kMode>
bool BasicShaper<kMode>::charge(QueueState& q, uint32_t bytes, uint64_t now_ns) {
  ++st_.bucket_updates;
  if constexpr (kMode == RefillMode::kEvent) {
    const Profile& p = profiles_[q.profile];
    if (now_ns > q.last_update_ns) {
      uint64_t dt = now_ns - q.last_update_ns;
      if (dt >= p.full_ns) {
        q.tokens_nb = p.burst_nb;
      } else {
        q.tokens_nb = std::min<int64_t>(q.tokens_nb + static_cast<int64_t>(dt * p.rate_bytes_per_s), p.burst_nb);
      }
      q.last_update_ns = now_ns;
    }
  }
  q.tokens_nb -= static_cast<int64_t>(bytes) * kNanoBytesPerByte;
  return q.tokens_nb >= 0;
}

// Eq. (14), applied lazily for every sampling period that ended since the queue's last reschedule.
template <RefillMode kMode>
uint32_t BasicShaper<kMode>::adapt_alpha(QueueState& q, const Profile& p, uint64_t now_ns) {
  const AdaptiveAlphaConfig& a = config_.adaptive;
  uint32_t period = static_cast<uint32_t>(now_ns / a.period_ns);
  if (period != q.period) {
    double alpha = q.alpha_bytes;
    alpha = q.delta > a.delta_th ? alpha * a.gamma : alpha / a.gamma;  // close q.period
    uint32_t idle = period > q.period ? period - q.period - 1 : 0;  // periods with delta = 0
    for (uint32_t i = 0; i < idle && alpha > p.alpha_min_bytes; ++i) alpha /= a.gamma;
    alpha = std::clamp(alpha, static_cast<double>(p.alpha_min_bytes), static_cast<double>(p.burst_bytes));
    q.alpha_bytes = static_cast<uint32_t>(std::lround(alpha));
    q.period = period;
    q.delta = 0;
  }
  if (q.delta != 255) ++q.delta;
  return q.alpha_bytes;
}

// Algorithm 1 lines 7-13: the bucket went negative; disable the queue until it holds alpha again.
template <RefillMode kMode>
void BasicShaper<kMode>::throttle(uint32_t queue_id, QueueState& q, uint32_t head_bytes, uint64_t now_ns) {
  q.flags = static_cast<uint8_t>(q.flags | kThrottled | kPrepaid);
  ++throttled_count_;
  ++st_.reschedules;
  if constexpr (kMode == RefillMode::kEvent) {
    const Profile& p = profiles_[q.profile];
    uint32_t alpha = config_.adaptive.enabled ? adapt_alpha(q, p, now_ns) : q.alpha_bytes;
    // The prepaid head leaves at T_resch with alpha left; the bucket then really holds
    // alpha + head, which must stay within the burst.
    alpha = std::min(alpha, p.burst_bytes - head_bytes);
    const uint64_t need_nb = static_cast<uint64_t>(static_cast<int64_t>(alpha) * kNanoBytesPerByte - q.tokens_nb);
    const uint64_t delay_ns = (need_nb + p.rate_bytes_per_s - 1) / p.rate_bytes_per_s;  // eq. (4), rounded up
    q.tokens_nb += static_cast<int64_t>(delay_ns * p.rate_bytes_per_s);                // eq. (7), exact
    q.last_update_ns = now_ns + delay_ns;                                               // eq. (5)-(6)
    heap_.push(q.last_update_ns, queue_id);
  }
}

template <RefillMode kMode>
void BasicShaper<kMode>::wake(uint32_t queue_id) {
  QueueState& q = queues_[queue_id];
  q.flags = static_cast<uint8_t>(q.flags & ~kThrottled);
  --throttled_count_;
  ++st_.wakeups;
  ++st_.bucket_updates;  // enabling the queue is a write to its state
  if (q.backlog != 0) ring_push(queue_id);
}

template <RefillMode kMode>
void BasicShaper<kMode>::ring_push(uint32_t queue_id) {
  QueueState& q = queues_[queue_id];
  if ((q.flags & kOnRing) != 0) return;
  q.flags = static_cast<uint8_t>(q.flags | kOnRing);
  size_t pos = ring_head_ + ring_count_;
  if (pos >= ring_.size()) pos -= ring_.size();
  ring_[pos] = queue_id;
  ++ring_count_;
}

template <RefillMode kMode>
void BasicShaper<kMode>::append(QueueState& q, uint64_t item, uint32_t bytes) {
  uint32_t s = free_head_;
  free_head_ = slots_[s].next;
  --free_count_;
  slots_[s] = Slot{item, kNil, bytes};
  if (q.tail == kNil) {
    q.head = s;
  } else {
    slots_[q.tail].next = s;
  }
  q.tail = s;
  ++q.backlog;
}

template <RefillMode kMode>
Verdict BasicShaper<kMode>::enqueue(uint32_t queue_id, uint64_t item, uint32_t bytes, uint64_t now_ns) {
  if (queue_id >= config_.num_queues || (queues_[queue_id].flags & kConfigured) == 0) {
    ++st_.drops_unknown_queue;
    return Verdict::kDropUnknownQueue;
  }
  if (bytes > config_.max_packet_bytes) {
    ++st_.drops_too_large;
    return Verdict::kDropTooLarge;
  }
  QueueState& q = queues_[queue_id];
  const bool idle = (q.flags & kThrottled) == 0 && q.backlog == 0;
  if (idle) {
    ++st_.enqueued;
    if (charge(q, bytes, now_ns)) {
      ++st_.sent_pkts;
      st_.sent_bytes += bytes;
      return Verdict::kSend;
    }
    if (free_count_ == 0) {  // nowhere to keep the prepaid packet: undo the deduction, drop
      q.tokens_nb += static_cast<int64_t>(bytes) * kNanoBytesPerByte;
      --st_.enqueued;
      ++st_.drops_queue_full;
      return Verdict::kDropQueueFull;
    }
    append(q, item, bytes);
    throttle(queue_id, q, bytes, now_ns);
    return Verdict::kQueued;
  }
  if (q.backlog >= config_.queue_limit_pkts || free_count_ == 0) {
    ++st_.drops_queue_full;
    return Verdict::kDropQueueFull;
  }
  ++st_.enqueued;
  append(q, item, bytes);
  if ((q.flags & kThrottled) == 0) ring_push(queue_id);
  return Verdict::kQueued;
}

// PeriodicShaper: `periods` refills of rate * refill_period_ns each, over every queue.
template <RefillMode kMode>
void BasicShaper<kMode>::sweep(uint64_t periods) {
  ++st_.refill_sweeps;
  for (uint32_t i = 0; i < config_.num_queues; ++i) {
    QueueState& q = queues_[i];
    if ((q.flags & kConfigured) == 0) continue;
    const Profile& p = profiles_[q.profile];
    ++st_.bucket_updates;
    unsigned __int128 add = static_cast<unsigned __int128>(p.rate_bytes_per_s) * config_.refill_period_ns * periods;
    unsigned __int128 room = static_cast<unsigned __int128>(p.burst_nb - q.tokens_nb);
    q.tokens_nb = add >= room ? p.burst_nb : q.tokens_nb + static_cast<int64_t>(add);
    if ((q.flags & kThrottled) != 0 && q.tokens_nb >= 0) wake(i);
  }
}

template <RefillMode kMode>
size_t BasicShaper<kMode>::poll(uint64_t now_ns, std::span<uint64_t> out) {
  if constexpr (kMode == RefillMode::kEvent) {
    heap_.pop_expired(now_ns, [this](uint32_t id, uint64_t) { wake(id); });
  } else {
    if (now_ns >= next_sweep_ns_) {
      uint64_t periods = (now_ns - next_sweep_ns_) / config_.refill_period_ns + 1;
      sweep(periods);
      next_sweep_ns_ += periods * config_.refill_period_ns;
    }
  }
  size_t n = 0;
  size_t rounds = ring_count_;
  while (rounds-- != 0 && n < out.size()) {
    uint32_t id = ring_[ring_head_];
    if (++ring_head_ == ring_.size()) ring_head_ = 0;
    --ring_count_;
    QueueState& q = queues_[id];
    q.flags = static_cast<uint8_t>(q.flags & ~kOnRing);
    while (q.backlog != 0 && n < out.size()) {
      Slot& s = slots_[q.head];
      if ((q.flags & kPrepaid) != 0) {
        q.flags = static_cast<uint8_t>(q.flags & ~kPrepaid);
      } else if (!charge(q, s.bytes, now_ns)) {
        throttle(id, q, s.bytes, now_ns);
        break;
      }
      out[n++] = s.item;
      ++st_.sent_pkts;
      st_.sent_bytes += s.bytes;
      uint32_t next = s.next;
      s.next = free_head_;
      free_head_ = q.head;
      ++free_count_;
      q.head = next;
      if (next == kNil) q.tail = kNil;
      --q.backlog;
    }
    if (q.backlog != 0 && (q.flags & kThrottled) == 0) ring_push(id);
  }
  return n;
}

template <RefillMode kMode>
uint64_t BasicShaper<kMode>::next_event_ns() const {
  if (ring_count_ != 0) return 0;
  if constexpr (kMode == RefillMode::kEvent) {
    return heap_.empty() ? std::numeric_limits<uint64_t>::max() : heap_.top_time_ns();
  } else {
    return throttled_count_ == 0 ? std::numeric_limits<uint64_t>::max() : next_sweep_ns_;
  }
}

template <RefillMode kMode>
ShaperStats BasicShaper<kMode>::stats() const {
  ShaperStats s = st_;
  s.queues_throttled = throttled_count_;
  s.heap_size = heap_.size();
  s.heap_high_water = heap_.high_water();
  s.waiting_pkts = config_.pool_slots - free_count_;
  s.heap_touches = heap_.touches_total();
  return s;
}

template <RefillMode kMode>
size_t BasicShaper<kMode>::memory_bytes() const {
  return queues_.capacity() * sizeof(QueueState) + ring_.capacity() * sizeof(uint32_t) + heap_.memory_bytes() +
         slots_.capacity() * sizeof(Slot) + profiles_.capacity() * sizeof(Profile);
}

template class BasicShaper<RefillMode::kEvent>;
template class BasicShaper<RefillMode::kPeriodic>;

}  // namespace hpr::shaper
