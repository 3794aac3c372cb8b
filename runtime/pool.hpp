#pragma once
// PacketPool: fixed-size packet buffers in one 4096-aligned allocation, handed out and returned in
// bursts through a lock-free free list (any thread may free). The pool of our own for ports that
// are not DPDK (pcap, generator); DPDK ports use mbufs from their mempool instead.
// The free list is a stack: the slot freed last is handed out first, while its bytes are still in the cache
// (as DPDK's per-lcore mempool cache does). A FIFO list cycled through every slot of the pool: with 16,384
// slots of 2 KiB (32 MiB), each packet's rx copy, parse and app missed the cache, and learning runs from a
// capture went 1.2-1.4x faster with a pool 8x smaller (docs/pipeline.md, "Buffers").
#include <atomic>
#include <cstdint>
#include <memory>

#include "hpr/status.hpp"
#include "runtime/packet.hpp"

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
  uint32_t in_use() const { return static_cast<uint32_t>(used_.load(std::memory_order_relaxed)); }
  size_t memory_bytes() const { return static_cast<size_t>(slots_) * slot_bytes_; }

 private:
  PacketPool(uint32_t slots, uint32_t slot_bytes);
  uint32_t slots_;
  uint32_t slot_bytes_;
  uint32_t slot_of(const void* buf) const;
  bool pop(uint32_t& slot);
  void push(uint32_t slot);
  uint8_t* base_ = nullptr;
  // Treiber stack of free slots: head_ holds the top slot (low 32 bits; kEmpty: none) and a tag (high 32 bits)
  // that every change bumps, so that a pop whose top was popped and pushed back meanwhile fails its CAS (ABA).
  static constexpr uint32_t kEmpty = UINT32_MAX;
  alignas(64) std::atomic<uint64_t> head_{kEmpty};
  std::unique_ptr<std::atomic<uint32_t>[]> next_;  // next_[s]: the free slot below s
  alignas(64) std::atomic<int64_t> used_{0};       // slots handed out
};

}  // namespace hpr
