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

DropReason parse(Packet& p, const ParseOptions& opt = {});

// Batch form: parses every packet; returns how many got a drop reason.
uint32_t parse_batch(std::span<Packet> pkts, const ParseOptions& opt = {});


}  // namespace hpr
