#include "runtime/pool.hpp"

#include <cstdlib>

namespace hpr {

PacketPool::PacketPool(uint32_t slots, uint32_t slot_bytes)
    : slots_(slots), slot_bytes_(slot_bytes), next_(new std::atomic<uint32_t>[slots]) {}

Result<std::unique_ptr<PacketPool>> PacketPool::create(uint32_t slots, uint32_t slot_bytes) {
  if (slots == 0 || slot_bytes == 0) return error(Code::kInvalidArgument, "packet pool needs slots and slot size > 0");
  if (slots == kEmpty) return error(Code::kInvalidArgument, "packet pool: at most {} slots", kEmpty - 1);
  slot_bytes = (slot_bytes + 63) & ~63u;
  std::unique_ptr<PacketPool> p(new PacketPool(slots, slot_bytes));
  size_t bytes = (static_cast<size_t>(slots) * slot_bytes + 4095) & ~size_t{4095};
  p->base_ = static_cast<uint8_t*>(std::aligned_alloc(4096, bytes));
  if (p->base_ == nullptr) return error(Code::kUnavailable, "cannot allocate {} MiB for the packet pool", bytes >> 20);
  // Slot 0 on top: the first bursts take consecutive slots.
  for (uint32_t i = 0; i < slots; ++i) p->next_[i].store(i + 1 < slots ? i + 1 : kEmpty, std::memory_order_relaxed);
  p->head_.store(0, std::memory_order_release);
  return p;
}

PacketPool::~PacketPool() { std::free(base_); }

bool PacketPool::pop(uint32_t& slot) {
  uint64_t h = head_.load(std::memory_order_acquire);
  for (;;) {
    const auto top = static_cast<uint32_t>(h);
    if (top == kEmpty) return false;
    // next_[top] may change under us once another thread popped top; then the tag has moved and the CAS fails.
    const uint64_t nh = ((h >> 32) + 1) << 32 | next_[top].load(std::memory_order_relaxed);
    if (head_.compare_exchange_weak(h, nh, std::memory_order_acquire, std::memory_order_acquire)) {
      slot = top;
      return true;
    }
  }
}

void PacketPool::push(uint32_t slot) {
  uint64_t h = head_.load(std::memory_order_relaxed);
  for (;;) {
    next_[slot].store(static_cast<uint32_t>(h), std::memory_order_relaxed);
    const uint64_t nh = ((h >> 32) + 1) << 32 | slot;
    if (head_.compare_exchange_weak(h, nh, std::memory_order_release, std::memory_order_relaxed)) return;
  }
}

uint32_t PacketPool::alloc(Packet* pkts, uint32_t n) {
  uint32_t i = 0;
  for (uint32_t s; i < n && pop(s); ++i) {
    pkts[i].data = base_ + static_cast<size_t>(s) * slot_bytes_;
    pkts[i].buf = pkts[i].data;
  }
  used_.fetch_add(i, std::memory_order_relaxed);
  return i;
}

uint32_t PacketPool::slot_of(const void* buf) const {
  return static_cast<uint32_t>((static_cast<const uint8_t*>(buf) - base_) / slot_bytes_);
}

void PacketPool::free_one(void* buf) {
  push(slot_of(buf));
  used_.fetch_sub(1, std::memory_order_relaxed);
}

void PacketPool::free(const Packet* pkts, uint32_t n) {
  for (uint32_t i = 0; i < n; ++i) push(slot_of(pkts[i].buf));
  used_.fetch_sub(n, std::memory_order_relaxed);
}

}  // namespace hpr
