// Native IPv4 forwarding on the device batch layout: the test oracle for ipv4.cl and the native lane.
// Same checks, in the same order, writing the same bytes as the kernel (see ipv4.cl).
#include <algorithm>
#include <cstring>

#include "kernels/ipv4/ipv4_app.hpp"
#include "kernels/ipv4/ipv4_hdr.hpp"

namespace hpr::kernels::ipv4 {
namespace {

constexpr uint8_t reason(DropReason r) { return static_cast<uint8_t>(r); }

constexpr uint32_t kChunk = 64;  // packets per validate / bulk-lookup / rewrite round of run_native

// check()'s last steps, on a header whose version, IHL and total length are good: checksum, then TTL. r is fresh.
inline uint8_t check_sum_ttl(const uint8_t* h, uint32_t ihl4, Ipv4Result& r) {
  if (!ipv4_header_ok(h, ihl4)) {
    r.drop = reason(DropReason::kBadChecksum);
  } else if (h[8] <= 1) {
    r.drop = reason(DropReason::kTtlExceeded);
    r.flags = kResIcmpTimeExceeded;
  }
  return r.drop != 0 ? 1 : 0;
}

// Validates one header; returns 0 when it may be forwarded, 2 for an IPv6 packet (check6 next), 1 when
// the result is set (dropped or passed on).
inline uint8_t check(const Desc& d, const uint8_t* h, Ipv4Result& r, const Ipv4Config& cfg) {
  r = Ipv4Result{kNoNextHop, 0, 0, 0};
  if (d.flags & kDescNotIpv4) {
    if ((d.flags & kDescAvailMask) != 0) return 2;  // IPv6 with routes6 (slice() sets it only then)
    r.flags = kResNotIpv4;
    if (cfg.non_ipv4_port) {
      r.out_port = *cfg.non_ipv4_port;
    } else {
      r.drop = reason(DropReason::kNotIPv4);
    }
    return 1;
  }
  const uint32_t avail = d.flags & kDescAvailMask;
  const uint32_t len = d.len;
  if (len < 20) {
    r.drop = reason(DropReason::kTruncated);
    return 1;
  }
  const uint32_t ihl4 = (h[0] & 0xfu) * 4u;
  const uint32_t tot = (uint32_t{h[2]} << 8) | h[3];
  if ((h[0] >> 4) != 4) {
    r.drop = reason(DropReason::kBadVersion);
  } else if (ihl4 < 20 || ihl4 > len) {
    r.drop = reason(DropReason::kBadIhl);
  } else if (tot < ihl4 || tot > avail) {
    r.drop = reason(DropReason::kBadTotalLength);
  } else {
    return check_sum_ttl(h, ihl4, r);
  }
  return 1;
}

// The IPv6 twin of check(): 0 when the packet may be forwarded, 1 when the result is set.
inline uint8_t check6(const Desc& d, const uint8_t* h, Ipv4Result& r) {
  r = Ipv4Result{kNoNextHop, 0, 0, kResIpv6};
  const uint32_t avail = d.flags & kDescAvailMask;
  if (d.len < kIpv6HeaderBytes) {
    r.drop = reason(DropReason::kTruncated);
  } else if ((h[0] >> 4) != 6) {
    r.drop = reason(DropReason::kBadVersion);
  } else if (kIpv6HeaderBytes + ((uint32_t{h[4]} << 8) | h[5]) > avail) {
    r.drop = reason(DropReason::kBadTotalLength);
  } else if (h[7] <= 1) {
    r.drop = reason(DropReason::kTtlExceeded);
    r.flags = kResIpv6 | kResIcmpTimeExceeded;
  }
  return r.drop != 0 ? 1 : 0;
}

// Where forward() finds a packet's descriptor and slice, and where its verdict goes. FromBatch: a batch as lanes and
// devices lay it out (desc and slices, made beforehand by slices_in_place or a gather; verdicts into out, for
// finish). InPlace (run_in_place): the packets themselves, each header read where the parser found it (or a slice made
// where it is read, as slices_in_place makes it) and each verdict applied to its packet as it is made (what finish
// does).
struct FromBatch {
  const BatchView& b;
  Ipv4Result* res;
  const uint8_t* at(uint32_t i, Desc& d) const {
    d = b.desc[i];
    return b.slice(i);
  }
  // check() on packet i; h: its header.
  uint8_t check(uint32_t i, const uint8_t*& h, Ipv4Result& r, const Ipv4Config& cfg) const {
    Desc d;
    h = at(i, d);
    return ipv4::check(d, h, r, cfg);
  }
  uint8_t* header(uint32_t i) const { return b.slice(i); }
  void put(uint32_t i, const Ipv4Result& r) const { std::memcpy(res + i, &r, sizeof r); }
};

struct InPlace {
  const Ipv4App& app;
  Packet* pkts;
  Ipv4Result* res;
  const uint8_t* at(uint32_t i, Desc& d) const {
    const Packet& p = pkts[i];
    const Slice s = packet_slice(app, p);
    d.len = s.len;
    d.flags = s.flags;
    return p.data + s.offset;
  }
  // check() on packet i, which parse() has read: an IPv4 packet it did not drop has a good version, IHL and total
  // length within its frame (parse_ipv4 checked them against the frame, check() against the slice: the same unless
  // the frame is longer than a descriptor's avail can say), so only the checksum and the TTL are left. Anything
  // else (IPv6, not IP, dropped, a frame above 32,767 bytes) goes through the slice and check() as gathered.
  uint8_t check(uint32_t i, const uint8_t*& h, Ipv4Result& r, const Ipv4Config& cfg) const {
    const Packet& p = pkts[i];
    if (p.l3 == L3::kIPv4 && p.drop == DropReason::kNone && p.len <= kDescAvailMask) {
      h = p.data + p.l3_off;
      r = Ipv4Result{kNoNextHop, 0, 0, 0};
      return check_sum_ttl(h, (h[0] & 0xfu) * 4u, r);
    }
    Desc d;
    h = at(i, d);
    return ipv4::check(d, h, r, cfg);
  }
  // A packet that passed check() or check6() has a header slice, which begins at l3_off.
  uint8_t* header(uint32_t i) const { return pkts[i].data + pkts[i].l3_off; }
  void put(uint32_t i, const Ipv4Result& r) const {
    std::memcpy(res + i, &r, sizeof r);
    apply_result(pkts[i], r);
  }
};

}  // namespace

bool Ipv4App::route_or_drop(uint32_t& hop, Ipv4Result& r) const {
  if (hop != kNoNextHop) return true;
  if (!config_.default_next_hop) {
    r.drop = reason(DropReason::kNoRoute);
    return false;
  }
  hop = *config_.default_next_hop;
  r.flags |= kResDefaultRoute;
  return true;
}

// IPv6 packets idx[0..n) of the batch (all of them passed check() as IPv6): check, LPM6, hop limit - 1.
template <class In>
void Ipv4App::forward6(const In& in, const uint32_t* idx, uint32_t n) const {
  uint8_t dst[kChunk][16];  // n <= kChunk: forward calls this once per chunk
  uint32_t ok[kChunk];
  uint32_t nh[kChunk];
  uint32_t k = 0;
  for (uint32_t j = 0; j < n; ++j) {
    const uint32_t i = idx[j];
    Desc d;
    const uint8_t* h = in.at(i, d);
    Ipv4Result r;
    if (check6(d, h, r) != 0) {
      in.put(i, r);
      continue;
    }
    std::memcpy(dst[k], h + 24, 16);
    lpm6_->prefetch(dst[k]);
    ok[k++] = i;
  }
  lpm6_->lookup_bulk(dst, nh, k);
  for (uint32_t t = 0; t < k; ++t) {
    const uint32_t i = ok[t];
    Ipv4Result r{kNoNextHop, 0, 0, kResIpv6};
    uint32_t hop = nh[t];
    if (!route_or_drop(hop, r)) {
      in.put(i, r);
      continue;
    }
    uint8_t* h = in.header(i);
    h[7] = static_cast<uint8_t>(h[7] - 1);
    r.next_hop = hop;
    r.out_port = static_cast<uint16_t>(hop);
    in.put(i, r);
  }
}

// Chunks: validate (prefetching each destination's first-level LPM entry: about +5% measured), then one bulk LPM
// lookup for the survivors, then rewrite. The chunk arrays live on the stack (no allocation on the hot path).
template <class In>
void Ipv4App::forward(const In& in, uint32_t n) const {
  for (uint32_t base = 0; base < n; base += kChunk) {
    const uint32_t m = std::min(kChunk, n - base);
    uint32_t dst[kChunk];
    uint32_t idx[kChunk];
    uint32_t nh[kChunk];
    uint32_t idx6[kChunk];
    uint32_t k = 0;
    uint32_t k6 = 0;
    const FlatLpm::Prefetcher prefetch = lpm_.prefetcher();
    for (uint32_t j = 0; j < m; ++j) {
      const uint32_t i = base + j;
      const uint8_t* h;
      Ipv4Result r;
      if (const uint8_t c = in.check(i, h, r, config_); c != 0) {
        if (c == 2) {
          idx6[k6++] = i;
        } else {
          in.put(i, r);
        }
        continue;
      }
      dst[k] = (uint32_t{h[16]} << 24) | (uint32_t{h[17]} << 16) | (uint32_t{h[18]} << 8) | h[19];
      prefetch(dst[k]);
      idx[k] = i;
      ++k;
    }
    if (k6 != 0) forward6(in, idx6, k6);
    lpm_.lookup_bulk(dst, nh, k);
    for (uint32_t t = 0; t < k; ++t) {
      const uint32_t i = idx[t];
      Ipv4Result r{kNoNextHop, 0, 0, 0};
      uint32_t hop = nh[t];
      if (!route_or_drop(hop, r)) {
        in.put(i, r);
        continue;
      }
      uint8_t* h = in.header(i);
      const uint16_t hc = static_cast<uint16_t>((uint32_t{h[10]} << 8) | h[11]);
      const uint16_t hc2 = ttl_decrement_checksum(hc, h[8], h[9]);
      h[8] = static_cast<uint8_t>(h[8] - 1);
      h[10] = static_cast<uint8_t>(hc2 >> 8);
      h[11] = static_cast<uint8_t>(hc2);
      r.next_hop = hop;
      r.out_port = static_cast<uint16_t>(hop);
      in.put(i, r);
    }
  }
}

void Ipv4App::run_native(const BatchView& batch) const {
  forward(FromBatch{batch, reinterpret_cast<Ipv4Result*>(batch.out)}, batch.n);
}

// What App::run_in_place does (slices_in_place, run_native, finish) in one pass over the packets, without the
// descriptor and slice arrays (27 instructions a packet fewer on the worker path). Equal to it byte for byte: frames,
// packets and out (tests/ipv4/ipv4_run_util.hpp checks every forwarding test both ways). `done` gets a view with out
// only: count_events reads nothing else, and the app has no log.
void Ipv4App::run_in_place(std::span<Packet> pkts, Desc* /*desc*/, uint8_t** /*slices*/, uint8_t* out,
                           const AppDone& done) const {
  const auto n = static_cast<uint32_t>(pkts.size());
  auto* res = reinterpret_cast<Ipv4Result*>(out);
  forward(InPlace{*this, pkts.data(), res}, n);
  rewrite_l2(pkts, res);
  done(0, *this, pkts, BatchView{nullptr, n, nullptr, out, nullptr});
}

}  // namespace hpr::kernels::ipv4
