#pragma once
// Token-bucket shaping for up to millions of output queues, after Kim et al., "Scalable Bandwidth
// Shaping Scheme via Adaptively Managed Parallel Heaps in Manycore-Based Network Processors",
// ACM TODAES 22(4) 2017 (docs/shaper.md has the full story and the measured figures).
//
//  * One token bucket per queue: committed rate (bytes/s), burst (bytes, the bucket size) and a
//    reschedule threshold alpha (bytes), eq. (1)-(3) of §2.2, in exact integer arithmetic (tokens
//    are kept in 1e-9 byte units, so rate_bytes_per_s * ns adds without rounding).
//  * EventShaper: event-driven refill (§3.1.1, Algorithm 1). When a packet finds too few tokens
//    the queue is disabled and (T_resch = now + (alpha - TB) / rate, queue id) goes into this
//    shaper's array-based min-heap of 8-byte nodes (event_heap.hpp). poll() pops every node whose
//    time has passed and re-enables those queues. Buckets of idle queues are never touched.
//  * PeriodicShaper: the conventional baseline (§2.2, Fig. 2a) with the same interface: every
//    refill_period_ns all buckets get rate * period tokens (a sweep over every queue).
//  * Adaptive alpha (§3.3, eq. 14): per queue, at the end of each sampling period,
//    alpha *= gamma if the queue was rescheduled more than delta_th times in it, else
//    alpha = max(alpha / gamma, alpha_min). Evaluated lazily at the queue's next reschedule (the
//    only moment alpha is used), so there is no sweep over queues; alpha never exceeds the burst.
//  * Per-core: one shaper per core, no locks, no shared writes. QueuePartition maps a global queue
//    id to (owner core, local id). The paper places a queue on the heap of the core that happened
//    to send its packet; here the owner core is fixed, so a queue's bucket is written by one core.
//
// Deviation from Algorithm 1, for strict conformance. Algorithm 1 sends a packet whenever the
// queue is enabled and lets the bucket go negative afterwards, so a burst can exceed the burst by
// one packet. Here a packet leaves only if the bucket covers it; otherwise the packet is charged
// anyway (the bucket goes negative exactly as in line 6), stays at the head of its queue
// "prepaid", and leaves at T_resch, when the bucket is back at alpha. The bucket evolves exactly as
// in Algorithm 1; only the departure of the packet that made it negative moves to T_resch. With
// queue_limit_pkts = 1 arrivals during the disabled period are dropped, which is the regime the
// paper's model (§3.2) describes. Output of a queue conforms to (rate, burst): over any interval
// [t1, t2] it sends at most burst + rate * (t2 - t1) bytes (tests/shaper check this exactly).
//
// Memory (fixed at create(), nothing allocated afterwards):
//   EventShaper:    kEventBytesPerQueue = 52 bytes per queue (40 state + 4 ready ring + 8 heap
//                   node) + 16 bytes per packet slot (ShaperConfig::pool_slots) + 32 per profile.
//   PeriodicShaper: kPeriodicBytesPerQueue = 44 bytes per queue (no heap) + the same per slot.
//   One million queues with 1 Mi slots: 52 MiB + 16 MiB (tests/shaper assert memory_bytes()).
//
// Hot path (enqueue, poll): no allocation, no exceptions, no locks; errors are verdicts and
// counters. Setup (create, add_profile, configure_queue) returns Status / Result.
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "hpr/status.hpp"
#include "scheduler/shaper/event_heap.hpp"

namespace hpr::shaper {

inline constexpr uint32_t kNil = 0xffffffffu;
inline constexpr int64_t kNanoBytesPerByte = 1'000'000'000;  // token unit: 1e-9 byte

// What enqueue() did with a packet.
enum class Verdict : uint8_t {
  kSend = 0,          // conforming now: the caller transmits it at once (fast path, no queueing)
  kQueued,            // waits in its queue; a later poll() returns its item
  kDropQueueFull,     // queue at queue_limit_pkts or the slot pool is empty: count as
                      // DropReason::kShaperQueueFull
  kDropTooLarge,      // bytes > max_packet_bytes (could never conform): DropReason::kFrameTooLong
  kDropUnknownQueue,  // queue id >= num_queues or not configured (a caller bug); counted
};

struct ShapingProfile {
  uint64_t rate_bytes_per_s = 0;  // committed rate (CIR), 1 .. 1e12
  uint32_t burst_bytes = 0;       // bucket size (CBE), >= ShaperConfig::max_packet_bytes
  uint32_t alpha_bytes = 0;       // reschedule threshold alpha (and alpha_min when adaptive), <= burst
};

// Eq. (14). Off by default: alpha stays at the profile's alpha_bytes.
struct AdaptiveAlphaConfig {
  bool enabled = false;
  double gamma = 2.0;                     // multiplicative factor, > 1
  uint32_t delta_th = 3;                  // reschedules per sampling period before alpha grows
  uint64_t period_ns = 1'000'000'000;     // sampling period
};

struct ShaperConfig {
  uint32_t num_queues = 0;           // local queues of this core, 1 .. 2^24
  uint32_t pool_slots = 0;           // packets that may wait at once, shared by all queues, >= 1
  uint16_t queue_limit_pkts = 64;    // packets that may wait per queue, 1 .. 4095
  uint32_t max_packet_bytes = 9216;  // larger packets are dropped (kDropTooLarge)
  uint64_t refill_period_ns = 1'000'000;  // PeriodicShaper only
  AdaptiveAlphaConfig adaptive;           // EventShaper only
};

// Counters since create(); monotonic except the gauges (marked). The daemon's telemetry shows
// shaped queues, heap size and reschedules per second (difference of `reschedules` over time).
struct ShaperStats {
  uint64_t queues_configured = 0;  // gauge: shaped queues
  uint64_t queues_throttled = 0;   // gauge: disabled queues (EventShaper: == heap_size)
  uint64_t heap_size = 0;          // gauge
  uint64_t heap_high_water = 0;    // gauge: largest heap size seen
  uint64_t waiting_pkts = 0;       // gauge: packets held in queues
  uint64_t enqueued = 0;
  uint64_t sent_pkts = 0;          // kSend verdicts + items returned by poll()
  uint64_t sent_bytes = 0;
  uint64_t reschedules = 0;        // queues disabled (heap inserts for EventShaper)
  uint64_t wakeups = 0;            // queues re-enabled (heap deletes / sweep wakeups)
  uint64_t drops_queue_full = 0;
  uint64_t drops_too_large = 0;
  uint64_t drops_unknown_queue = 0;
  uint64_t bucket_updates = 0;     // token bucket read-modify-writes (send, refill, wake)
  uint64_t refill_sweeps = 0;      // PeriodicShaper: sweeps over all queues
  uint64_t heap_touches = 0;       // heap node reads + writes
};

// Global queue id <-> (owner core, local id): queue q belongs to core q % cores.
struct QueuePartition {
  uint32_t cores = 1;
  uint32_t owner(uint64_t global_id) const { return static_cast<uint32_t>(global_id % cores); }
  uint32_t local(uint64_t global_id) const { return static_cast<uint32_t>(global_id / cores); }
  uint64_t global(uint32_t core, uint32_t local_id) const { return uint64_t{local_id} * cores + core; }
  // Local queues core `core` owns out of `total` global queues.
  uint32_t local_count(uint32_t core, uint64_t total) const {
    return static_cast<uint32_t>(total / cores + (core < total % cores ? 1 : 0));
  }
};

enum class RefillMode : uint8_t { kEvent, kPeriodic };

template <RefillMode kMode>
class BasicShaper {
 public:
  // Per-queue state: 40 bytes, two per 64-byte line... almost (see static_assert in shaper.cpp).
  struct QueueState {
    int64_t tokens_nb = 0;        // TB_i in 1e-9 bytes; negative while a prepaid head waits
    uint64_t last_update_ns = 0;  // T_lu_i
    uint32_t alpha_bytes = 0;     // alpha_i (adaptive)
    uint32_t head = kNil;         // first waiting slot
    uint32_t tail = kNil;         // last waiting slot
    uint32_t period = 0;          // sampling period that `delta` counts (adaptive alpha)
    uint16_t profile = 0;
    uint16_t backlog = 0;         // waiting packets
    uint8_t delta = 0;            // reschedules in `period` (delta_i), saturating at 255
    uint8_t flags = 0;
    uint16_t pad = 0;
  };
  struct Slot {
    uint64_t item;
    uint32_t next;
    uint32_t bytes;
  };

  static constexpr size_t kBytesPerQueue =
      sizeof(QueueState) + sizeof(uint32_t) + (kMode == RefillMode::kEvent ? sizeof(uint64_t) : 0);
  static constexpr size_t kBytesPerSlot = sizeof(Slot);

  // Errors: kInvalidArgument naming the field (num_queues, pool_slots, queue_limit_pkts,
  // max_packet_bytes, refill_period_ns, adaptive.gamma, adaptive.period_ns) and its bounds.
  static Result<BasicShaper> create(const ShaperConfig& config);

  // Registers a profile; returns its id (0, 1, ...). Errors: kInvalidArgument when rate is 0 or
  // > 1e12, burst < max_packet_bytes, alpha > burst, the longest reschedule delay
  // (burst + max_packet) / rate exceeds the heap's 549 s span, or 65,536 profiles exist.
  Result<uint16_t> add_profile(const ShapingProfile& profile);

  // (Re)configures a local queue with a profile; its bucket starts full (initial fill) at now_ns.
  // Errors: kInvalidArgument for a queue id >= num_queues or an unknown profile id;
  // kUnavailable if the queue has packets waiting or is disabled (reconfigure when idle).
  Status configure_queue(uint32_t queue_id, uint16_t profile_id, uint64_t now_ns);
  // Every local queue, same profile (the "default per-flow rate").
  Status configure_all(uint16_t profile_id, uint64_t now_ns);

  // Offers one packet (item: an opaque handle, e.g. a packet index) to queue_id at now_ns.
  // kSend: transmit now. kQueued: poll() returns the item later. kDrop*: the caller counts it.
  Verdict enqueue(uint32_t queue_id, uint64_t item, uint32_t bytes, uint64_t now_ns);

  // After each batch: wakes queues whose reschedule time <= now_ns (EventShaper) or runs the
  // refill sweeps due by now_ns (PeriodicShaper), then writes items that may leave now into out,
  // oldest first per queue. Returns how many were written; if out fills up, the rest wait for the
  // next poll (has_ready() tells).
  size_t poll(uint64_t now_ns, std::span<uint64_t> out);

  bool has_ready() const { return ring_count_ != 0; }
  // Earliest time a poll() can release something: now-ish if has_ready(), else the heap root
  // (EventShaper) or the next sweep (PeriodicShaper); UINT64_MAX when nothing waits.
  uint64_t next_event_ns() const;

  ShaperStats stats() const;
  const ShaperConfig& config() const { return config_; }
  uint32_t num_queues() const { return config_.num_queues; }
  // Bytes of every array this shaper allocated (state, ring, heap, slots, profiles).
  size_t memory_bytes() const;
  // Introspection for tests, benchmarks and telemetry.
  bool throttled(uint32_t queue_id) const { return (queues_[queue_id].flags & kThrottled) != 0; }
  uint32_t alpha_bytes(uint32_t queue_id) const { return queues_[queue_id].alpha_bytes; }
  uint32_t backlog(uint32_t queue_id) const { return queues_[queue_id].backlog; }
  const CountingEventHeap& heap() const { return heap_; }
  CountingEventHeap& heap() { return heap_; }

 private:
  static constexpr uint8_t kConfigured = 1, kThrottled = 2, kPrepaid = 4, kOnRing = 8;
  struct Profile {
    uint64_t rate_bytes_per_s;
    int64_t burst_nb;
    uint64_t full_ns;  // refill beyond this many ns always reaches the burst
    uint32_t burst_bytes;
    uint32_t alpha_min_bytes;
  };

  BasicShaper() = default;
  bool charge(QueueState& q, uint32_t bytes, uint64_t now_ns);
  void throttle(uint32_t queue_id, QueueState& q, uint32_t head_bytes, uint64_t now_ns);
  uint32_t adapt_alpha(QueueState& q, const Profile& p, uint64_t now_ns);
  void wake(uint32_t queue_id);
  void sweep(uint64_t periods);
  void ring_push(uint32_t queue_id);
  void append(QueueState& q, uint64_t item, uint32_t bytes);

  ShaperConfig config_{};
  std::vector<QueueState> queues_;
  std::vector<Profile> profiles_;
  std::vector<Slot> slots_;
  uint32_t free_head_ = kNil;
  uint32_t free_count_ = 0;
  std::vector<uint32_t> ring_;  // queues enabled with packets waiting, each at most once
  size_t ring_head_ = 0;
  size_t ring_count_ = 0;
  CountingEventHeap heap_;      // EventShaper only (capacity 0 for PeriodicShaper)
  uint64_t next_sweep_ns_ = 0;  // PeriodicShaper only
  uint64_t throttled_count_ = 0;
  ShaperStats st_{};
};

using EventShaper = BasicShaper<RefillMode::kEvent>;
using PeriodicShaper = BasicShaper<RefillMode::kPeriodic>;

extern template class BasicShaper<RefillMode::kEvent>;
extern template class BasicShaper<RefillMode::kPeriodic>;

}  // namespace hpr::shaper
