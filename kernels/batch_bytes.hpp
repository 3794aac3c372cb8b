#pragma once
// How many gathered-slice bytes a device batch buffer holds, and how many a packet may take (issue 16 item 10).
// A buffer is sized for a small frame's worth (2,048 bytes) per packet plus kBatchFill largest slices, not for
// max_batch jumbo frames (65,536 × 9,216 bytes would be 604 MB per buffer): batches of ordinary frames hold
// max_batch packets as before, and a lane closes a batch of jumbo frames early, before the next kBatchFill
// packets it takes from its queue could overflow the buffer (Lane::poll).
#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "kernels/app.hpp"
#include "runtime/frame_pools.hpp"

namespace hpr::kernels {

inline constexpr uint32_t kBatchFill = 64;  // packets a lane takes from its queue at once

// Upper bound of the bytes p's slice takes in a gathered batch: a slice is never longer than its frame nor
// than the app's largest slice (max_slice: App::max_slice_bytes(), read once by the caller).
inline uint32_t slice_bound(uint32_t max_slice, const Packet& p) {
  return align_slice(std::min<uint32_t>(p.len, max_slice));
}

// Slice bytes of a batch buffer for up to max_batch packets.
inline size_t slice_capacity(const App& app, uint32_t max_batch) {
  const uint32_t largest = align_slice(app.max_slice_bytes());
  return size_t{max_batch} * std::min(largest, kSmallSlotBytes) + size_t{kBatchFill} * largest;
}

}  // namespace hpr::kernels
