#pragma once
// IPv4 route tables for the ipv4 forwarding app (issue 3; paper §3.2.1 "IPv4 Packet Forwarding").
//
// Two input formats:
//  * pyasn "IP-ASN32-DAT" (e.g. ../shared/data/routes/ipasn_20140513.dat.gz, a RouteViews BGP table):
//    gzip or plain text, `;` starts a comment line, one `a.b.c.d/len<TAB>origin-AS` per line.
//    A BGP table has no next hops of ours, so the next hop is derived from the origin AS by the rule
//        next_hop = origin_AS mod num_ports
//    which spreads prefixes over the router's ports deterministically (documented in docs/ipv4.md).
//  * plain text: `a.b.c.d/len nexthop` (whitespace separated), `#` or `;` comment lines, blank lines
//    ignored; nexthop is a decimal integer (the output port, < kMaxNextHop), or a next-hop IPv4 address
//    a.b.c.d that the caller's address table (NextHopAddr: [[neighbour]] address = ...) maps to a number.
// In both formats an IPv6 prefix line (`2001:db8::/32<TAB>64496`, as newer RouteViews conversions mix in)
// is kept out of the IPv4 table and counted (RouteLoad::ipv6_skipped); it goes to RouteLoad::routes6 with
// the same next-hop rule (AS mod num_ports, or the decimal next hop of a text file), for the app's IPv6
// path (lpm6.hpp). A table without IPv6 lines leaves routes6 empty and the app routes no IPv6.
// Duplicate prefixes are allowed and counted (RouteLoad::duplicates); the later line wins (both lookup
// structures follow that rule).
//
// Errors (Status / Result, never exceptions):
//  * kNotFound / kIoError: file missing or unreadable (gzip errors included), message names the file;
//  * kInvalidArgument "<file>: is a directory, not a route file";
//  * kInvalidArgument "<file>: more than N MiB after decompression ...": the file (after gunzip) is larger
//    than the cap of read_maybe_gzip (kMaxRouteFileBytes; a gzip bomb stops there, not at the memory limit);
//  * kInvalidArgument "<file>:<line>: <what is wrong>": bad address, length > 32 (> 128 for IPv6),
//    host bits set beyond the length (IPv4 and IPv6), missing or non-numeric AS / next hop, next hop too large, extra fields;
//  * kInvalidArgument "<file>: no routes": the file holds no IPv4 route at all (empty table);
//  * kInvalidArgument: num_ports == 0.
#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "hpr/status.hpp"

namespace hpr::kernels::ipv4 {

// Next hops are 24-bit values at most (the flat table stores them in 15 or 31 bits; see lpm.hpp).
inline constexpr uint32_t kMaxNextHop = (1u << 24) - 1;

struct Route {
  uint32_t prefix = 0;    // host byte order, host bits zero
  uint8_t len = 0;        // 0..32
  uint32_t next_hop = 0;  // < kMaxNextHop
  bool operator==(const Route&) const = default;
};

// An IPv6 route: prefix in network byte order (host bits zero), length 0..128.
using Ipv6Addr = std::array<uint8_t, 16>;
struct Route6 {
  Ipv6Addr prefix{};
  uint8_t len = 0;
  uint32_t next_hop = 0;
  bool operator==(const Route6&) const = default;
};
// inet_pton / inet_ntop for IPv6 text.
bool parse_ipv6(std::string_view s, Ipv6Addr& addr);
std::string format_ipv6(const Ipv6Addr& addr);

// Parses "a.b.c.d" (decimal, 0..255 each) into host byte order. False on anything else.
bool parse_ipv4(std::string_view s, uint32_t& addr);
std::string format_ipv4(uint32_t addr);

// A loaded table: the IPv4 routes in file order, and what was set aside.
struct RouteLoad {
  std::vector<Route> routes;
  std::vector<Route6> routes6;  // the IPv6 prefix lines, in file order (later duplicates win as for IPv4)
  uint64_t ipv6_skipped = 0;  // IPv6 prefix lines (not in `routes`; in routes6)
  uint64_t duplicates = 0;    // routes whose prefix/len an earlier line already had (the later one wins)
};

// The largest route file accepted, after decompression. A full BGP table is ~11 MiB of text
// (ipasn_20140513: 512,621 routes); the cap stops a gzip bomb long before it takes the memory.
inline constexpr size_t kMaxRouteFileBytes = size_t{256} << 20;

// Reads a whole file, gunzipping it when it starts with the gzip magic (zlib gzread). Stops reading
// as soon as the text passes `max_bytes` and fails with kInvalidArgument
// "<file>: more than N MiB after decompression (a full BGP table is ~ 25 MB)"; errors as above.
Result<std::string> read_maybe_gzip(const std::string& path, size_t max_bytes = kMaxRouteFileBytes);

// A next-hop address that text route files may name instead of the next hop's number.
struct NextHopAddr {
  uint32_t addr = 0;  // host byte order
  uint32_t next_hop = 0;
};

// Parsers over text already in memory; `name` is used in messages ("<name>:<line>: ...").
Result<RouteLoad> parse_ipasn(std::string_view text, std::string_view name, uint32_t num_ports);
// A next hop given as an address not in `addrs`: kInvalidArgument "<name>:<line>: next hop a.b.c.d is not the
// address of any [[neighbour]]".
Result<RouteLoad> parse_route_text(std::string_view text, std::string_view name,
                                   std::span<const NextHopAddr> addrs = {});

// File loaders (gzip or plain for both).
Result<RouteLoad> load_ipasn(const std::string& path, uint32_t num_ports);
Result<RouteLoad> load_route_text(const std::string& path, std::span<const NextHopAddr> addrs = {});

}  // namespace hpr::kernels::ipv4
