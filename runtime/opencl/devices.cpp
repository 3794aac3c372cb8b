#include "runtime/opencl/devices.hpp"

namespace hpr {

const char* kind_name(DeviceKind k) {
  switch (k) {
    case DeviceKind::kCpu: return "cpu";
    case DeviceKind::kIntegratedGpu: return "igpu";
    case DeviceKind::kDiscreteGpu: return "dgpu";
    case DeviceKind::kAccelerator: return "accelerator";
  }
  return "?";
}

Result<DeviceKind> parse_device_kind(const std::string& s) {
  if (s == "cpu") return DeviceKind::kCpu;
  if (s == "igpu" || s == "integrated-gpu") return DeviceKind::kIntegratedGpu;
  if (s == "dgpu" || s == "discrete-gpu") return DeviceKind::kDiscreteGpu;
  if (s == "accelerator") return DeviceKind::kAccelerator;
  return error(Code::kInvalidArgument, "unknown device kind '{}' (use cpu, igpu, dgpu or accelerator)", s);
}

std::string cl_error_name(cl_int err) {
  const char* n = "unknown";
  switch (err) {
#define HPR_CL_ERR(x) case x: n = #x; break;
    HPR_CL_ERR(CL_DEVICE_NOT_FOUND) HPR_CL_ERR(CL_DEVICE_NOT_AVAILABLE) HPR_CL_ERR(CL_COMPILER_NOT_AVAILABLE)
    HPR_CL_ERR(CL_MEM_OBJECT_ALLOCATION_FAILURE) HPR_CL_ERR(CL_OUT_OF_RESOURCES) HPR_CL_ERR(CL_OUT_OF_HOST_MEMORY)
    HPR_CL_ERR(CL_BUILD_PROGRAM_FAILURE) HPR_CL_ERR(CL_MAP_FAILURE) HPR_CL_ERR(CL_INVALID_VALUE)
    HPR_CL_ERR(CL_INVALID_DEVICE) HPR_CL_ERR(CL_INVALID_CONTEXT) HPR_CL_ERR(CL_INVALID_COMMAND_QUEUE)
    HPR_CL_ERR(CL_INVALID_MEM_OBJECT) HPR_CL_ERR(CL_INVALID_PROGRAM) HPR_CL_ERR(CL_INVALID_KERNEL_NAME)
    HPR_CL_ERR(CL_INVALID_KERNEL) HPR_CL_ERR(CL_INVALID_ARG_INDEX) HPR_CL_ERR(CL_INVALID_ARG_VALUE)
    HPR_CL_ERR(CL_INVALID_ARG_SIZE) HPR_CL_ERR(CL_INVALID_KERNEL_ARGS) HPR_CL_ERR(CL_INVALID_WORK_GROUP_SIZE)
    HPR_CL_ERR(CL_INVALID_BUFFER_SIZE) HPR_CL_ERR(CL_INVALID_GLOBAL_WORK_SIZE) HPR_CL_ERR(CL_INVALID_OPERATION)
    HPR_CL_ERR(CL_PLATFORM_NOT_FOUND_KHR)
#undef HPR_CL_ERR
    default: break;
  }
  return fmt::format("{} ({})", n, err);
}

Result<std::vector<DeviceInfo>> discover_devices(const KindOverrides& overrides) {
  std::vector<DeviceInfo> out;
  std::vector<cl::Platform> platforms;
  cl_int err = CL_SUCCESS;
  try {  // with exceptions on, the C++ bindings throw where the ICD loader finds no driver at all
    err = cl::Platform::get(&platforms);
  } catch (const cl::Error& e) {
    err = e.err();
  }
  if (err == CL_PLATFORM_NOT_FOUND_KHR || (err == CL_SUCCESS && platforms.empty())) return out;
  if (err != CL_SUCCESS) return error(Code::kUnavailable, "OpenCL ICD loader failed: {}", cl_error_name(err));
  for (auto& pl : platforms) {
    std::vector<cl::Device> devs;
    try {
      pl.getDevices(CL_DEVICE_TYPE_ALL, &devs);
    } catch (const cl::Error&) {
      continue;  // a platform without devices
    }
    for (auto& d : devs) {
      DeviceInfo i;
      i.index = static_cast<uint32_t>(out.size());
      i.device = d;
      i.platform = pl.getInfo<CL_PLATFORM_NAME>();
      i.name = d.getInfo<CL_DEVICE_NAME>();
      i.vendor = d.getInfo<CL_DEVICE_VENDOR>();
      i.version = d.getInfo<CL_DEVICE_VERSION>();
      i.driver = d.getInfo<CL_DRIVER_VERSION>();
      i.opencl_c = d.getInfo<CL_DEVICE_OPENCL_C_VERSION>();
      i.compute_units = d.getInfo<CL_DEVICE_MAX_COMPUTE_UNITS>();
      i.max_clock_mhz = d.getInfo<CL_DEVICE_MAX_CLOCK_FREQUENCY>();
      i.global_mem_bytes = d.getInfo<CL_DEVICE_GLOBAL_MEM_SIZE>();
      i.max_alloc_bytes = d.getInfo<CL_DEVICE_MAX_MEM_ALLOC_SIZE>();
      i.local_mem_bytes = d.getInfo<CL_DEVICE_LOCAL_MEM_SIZE>();
      i.host_unified = d.getInfo<CL_DEVICE_HOST_UNIFIED_MEMORY>() != CL_FALSE;
      auto type = d.getInfo<CL_DEVICE_TYPE>();
      if (type & CL_DEVICE_TYPE_CPU) i.kind = DeviceKind::kCpu;
      else if (type & CL_DEVICE_TYPE_GPU) i.kind = i.host_unified ? DeviceKind::kIntegratedGpu : DeviceKind::kDiscreteGpu;
      else i.kind = DeviceKind::kAccelerator;
      // The longest matching override wins ("pthread" vs "pthread-haswell").
      size_t best = 0;
      for (const auto& [pattern, kind] : overrides) {
        if (i.name.find(pattern) != std::string::npos && pattern.size() > best) {
          best = pattern.size();
          i.kind = kind;
          i.kind_overridden = true;
        }
      }
      out.push_back(std::move(i));
    }
  }
  return out;
}

Result<cl::Program> build_program(const cl::Context& ctx, const cl::Device& dev, const std::string& source,
                                  const std::string& options) {
  cl::Program prog;
  try {
    prog = cl::Program(ctx, source);
  } catch (const cl::Error& e) {
    return error(Code::kInvalidArgument, "clCreateProgramWithSource failed: {}", cl_error_name(e.err()));
  }
  try {
    prog.build(std::vector<cl::Device>{dev}, options.c_str());
  } catch (const cl::BuildError& e) {
    std::string log;
    for (const auto& [d, l] : e.getBuildLog()) log += l;
    return error(Code::kInvalidArgument, "building the kernel for '{}' failed:\n{}", dev.getInfo<CL_DEVICE_NAME>(), log);
  } catch (const cl::Error& e) {
    std::string log = prog.getBuildInfo<CL_PROGRAM_BUILD_LOG>(dev);
    return error(Code::kInvalidArgument, "building the kernel for '{}' failed: {}\n{}", dev.getInfo<CL_DEVICE_NAME>(),
                 cl_error_name(e.err()), log);
  }
  return prog;
}

}  // namespace hpr
