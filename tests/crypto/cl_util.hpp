#pragma once
// A minimal device runner for the crypto tests: one program build per (app, device), one synchronous
// batch at a time with explicit copies. Stand-in until kernels/runner.hpp (DeviceRunner) is on main;
// the tests call it through DeviceApp::create / run so switching is a one-line change.
#include <CL/opencl.hpp>

#include <memory>
#include <string>
#include <vector>

#include "kernels/app.hpp"
#include "tests/crypto/crypto_util.hpp"

namespace hpr::test {

inline std::vector<cl::Device> all_devices() {
  std::vector<cl::Device> out;
  try {
    std::vector<cl::Platform> ps;
    cl::Platform::get(&ps);
    for (auto& p : ps) {
      std::vector<cl::Device> ds;
      p.getDevices(CL_DEVICE_TYPE_ALL, &ds);
      out.insert(out.end(), ds.begin(), ds.end());
    }
  } catch (const cl::Error&) {
  }
  return out;
}

struct DeviceApp {
  const kernels::App* app = nullptr;
  cl::Device dev;
  cl::Context ctx;
  cl::CommandQueue q;
  cl::Program prog;
  cl::Kernel kernel;
  std::unique_ptr<kernels::DeviceTables> tables;

  static Result<std::unique_ptr<DeviceApp>> create(const kernels::App& app, const cl::Device& dev) {
    auto d = std::make_unique<DeviceApp>();
    d->app = &app;
    d->dev = dev;
    try {
      d->ctx = cl::Context(dev);
      d->q = cl::CommandQueue(d->ctx, dev);
      d->prog = cl::Program(d->ctx, app.kernel_source());
      try {
        d->prog.build({dev}, app.build_options().c_str());
      } catch (const cl::Error&) {
        return error(Code::kInvalidArgument, "{}: build failed:\n{}", app.name(),
                     d->prog.getBuildInfo<CL_PROGRAM_BUILD_LOG>(dev));
      }
      d->kernel = cl::Kernel(d->prog, std::string(app.kernel_name()).c_str());
    } catch (const cl::Error& e) {
      return error(Code::kUnavailable, "{}: {} ({})", app.name(), e.what(), e.err());
    }
    auto t = app.make_device_tables(d->ctx, d->q);
    if (!t.is_ok()) return t.status();
    d->tables = std::move(t.value());
    return d;
  }

  Status run(HostBatch& b) {
    const uint32_t n = static_cast<uint32_t>(b.desc.size());
    if (n == 0) return Status::ok();
    try {
      cl::Buffer desc(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, n * sizeof(kernels::Desc), b.desc.data());
      cl::Buffer pkts(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, b.pkts.size(), b.pkts.data());
      cl::Buffer out(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, b.out.size(), b.out.data());
      kernel.setArg(0, desc);
      kernel.setArg(1, n);
      kernel.setArg(2, pkts);
      kernel.setArg(3, out);
      HPR_RETURN_IF_ERROR(tables->bind(kernel));
      q.enqueueNDRangeKernel(kernel, cl::NullRange, cl::NDRange(n), cl::NullRange);
      q.enqueueReadBuffer(pkts, CL_TRUE, 0, b.pkts.size(), b.pkts.data());
      q.enqueueReadBuffer(out, CL_TRUE, 0, b.out.size(), b.out.data());
    } catch (const cl::Error& e) {
      return error(Code::kUnavailable, "{}: {} ({})", app->name(), e.what(), e.err());
    }
    return Status::ok();
  }
};

}  // namespace hpr::test
