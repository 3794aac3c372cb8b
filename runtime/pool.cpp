#include "runtime/pool.hpp"

#include <cstdlib>

namespace hpr {

PacketPool::PacketPool(uint32_t slots, uint32_t slot_bytes) : slots_(slots), slot_bytes_(slot_bytes), free_(slots) {}

Result<std::unique_ptr<PacketPool>> PacketPool::create(uint32_t slots, uint32_t slot_bytes) {
  if (slots == 0 || slot_bytes == 0) return error(Code::kInvalidArgument, "packet pool needs slots and slot size > 0");
  slot_bytes = (slot_bytes + 63) & ~63u;
  std::unique_ptr<PacketPool> p(new PacketPool(slots, slot_bytes));
  size_t bytes = (static_cast<size_t>(slots) * slot_bytes + 4095) & ~size_t{4095};
  p->base_ = static_cast<uint8_t*>(std::aligned_alloc(4096, bytes));
  if (p->base_ == nullptr) return error(Code::kUnavailable, "cannot allocate {} MiB for the packet pool", bytes >> 20);
  for (uint32_t i = 0; i < slots; ++i) p->free_.push(i);
  return p;
}

PacketPool::~PacketPool() { std::free(base_); }

uint32_t PacketPool::alloc(Packet* pkts, uint32_t n) {
  for (uint32_t i = 0; i < n; ++i) {
    uint32_t s;
    if (!free_.pop(s)) return i;
    pkts[i].data = base_ + static_cast<size_t>(s) * slot_bytes_;
    pkts[i].buf = pkts[i].data;
  }
  return n;
}

void PacketPool::free_one(void* buf) {
  auto s = static_cast<uint32_t>((static_cast<uint8_t*>(buf) - base_) / slot_bytes_);
  free_.push(s);
}

void PacketPool::free(const Packet* pkts, uint32_t n) {
  for (uint32_t i = 0; i < n; ++i) free_one(pkts[i].buf);
}

}  // namespace hpr
