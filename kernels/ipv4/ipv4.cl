// IPv4 forwarding, thread per packet (issue 3; paper §3.2.1, §3.3). OpenCL C 1.2.
// Host side: kernels/ipv4/ipv4_app.{hpp,cpp}; native twin with the same semantics: ipv4_ref.cpp.
//
// Slice = the IPv4 header (min(bytes from L3 to end of frame, max(20, IHL*4)) bytes).
// desc.flags: bits 0..14 = bytes from L3 to the end of the frame (capped at 32767), bit 15 = not IPv4.
// Per packet, in this order: not IPv4 → default port or drop NOT_IPV4; < 20 bytes → TRUNCATED;
// version != 4 → BAD_VERSION; IHL < 5 or beyond the frame → BAD_IHL; total length < IHL*4 or beyond
// the frame → BAD_TOTAL_LENGTH; header checksum wrong → BAD_CHECKSUM; TTL <= 1 → TTL_EXCEEDED (the
// host sends ICMP Time Exceeded); LPM miss without a default → NO_ROUTE; otherwise TTL - 1 with the
// RFC 1624 incremental checksum update written back into the slice, next hop and port in `out`.
//
// IPv6 (IPV6_ROUTES, issue 18): desc.flags bit 15 set with a non-zero byte count = an IPv6 packet whose
// slice is its 40-byte fixed header: < 40 bytes → TRUNCATED; version != 6 → BAD_VERSION; 40 + payload
// length beyond the frame → BAD_TOTAL_LENGTH; hop limit <= 1 → TTL_EXCEEDED; LPM6 miss → default or
// NO_ROUTE; else hop limit - 1. LPM6 (lpm6.hpp): tbl6_24 on the top 24 bits, then 256-entry groups.
//
// Build options (from Ipv4App::build_options): LPM_WIDE (32-bit entries, else 16-bit), IPV6_ROUTES,
// IPV4_DEFAULT_NH (LPM miss → this next hop), IPV4_NON_IPV4_PORT (else drop), DROP_* reason codes.

typedef struct {
  uint next_hop;   // 0xffffffff when dropped
  ushort out_port;
  uchar drop;      // hpr::DropReason
  uchar flags;     // RES_* bits
} ipv4_result;

#define RES_ICMP_TIME_EXCEEDED 1
#define RES_NOT_IPV4 2
#define RES_DEFAULT_ROUTE 4
#define RES_IPV6 8

#define DESC_NOT_IPV4 0x8000
#define DESC_AVAIL_MASK 0x7fff

#ifdef LPM_WIDE
typedef uint lpm_e;
#define LPM_EXT 0x80000000u
#else
typedef ushort lpm_e;
#define LPM_EXT 0x8000u
#endif

#ifdef IPV6_ROUTES
ipv4_result ipv6_fwd(uint avail, uint len, __global uchar* h, __global const uint* t24,
                            __global const uint* t8) {
  ipv4_result r;
  r.next_hop = 0xffffffffu;
  r.out_port = 0;
  r.drop = 0;
  r.flags = RES_IPV6;
  if (len < 40) {
    r.drop = DROP_TRUNCATED;
    return r;
  }
  if ((h[0] >> 4) != 6) {
    r.drop = DROP_BAD_VERSION;
    return r;
  }
  if (40u + (((uint)h[4] << 8) | h[5]) > avail) {
    r.drop = DROP_BAD_TOTAL_LENGTH;
    return r;
  }
  if (h[7] <= 1) {
    r.drop = DROP_TTL_EXCEEDED;
    r.flags = RES_IPV6 | RES_ICMP_TIME_EXCEEDED;
    return r;
  }
  uint e = t24[((uint)h[24] << 16) | ((uint)h[25] << 8) | h[26]];
  for (uint k = 27; (e & 0x80000000u) != 0 && k < 40; ++k) e = t8[((e & 0x7fffffffu) << 8) | h[k]];
  uint nh;
  if (e != 0) {
    nh = e - 1;
  } else {
#ifdef IPV4_DEFAULT_NH
    nh = IPV4_DEFAULT_NH;
    r.flags = RES_IPV6 | RES_DEFAULT_ROUTE;
#else
    r.drop = DROP_NO_ROUTE;
    return r;
#endif
  }
  h[7] = (uchar)(h[7] - 1);
  r.next_hop = nh;
  r.out_port = (ushort)nh;
  return r;
}
#endif

__kernel void ipv4_fwd(__global const hpr_desc* desc, uint n, __global uchar* pkts, __global ipv4_result* out,
                       __global const lpm_e* tbl24, __global const lpm_e* tbl8, __global const uint* tbl6_24,
                       __global const uint* tbl6_8) {
  uint i = get_global_id(0);
  if (i >= n) return;
  hpr_desc d = desc[i];
  ipv4_result r;
  r.next_hop = 0xffffffffu;
  r.out_port = 0;
  r.drop = 0;
  r.flags = 0;

  if (d.flags & DESC_NOT_IPV4) {
#ifdef IPV6_ROUTES
    if ((d.flags & DESC_AVAIL_MASK) != 0) {
      out[i] = ipv6_fwd(d.flags & DESC_AVAIL_MASK, d.len, pkts + d.off, tbl6_24, tbl6_8);
      return;
    }
#endif
    r.flags = RES_NOT_IPV4;
#ifdef IPV4_NON_IPV4_PORT
    r.out_port = IPV4_NON_IPV4_PORT;
#else
    r.drop = DROP_NOT_IPV4;
#endif
    out[i] = r;
    return;
  }
  uint avail = d.flags & DESC_AVAIL_MASK;
  uint len = d.len;
  __global uchar* h = pkts + d.off;
  if (len < 20) {
    r.drop = DROP_TRUNCATED;
    out[i] = r;
    return;
  }
  uchar vihl = h[0];
  uint ihl4 = (vihl & 15u) * 4u;
  uint tot = ((uint)h[2] << 8) | h[3];
  if ((vihl >> 4) != 4) {
    r.drop = DROP_BAD_VERSION;
  } else if (ihl4 < 20 || ihl4 > len) {
    r.drop = DROP_BAD_IHL;
  } else if (tot < ihl4 || tot > avail) {
    r.drop = DROP_BAD_TOTAL_LENGTH;
  } else {
    uint sum = 0;
    for (uint k = 0; k < ihl4; k += 2) sum += ((uint)h[k] << 8) | h[k + 1];
    sum = (sum & 0xffffu) + (sum >> 16);
    sum = (sum & 0xffffu) + (sum >> 16);
    if (sum != 0xffffu) {
      r.drop = DROP_BAD_CHECKSUM;
    } else if (h[8] <= 1) {
      r.drop = DROP_TTL_EXCEEDED;
      r.flags = RES_ICMP_TIME_EXCEEDED;
    }
  }
  if (r.drop != 0) {
    out[i] = r;
    return;
  }

  uint dst = ((uint)h[16] << 24) | ((uint)h[17] << 16) | ((uint)h[18] << 8) | h[19];
  lpm_e e = tbl24[dst >> 8];
  if (e & LPM_EXT) e = tbl8[((uint)(e & ~LPM_EXT) << 8) | (dst & 0xffu)];
  uint nh;
  if (e != 0) {
    nh = (uint)e - 1;
  } else {
#ifdef IPV4_DEFAULT_NH
    nh = IPV4_DEFAULT_NH;
    r.flags = RES_DEFAULT_ROUTE;
#else
    r.drop = DROP_NO_ROUTE;
    out[i] = r;
    return;
#endif
  }

  // RFC 1624 eq. 3: HC' = ~(~HC + ~m + m'), m = TTL:protocol word.
  uint ttl = h[8];
  uint m = (ttl << 8) | h[9];
  uint m2 = m - 0x100u;
  uint hc = ((uint)h[10] << 8) | h[11];
  uint s = (~hc & 0xffffu) + (~m & 0xffffu) + m2;
  s = (s & 0xffffu) + (s >> 16);
  s = (s & 0xffffu) + (s >> 16);
  uint hc2 = ~s & 0xffffu;
  h[8] = (uchar)(ttl - 1);
  h[10] = (uchar)(hc2 >> 8);
  h[11] = (uchar)hc2;

  r.next_hop = nh;
  r.out_port = (ushort)nh;
  out[i] = r;
}
