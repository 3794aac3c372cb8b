// ICMPv6 Time Exceeded (RFC 4443 §3.3) for IPv6 packets whose hop limit ran out (ipv4_app.hpp).
#include <algorithm>
#include <cstring>

#include "kernels/ipv4/ipv4_app.hpp"
#include "kernels/ipv4/ipv4_hdr.hpp"

namespace hpr::kernels::ipv4 {

Result<size_t> build_icmpv6_time_exceeded(const Packet& p, const Ipv6Addr& router_addr, std::span<uint8_t> out) {
  constexpr uint32_t kMinMtu = 1280;  // RFC 8200 §5: the reply's IPv6 packet stays within it
  constexpr uint32_t kHdr = 40;
  if (p.l3_off == kNoOffset || p.l3_off < 14 || size_t{p.l3_off} + kHdr > p.len) {
    return error(Code::kInvalidArgument, "icmpv6: packet has no complete IPv6 header (l3_off {}, len {})", p.l3_off, p.len);
  }
  const uint8_t* ip = p.data + p.l3_off;
  if ((ip[0] >> 4) != 6) return error(Code::kInvalidArgument, "icmpv6: not an IPv6 header (version {})", ip[0] >> 4);
  const uint32_t plen = (uint32_t{ip[4]} << 8) | ip[5];
  const uint32_t quoted = std::min({kHdr + plen, uint32_t{p.len} - p.l3_off, kMinMtu - kHdr - 8});
  const size_t l2 = p.l3_off;
  const uint32_t icmp_len = 8 + quoted;
  const size_t total = l2 + kHdr + icmp_len;
  if (out.size() < total) return error(Code::kInvalidArgument, "icmpv6: output buffer {} bytes, need {}", out.size(), total);

  uint8_t* f = out.data();
  reply_l2(f, p);
  uint8_t* h = f + l2;
  h[0] = 0x60;  // version 6, traffic class 0, flow label 0
  h[1] = h[2] = h[3] = 0;
  h[4] = static_cast<uint8_t>(icmp_len >> 8);
  h[5] = static_cast<uint8_t>(icmp_len);
  h[6] = 58;  // ICMPv6
  h[7] = 64;
  std::memcpy(h + 8, router_addr.data(), 16);
  std::memcpy(h + 24, ip + 8, 16);  // dst = original source

  uint8_t* ic = h + kHdr;
  ic[0] = 3;  // Time Exceeded
  ic[1] = 0;  // hop limit exceeded in transit
  ic[2] = ic[3] = 0;
  ic[4] = ic[5] = ic[6] = ic[7] = 0;
  std::memcpy(ic + 8, ip, quoted);
  // Pseudo-header (RFC 8200 §8.1): source, destination, upper-layer length (32 bits), 3 zero bytes, 58.
  uint8_t pseudo[40];
  std::memcpy(pseudo, h + 8, 32);
  pseudo[32] = static_cast<uint8_t>(icmp_len >> 24);
  pseudo[33] = static_cast<uint8_t>(icmp_len >> 16);
  pseudo[34] = static_cast<uint8_t>(icmp_len >> 8);
  pseudo[35] = static_cast<uint8_t>(icmp_len);
  pseudo[36] = pseudo[37] = pseudo[38] = 0;
  pseudo[39] = 58;
  uint32_t sum = uint32_t{ones_sum(pseudo, 40)} + ones_sum(ic, icmp_len);
  sum = (sum & 0xffffu) + (sum >> 16);
  const uint16_t cc = static_cast<uint16_t>(~sum & 0xffffu);
  ic[2] = static_cast<uint8_t>(cc >> 8);
  ic[3] = static_cast<uint8_t>(cc);
  return total;
}

}  // namespace hpr::kernels::ipv4
