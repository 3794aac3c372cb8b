#include "bench/balance/trace.hpp"

#include <pcap/pcap.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <random>
#include <unordered_map>

namespace hpr::balance::sim {
namespace {

uint32_t rd32(const uint8_t* p) { return (uint32_t(p[0]) << 24) | (uint32_t(p[1]) << 16) | (uint32_t(p[2]) << 8) | p[3]; }
uint16_t rd16(const uint8_t* p) { return static_cast<uint16_t>((p[0] << 8) | p[1]); }

// IP header at `ip` (len bytes available) -> tuple. False when not IPv4/IPv6.
bool parse_ip(const uint8_t* ip, size_t len, FiveTuple& t) {
  if (len < 1) return false;
  uint8_t v = ip[0] >> 4;
  const uint8_t* l4 = nullptr;
  size_t l4len = 0;
  if (v == 4 && len >= 20) {
    size_t ihl = (ip[0] & 0xf) * 4u;
    if (ihl < 20 || ihl > len) return false;
    t.src_ip = rd32(ip + 12);
    t.dst_ip = rd32(ip + 16);
    t.proto = ip[9];
    bool frag_later = (rd16(ip + 6) & 0x1fff) != 0;
    if (!frag_later) {
      l4 = ip + ihl;
      l4len = len - ihl;
    }
  } else if (v == 6 && len >= 40) {
    t.src_ip = rd32(ip + 8) ^ rd32(ip + 12) ^ rd32(ip + 16) ^ rd32(ip + 20);
    t.dst_ip = rd32(ip + 24) ^ rd32(ip + 28) ^ rd32(ip + 32) ^ rd32(ip + 36);
    t.proto = ip[6];
    l4 = ip + 40;
    l4len = len - 40;
  } else {
    return false;
  }
  if (l4 && l4len >= 4 && (t.proto == 6 || t.proto == 17 || t.proto == 132)) {
    t.src_port = rd16(l4);
    t.dst_port = rd16(l4 + 2);
  }
  return true;
}

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
  std::vector<std::string> files;
  std::error_code ec;
  for (auto& e : std::filesystem::directory_iterator(dir, ec))
    if (e.is_regular_file()) files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  uint32_t used = 0;
  for (size_t i = 0; i < files.size(); ++i) {
    if (i % groups != group) continue;
    char err[PCAP_ERRBUF_SIZE];
    pcap_t* pc = pcap_open_offline(files[i].c_str(), err);
    if (!pc) continue;
    int dlt = pcap_datalink(pc);
    pcap_pkthdr* h;
    const u_char* d;
    while (pcap_next_ex(pc, &h, &d) == 1) {
      const uint8_t* ip = nullptr;
      size_t cap = h->caplen;
      if (dlt == DLT_EN10MB) {
        if (cap < 14) continue;
        size_t off = 12;
        uint16_t et = rd16(d + off);
        while ((et == 0x8100 || et == 0x88a8) && cap >= off + 6) {
          off += 4;
          et = rd16(d + off);
        }
        if (et != 0x0800 && et != 0x86dd) continue;
        ip = d + off + 2;
        cap -= off + 2;
      } else if (dlt == DLT_RAW || dlt == 101 || dlt == 12) {
        ip = d;
      } else if (dlt == DLT_LINUX_SLL) {
        if (cap < 16) continue;
        ip = d + 16;
        cap -= 16;
      } else {
        break;
      }
      TracePacket p;
      if (!parse_ip(ip, cap, p.tuple)) continue;
      p.bytes = static_cast<uint16_t>(std::clamp<uint32_t>(h->len, 60, 1514));
      tr.packets.push_back(p);
    }
    pcap_close(pc);
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
    t.packets.push_back(p);
  }
  densify(t);
  t.source = "synthetic zipf s=" + std::to_string(s);
  return t;
}

}  // namespace hpr::balance::sim
