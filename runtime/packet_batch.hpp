#pragma once
// PacketBatch: a fixed-capacity array of packet descriptors (views into pooled buffers). Allocated
// once; the hot path fills and clears it without touching the heap.
#include <cstdint>
#include <memory>
#include <span>

#include "runtime/packet.hpp"

namespace hpr {

class PacketBatch {
 public:
  explicit PacketBatch(uint32_t capacity) : cap_(capacity), pkts_(new Packet[capacity]) {}
  uint32_t capacity() const { return cap_; }
  uint32_t size() const { return n_; }
  bool empty() const { return n_ == 0; }
  bool full() const { return n_ == cap_; }
  void clear() { n_ = 0; }
  void resize(uint32_t n) { n_ = n; }
  Packet* data() { return pkts_.get(); }
  Packet& operator[](uint32_t i) { return pkts_[i]; }
  const Packet& operator[](uint32_t i) const { return pkts_[i]; }
  void push(const Packet& p) { pkts_[n_++] = p; }
  std::span<Packet> span() { return {pkts_.get(), n_}; }
  Packet* begin() { return pkts_.get(); }
  Packet* end() { return pkts_.get() + n_; }

 private:
  uint32_t cap_;
  uint32_t n_ = 0;
  std::unique_ptr<Packet[]> pkts_;
};

}  // namespace hpr
