#include "runtime/frame_pools.hpp"

#include <algorithm>

namespace hpr {

Result<std::unique_ptr<FramePools>> FramePools::create(uint32_t small_slots, uint32_t large_slots, uint32_t max_frame) {
  if (max_frame < kMinMaxFrame || max_frame > kMaxMaxFrame)
    return error(Code::kInvalidArgument, "ports.max_frame (--max-frame): {} is not in {}..{} bytes", max_frame,
                 kMinMaxFrame, kMaxMaxFrame);
  auto p = std::make_unique<FramePools>();
  p->max_frame_ = max_frame;
  if (small_slots != 0) {
    auto s = PacketPool::create(small_slots, std::min(max_frame, kSmallSlotBytes));
    if (!s) return s.status();
    p->small_ = std::move(*s);
  }
  if (max_frame > kSmallSlotBytes && large_slots != 0) {
    auto l = PacketPool::create(large_slots, max_frame);
    if (!l) return error(l.status().code(), "ports.large_buffers (--large-buffers): {}", l.status().message());
    p->large_ = std::move(*l);
  }
  return p;
}

}  // namespace hpr
