// The neighbour table of the IPv4 app: MAC text and the next hop → (output port, MACs) table that finish() uses
// for DPDK l3fwd's Ethernet rewrite (ipv4_app.hpp).
#include <fmt/format.h>

#include "kernels/ipv4/ipv4_app.hpp"

namespace hpr::kernels::ipv4 {

Result<MacAddr> parse_mac(std::string_view text) {
  MacAddr m{};
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  bool ok = text.size() == 17;
  for (size_t i = 0; ok && i < 6; ++i) {
    int hi = hex(text[i * 3]), lo = hex(text[i * 3 + 1]);
    ok = hi >= 0 && lo >= 0 && (i == 5 || text[i * 3 + 2] == ':' || text[i * 3 + 2] == '-');
    m[i] = static_cast<uint8_t>(hi * 16 + lo);
  }
  if (!ok) return error(Code::kInvalidArgument, "'{}' is not a MAC address (want aa:bb:cc:dd:ee:ff)", text);
  return m;
}

std::string format_mac(const MacAddr& m) {
  return fmt::format("{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}", m[0], m[1], m[2], m[3], m[4], m[5]);
}

Status Ipv4App::set_neighbours(std::vector<Neighbour> by_next_hop) {
  if (!by_next_hop.empty() && by_next_hop.size() != config_.num_ports)
    return error(Code::kInvalidArgument, "ipv4: a neighbour table of {} next hops for num_ports {}", by_next_hop.size(),
                 config_.num_ports);
  neighbours_ = std::move(by_next_hop);
  return Status::ok();
}

}  // namespace hpr::kernels::ipv4
