#pragma once
// Packet parser: Ethernet II, 802.1Q / 802.1ad (QinQ) tags, IPv4 (with options), IPv6 (with the
// common extension headers: hop-by-hop, routing, destination options, fragment, AH, mobility, HIP,
// shim6), TCP, UDP, ICMP, ICMPv6.
//
// parse() fills the offsets of a Packet and returns (and stores in Packet::drop) the first problem
// found. It never reads past Packet::len. Non-IP frames (ARP, LLDP, ...) are not malformed: they get
// L3::kOther and no offsets. The L4 payload is bounded by the IP length, so Ethernet padding is not
// payload. For a non-first IP fragment there is no L4 header: l4_off stays kNoOffset and the payload
// is the fragment's data. ESP and unknown protocols: payload is the IP payload.
#include <cstdint>
#include <span>

#include "runtime/checksum.hpp"  // ip_checksum: 0 over a header whose stored checksum is right
#include "runtime/packet.hpp"

namespace hpr {

struct ParseOptions {
  bool verify_ipv4_checksum = true;  // off when the application checks it itself (ipv4 app)
};

namespace detail {

constexpr uint16_t kEthIPv4 = 0x0800;
constexpr uint16_t kEthIPv6 = 0x86dd;
constexpr int kMaxVlanTags = 4;
constexpr int kMaxExtHeaders = 8;

inline DropReason fail(Packet& p, DropReason r) {
  p.drop = r;
  return r;
}

// Sets l4_off / payload_off / payload_len for an L4 header at `off` with `end` = end of IP payload.
// `proto` is p.l4 and `fragment` whether kFlagFragment is set, passed as values: read back from *p they were
// loads after stores on the hot path.
[[gnu::always_inline]] inline DropReason parse_l4(Packet& p, uint8_t proto, uint32_t off, uint32_t end,
                                                  bool first_fragment, bool fragment) {
  if (!first_fragment) {
    p.payload_off = static_cast<uint16_t>(off);
    p.payload_len = static_cast<uint16_t>(end - off);
    return DropReason::kNone;
  }
  uint32_t hl = 0;
  // The ports a flow key reads (has_ports): TCP's and UDP's, except in the first fragment of a datagram.
  const uint8_t ports = fragment ? 0 : kFlagPorts;
  switch (proto) {
    case 6:  // TCP: data offset in 32-bit words, at least 5
      if (end < off + 20) return fail(p, DropReason::kTruncated);
      hl = static_cast<uint32_t>(p.data[off + 12] >> 4) * 4;
      if (hl < 20 || end < off + hl) return fail(p, DropReason::kTruncated);
      p.flags |= ports;
      break;
    case 17:  // UDP
      if (end < off + 8) return fail(p, DropReason::kTruncated);
      hl = 8;
      p.flags |= ports;
      break;
    case 1:   // ICMP
    case 58:  // ICMPv6: type, code, checksum, 4 bytes of message body
      if (end < off + 8) return fail(p, DropReason::kTruncated);
      hl = 8;
      break;
    default:  // other protocols: the payload is the IP payload
      p.payload_off = static_cast<uint16_t>(off);
      p.payload_len = static_cast<uint16_t>(end - off);
      return DropReason::kNone;
  }
  p.l4_off = static_cast<uint16_t>(off);
  p.payload_off = static_cast<uint16_t>(off + hl);
  p.payload_len = static_cast<uint16_t>(end - off - hl);
  return DropReason::kNone;
}

[[gnu::always_inline]] inline DropReason parse_ipv4(Packet& p, uint32_t off, const ParseOptions& opt) {
  const uint32_t len = p.len;
  if (len < off + 20) return fail(p, DropReason::kTruncated);
  const uint8_t* h = p.data + off;
  uint32_t ihl = 20;
  if (h[0] != 0x45) {  // most headers are 0x45 (version 4, 20 bytes), whose version and IHL need no more checks
    if ((h[0] >> 4) != 4) return fail(p, DropReason::kBadVersion);
    ihl = static_cast<uint32_t>(h[0] & 0x0f) * 4;
    if (ihl < 20 || len < off + ihl) return fail(p, DropReason::kBadIhl);
  }
  const uint32_t total = load_be16(h + 2);
  if (total < ihl || len < off + total) return fail(p, DropReason::kBadTotalLength);
  if (opt.verify_ipv4_checksum && !ipv4_header_ok(h, ihl)) return fail(p, DropReason::kBadChecksum);
  if (ihl > 20) p.flags |= kFlagIpOptions;
  const uint16_t frag = load_be16(h + 6);
  const bool fragment = (frag & 0x3fff) != 0;  // more fragments, or an offset
  if (fragment) p.flags |= kFlagFragment;
  const uint8_t proto = h[9];
  p.l3 = L3::kIPv4;
  p.l4 = proto;
  return parse_l4(p, proto, off + ihl, off + total, (frag & 0x1fff) == 0, fragment);
}

// IPv6 with its extension headers (parser.cpp: less common, out of line).
DropReason parse_ipv6(Packet& p, uint32_t off);

}  // namespace detail

// Inline, with its IPv4 and L4 steps: the dispatcher and the worker path call it for every packet.
// kFresh: `p`'s parsed fields are a default Packet's already (a port whose rx_burst says so, Port::fresh_rx), so
// the resets below are skipped: six stores a packet on the worker path.
template <bool kFresh = false>
[[gnu::always_inline]] inline DropReason parse(Packet& p, const ParseOptions& opt = {}) {
  if constexpr (!kFresh) {
    p.l3_off = p.l4_off = p.payload_off = kNoOffset;
    p.payload_len = 0;
    p.l3 = L3::kNone;
    p.l4 = 0;
    p.flags = 0;
    p.drop = DropReason::kNone;
    p.svc = kNoSvc;  // no service has taken it yet (a reused descriptor may hold the last packet's)
  }
  if (p.len < 14) return detail::fail(p, DropReason::kTruncated);
  uint32_t off = 12;
  uint16_t et = load_be16(p.data + off);
  if (et == detail::kEthIPv4) {  // untagged IPv4 first: most frames, and three compares fewer than the tag loop's
    p.l3_off = 14;
    return detail::parse_ipv4(p, 14, opt);
  }
  for (int tags = 0; et == 0x8100 || et == 0x88a8 || et == 0x9100; ++tags) {
    if (tags == detail::kMaxVlanTags || p.len < off + 6) return detail::fail(p, DropReason::kTruncated);
    p.flags |= kFlagVlan;
    off += 4;
    et = load_be16(p.data + off);
  }
  off += 2;
  if (et == detail::kEthIPv4) {
    p.l3_off = static_cast<uint16_t>(off);
    return detail::parse_ipv4(p, off, opt);
  }
  if (et == detail::kEthIPv6) {
    p.l3_off = static_cast<uint16_t>(off);
    return detail::parse_ipv6(p, off);
  }
  p.l3 = L3::kOther;
  return DropReason::kNone;
}

// Batch form: parses every packet; returns how many got a drop reason.
uint32_t parse_batch(std::span<Packet> pkts, const ParseOptions& opt = {});

}  // namespace hpr
