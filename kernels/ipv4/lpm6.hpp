#pragma once
// Longest-prefix match for IPv6 forwarding (issue 18): the layout of DPDK rte_lpm6 (a 2^24-entry first
// level on the top 24 address bits, then 256-entry groups, one per 8 more bits, down to /128), with
// FlatLpm's entry encoding (lpm.hpp, 32-bit entries):
//   0                 no route
//   bit 31 set        index of the next 256-entry group (bits 0..30)
//   otherwise         next_hop + 1
// Group 0 is never used by a route (it stays all zero). A /48 costs the first-level
// load and three group loads, as in rte_lpm6. No pointers: the two arrays are the OpenCL buffers that
// kernels/ipv4/ipv4.cl walks.
//
// lookup_bulk walks a chunk of 64 addresses one level at a time (every address still pointing to a
// group at level k, then those at level k+1, the list compacted without branches), so the independent
// loads of different addresses overlap instead of each address's chain of dependent loads running
// alone (rte_lpm6_lookup_bulk_func walks one address to its end before starting the next).
//
// Duplicate prefixes: the later route wins. Groups are sized exactly from the routes.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "hpr/status.hpp"
#include "kernels/ipv4/lpm.hpp"
#include "kernels/ipv4/routes.hpp"

namespace hpr::kernels::ipv4 {

class Lpm6 {
 public:
  static constexpr uint32_t kExt = 0x80000000u;
  // Errors: kInvalidArgument when `routes` is empty or a next hop is >= kMaxNextHop; kInternal when out
  // of memory.
  static Result<Lpm6> build(std::span<const Route6> routes);

  // Next hop of the longest matching prefix of `addr` (16 bytes, network order), kNoNextHop on a miss.
  uint32_t lookup(const uint8_t* addr) const;
  // next_hops[i] = lookup(addrs[i]) (like rte_lpm6_lookup_bulk_func, with kNoNextHop for -1).
  void lookup_bulk(const uint8_t (*addrs)[16], uint32_t* next_hops, uint32_t n) const;
  void prefetch(const uint8_t* a) const {
    __builtin_prefetch(tbl24_.get() + ((uint32_t{a[0]} << 16) | (uint32_t{a[1]} << 8) | a[2]));
  }

  uint32_t num_groups() const { return num_groups_; }  // group 0 (all zero) included
  uint32_t num_routes() const { return num_routes_; }
  const void* tbl24() const { return tbl24_.get(); }
  size_t tbl24_bytes() const { return (size_t{1} << 24) * 4; }
  const void* tbl8() const { return tbl8_.get(); }
  size_t tbl8_bytes() const { return size_t{num_groups_} * 256 * 4; }

 private:
  struct FreeDeleter {
    void operator()(void* p) const;
  };
  std::unique_ptr<uint32_t, FreeDeleter> tbl24_;
  std::unique_ptr<uint32_t, FreeDeleter> tbl8_;
  uint32_t num_groups_ = 0;
  uint32_t num_routes_ = 0;
};

}  // namespace hpr::kernels::ipv4
