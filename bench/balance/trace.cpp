#include "runtime/balance_glue.hpp"
#include "bench/balance/trace.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <random>
#include <unordered_map>

#include "runtime/flow.hpp"
#include "runtime/packet.hpp"
#include "runtime/parser.hpp"
#include "runtime/pcap_file.hpp"
#include "scheduler/balance/hash.hpp"

namespace hpr::balance::sim {
namespace {

struct TupleHash {
  size_t operator()(const FiveTuple& t) const {
    uint64_t a = (uint64_t(t.src_ip) << 32) | t.dst_ip;
    uint64_t b = (uint64_t(t.src_port) << 24) | (uint64_t(t.dst_port) << 8) | t.proto;
    return std::hash<uint64_t>()(a * 0x9e3779b97f4a7c15ull ^ b);
  }
};
struct TupleEq {
  bool operator()(const FiveTuple& a, const FiveTuple& b) const {
    return a.src_ip == b.src_ip && a.dst_ip == b.dst_ip && a.src_port == b.src_port && a.dst_port == b.dst_port &&
           a.proto == b.proto;
  }
};

void densify(Trace& t) {
  std::unordered_map<FiveTuple, uint32_t, TupleHash, TupleEq> ids;
  for (auto& p : t.packets) {
    auto [it, fresh] = ids.try_emplace(p.tuple, static_cast<uint32_t>(ids.size()));
    p.flow = it->second;
  }
  t.flows = static_cast<uint32_t>(ids.size());
}

}  // namespace

Trace load_pcap_dir(const std::string& dir, uint32_t group, uint32_t groups) {
  Trace tr;
  std::vector<std::string> files = list_captures(dir);  // sorted by name
  uint32_t used = 0;
  for (size_t i = 0; i < files.size(); ++i) {
    if (i % groups != group) continue;
    auto cap = load_capture(files[i]);
    if (!cap) continue;  // unreadable capture: skipped (the count in `source` says how many were used)
    for (auto& frame : cap->frames) {
      Packet pkt;
      pkt.data = frame.data();
      pkt.len = static_cast<uint16_t>(std::min<size_t>(frame.size(), 0xffff));
      if (parse(pkt) != DropReason::kNone || (pkt.l3 != L3::kIPv4 && pkt.l3 != L3::kIPv6)) continue;
      FlowKey key = flow_key(pkt);
      TracePacket p;
      p.tuple = to_five_tuple(key);
      p.hash = flow_hash_symmetric(key);  // what the dispatcher puts in hpr::Packet::hash
      p.bytes = static_cast<uint16_t>(std::clamp<size_t>(frame.size(), 60, 1514));
      tr.packets.push_back(p);
    }
    ++used;
  }
  densify(tr);
  tr.source = dir + " (" + std::to_string(used) + " captures, group " + std::to_string(group) + "/" +
              std::to_string(groups) + ")";
  return tr;
}

Trace replay(const Trace& base, uint32_t copies, bool interleave) {
  Trace t;
  const size_t n = base.packets.size();
  t.packets.reserve(n * copies);
  if (n == 0) return t;
  if (!interleave) {
    for (uint32_t k = 0; k < copies; ++k)
      for (auto p : base.packets) {
        p.tuple.src_ip ^= k * 0x9e3779b1u;
        if (k) p.hash = mix32(p.hash ^ k * 0x85ebca6bu);
        t.packets.push_back(p);
      }
    densify(t);
    t.source = base.source + " x" + std::to_string(copies) + " concatenated replays";
    return t;
  }
  // Copy k starts k/copies of the way into the base trace (circularly) and the copies are
  // interleaved packet by packet: at any moment `copies` different parts of the capture set (different
  // captures, different flows) are active, instead of one capture at a time.
  for (size_t i = 0; i < n; ++i)
    for (uint32_t k = 0; k < copies; ++k) {
      TracePacket p = base.packets[(i + k * n / copies) % n];
      p.tuple.src_ip ^= k * 0x9e3779b1u;
      p.hash = mix32(p.hash ^ k * 0x85ebca6bu);  // a new flow: a new hash
      t.packets.push_back(p);
    }
  densify(t);
  t.source = base.source + " x" + std::to_string(copies) + " interleaved replays";
  return t;
}

Trace synthetic_zipf(uint32_t packets, uint32_t flows, double s, uint32_t seed) {
  std::vector<double> cdf(flows);
  double acc = 0;
  for (uint32_t i = 0; i < flows; ++i) cdf[i] = acc += 1.0 / std::pow(i + 1.0, s);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(0, acc);
  std::uniform_int_distribution<int> sz(64, 1500);
  Trace t;
  for (uint32_t i = 0; i < packets; ++i) {
    uint32_t f = static_cast<uint32_t>(std::lower_bound(cdf.begin(), cdf.end(), u(rng)) - cdf.begin());
    TracePacket p;
    p.tuple = FiveTuple{0x0a000000u + f * 2654435761u, 0xc0a80000u + (f % 251), static_cast<uint16_t>(1024 + f % 60000),
                        443, 6};
    p.bytes = static_cast<uint16_t>(sz(rng));
    p.hash = crc32(p.tuple);
    t.packets.push_back(p);
  }
  densify(t);
  t.source = "synthetic zipf s=" + std::to_string(s);
  return t;
}

}  // namespace hpr::balance::sim
