#include "kernels/ipv4/lpm6.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <bit>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace hpr::kernels::ipv4 {
namespace {

constexpr size_t kHugePage = size_t{2} << 20;

uint32_t* alloc_entries(size_t entries) {
  const size_t bytes = (entries * 4 + kHugePage - 1) / kHugePage * kHugePage;
  void* p = std::aligned_alloc(kHugePage, bytes);
  if (p == nullptr) return nullptr;
  madvise(p, bytes, MADV_HUGEPAGE);
  std::memset(p, 0, bytes);
  return static_cast<uint32_t*>(p);
}

// Groups needed: one per distinct (level, leading bits) that a longer prefix passes through.
uint32_t count_groups(std::span<const Route6> routes) {
  std::vector<std::pair<uint32_t, Ipv6Addr>> keys;  // (depth in bytes, prefix truncated to it)
  for (const Route6& r : routes) {
    for (uint32_t depth = 3; depth * 8 < r.len; ++depth) {
      Ipv6Addr k{};
      std::memcpy(k.data(), r.prefix.data(), depth);
      keys.emplace_back(depth, k);
    }
  }
  std::sort(keys.begin(), keys.end());
  return static_cast<uint32_t>(std::unique(keys.begin(), keys.end()) - keys.begin());
}

}  // namespace

void Lpm6::FreeDeleter::operator()(void* p) const { std::free(p); }

Result<Lpm6> Lpm6::build(std::span<const Route6> routes) {
  if (routes.empty()) return error(Code::kInvalidArgument, "LPM6: empty route table (no IPv6 routes to build from)");
  for (const Route6& r : routes) {
    if (r.next_hop >= kMaxNextHop)
      return error(Code::kInvalidArgument, "LPM6: next hop {} of {}/{} is too large (must be < {})", r.next_hop,
                   format_ipv6(r.prefix), r.len, kMaxNextHop);
  }
  Lpm6 t;
  t.num_routes_ = static_cast<uint32_t>(routes.size());
  t.num_groups_ = 1 + count_groups(routes);
  t.tbl24_.reset(alloc_entries(size_t{1} << 24));
  t.tbl8_.reset(alloc_entries(size_t{t.num_groups_} * 256));
  if (!t.tbl24_ || !t.tbl8_) return error(Code::kInternal, "LPM6: out of memory for {} bytes of tables", t.tbl24_bytes() + t.tbl8_bytes());

  std::vector<Route6> sorted(routes.begin(), routes.end());
  std::stable_sort(sorted.begin(), sorted.end(), [](const Route6& a, const Route6& b) { return a.len < b.len; });
  uint32_t* t24 = t.tbl24_.get();
  uint32_t* t8 = t.tbl8_.get();
  uint32_t next_group = 1;
  // Shortest first: a longer prefix overwrites a shorter one, and a new group inherits its parent
  // entry, which already holds every shorter route covering it. A range being filled never holds a
  // group pointer yet (groups are split off only by longer routes, which come later).
  for (const Route6& r : sorted) {
    const uint32_t v = r.next_hop + 1;
    const uint8_t* p = r.prefix.data();
    const uint32_t i24 = (uint32_t{p[0]} << 16) | (uint32_t{p[1]} << 8) | p[2];
    if (r.len <= 24) {
      std::fill(t24 + i24, t24 + i24 + (size_t{1} << (24 - r.len)), v);
      continue;
    }
    uint32_t* slot = t24 + i24;  // the entry that must point to the group of the next level
    uint32_t depth = 3;          // bytes consumed
    for (;;) {
      uint32_t g;
      if (*slot & kExt) {
        g = *slot & ~kExt;
      } else {
        g = next_group++;
        std::fill(t8 + size_t{g} * 256, t8 + size_t{g} * 256 + 256, *slot);
        *slot = kExt | g;
      }
      uint32_t* grp = t8 + size_t{g} * 256;
      if (r.len <= (depth + 1) * 8) {
        const uint32_t bits = r.len - depth * 8;  // 1..8 bits of this byte
        std::fill(grp + p[depth], grp + p[depth] + (1u << (8 - bits)), v);
        break;
      }
      slot = grp + p[depth];
      ++depth;
    }
  }
  return t;
}

uint32_t Lpm6::lookup(const uint8_t* a) const {
  uint32_t e = tbl24_.get()[(uint32_t{a[0]} << 16) | (uint32_t{a[1]} << 8) | a[2]];
  for (uint32_t depth = 3; (e & kExt) != 0 && depth < 16; ++depth) e = tbl8_.get()[(size_t{e & ~kExt} << 8) | a[depth]];
  return e - 1;  // 0 (no route) wraps to kNoNextHop
}

void Lpm6::lookup_bulk(const uint8_t (*addrs)[16], uint32_t* next_hops, uint32_t n) const {
  constexpr uint32_t kChunk = 64;
  const uint32_t* t24 = tbl24_.get();
  const uint32_t* t8 = tbl8_.get();
  for (uint32_t base = 0; base < n; base += kChunk) {
    const uint32_t m = std::min(kChunk, n - base);
    const uint8_t (*a)[16] = addrs + base;
    // out[i] holds entry - 1 throughout: the next hop once final (0, no route, wraps to kNoNextHop), and
    // for a group pointer kExt | (group - 1) (groups are >= 1), so the group is (out[i] + 1) & ~kExt.
    uint32_t* out = next_hops + base;
    uint8_t act[kChunk];  // addresses whose entry still points to a group
    uint32_t na = 0;
    for (uint32_t i = 0; i < m; ++i) {
      uint32_t w;
      std::memcpy(&w, a[i], 4);
      if constexpr (std::endian::native == std::endian::little) w = __builtin_bswap32(w);
      const uint32_t x = t24[w >> 8];
      out[i] = x - 1;
      act[na] = static_cast<uint8_t>(i);
      na += x >> 31;
    }
    // One level per round for the addresses still active, compacted without branches: the loads of a
    // round are independent of each other.
    for (uint32_t depth = 3; na != 0 && depth < 16; ++depth) {
      uint32_t nn = 0;
      for (uint32_t j = 0; j < na; ++j) {
        const uint32_t i = act[j];
        const uint32_t x = t8[(size_t{(out[i] + 1) & ~kExt} << 8) | a[i][depth]];
        out[i] = x - 1;
        act[nn] = static_cast<uint8_t>(i);
        nn += x >> 31;
      }
      na = nn;
    }
  }
}

}  // namespace hpr::kernels::ipv4
