#pragma once
// Host-side pieces every app shares: gathering a batch into the device layout, one app's program
// and tables on one device (AppProgram, used by the pipeline's executors too), and a synchronous
// one-batch runner for tests and benchmarks.
#include <climits>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "kernels/app.hpp"
#include "runtime/opencl/devices.hpp"

namespace hpr::kernels {

// A batch in plain host memory (tests, benchmarks, the native lane).
struct HostBatch {
  std::vector<Desc> desc;
  std::vector<uint8_t> pkts;
  std::vector<uint8_t> out;
  BatchView view() { return {desc.data(), static_cast<uint32_t>(desc.size()), pkts.data(), out.data()}; }
};

// Gathers each packet's slice into `pkts` (16-byte aligned offsets) and fills the descriptors.
// Packets that already carry a drop reason get an empty slice. Writes at most
// pkts.size() bytes; returns the bytes used. Used by HostBatch and by the executors' mapped buffers.
uint32_t gather_into(const App& app, std::span<const Packet> pkts, Desc* desc, uint8_t* buf, size_t buf_bytes);
HostBatch gather(const App& app, std::span<const Packet> pkts);
// Copies the (modified) slices back into their frames; no-op unless app.writes_back().
void scatter_back(const App& app, std::span<Packet> pkts, const BatchView& b);

// A chain or services on one device (App::device_stages() > 1, pipeline/cl_executor.cpp): each packet's bytes from the
// first byte of its stages' slices to the last (its stages: App::stage_service) are gathered once, placed so that the
// slice of its app with the largest slices (the payload's) begins 16-byte aligned; every app's kernel then reads and
// writes its slice there, in turn, and nothing goes back to the frames between them. shift[i]: where packet i's frame
// byte 0 would lie in `buf` (buffer offset - frame offset), kNotGathered when nothing of it was. Returns the bytes
// used: at most slice_bound + kSliceAlign per packet (batch_bytes.hpp), where max_slice_bytes() is the frame's.
inline constexpr int32_t kNotGathered = INT32_MIN;
// Whether a device stage for `stage_svc` (App::stage_service) runs packet p.
inline bool stage_takes(uint8_t stage_svc, const Packet& p) { return stage_svc == kNoSvc || stage_svc == p.svc; }
uint32_t gather_chain(const App& chain, std::span<const Packet> pkts, int32_t* shift, uint8_t* buf, size_t buf_bytes);
// The packets of one device stage of a gathered batch: n of them, pkts[idx[j]] (idx null: pkts[j]), and their
// descriptors.
struct StageRows {
  Desc* desc = nullptr;
  const uint32_t* idx = nullptr;
  uint32_t n = 0;
};
// App k's descriptors for its rows, made after the apps before it have finished: a packet dropped by then gets an
// empty slice.
void stage_descs(const App& app, std::span<const Packet> pkts, const int32_t* shift, const StageRows& rows);
// After the last stage: the slices of every stage whose app writes back (stages[k]: stage k's rows), into the frames.
void scatter_chain(const App& chain, std::span<Packet> pkts, const uint8_t* buf, const int32_t* shift,
                   std::span<const StageRows> stages);

// Work-group size of every launch. Fixed rather than left to the driver: PoCL compiles a work-group
// function per local size at the first launch with it, and lets the size follow the global size,
// so batches of varying size each paid a compilation (seconds) before this. Global sizes are
// rounded up to a multiple; every kernel returns early for ids >= n.
inline constexpr uint32_t kWorkGroup = 64;
struct LaunchSize {
  cl::NDRange global, local;
};
LaunchSize launch_size(const cl::Device& dev, uint32_t n);

// The app's kernel built for one device, its tables, and one kernel object per user (lane).
// A chain (App::device_stages() > 1) is one program per app, `parts` (parts[k] runs chain_app(k)), all on this
// context and queue so that the apps' kernels share one gathered batch; its own program and tables are then empty.
struct AppProgram {
  cl::Context context;
  cl::Device device;
  cl::CommandQueue queue;
  cl::Program program;
  std::unique_ptr<DeviceTables> tables;
  std::vector<std::shared_ptr<AppProgram>> parts;

  // Errors: the build log (kInvalidArgument), table upload failures (kUnavailable); a chain's name the app.
  static Result<std::shared_ptr<AppProgram>> create(const App& app, const cl::Device& dev);
  // This built program with `app`'s tables on the same context: for an app whose kernel_source() and
  // build_options() are this one's (aes with other keys), without building the program again. A chain: part by part.
  // Errors: the table upload's (kUnavailable).
  Result<std::shared_ptr<AppProgram>> with_tables_of(const App& app) const;
  // This program for `next`, a new version of `app` (a live reload: same name, new tables), on the same context (the
  // lanes' batch buffers live there): the built program with next's tables where the kernel (source and build
  // options) is the same, else a new build. A chain: part by part. Errors: those of create().
  Result<std::shared_ptr<AppProgram>> for_next(const App& app, const App& next) const;
  // A fresh kernel with the tables bound (clSetKernelArg is not thread safe on a shared kernel). One app only.
  Result<cl::Kernel> make_kernel(const App& app) const;
  // The kernel of each of app's device stages, in order (one app: one kernel; a chain: one per app).
  Result<std::vector<cl::Kernel>> make_kernels(const App& app) const;
  // The program of stage k (one app: this one).
  const AppProgram& stage(uint32_t k) const { return parts.empty() ? *this : *parts[k]; }
  // A chain's apps a..b-1 (ChainApp::part): app a's part where b = a + 1, else a chain of the parts; nothing is built.
  std::shared_ptr<AppProgram> part(uint32_t a, uint32_t b) const;

 private:
  // A chain's program on this context, part k made by make(k) for k < n.
  Result<std::shared_ptr<AppProgram>> with_parts(
      uint32_t n, const std::function<Result<std::shared_ptr<AppProgram>>(uint32_t)>& make) const;
};

// For tests: one batch at a time, synchronously; buffers created per call, copies desc and pkts in and out
// (pkts back when the app writes back). Time the pipeline's executors instead (bench/apps/app_bench).
class DeviceRunner {
 public:
  static Result<DeviceRunner> create(const App& app, const cl::Device& dev);
  Status run(BatchView& b);

 private:
  const App* app_ = nullptr;
  std::shared_ptr<AppProgram> prog_;
  cl::Kernel kernel_;
};

}  // namespace hpr::kernels
