#pragma once
// IPv4 header arithmetic used by the native path, the ICMP builders and the tests (the Internet
// checksum and the RFC 1624 TTL update live in runtime/checksum.hpp, one copy for all of hpr), and
// the L2 header of an ICMP or ICMPv6 error reply.
#include <cstring>

#include "runtime/checksum.hpp"
#include "runtime/packet.hpp"

namespace hpr::kernels::ipv4 {

// The L2 header of an ICMP or ICMPv6 error sent back to `p`'s sender (`l2` = p.l3_off bytes at f): `p`'s own
// (VLAN tags kept), its MAC addresses swapped.
inline void reply_l2(uint8_t* f, const Packet& p) {
  std::memcpy(f, p.data, p.l3_off);
  std::memcpy(f, p.data + 6, 6);  // dst MAC = original src
  std::memcpy(f + 6, p.data, 6);  // src MAC = original dst (the router's port)
}

}  // namespace hpr::kernels::ipv4
