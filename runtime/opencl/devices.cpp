#include "runtime/opencl/devices.hpp"

#include <dlfcn.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>

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

Result<KindOverrides> parse_kind_overrides(const std::vector<std::string>& items) {
  KindOverrides ov;
  for (const auto& o : items) {
    const auto eq = o.find('=');
    if (eq == std::string::npos) return error(Code::kInvalidArgument, "--kind wants NAME=KIND, got '{}'", o);
    auto k = parse_device_kind(o.substr(eq + 1));
    if (!k) return k.status();
    ov[o.substr(0, eq)] = *k;
  }
  return ov;
}

namespace {
std::string platform_name(const cl::Platform& pl) {
  std::string n;
  return pl.getInfo(CL_PLATFORM_NAME, &n) == CL_SUCCESS ? n : "?";
}
}  // namespace

Result<std::vector<DeviceInfo>> discover_devices(const KindOverrides& overrides) {
  std::vector<DeviceInfo> out;
  std::vector<cl::Platform> platforms;
  cl_int err = CL_SUCCESS;
  try {  // with CL_HPP_ENABLE_EXCEPTIONS an error throws (no ICD at all: CL_PLATFORM_NOT_FOUND_KHR)
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
    } catch (const cl::Error& e) {
      // A platform without devices is no news; a driver that fails is named, and the other platforms go on.
      if (e.err() != CL_DEVICE_NOT_FOUND)
        spdlog::warn("OpenCL platform '{}': {} failed: {}; its devices are left out", platform_name(pl), e.what(),
                     cl_error_name(e.err()));
      continue;
    }
    for (auto& d : devs) try {
      DeviceInfo i;
      i.index = static_cast<uint32_t>(out.size());
      i.device = d;
      i.platform = platform_name(pl);
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
    } catch (const cl::Error& e) {
      spdlog::warn("OpenCL platform '{}': a device does not answer {}: {}; it is left out", platform_name(pl), e.what(),
                   cl_error_name(e.err()));
    }
  }
  return out;
}

namespace {
// One driver library as the loader loads it: dlopen. Empty when it loads, else dlerror's reason. A library that
// loads stays loaded (the loader opens the same one, or already has): closing it ran its destructors, and PoCL then
// registered its LLVM options a second time when the loader opened it again (LLVM aborts on that).
std::string driver_load_error(const std::string& lib) {
  if (dlopen(lib.c_str(), RTLD_LAZY | RTLD_LOCAL) != nullptr) return {};
  const char* why = dlerror();
  return why != nullptr ? why : "dlopen failed";
}

// The first line of an .icd file: the driver library.
void check_icd_file(const std::filesystem::path& f, IcdReport& r) {
  ++r.drivers;
  std::ifstream in(f);
  std::string lib;
  std::getline(in, lib);
  lib.erase(lib.find_last_not_of(" \t\r") + 1);
  if (lib.empty()) {
    r.problems.push_back(fmt::format("{}: names no driver library", f.string()));
  } else if (std::string why = driver_load_error(lib); !why.empty()) {
    r.problems.push_back(
        fmt::format("{}: its driver {} cannot be loaded ({}); its devices are missing", f.string(), lib, why));
  }
}
}  // namespace

IcdReport check_icds() {
  namespace fs = std::filesystem;
  IcdReport r;
  std::error_code ec;
  auto env = [](const char* n) -> std::string {
    const char* v = std::getenv(n);
    return v != nullptr ? v : "";
  };
  const std::string ocl = env("OCL_ICD_VENDORS");
  fs::path dir = env("OPENCL_VENDOR_PATH").empty() ? fs::path("/etc/OpenCL/vendors") : fs::path(env("OPENCL_VENDOR_PATH"));
  if (!ocl.empty()) {
    if (fs::is_directory(ocl, ec)) {
      dir = ocl;
    } else if (ocl.ends_with(".icd")) {
      r.where = "OCL_ICD_VENDORS=" + ocl;
      if (!fs::is_regular_file(ocl, ec)) r.problems.push_back(fmt::format("{}: no such file", r.where));
      else check_icd_file(ocl, r);
      return r;
    } else {  // the loader takes it for a driver library
      r.where = "OCL_ICD_VENDORS=" + ocl;
      ++r.drivers;
      if (std::string why = driver_load_error(ocl); !why.empty())
        r.problems.push_back(fmt::format("{}: the driver cannot be loaded ({})", r.where, why));
      return r;
    }
  }
  r.where = dir.string();
  if (!fs::is_directory(dir, ec)) {
    r.problems.push_back(fmt::format("{}: no such folder, so the ICD loader knows no OpenCL driver", r.where));
    return r;
  }
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.path().extension() == ".icd") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  for (const auto& f : files) check_icd_file(f, r);
  if (files.empty()) r.problems.push_back(fmt::format("{}: no .icd file, so the ICD loader knows no OpenCL driver", r.where));
  return r;
}

Result<std::vector<DeviceInfo>> choose_devices(const std::vector<std::string>& spec, const KindOverrides& overrides,
                                               const std::string& setting) {
  std::vector<DeviceInfo> chosen;
  if (spec.size() == 1 && spec[0] == "none") return chosen;
  auto devs = discover_devices(overrides);
  if (!devs) return devs.status();
  if (spec.size() == 1 && spec[0] == "all") return devs;
  for (const auto& want : spec) {
    bool found = false;
    for (const auto& d : *devs)
      if (d.name.find(want) != std::string::npos) {
        chosen.push_back(d);
        found = true;
      }
    if (!found) {
      std::string have;
      for (const auto& d : *devs) have += fmt::format("\n  {}", d.name);
      return error(Code::kNotFound, "{}: no OpenCL device matches '{}'; devices here:{}", setting, want,
                   have.empty() ? " none" : have);
    }
  }
  return chosen;
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
