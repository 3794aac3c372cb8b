#pragma once
// Longest-prefix match for IPv4 forwarding (issue 3; paper §3.2.1 used a radix trie, we use a flat table).
//
// FlatLpm — DIR-24-8 (Gupta, Lin, McKeown, "Routing lookups in hardware at memory access speeds",
// INFOCOM 1998; the layout of DPDK rte_lpm): a 2^24-entry first-level table indexed by the top 24
// address bits, and a pool of 256-entry second-level groups for /24 blocks that hold longer prefixes.
// One or two dependent loads per lookup, no pointers (32-bit indices), so the same two arrays are
// uploaded as OpenCL buffers and walked by kernels/ipv4/ipv4.cl.
//
// Entry encoding, W = 16 bits ("narrow", 32 MiB first level) or 32 bits ("wide", 64 MiB):
//   0                       no route
//   top bit set (tbl24)     tbl8 group index in the low W-1 bits
//   otherwise               next_hop + 1
// kAuto picks narrow when every next hop is <= 32765 and at most 2^15 groups are needed (true for
// the full RouteViews table: 1,982 groups), wide otherwise; narrow halves the memory and the upload.
// Ipv4Config defaults to kAuto since 2026-11-26: over 63 interleaved rounds (bench/ipv4, docs/ipv4.md
// "LPM width") narrow was 1.09x rte_lpm on random addresses and 1.10x on the captures' addresses, wide
// 0.99x and 1.12x (the earlier series that favoured wide were skewed by the inlined loop's alignment, see
// lookup_bulk). The tbl8 pool is sized exactly from the routes (one group per distinct /24 that has a
// longer prefix), not a fixed cap.
//
// TrieLpm — a plain binary trie, one node per prefix bit; slow and obviously correct: the test oracle.
//
// Duplicate prefixes: the later route in the input wins in both structures.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "hpr/status.hpp"
#include "kernels/ipv4/routes.hpp"

namespace hpr::kernels::ipv4 {

inline constexpr uint32_t kNoNextHop = 0xffffffffu;

enum class LpmWidth : uint8_t { kAuto, kNarrow, kWide };

class FlatLpm {
 public:
  // Errors: kInvalidArgument when `routes` is empty, a next hop is >= kMaxNextHop, or kNarrow was asked
  // for and the routes do not fit it (message says which limit).
  static Result<FlatLpm> build(std::span<const Route> routes, LpmWidth width = LpmWidth::kAuto);

  // Next hop of the longest matching prefix of `addr` (host byte order), kNoNextHop on a miss.
  uint32_t lookup(uint32_t addr) const;
  // Batch lookup (like rte_lpm_lookup_bulk): next_hops[i] = lookup(addrs[i]). Branch-light: a miss (entry
  // 0) becomes kNoNextHop through the unsigned wrap of entry - 1. Out of line (lpm.cpp), with its loop aligned
  // to 64 bytes: inlined into each caller the same loop ran 15-20 % slower or faster on cache-resident
  // addresses depending on whether it happened to cross a 64-byte boundary, which is what made the 16-bit /
  // 32-bit series flip between builds (docs/ipv4.md "LPM width"). Measured on the full table (bench/ipv4):
  // explicit software prefetch of a burst's tbl24 entries before the loop, and a branchless tbl8 step, both
  // cost time: the independent loads of the plain loop already overlap in the out-of-order core.
  void lookup_bulk(const uint32_t* addrs, uint32_t* next_hops, uint32_t n) const;

  // Prefetches the first-level entry of `addr`: for callers that have other work to do between
  // learning an address and looking it up (the native forwarding path validates headers meanwhile).
  void prefetch(uint32_t addr) const { prefetcher()(addr); }
  // prefetch() with the table's address and entry size read once, for a loop: read through `this` in a loop that
  // stores to packets they were loaded again for every address (7 instructions a packet on the worker path).
  struct Prefetcher {
    const uint8_t* t24;
    uint32_t shift;  // log2 of the entry's bytes
    void operator()(uint32_t addr) const { __builtin_prefetch(t24 + (size_t{addr >> 8} << shift)); }
  };
  Prefetcher prefetcher() const { return {tbl24_.get(), wide_ ? 2u : 1u}; }

  bool wide() const { return wide_; }
  uint32_t entry_bytes() const { return wide_ ? 4 : 2; }
  uint32_t num_groups() const { return num_groups_; }
  uint32_t num_routes() const { return num_routes_; }
  // Raw tables for the device upload. tbl8 has max(1, num_groups) * 256 entries.
  const void* tbl24() const { return tbl24_.get(); }
  size_t tbl24_bytes() const { return (size_t{1} << 24) * entry_bytes(); }
  const void* tbl8() const { return tbl8_.get(); }
  size_t tbl8_bytes() const { return size_t{std::max<uint32_t>(num_groups_, 1)} * 256 * entry_bytes(); }

 private:
  struct FreeDeleter {
    void operator()(void* p) const;
  };
  template <typename E>
  static void fill(FlatLpm& t, std::span<const Route> sorted);
  template <typename E>
  static void bulk(const E* t24, const E* t8, const uint32_t* addrs, uint32_t* next_hops, uint32_t n);

  std::unique_ptr<uint8_t, FreeDeleter> tbl24_;
  std::unique_ptr<uint8_t, FreeDeleter> tbl8_;
  bool wide_ = false;
  uint32_t num_groups_ = 0;
  uint32_t num_routes_ = 0;
};

class TrieLpm {
 public:
  explicit TrieLpm(std::span<const Route> routes);
  uint32_t lookup(uint32_t addr) const;  // kNoNextHop on a miss
  size_t num_nodes() const { return nodes_.size(); }

 private:
  struct Node {
    uint32_t child[2] = {0, 0};  // 0: none (node 0 is the root, never a child)
    uint32_t next_hop = kNoNextHop;
  };
  std::vector<Node> nodes_;
};

}  // namespace hpr::kernels::ipv4
