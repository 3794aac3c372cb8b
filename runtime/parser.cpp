#include "runtime/parser.hpp"

#include <bit>
#include <cstring>

#include "runtime/checksum.hpp"

namespace hpr::detail {

DropReason parse_ipv6(Packet& p, uint32_t off) {
  const uint32_t len = p.len;
  if (len < off + 40) return fail(p, DropReason::kTruncated);
  const uint8_t* h = p.data + off;
  if ((h[0] >> 4) != 6) return fail(p, DropReason::kBadVersion);
  uint32_t plen = load_be16(h + 4);
  uint32_t end = off + 40 + plen;
  if (end > len) return fail(p, DropReason::kBadTotalLength);
  p.l3 = L3::kIPv6;
  uint8_t nh = h[6];
  uint32_t cur = off + 40;
  bool first_fragment = true;
  for (int i = 0;; ++i) {
    uint32_t ext = 0;
    switch (nh) {
      case 0: case 43: case 60: case 135: case 139: case 140:  // (len + 1) * 8 bytes
        if (end < cur + 8) return fail(p, DropReason::kBadExtHeader);
        ext = (static_cast<uint32_t>(p.data[cur + 1]) + 1) * 8;
        break;
      case 44:  // fragment header, 8 bytes
        if (end < cur + 8) return fail(p, DropReason::kBadExtHeader);
        ext = 8;
        p.flags |= kFlagFragment;
        if ((load_be16(p.data + cur + 2) & 0xfff8) != 0) first_fragment = false;
        break;
      case 51:  // AH: (len + 2) * 4 bytes
        if (end < cur + 8) return fail(p, DropReason::kBadExtHeader);
        ext = (static_cast<uint32_t>(p.data[cur + 1]) + 2) * 4;
        break;
      default:
        ext = 0;
    }
    if (ext == 0) break;
    if (i >= kMaxExtHeaders || end < cur + ext) return fail(p, DropReason::kBadExtHeader);
    nh = p.data[cur];
    cur += ext;
  }
  p.l4 = nh;
  if (nh == 59) {  // no next header
    p.payload_off = static_cast<uint16_t>(cur);
    p.payload_len = 0;
    return DropReason::kNone;
  }
  return parse_l4(p, nh, cur, end, first_fragment, (p.flags & kFlagFragment) != 0);
}

}  // namespace hpr::detail

namespace hpr {

uint32_t parse_batch(std::span<Packet> pkts, const ParseOptions& opt) {
  uint32_t bad = 0;
  for (auto& p : pkts) bad += parse(p, opt) != DropReason::kNone;
  return bad;
}

}  // namespace hpr
