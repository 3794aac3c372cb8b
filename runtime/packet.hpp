#pragma once
// Packet descriptor: the unit every stage of the data path passes along
// (architecture.md, "The data path"). A Packet is a view: its bytes live in a pooled buffer
// (a DPDK mbuf or a PacketPool slot) that `buf` owns; descriptors are copied, bytes are not.
#include <array>
#include <cstdint>
#include <string_view>

#include "runtime/drop_reason.hpp"

namespace hpr {

inline constexpr uint16_t kNoOffset = 0xffff;
inline constexpr uint32_t kNoFlow = 0xffffffffu;
inline constexpr uint8_t kNoSvc = 0xff;  // Packet::svc of a packet no [[service]] has taken

enum class L3 : uint8_t { kNone = 0, kIPv4 = 4, kIPv6 = 6, kOther = 255 };

// Packet flags.
enum PacketFlag : uint8_t {
  kFlagVlan = 1u << 0,      // one or more 802.1Q/802.1ad tags
  kFlagFragment = 1u << 1,  // IP fragment (non-first fragments have no L4 header)
  kFlagIpOptions = 1u << 2, // IPv4 options present (IHL > 5)
  kFlagPorts = 1u << 3,     // a TCP or UDP header within the frame, not in a fragment: the flow key has its ports
};

// What kind of buffer Packet::buf is, so a port can transmit a buffer it did not allocate.
enum BufKind : uint8_t { kBufPool = 0, kBufMbuf = 1 };

struct Packet {
  uint8_t* data = nullptr;   // first byte of the Ethernet frame
  void* buf = nullptr;       // owner: rte_mbuf* (DPDK port) or PacketPool slot
  uint64_t rx_ns = 0;        // when the port received it (monotonic ns)
  uint32_t flow_id = kNoFlow;// FlowTable id
  uint32_t hash = 0;         // symmetric flow hash (CRC32C)
  uint32_t seq = 0;          // per-flow sequence number, assigned by the dispatcher
  uint16_t len = 0;          // frame length in bytes
  uint16_t l3_off = kNoOffset;       // offset of the IP header
  uint16_t l4_off = kNoOffset;       // offset of the L4 header (after IPv6 extension headers)
  uint16_t payload_off = kNoOffset;  // offset of the L4 payload
  uint16_t payload_len = 0;          // L4 payload bytes, bounded by the IP length (excludes Ethernet padding)
  uint16_t out_port = 0;             // egress port chosen by the app (ipv4) or the default
  // l4 then l3, next to each other: the flow key's tail takes both with one 16-bit load (proto | family << 8;
  // L3's values are the family numbers 4 and 6).
  uint8_t l4 = 0;            // IP protocol number of the L4 header (6 TCP, 17 UDP, 1 ICMP, 58 ICMPv6)
  L3 l3 = L3::kNone;
  DropReason drop = DropReason::kNone;
  uint8_t lane = 0xff;       // lane the dispatcher chose
  uint8_t flags = 0;         // PacketFlag bits
  uint8_t service = 0;       // service (application) id for multi-service balancing
  uint16_t port = 0;         // rx port index
  uint8_t buf_kind = 0;      // BufKind of `buf`
  uint8_t svc = kNoSvc;      // the [[service]] whose chain ran it (kernels/service), for the per-service books

  const uint8_t* payload() const { return data + payload_off; }
  uint8_t* payload() { return data + payload_off; }
};
static_assert(sizeof(Packet) == 64, "a Packet descriptor is one cache line");

}  // namespace hpr
