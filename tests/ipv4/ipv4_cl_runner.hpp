#pragma once
// Minimal synchronous OpenCL runner for one App on one device, for the device-vs-native tests.
// It does what kernels/runner.hpp (DeviceRunner, lead's, not on main yet) will do: build the program
// once, upload the app's tables once, run one gathered batch and read pkts and out back.
// TODO(ipv4): switch to hpr::kernels::DeviceRunner when it lands on main.
#include <CL/opencl.hpp>

#include <memory>
#include <string>
#include <vector>

#include "hpr/status.hpp"
#include "ipv4_test_util.hpp"
#include "kernels/app.hpp"

namespace hpr::ipv4_test {

inline std::vector<cl::Device> all_devices() {
  std::vector<cl::Device> out;
  std::vector<cl::Platform> plats;
  try {
    cl::Platform::get(&plats);
    for (auto& p : plats) {
      std::vector<cl::Device> d;
      p.getDevices(CL_DEVICE_TYPE_ALL, &d);
      out.insert(out.end(), d.begin(), d.end());
    }
  } catch (const cl::Error&) {
  }
  return out;
}

class ClRunner {
 public:
  static Result<ClRunner> create(const kernels::App& app, const cl::Device& dev) {
    ClRunner r;
    r.app_ = &app;
    try {
      r.ctx_ = cl::Context(dev);
      r.q_ = cl::CommandQueue(r.ctx_, dev);
      cl::Program prog(r.ctx_, app.kernel_source());
      try {
        prog.build({dev}, app.build_options().c_str());
      } catch (const cl::Error&) {
        return error(Code::kInvalidArgument, "build failed: {}", prog.getBuildInfo<CL_PROGRAM_BUILD_LOG>(dev));
      }
      r.kernel_ = cl::Kernel(prog, std::string(app.kernel_name()).c_str());
      auto t = app.make_device_tables(r.ctx_, r.q_);
      if (!t) return t.status();
      r.tables_ = std::move(t).value();
      HPR_RETURN_IF_ERROR(r.tables_->bind(r.kernel_));
    } catch (const cl::Error& e) {
      return error(Code::kUnavailable, "{} ({})", e.what(), e.err());
    }
    return r;
  }

  // Runs the batch in place: b.pkts and b.out get the device's bytes.
  Status run(HostBatch& b) {
    const auto n = static_cast<uint32_t>(b.desc.size());
    if (n == 0) return Status::ok();
    try {
      cl::Buffer d(ctx_, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, b.desc.size() * sizeof(kernels::Desc), b.desc.data());
      cl::Buffer p(ctx_, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, b.pkts.size(), b.pkts.data());
      cl::Buffer o(ctx_, CL_MEM_WRITE_ONLY | CL_MEM_COPY_HOST_PTR, b.out.size(), b.out.data());
      kernel_.setArg(0, d);
      kernel_.setArg(1, n);
      kernel_.setArg(2, p);
      kernel_.setArg(3, o);
      // A fixed work-group size: PoCL compiles one specialisation per local size, so letting it pick
      // per batch size recompiles the kernel for many batches.
      const uint32_t global = (n + kLocal - 1) / kLocal * kLocal;
      q_.enqueueNDRangeKernel(kernel_, cl::NullRange, cl::NDRange(global), cl::NDRange(kLocal));
      q_.enqueueReadBuffer(p, CL_TRUE, 0, b.pkts.size(), b.pkts.data());
      q_.enqueueReadBuffer(o, CL_TRUE, 0, b.out.size(), b.out.data());
    } catch (const cl::Error& e) {
      return error(Code::kUnavailable, "{} ({})", e.what(), e.err());
    }
    return Status::ok();
  }

 private:
  static constexpr uint32_t kLocal = 64;
  const kernels::App* app_ = nullptr;
  cl::Context ctx_;
  cl::CommandQueue q_;
  cl::Kernel kernel_;
  std::unique_ptr<kernels::DeviceTables> tables_;
};

}  // namespace hpr::ipv4_test
