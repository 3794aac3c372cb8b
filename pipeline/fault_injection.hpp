#pragma once
// Fault injection for the OpenCL path (issue 8, hardening): makes one OpenCL call fail the way a driver would,
// so the real error path runs (a cl::Error thrown at the call site, caught and reported like any other).
//
// Set by the environment variable HPR_FAULT_CL = "<point>:<n>[@<device substring>]", read when a device's
// program is built or its executor created (not on the packet path):
//   build:1          clBuildProgram fails (CL_BUILD_PROGRAM_FAILURE): prepare_run leaves the device out;
//   alloc:N          the N-th batch buffer of a lane's executor cannot be created (CL_MEM_OBJECT_ALLOCATION_FAILURE):
//                    the pipeline leaves that lane out;
//   map:N            the N-th clEnqueueMapBuffer of a batch submit fails (CL_MAP_FAILURE): the lane fails;
//   enqueue:N        the N-th clEnqueueNDRangeKernel fails (CL_OUT_OF_RESOURCES): the lane fails;
//   corrupt:N        from the N-th batch on, the device computes wrong results (no error: the first result byte
//                    of each batch is flipped before the host reads it): `hpr selftest` reports FAIL and
//                    `hpr run` leaves the device out after its start-up check (pipeline/device_check.hpp);
// "@pthread" limits it to devices whose name contains "pthread". Unset or empty: no fault. A malformed value
// is ignored with a warning naming it. A failed lane hands its packets back to the dispatcher (lane.hpp), so
// nothing is lost without being counted.
#include <cstdint>
#include <cstdlib>
#include <string>

#include <spdlog/spdlog.h>

namespace hpr::fault {

enum class ClPoint : uint8_t { kNone, kBuild, kAlloc, kMap, kEnqueue, kCorrupt };

struct ClFault {
  ClPoint point = ClPoint::kNone;
  uint64_t nth = 1;     // the n-th call at that point fails (1-based)
  std::string device;   // substring of the device name; empty: every device
  bool applies_to(const std::string& device_name) const {
    return point != ClPoint::kNone && (device.empty() || device_name.find(device) != std::string::npos);
  }
};

inline ClFault parse_cl_fault(const char* v) {
  ClFault f;
  if (v == nullptr || *v == 0) return f;
  std::string s(v);
  if (auto at = s.find('@'); at != std::string::npos) {
    f.device = s.substr(at + 1);
    s.resize(at);
  }
  std::string point = s.substr(0, s.find(':'));
  if (auto c = s.find(':'); c != std::string::npos) f.nth = std::strtoull(s.c_str() + c + 1, nullptr, 10);
  if (point == "build") f.point = ClPoint::kBuild;
  else if (point == "alloc")
    f.point = ClPoint::kAlloc;
  else if (point == "map") f.point = ClPoint::kMap;
  else if (point == "enqueue") f.point = ClPoint::kEnqueue;
  else if (point == "corrupt") f.point = ClPoint::kCorrupt;
  else
    spdlog::warn("HPR_FAULT_CL='{}' ignored: use build|alloc|map|enqueue|corrupt:N[@device]", v);
  if (f.nth == 0) f.nth = 1;
  return f;
}

inline ClFault cl_fault_from_env() { return parse_cl_fault(std::getenv("HPR_FAULT_CL")); }

}  // namespace hpr::fault
