#pragma once
// Packet headers for the balance simulator: 5-tuples and frame lengths read from real captures
// (../shared/data/pcap/ndpi) with the runtime's reader and parser (hpr::load_capture, hpr::parse,
// hpr::flow_key, hpr::flow_hash_symmetric), and replayed to make long traces.
// Replay: copy k of the concatenated captures keeps every packet's order, length and flow structure,
// starts k/copies of the way into it (circularly), and XORs the source address with k * 0x9e3779b1
// (k = 0: unchanged) so each copy has its own flows; the copies are interleaved packet by packet, so
// `copies` different captures are active at any moment. The flow-size distribution (heavy tail) is
// the captures', the number of concurrent flows grows with the copies. A synthetic Zipf source stands in where no
// capture is available (pluggable).
#include "runtime/balance_glue.hpp"
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/flow.hpp"
#include "scheduler/balance/types.hpp"

namespace hpr::balance::sim {

using hpr::FlowKey;

struct TracePacket {
  FiveTuple tuple;
  uint32_t hash = 0;  // the dispatcher's flow hash (symmetric CRC32C of the FlowKey)
  uint32_t flow = 0;  // dense id over the whole trace (direction-sensitive 5-tuple)
  uint16_t bytes = 0;
};

struct Trace {
  std::vector<TracePacket> packets;
  uint32_t flows = 0;
  std::string source;  // what it was made from
};

// Every capture in `dir` whose index i satisfies i % groups == group (sorted by name), concatenated.
// Non-IP frames are skipped. Returns an empty trace when nothing could be read.
Trace load_pcap_dir(const std::string& dir, uint32_t group = 0, uint32_t groups = 1);
using hpr::to_five_tuple;  // runtime/balance_glue.hpp: the dispatcher uses the same
// `copies` replays of `base` (see above); flow ids re-densified.
// interleave = false: the copies are concatenated instead (one capture active at a time: a few
// flows dominate each moment; the most skewed input).
Trace replay(const Trace& base, uint32_t copies, bool interleave = true);
// Zipf(s) flow popularity over `flows` flows, sizes 64..1500.
Trace synthetic_zipf(uint32_t packets, uint32_t flows, double s, uint32_t seed);

}  // namespace hpr::balance::sim
