#pragma once
// PacketPool: fixed-size packet buffers in one 4096-aligned allocation, handed out and returned in
// bursts through a lock-free free list (any thread may free). The pool of our own for ports that
// are not DPDK (pcap, generator); DPDK ports use mbufs from their mempool instead.
#include <cstdint>
#include <memory>

#include "hpr/status.hpp"
#include "runtime/packet.hpp"
#include "runtime/ring.hpp"

namespace hpr {

class PacketPool {
 public:
  // slots × slot_bytes; slot_bytes is rounded up to 64. Errors: kInvalidArgument for zero sizes.
  static Result<std::unique_ptr<PacketPool>> create(uint32_t slots, uint32_t slot_bytes);
  ~PacketPool();

  // Fills pkts[i].data / .buf for up to n packets; returns how many it got (fewer when empty).
  uint32_t alloc(Packet* pkts, uint32_t n);
  void free(const Packet* pkts, uint32_t n);
  void free_one(void* buf);
  // Whether buf is one of this pool's slots.
  bool owns(const void* buf) const {
    auto* b = static_cast<const uint8_t*>(buf);
    return b >= base_ && b < base_ + memory_bytes();
  }

  uint32_t slot_bytes() const { return slot_bytes_; }
  uint32_t slots() const { return slots_; }
  // Slots currently handed out (0 after a complete drain).
  uint32_t in_use() const { return slots_ - static_cast<uint32_t>(free_.size()); }
  size_t memory_bytes() const { return static_cast<size_t>(slots_) * slot_bytes_; }

 private:
  PacketPool(uint32_t slots, uint32_t slot_bytes);
  uint32_t slots_;
  uint32_t slot_bytes_;
  uint8_t* base_ = nullptr;
  MpmcRing<uint32_t> free_;
};

}  // namespace hpr
