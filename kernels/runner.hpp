#pragma once
// Host-side pieces every app shares: gathering a batch into the device layout, one app's program
// and tables on one device (AppProgram, used by the pipeline's executors too), and a synchronous
// one-batch runner for tests and benchmarks.
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
struct AppProgram {
  cl::Context context;
  cl::Device device;
  cl::CommandQueue queue;
  cl::Program program;
  std::unique_ptr<DeviceTables> tables;
  // Errors: the build log (kInvalidArgument), table upload failures (kUnavailable).
  static Result<std::shared_ptr<AppProgram>> create(const App& app, const cl::Device& dev);
  // This built program with `app`'s tables on the same context: for an app whose kernel_source() and
  // build_options() are this one's (aes with other keys), without building the program again.
  // Errors: the table upload's (kUnavailable).
  Result<std::shared_ptr<AppProgram>> with_tables_of(const App& app) const;
  // A fresh kernel with the tables bound (clSetKernelArg is not thread safe on a shared kernel).
  Result<cl::Kernel> make_kernel(const App& app) const;
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
