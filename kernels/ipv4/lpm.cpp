#include "kernels/ipv4/lpm.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <unordered_set>

namespace hpr::kernels::ipv4 {
namespace {

constexpr size_t kHugePage = size_t{2} << 20;

// 2 MiB aligned, zeroed, and marked for transparent huge pages: the first level is 32-64 MiB of
// random accesses, so TLB misses would otherwise cost as much as the cache misses.
uint8_t* alloc_table(size_t bytes) {
  size_t rounded = (bytes + kHugePage - 1) / kHugePage * kHugePage;
  void* p = std::aligned_alloc(kHugePage, rounded);
  if (p == nullptr) return nullptr;
  madvise(p, rounded, MADV_HUGEPAGE);
  std::memset(p, 0, rounded);
  return static_cast<uint8_t*>(p);
}

}  // namespace

void FlatLpm::FreeDeleter::operator()(void* p) const { std::free(p); }

template <typename E>
void FlatLpm::fill(FlatLpm& t, std::span<const Route> sorted) {
  constexpr E kExt = static_cast<E>(E{1} << (sizeof(E) * 8 - 1));
  E* t24 = reinterpret_cast<E*>(t.tbl24_.get());
  E* t8 = reinterpret_cast<E*>(t.tbl8_.get());
  uint32_t next_group = 0;
  // Routes come sorted by length, shortest first, so a longer prefix always overwrites a shorter one,
  // and every /0../24 route is in place before the first tbl8 group is split off.
  for (const Route& r : sorted) {
    E v = static_cast<E>(r.next_hop + 1);
    if (r.len <= 24) {
      uint32_t first = r.prefix >> 8;
      uint32_t count = 1u << (24 - r.len);
      std::fill(t24 + first, t24 + first + count, v);
    } else {
      uint32_t i24 = r.prefix >> 8;
      E e = t24[i24];
      uint32_t g;
      if (e & kExt) {
        g = e & static_cast<E>(~kExt);
      } else {
        g = next_group++;
        std::fill(t8 + size_t{g} * 256, t8 + size_t{g} * 256 + 256, e);
        t24[i24] = static_cast<E>(kExt | g);
      }
      uint32_t first = r.prefix & 0xff;
      uint32_t count = 1u << (32 - r.len);
      std::fill(t8 + size_t{g} * 256 + first, t8 + size_t{g} * 256 + first + count, v);
    }
  }
}

Result<FlatLpm> FlatLpm::build(std::span<const Route> routes, LpmWidth width) {
  if (routes.empty()) return error(Code::kInvalidArgument, "LPM: empty route table (no routes to build from)");
  uint32_t max_nh = 0;
  std::unordered_set<uint32_t> blocks;
  for (const Route& r : routes) {
    if (r.next_hop >= kMaxNextHop) {
      return error(Code::kInvalidArgument, "LPM: next hop {} of {}/{} is too large (must be < {})", r.next_hop,
                   format_ipv4(r.prefix), r.len, kMaxNextHop);
    }
    max_nh = std::max(max_nh, r.next_hop);
    if (r.len > 24) blocks.insert(r.prefix >> 8);
  }
  const auto groups = static_cast<uint32_t>(blocks.size());
  const bool fits_narrow = max_nh + 1 < 0x7fffu && groups <= 0x8000u;
  if (width == LpmWidth::kNarrow && !fits_narrow) {
    return error(Code::kInvalidArgument,
                 "LPM: routes do not fit 16-bit entries (largest next hop {}, limit 32765; {} tbl8 groups, limit 32768)",
                 max_nh, groups);
  }
  FlatLpm t;
  t.wide_ = width == LpmWidth::kWide || (width == LpmWidth::kAuto && !fits_narrow);
  t.num_groups_ = groups;
  t.num_routes_ = static_cast<uint32_t>(routes.size());
  t.tbl24_.reset(alloc_table(t.tbl24_bytes()));
  t.tbl8_.reset(alloc_table(t.tbl8_bytes()));
  if (!t.tbl24_ || !t.tbl8_) return error(Code::kInternal, "LPM: out of memory for {} bytes of tables", t.tbl24_bytes() + t.tbl8_bytes());

  std::vector<Route> sorted(routes.begin(), routes.end());
  std::stable_sort(sorted.begin(), sorted.end(), [](const Route& a, const Route& b) { return a.len < b.len; });
  if (t.wide_) {
    fill<uint32_t>(t, sorted);
  } else {
    fill<uint16_t>(t, sorted);
  }
  return t;
}

template <typename E>
__attribute__((optimize("align-loops=64"))) void FlatLpm::bulk(const E* t24, const E* t8, const uint32_t* addrs,
                                                                 uint32_t* next_hops, uint32_t n) {
  constexpr E kExt = static_cast<E>(E{1} << (sizeof(E) * 8 - 1));
  for (uint32_t i = 0; i < n; ++i) {
    const uint32_t a = addrs[i];
    uint32_t e = t24[a >> 8];
    if (e & kExt) e = t8[(size_t{e & static_cast<E>(~kExt)} << 8) | (a & 0xff)];
    next_hops[i] = e - 1;  // 0 (no route) wraps to kNoNextHop
  }
}

void FlatLpm::lookup_bulk(const uint32_t* addrs, uint32_t* next_hops, uint32_t n) const {
  if (wide_) {
    bulk(reinterpret_cast<const uint32_t*>(tbl24_.get()), reinterpret_cast<const uint32_t*>(tbl8_.get()), addrs,
         next_hops, n);
  } else {
    bulk(reinterpret_cast<const uint16_t*>(tbl24_.get()), reinterpret_cast<const uint16_t*>(tbl8_.get()), addrs,
         next_hops, n);
  }
}

uint32_t FlatLpm::lookup(uint32_t addr) const {
  uint32_t nh = kNoNextHop;
  lookup_bulk(&addr, &nh, 1);
  return nh;
}

TrieLpm::TrieLpm(std::span<const Route> routes) {
  nodes_.emplace_back();
  for (const Route& r : routes) {
    uint32_t cur = 0;
    for (uint32_t b = 0; b < r.len; ++b) {
      uint32_t bit = (r.prefix >> (31 - b)) & 1;
      if (nodes_[cur].child[bit] == 0) {
        nodes_[cur].child[bit] = static_cast<uint32_t>(nodes_.size());
        nodes_.emplace_back();
      }
      cur = nodes_[cur].child[bit];
    }
    nodes_[cur].next_hop = r.next_hop;
  }
}

uint32_t TrieLpm::lookup(uint32_t addr) const {
  uint32_t cur = 0;
  uint32_t best = nodes_[0].next_hop;
  for (uint32_t b = 0; b < 32; ++b) {
    cur = nodes_[cur].child[(addr >> (31 - b)) & 1];
    if (cur == 0) break;
    if (nodes_[cur].next_hop != kNoNextHop) best = nodes_[cur].next_hop;
  }
  return best;
}

}  // namespace hpr::kernels::ipv4
