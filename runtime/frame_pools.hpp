#pragma once
// Receive buffers of a pool-backed port (pcap, the DPDK port's linearised frames): ordinary frames in small
// slots, frames longer than a small slot, up to the largest frame (`ports.max_frame`, jumbo frames), in a
// separate pool of large slots, so that ordinary frames keep their small slots and the large pool's size
// is what jumbo frames cost (issue 16, item 10). A frame goes into the smallest slot that holds it.
#include <cstdint>
#include <memory>

#include "hpr/status.hpp"
#include "runtime/pool.hpp"

namespace hpr {

inline constexpr uint32_t kSmallSlotBytes = 2048;   // every frame up to 2048 bytes (1518 + VLAN tags + room)
inline constexpr uint32_t kDefaultMaxFrame = 9216;  // ports.max_frame: a 9,000-byte MTU with headers and tags
inline constexpr uint32_t kMinMaxFrame = 64;        // ports.max_frame's range
inline constexpr uint32_t kMaxMaxFrame = 65535;     // Packet::len is 16 bits
inline constexpr uint32_t kDefaultLargeSlots = 4096;

// What alloc() did with a frame.
enum class FrameAlloc : uint8_t {
  kOk,
  kTooLong,  // longer than max_frame: frame_too_long
  kNoSmall,  // the small pool is empty (the caller stalls or drops)
  kNoLarge,  // the large pool is empty or there is none: pool_empty
};

class FramePools {
 public:
  // small_slots of kSmallSlotBytes (0: none, for a port whose small frames live elsewhere, e.g. mbufs) and,
  // when max_frame > kSmallSlotBytes, large_slots of max_frame bytes.
  // Errors: kInvalidArgument (max_frame outside 64..65535), those of PacketPool::create.
  static Result<std::unique_ptr<FramePools>> create(uint32_t small_slots, uint32_t large_slots, uint32_t max_frame);

  // A buffer for a frame of `len` bytes into p.data / p.buf (p is untouched unless kOk).
  FrameAlloc alloc(Packet& p, uint32_t len) {
    if (len > max_frame_) return FrameAlloc::kTooLong;
    if (len <= kSmallSlotBytes && small_) return small_->alloc(&p, 1) == 1 ? FrameAlloc::kOk : FrameAlloc::kNoSmall;
    return large_ && large_->alloc(&p, 1) == 1 ? FrameAlloc::kOk : FrameAlloc::kNoLarge;
  }
  void free_one(void* buf) {
    if (large_ && large_->owns(buf))
      large_->free_one(buf);
    else
      small_->free_one(buf);
  }
  void free(const Packet* pkts, uint32_t n) {
    for (uint32_t i = 0; i < n; ++i) free_one(pkts[i].buf);
  }

  uint32_t max_frame() const { return max_frame_; }
  uint32_t large_slots() const { return large_ ? large_->slots() : 0; }
  // Slots handed out, both pools (0 after a complete drain).
  uint32_t in_use() const { return (small_ ? small_->in_use() : 0) + (large_ ? large_->in_use() : 0); }

 private:
  uint32_t max_frame_ = kDefaultMaxFrame;
  std::unique_ptr<PacketPool> small_, large_;
};

}  // namespace hpr
