#pragma once
// OpenCL devices through the ICD loader (whichever drivers are installed: PoCL for CPUs, Intel's
// Compute Runtime for Intel integrated GPUs, NVIDIA's with its driver).
//
// DeviceKind is ours: derived from CL_DEVICE_TYPE and CL_DEVICE_HOST_UNIFIED_MEMORY (a GPU that
// shares host memory is integrated), and overridable per device name, so that PoCL's two CPU
// devices (POCL_DEVICES="pthread basic") can stand in for a CPU and an integrated GPU.
#include <CL/opencl.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "hpr/status.hpp"

namespace hpr {

enum class DeviceKind : uint8_t { kCpu, kIntegratedGpu, kDiscreteGpu, kAccelerator };

const char* kind_name(DeviceKind k);  // "cpu", "igpu", "dgpu", "accelerator"
// Accepts the names above. Errors: kInvalidArgument listing the accepted names.
Result<DeviceKind> parse_device_kind(const std::string& s);

struct DeviceInfo {
  uint32_t index = 0;           // position in discovery order (stable for one machine)
  std::string name;             // CL_DEVICE_NAME
  std::string vendor;
  std::string platform;         // CL_PLATFORM_NAME
  std::string version;          // CL_DEVICE_VERSION
  std::string driver;           // CL_DRIVER_VERSION
  std::string opencl_c;         // CL_DEVICE_OPENCL_C_VERSION
  DeviceKind kind = DeviceKind::kCpu;
  bool kind_overridden = false;
  uint32_t compute_units = 0;
  uint32_t max_clock_mhz = 0;
  uint64_t global_mem_bytes = 0;
  uint64_t max_alloc_bytes = 0;
  uint64_t local_mem_bytes = 0;
  bool host_unified = false;    // shares memory with the host: buffers are mapped, never copied
  cl::Device device;
};

// Device name substring → kind, from the configuration.
using KindOverrides = std::map<std::string, DeviceKind>;
// The --kind flags of `hpr devices` and `hpr selftest`: NAME_SUBSTRING=KIND each. Errors (kInvalidArgument): an
// item without '=' ("--kind wants NAME=KIND, got '...'"), an unknown kind (parse_device_kind's message).
Result<KindOverrides> parse_kind_overrides(const std::vector<std::string>& items);

// Every device of every platform. No platform is not an error: an empty list (the caller says
// what to install). Errors: kUnavailable when the ICD loader itself fails.
Result<std::vector<DeviceInfo>> discover_devices(const KindOverrides& overrides = {});

// The OpenCL drivers the ICD loader (ocl-icd) is told about and what keeps any from loading: the .icd files of
// $OCL_ICD_VENDORS when it is a folder (else $OPENCL_VENDOR_PATH, else /etc/OpenCL/vendors), or the one .icd file
// or driver library $OCL_ICD_VENDORS names otherwise. `hpr devices` and `hpr selftest` print the problems.
struct IcdReport {
  std::string where;                  // the folder, or "OCL_ICD_VENDORS=..."
  size_t drivers = 0;                 // .icd files (or the one library) found
  std::vector<std::string> problems;  // one line each: a driver library that cannot be loaded (dlerror's reason),
                                      // an .icd file naming none, a missing or empty folder
};
IcdReport check_icds();

// The devices a setting names: {"all"}, {"none"} (no device), or name substrings, each of which must match a
// device. Errors: the loader's, and kNotFound naming `setting` and listing the devices here.
Result<std::vector<DeviceInfo>> choose_devices(const std::vector<std::string>& spec, const KindOverrides& overrides,
                                               const std::string& setting);

// Builds `source` for one device. Errors: kInvalidArgument with the device name and the build log.
Result<cl::Program> build_program(const cl::Context& ctx, const cl::Device& dev, const std::string& source,
                                  const std::string& options);

// "CL_OUT_OF_RESOURCES (-5)" for error messages.
std::string cl_error_name(cl_int err);

}  // namespace hpr
