// Route-table loaders (kernels/ipv4/routes.hpp). The first byte picks the path:
//   0: parse_ipasn on the rest (num_ports from the second byte, 0 included: must be refused, not crash);
//   1: parse_route_text on the rest;
//   2: the rest as a file through load_ipasn (gzip or plain: read_maybe_gzip);
//   3: the rest as a file through load_route_text.
// Every route accepted must satisfy the documented invariants (len <= 32, host bits zero, next hop bound);
// IPv6 routes likewise (len <= 128), one per IPv6 line counted.
#include <cstdlib>
#include <string_view>

#include "kernels/ipv4/routes.hpp"
#include "tests/fuzz/fuzz_targets.hpp"

namespace hpr::fuzz {

int routes(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const uint8_t mode = data[0] & 3;
  const uint32_t ports = data[1];
  std::string_view text(reinterpret_cast<const char*>(data + 2), size - 2);
  Result<kernels::ipv4::RouteLoad> r = error(Code::kInvalidArgument, "unset");
  switch (mode) {
    case 0: r = kernels::ipv4::parse_ipasn(text, "fuzz", ports); break;
    case 1: r = kernels::ipv4::parse_route_text(text, "fuzz"); break;
    case 2: r = kernels::ipv4::load_ipasn(as_file(data + 2, size - 2), ports); break;
    default: r = kernels::ipv4::load_route_text(as_file(data + 2, size - 2)); break;
  }
  if (r.is_ok()) {
    for (const auto& rt : r.value().routes) {
      if (rt.len > 32) std::abort();
      if (rt.len < 32 && (rt.prefix & (0xffffffffu >> rt.len)) != 0 && rt.len != 0) std::abort();
      if (rt.len == 0 && rt.prefix != 0) std::abort();
      if (rt.next_hop > kernels::ipv4::kMaxNextHop) std::abort();
      if ((mode == 0 || mode == 2) && rt.next_hop >= ports) std::abort();
      uint32_t a = 0;
      if (!kernels::ipv4::parse_ipv4(kernels::ipv4::format_ipv4(rt.prefix), a) || a != rt.prefix) std::abort();
    }
    for (const auto& rt : r.value().routes6) {  // IPv6 lines (issue 18): length, host bits, next hop
      if (rt.len > 128 || rt.next_hop >= kernels::ipv4::kMaxNextHop) std::abort();
      if ((mode == 0 || mode == 2) && rt.next_hop >= ports) std::abort();
      for (uint32_t b = rt.len; b < 128; ++b)
        if ((rt.prefix[b / 8] >> (7 - b % 8)) & 1) std::abort();
      kernels::ipv4::Ipv6Addr back{};
      if (!kernels::ipv4::parse_ipv6(kernels::ipv4::format_ipv6(rt.prefix), back) || back != rt.prefix) std::abort();
    }
    if (r.value().routes6.size() != r.value().ipv6_skipped) std::abort();
  }
  return 0;
}

}  // namespace hpr::fuzz
