#pragma once
// What the native and OpenCL executors share (native_executor.cpp, cl_executor.cpp; the interface: lane.hpp).
#include <algorithm>
#include <memory>
#include <vector>

#include "kernels/batch_bytes.hpp"
#include "pipeline/lane.hpp"

namespace hpr::executor_detail {

using kernels::App;
using kernels::BatchView;
using kernels::Desc;

// One batch's packets, descriptors and host-side views, and the app (version) it was submitted with.
struct Slot {
  std::vector<Packet> pkts;   // copies of the packets refs point to, read at submit, written back at the reap
  std::vector<Packet*> refs;
  uint32_t n = 0;
  uint32_t pkts_bytes = 0;  // gathered bytes
  uint64_t submit_ns = 0;
  const App* app = nullptr;
  std::shared_ptr<const AppVersion> version;  // keeps `app` (and an OpenCL lane's tables) alive until the reap
};

// A new version must keep the batch layout the executor's buffers were sized for.
inline Status same_layout(const App& a, const App& b) {
  if (a.name() != b.name() || a.max_slice_bytes() != b.max_slice_bytes() || a.result_bytes() != b.result_bytes() ||
      a.writes_back() != b.writes_back())
    return error(Code::kInvalidArgument, "the new {} app's batch layout differs from the running one's", b.name());
  return Status::ok();
}

// submit(): the batch's packets into the slot.
inline void take_batch(Slot& s, Packet* const* refs, uint32_t n) {
  for (uint32_t i = 0; i < n; ++i) {
    if (i + 8 < n) __builtin_prefetch(refs[i + 8]);
    s.pkts[i] = *refs[i];
  }
  std::copy(refs, refs + n, s.refs.begin());
  s.n = n;
}
// reap(): the batch's packets, with their verdicts, back to where they came from; their references to `done`.
inline void give_batch(const Slot& s, std::vector<Packet*>& done) {
  for (uint32_t i = 0; i < s.n; ++i) *s.refs[i] = s.pkts[i];
  done.insert(done.end(), s.refs.begin(), s.refs.begin() + s.n);
}

inline size_t slice_buffer_bytes(const App& app, uint32_t max_batch) {
  return std::max<size_t>(kernels::slice_capacity(app, max_batch), kernels::kSliceAlign);
}
inline size_t out_buffer_bytes(const App& app, uint32_t max_batch) {
  return std::max<size_t>(size_t{max_batch} * app.result_bytes(), 16);
}

}  // namespace hpr::executor_detail
