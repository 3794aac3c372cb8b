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
//    ignored; nexthop is a decimal integer (the output port, < kMaxNextHop).
//
// Errors (Status / Result, never exceptions):
//  * kNotFound / kIoError: file missing or unreadable (gzip errors included), message names the file;
//  * kInvalidArgument "<file>:<line>: <what is wrong>": bad address, length > 32, host bits set
//    beyond the length, missing or non-numeric AS / next hop, next hop too large, extra fields;
//  * kInvalidArgument "<file>: no routes": the file holds no route at all (empty table);
//  * kInvalidArgument: num_ports == 0.
// Duplicate prefixes are allowed; the later line wins (both lookup structures follow that rule).
#include <cstdint>
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

// Parses "a.b.c.d" (decimal, 0..255 each) into host byte order. False on anything else.
bool parse_ipv4(std::string_view s, uint32_t& addr);
std::string format_ipv4(uint32_t addr);

// Reads a whole file, gunzipping it when it starts with the gzip magic (zlib gzread).
Result<std::string> read_maybe_gzip(const std::string& path);

// Parsers over text already in memory; `name` is used in messages ("<name>:<line>: ...").
Result<std::vector<Route>> parse_ipasn(std::string_view text, std::string_view name, uint32_t num_ports);
Result<std::vector<Route>> parse_route_text(std::string_view text, std::string_view name);

// File loaders (gzip or plain for both).
Result<std::vector<Route>> load_ipasn(const std::string& path, uint32_t num_ports);
Result<std::vector<Route>> load_route_text(const std::string& path);

}  // namespace hpr::kernels::ipv4
