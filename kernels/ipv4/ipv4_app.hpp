#pragma once
// IPv4 forwarding as an hpr::kernels::App (issue 3; paper §3.2.1 and §3.3; architecture.md "One
// application, one unit"). Kernel: kernels/ipv4/ipv4.cl; native twin: ipv4_ref.cpp; tables: lpm.hpp.
//
// Device layout:
//  * slice = the IPv4 header only: offset l3_off, len = min(bytes to end of frame, max(20, IHL*4))
//    (20..60 bytes; the header descriptors of paper §3.3 — payloads never travel to the device);
//    for packets that are not IPv4 the slice is empty.
//  * Desc::flags = bytes from L3 to the end of the frame (bits 0..14, capped at 32767), so the kernel
//    can check the total length against the frame; bit 15 (kDescNotIpv4) marks a non-IPv4 packet.
//  * out = one Ipv4Result (8 bytes) per packet; the slice is modified in place (TTL, checksum) and
//    written back (writes_back() == true).
//  * device tables: FlatLpm tbl24 and tbl8 (kernel arguments 4 and 5), Lpm6 tbl24 and tbl8 (6 and 7;
//    4-byte placeholders when the route file has no IPv6 prefix), uploaded once per context.
//
// IPv6 (issue 18): when the route file holds IPv6 prefixes (RouteLoad::routes6), IPv6 packets are routed
// too. Their slice is the 40-byte fixed header (min(40, bytes to end of frame)) and Desc::flags =
// kDescNotIpv4 | bytes to the end of the frame (never 0: an IPv6 packet without a byte of header gets
// the empty IPv4 slice and kTruncated). Per packet: < 40 bytes → kTruncated; version != 6 →
// kBadVersion; 40 + payload length > frame → kBadTotalLength; hop limit <= 1 → kTtlExceeded (flag
// kResIcmpTimeExceeded; build_icmpv6_time_exceeded); LPM6 miss → default_next_hop or kNoRoute; else hop
// limit - 1 written back. Every IPv6 result carries kResIpv6. Without IPv6 prefixes nothing changes:
// IPv6 goes to non_ipv4_port (or kNotIPv4) like every other non-IPv4 packet.
//
// Per packet (kernel and native, byte-identical): see ipv4.cl's header comment. The check order gives
// exactly one DropReason per dropped packet: kNotIPv4 (only when non_ipv4_port is unset), kTruncated,
// kBadVersion, kBadIhl, kBadTotalLength, kBadChecksum, kTtlExceeded, kNoRoute (IPv6: see above).
//
// finish() sets Packet::drop for dropped packets and Packet::out_port (= next hop) for the others.
// With a neighbour table (set_neighbours) it also does l3fwd's Ethernet rewrite on every forwarded IPv4 packet,
// on the host for every lane (so native and device output stay byte-identical): destination MAC := the next
// hop's neighbour MAC, source MAC := its output port's MAC, and out_port := that output port.
// For kTtlExceeded the pipeline builds the reply with build_icmp_time_exceeded() and sends it.
#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "kernels/app.hpp"
#include "kernels/ipv4/lpm.hpp"
#include "kernels/ipv4/lpm6.hpp"
#include "kernels/ipv4/routes.hpp"

namespace hpr::kernels::ipv4 {

struct Ipv4Result {
  uint32_t next_hop;  // kNoNextHop when dropped
  uint16_t out_port;
  uint8_t drop;       // DropReason
  uint8_t flags;      // kRes* bits
};
static_assert(sizeof(Ipv4Result) == 8);

// finish()'s verdict on one packet: its drop reason, or its output port. A packet dropped before the app keeps its
// reason.
inline void apply_result(Packet& p, const Ipv4Result& r) {
  if (p.drop != DropReason::kNone) return;
  if (r.drop != 0) {
    p.drop = static_cast<DropReason>(r.drop);
  } else {
    p.out_port = r.out_port;
  }
}

inline constexpr uint8_t kResIcmpTimeExceeded = 1;  // TTL <= 1: send ICMP Time Exceeded
inline constexpr uint8_t kResNotIpv4 = 2;           // packet was not IPv4 (passed to the default port or dropped)
inline constexpr uint8_t kResDefaultRoute = 4;      // LPM miss, forwarded by the default next hop
inline constexpr uint8_t kResIpv6 = 8;              // an IPv6 packet the IPv6 path handled (routes6 non-empty)

inline constexpr uint16_t kDescNotIpv4 = 0x8000;
inline constexpr uint16_t kDescAvailMask = 0x7fff;
inline constexpr uint32_t kMaxHeaderBytes = 60;
inline constexpr uint32_t kIpv6HeaderBytes = 40;

struct Ipv4Config {
  // Ports of the router. Next hops are output ports, so every next hop must be < num_ports; for the
  // pyasn BGP table the next hop is origin_AS mod num_ports (routes.hpp).
  uint32_t num_ports = 4;
  // LPM miss → forward to this next hop (port); unset → drop kNoRoute.
  std::optional<uint32_t> default_next_hop;
  // Non-IPv4 packets → this port; unset → drop kNotIPv4.
  std::optional<uint16_t> non_ipv4_port;
  // Entry width of the flat table. kAuto, the default: 16-bit entries (32 MiB) where the routes fit (next hops up
  // to 32,765, at most 32,768 tbl8 groups), else 32-bit; over 63 interleaved rounds 16-bit was at or above rte_lpm
  // in every run on random and capture addresses, 32-bit not on random ones (docs/ipv4.md "LPM width").
  LpmWidth lpm_width = LpmWidth::kAuto;
};

enum class RouteFormat : uint8_t {
  kAuto,   // *.dat / *.dat.gz → kIpasn, anything else → kText
  kIpasn,  // pyasn IP-ASN32-DAT, next hop = AS mod num_ports
  kText,   // "prefix/len nexthop"
};

// Loads a route file in `format` (routes, IPv6 lines skipped, duplicates: RouteLoad). Errors: those of
// load_ipasn / load_route_text (routes.hpp).
// `addrs`: next-hop addresses a text route file may name (parse_route_text).
Result<RouteLoad> load_routes(const std::string& path, RouteFormat format, uint32_t num_ports,
                              std::span<const NextHopAddr> addrs = {});

using MacAddr = std::array<uint8_t, 6>;
// "aa:bb:cc:dd:ee:ff" (hex digits, either case; ':' or '-' between the six bytes). Errors: kInvalidArgument
// quoting the text.
Result<MacAddr> parse_mac(std::string_view text);
std::string format_mac(const MacAddr& mac);

// A next hop's neighbour (DPDK l3fwd's per-port dest_eth_addr and ports_eth_addr, per next hop).
struct Neighbour {
  uint16_t port = 0;  // output port index
  MacAddr dst_mac{};  // the neighbour's MAC
  MacAddr src_mac{};  // the output port's MAC
};

class Ipv4App final : public App {
 public:
  // Errors: kInvalidArgument for num_ports == 0, a next hop or default_next_hop >= num_ports (names the
  // route), non_ipv4_port >= num_ports, an empty table; those of FlatLpm::build and Lpm6::build.
  // `routes6` empty: IPv6 is not routed (non_ipv4_port or kNotIPv4, as before issue 18).
  static Result<std::unique_ptr<Ipv4App>> create(std::span<const Route> routes, const Ipv4Config& config,
                                                 std::span<const Route6> routes6 = {});
  // load_routes + create.
  static Result<std::unique_ptr<Ipv4App>> from_file(const std::string& path, const Ipv4Config& config,
                                                   RouteFormat format = RouteFormat::kAuto);

  std::string_view name() const override { return "ipv4"; }
  Slice slice(const Packet& p) const override;
  void slices_in_place(std::span<const Packet> pkts, Desc* desc, uint8_t** slices) const override;
  uint32_t max_slice_bytes() const override { return kMaxHeaderBytes; }
  uint32_t result_bytes() const override { return sizeof(Ipv4Result); }
  bool writes_back() const override { return true; }
  std::string kernel_source() const override;
  std::string_view kernel_name() const override { return "ipv4_fwd"; }
  std::string build_options() const override;
  // Errors: kUnavailable when a buffer cannot be created on the context (OpenCL error named).
  Result<std::unique_ptr<DeviceTables>> make_device_tables(const cl::Context& ctx,
                                                           const cl::CommandQueue& queue) const override;
  void run_native(const BatchView& batch) const override;
  // slices_in_place, run_native and finish in one pass, with no descriptor or slice array (desc and slices unused).
  void run_in_place(std::span<Packet> pkts, Desc* desc, uint8_t** slices, uint8_t* out,
                    const AppDone& done) const override;
  // Packets that already carry a drop reason (the executor gave them an empty slice) are left alone.
  void finish(std::span<Packet> pkts, const BatchView& batch) const override;
  // Packets forwarded (not dropped) in the batch.
  uint64_t count_events(std::span<const Packet> pkts, const BatchView& batch) const override;
  std::string_view event_name() const override { return "forwarded"; }

  // The neighbour of every next hop 0..num_ports-1 (index = next hop). Call before the run (not thread safe
  // against finish()). Errors: kInvalidArgument when the table's size is not num_ports.
  Status set_neighbours(std::vector<Neighbour> by_next_hop);
  const std::vector<Neighbour>& neighbours() const { return neighbours_; }
  bool rewrites_l2() const override { return !neighbours_.empty(); }  // l3fwd's rewrite in finish()

  const FlatLpm& lpm() const { return lpm_; }
  const Lpm6* lpm6() const { return lpm6_ ? &*lpm6_ : nullptr; }
  const Ipv4Config& config() const { return config_; }

 private:
  Ipv4App(FlatLpm lpm, std::optional<Lpm6> lpm6, const Ipv4Config& config)
      : lpm_(std::move(lpm)), lpm6_(std::move(lpm6)), config_(config) {}
  // run_native's work on n packets read through `in` (ipv4_ref.cpp: a batch, or the packets in place), and its IPv6
  // part on the packets idx[0..n) of a chunk.
  template <class In>
  void forward(const In& in, uint32_t n) const;
  template <class In>
  void forward6(const In& in, const uint32_t* idx, uint32_t n) const;
  // finish()'s Ethernet rewrite of the forwarded packets with a neighbour table (nothing without one).
  void rewrite_l2(std::span<Packet> pkts, const Ipv4Result* res) const;
  // A lookup's next hop `hop`: kept, or on a miss the default route's (flagged in r) or a no_route drop written to r
  // (false: the packet is dropped).
  bool route_or_drop(uint32_t& hop, Ipv4Result& r) const;
  FlatLpm lpm_;
  std::optional<Lpm6> lpm6_;
  Ipv4Config config_;
  std::vector<Neighbour> neighbours_;  // empty: no rewrite
};

// Inline: slices_in_place and run_in_place (ipv4_ref.cpp) make a slice per packet.
inline Slice Ipv4App::slice(const Packet& p) const {
  if (p.l3 != L3::kIPv4) {
    if (p.l3 != L3::kIPv6 || !lpm6_) return Slice{0, 0, kDescNotIpv4};
    if (p.l3_off == kNoOffset || p.l3_off >= p.len) return Slice{0, 0, 0};  // kTruncated, as for IPv4
    const uint32_t avail6 = p.len - p.l3_off;
    return Slice{p.l3_off, static_cast<uint16_t>(std::min(avail6, kIpv6HeaderBytes)),
                 static_cast<uint16_t>(kDescNotIpv4 | std::min<uint32_t>(avail6, kDescAvailMask))};
  }
  if (p.l3_off == kNoOffset || p.l3_off >= p.len) return Slice{0, 0, 0};
  const uint32_t avail = p.len - p.l3_off;
  uint32_t want = std::max<uint32_t>(20, (p.data[p.l3_off] & 0xfu) * 4u);
  return Slice{p.l3_off, static_cast<uint16_t>(std::min(avail, want)),
               static_cast<uint16_t>(std::min<uint32_t>(avail, kDescAvailMask))};
}

// Builds an ICMP Time Exceeded message (type 11, code 0 "TTL exceeded in transit"; RFC 792) answering
// `p` into `out` and returns its length. Ethernet: the original L2 header (VLAN tags kept) with source
// and destination MAC swapped. IPv4: src = router_addr (host byte order), dst = p's source, TTL 64,
// protocol 1, no options, header checksum set. ICMP: checksum set, 4 unused zero bytes, then the
// original IP header and the first 8 bytes of its data (fewer if the datagram has fewer), per RFC 792.
// Needs p.l3_off set and the original header intact (the app does not modify dropped packets).
// Errors: kInvalidArgument when p has no complete IPv4 header inside the frame, or `out` is shorter than
// l3_off + 28 + IHL*4 + 8 bytes.
Result<size_t> build_icmp_time_exceeded(const Packet& p, uint32_t router_addr, std::span<uint8_t> out);

// ICMPv6 Time Exceeded (type 3, code 0 "hop limit exceeded in transit"; RFC 4443 §3.3) answering the IPv6
// packet `p`, built like build_icmp_time_exceeded: the original L2 header with the MACs swapped; IPv6 with
// traffic class and flow label 0, next header 58, hop limit 64, src = router_addr, dst = p's source;
// ICMPv6 type 3, code 0, checksum over the RFC 8200 §8.1 pseudo-header, 4 unused zero bytes, then as much
// of the invoking packet (from its IPv6 header, at most 40 + payload length bytes) as fits without the
// reply's IPv6 packet exceeding the minimum MTU of 1280 bytes. Errors: kInvalidArgument when p has no
// complete IPv6 header inside the frame, or `out` is too short.
Result<size_t> build_icmpv6_time_exceeded(const Packet& p, const Ipv6Addr& router_addr, std::span<uint8_t> out);

}  // namespace hpr::kernels::ipv4
