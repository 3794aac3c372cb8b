#pragma once
// Data types shared by every CPU-side balancer (hpr::balance) and the simulator in bench/balance.
//
// The dispatcher (runtime/) converts each classified hpr::Packet into a PacketMeta; the lanes'
// state lives in a LaneTable the dispatcher owns and the balancer updates as it assigns packets
// (queue occupancy +1 per lane, pending +1 per flow). The dispatcher decrements both when a packet
// completes or is dropped. A balancer never allocates, throws or locks in assign().
#include <cstdint>
#include <span>

namespace hpr::balance {

inline constexpr uint16_t kNoLane = 0xffff;
inline constexpr uint32_t kMaxLanes = 64;  // fixed arrays in the balancers are sized by this

// 5-tuple as host-order integers. CRC16/CRC32 policies hash its 13 canonical bytes
// (src_ip, dst_ip, src_port, dst_port, proto, big-endian), see five_tuple_bytes().
// IPv6 addresses are folded to 32 bits by the dispatcher (XOR of the four words).
struct FiveTuple {
  uint32_t src_ip = 0;
  uint32_t dst_ip = 0;
  uint16_t src_port = 0;
  uint16_t dst_port = 0;
  uint8_t proto = 0;
};

// One classified packet of a burst (28 bytes).
struct PacketMeta {
  FiveTuple tuple;         // for CRC16/CRC32 map-table hashing
  uint32_t flow_hash = 0;  // the dispatcher's flow hash (hpr::Packet::hash); HRW digest input
  uint32_t flow_id = 0;    // dense flow id (hpr::Packet::flow_id); indexes LaneTable::flow_pending
  uint16_t bytes = 0;      // frame length
  uint8_t service = 0;     // service id for LAPS per-service partitions (< BalancerConfig::services)
  uint8_t app = 0;         // application the lane must run (warm-cache key)
};

// One lane (core, device slot) as the balancer sees it.
struct LaneState {
  uint32_t queued = 0;      // packets queued or in flight on the lane (balancer adds 1 per assignment)
  uint32_t capacity = 32;   // queue capacity in packets (load factor tau = queued / capacity)
  float weight = 1.0f;      // relative capacity (weighted HRW); > 0
  uint8_t warm_app = 0xff;  // application the lane ran last (0xff: cold)
  bool enabled = true;      // false: never chosen (device unavailable)
};

// The shared state a balancer reads and updates.
struct LaneTable {
  std::span<LaneState> lanes;        // lanes.size() <= kMaxLanes
  std::span<uint32_t> flow_pending;  // per flow_id (masked by size-1; size a power of two):
                                     // packets queued or in flight
  uint64_t now_ns = 0;               // time is passed in (architecture.md convention 4)
};

// Counters every balancer keeps (read with Balancer::stats()).
struct BalancerStats {
  uint64_t packets = 0;
  uint64_t bursts = 0;
  uint64_t moves = 0;               // a flow changed lane (with no packet pending: no reorder)
  uint64_t blocked_moves = 0;       // a move the policy wanted but the no-reorder rule refused
  uint64_t would_reorder = 0;       // packets that would have been reordered had those moves happened
                                    // (with no_reorder=false: packets put at risk by moves that happened)
  uint64_t migrations = 0;          // LAPS/AFS migration-table insertions
  uint64_t adjustments = 0;         // Subflow/adaptive re-decisions
  uint64_t core_reallocations = 0;  // LAPS cores moved between services
};

}  // namespace hpr::balance
