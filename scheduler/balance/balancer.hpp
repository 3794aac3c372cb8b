#pragma once
// CPU-side load balancers: one batch interface for the daemon's dispatcher and the simulator
// (bench/balance). A burst of classified packets (PacketMeta) and the lanes' state (LaneTable) in,
// one lane per packet out.
//
// Policies (make_balancer names):
//   "rr"       round robin per burst: the whole burst goes to the next lane (the RR peer of
//              subflow-adaptive-hrw.txt §4, "to be consistent with our Subflow-based scheduling").
//   "crc16", "crc32"  hash of the 5-tuple through a map table of `map_table_size` buckets
//              (LAPS §III-B; lanes are added/removed by re-pointing buckets, set_lanes()).
//   "hrw"      highest random weight, weight function of subflow-adaptive-hrw.txt eq. 2.
//   "whrw"     weighted HRW for lanes of different capacity: score_j = -w_j / ln(u_j),
//              u_j = (eq.2 + 1) / 2^31 (logarithmic method, Schindelhauer & Schomaker 2005):
//              lane j wins a share w_j / sum(w) of the flows, minimal disruption kept.
//   "ahrw"     adaptive HRW per packet: when the HRW target's load factor tau = queued/capacity is
//              over the threshold, re-decide with eq. 3 (weight mu_j * eq.2, mu_j = 1 - tau_j, over
//              the other lanes).
//   "subflow"  Algorithm 1 of subflow-adaptive-hrw.txt: per-burst decision array target[bsz]
//              indexed by flow_hash % bsz; HRW decides a subflow once; when nothing of this burst
//              is staged for the target yet (n_mbufs == 0, the DPDK lb app's per-worker output
//              buffer) and its load factor is over the threshold (25%), eq. 3 re-decides and the
//              decision array keeps the adjusted lane for the rest of the burst.
//   "fcfs"     join-the-shortest-queue per packet (LAPS §V's FCFS: no flow or i-cache locality).
//   "afs"      arbitrary flow shift (LAPS §V-B, Dittmann): CRC16 map table over all lanes; when a
//              packet's target queue reaches `imbalance_queue`, its flow (any flow) is migrated to
//              the least loaded lane through the migration table.
//   "laps"     LAPS (laps-hash-afd-load-balancing.txt §III-B..D, Fig. 8): per-service linear-hash
//              map tables (CRC16), migration table checked first, Aggressive Flow Detector; under
//              imbalance (target queue >= imbalance_queue) only aggressive flows (in the AFC)
//              migrate to the service's least loaded lane; dynamic core allocation: a lane idle for
//              idle_th_ns is marked surplus, a service whose lanes are all over the threshold takes
//              the longest-surplus lane of another service (linear hashing grows/shrinks by one).
//
// No-reorder rule (all policies, config no_reorder, default on): a flow changes lane only when it
// has no packet queued or in flight (LaneTable::flow_pending == 0); a refused change is counted in
// blocked_moves / would_reorder. With no_reorder = false moves happen and would_reorder counts the
// packets sent to a new lane while older packets of their flow were still pending.
//
// Hot path: assign() does not allocate, throw or lock; fixed arrays are sized at creation.
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "hpr/status.hpp"
#include "scheduler/balance/types.hpp"

namespace hpr::balance {

struct BalancerConfig {
  uint32_t lanes = 4;               // number of lanes (1..kMaxLanes)
  std::vector<float> lane_weights;  // whrw: relative capacities (empty: all 1)
  uint32_t flow_slots = 1u << 16;   // per-flow arrays (power of two); flow_id & (flow_slots-1)
  bool no_reorder = true;
  uint32_t map_table_size = 256;  // crc16/crc32/afs buckets
  uint32_t burst_max = 256;       // largest burst assign() accepts (subflow: bsz_rd)
  double load_threshold = 0.25;   // subflow/ahrw: tau threshold (paper §4.1: 25%)
  // LAPS / AFS
  uint32_t services = 1;          // laps: number of services (partitions); PacketMeta::service < services
  uint32_t imbalance_queue = 24;  // queue length that signals load imbalance (packets)
  uint32_t afc_entries = 16;
  uint32_t annex_entries = 512;
  uint32_t annex_ways = 4;
  uint32_t afd_sample_every = 1;
  uint32_t afd_decay_packets = 0;
  uint64_t idle_th_ns = 10'000;  // LAPS §III-C-2: 10 us
  bool dynamic_cores = true;     // laps: allow core reallocation between services
  // Per-flow decision cache (one 8-byte entry per flow slot, tagged with the flow hash): the 5-tuple
  // CRC of crc16/crc32/afs/laps and the HRW/whrw/subflow lane of a flow under the current set of
  // enabled lanes are computed on a flow's first packet only. Off: computed for every packet.
  bool flow_cache = true;
};

class Balancer {
 public:
  virtual ~Balancer() = default;
  virtual std::string_view name() const = 0;

  // Chooses a lane for every packet of `burst` into out[0..burst.size()), and records each choice in
  // `table` (lanes[lane].queued += 1, flow_pending[flow] += 1). Requires out.size() >= burst.size(),
  // burst.size() <= burst_max and table.lanes.size() == the configured lane count (checked only by
  // assert: hot path). Disabled lanes are never chosen while one is enabled.
  void assign(std::span<const PacketMeta> burst, LaneTable& table, std::span<uint16_t> out);

  // Changes the number of lanes (add or remove at the end). Hash policies re-point the fewest map
  // buckets; HRW moves ~1/n of the flows by construction. Errors: kInvalidArgument when n is 0 or
  // > kMaxLanes, or for laps (its partitions are reallocated internally).
  virtual Status set_lanes(uint32_t n);
  // New relative capacities (whrw; others ignore them). Cached lane decisions are recomputed; the
  // no-reorder rule still keeps a flow where it is while it has packets pending.
  // Errors: kInvalidArgument when the count differs from the lanes or a weight is negative.
  Status set_lane_weights(std::span<const float> w);

  const BalancerStats& stats() const { return stats_; }
  const BalancerConfig& config() const { return cfg_; }

 protected:
  explicit Balancer(const BalancerConfig& cfg);
  virtual void do_assign(std::span<const PacketMeta> burst, LaneTable& table, std::span<uint16_t> out) = 0;

  // True when the flow may change lane now (nothing pending, or the rule is off).
  bool can_move(const PacketMeta& p, const LaneTable& t) const {
    return !cfg_.no_reorder || t.flow_pending[p.flow_id & flow_mask_] == 0;
  }
  uint16_t last_lane(const PacketMeta& p) const { return flows_[p.flow_id & flow_mask_].lane; }
  // Applies the no-reorder rule to `want`, books the packet in `t`, returns the final lane.
  uint16_t commit(const PacketMeta& p, uint16_t want, LaneTable& t);
  uint16_t least_loaded(const LaneTable& t) const;
  // Cached per-flow value (see BalancerConfig::flow_cache). `tag` distinguishes what is cached
  // (lane decisions carry the lane-set epoch).
  template <typename F>
  uint32_t cached(const PacketMeta& p, F&& compute) {
    if (!cfg_.flow_cache) return compute();
    uint64_t& e = flows_[p.flow_id & flow_mask_].cache;
    if (static_cast<uint32_t>(e >> 32) == p.flow_hash && (e & 0x80000000u))
      return static_cast<uint32_t>(e & 0x7fffffffu);
    uint32_t v = compute();
    e = (static_cast<uint64_t>(p.flow_hash) << 32) | 0x80000000u | (v & 0x7fffffffu);
    return v;
  }
  // HRW-family lane through the cache: valid while the set of enabled lanes is unchanged.
  template <typename F>
  uint16_t cached_lane(const PacketMeta& p, F&& compute) {
    uint32_t v = cached(p, [&] { return (static_cast<uint32_t>(epoch_ & 0x7fff) << 16) | compute(); });
    if ((v >> 16) != (epoch_ & 0x7fff)) {  // stale epoch: recompute and store
      uint32_t nv = (static_cast<uint32_t>(epoch_ & 0x7fff) << 16) | compute();
      flows_[p.flow_id & flow_mask_].cache = (static_cast<uint64_t>(p.flow_hash) << 32) | 0x80000000u | nv;
      return static_cast<uint16_t>(nv & 0xffff);
    }
    return static_cast<uint16_t>(v & 0xffff);
  }

  BalancerConfig cfg_;
  BalancerStats stats_;
  uint32_t flow_mask_;
  // Per flow slot, one 16-byte record so a packet touches one cache line of balancer state.
  struct FlowSlot {
    uint64_t cache = 0;          // flow_hash << 32 | valid bit | value (31 bits)
    uint32_t aux = 0xffffffffu;  // policy use (afs/laps: migration-table entry)
    uint16_t lane = kNoLane;     // last lane
    uint16_t pad = 0;
  };
  std::vector<FlowSlot> flows_;
  uint32_t epoch_ = 0;  // bumps when the enabled-lane set changes
  uint64_t lane_mask_ = 0;
};

// Creates a policy by name (see the list above). Errors: kInvalidArgument for an unknown name (the
// message lists the known ones) or a bad setting (names the setting and the allowed range).
Result<std::unique_ptr<Balancer>> make_balancer(std::string_view name, const BalancerConfig& cfg);

// The names make_balancer accepts.
std::span<const std::string_view> balancer_names();

}  // namespace hpr::balance
