#include <catch2/catch.hpp>

#include <cstdlib>

#include "runtime/opencl/devices.hpp"

using namespace hpr;

// ctest runs this binary with POCL_DEVICES="pthread basic" (see CMakeLists.txt).
TEST_CASE("discovery finds PoCL's two devices") {
  auto devs = discover_devices();
  REQUIRE(devs.is_ok());
  REQUIRE(devs->size() >= 2);
  for (const auto& d : *devs) {
    CHECK_FALSE(d.name.empty());
    CHECK(d.compute_units >= 1);
    CHECK(d.global_mem_bytes > 0);
    CHECK(d.kind == DeviceKind::kCpu);
    CHECK(d.host_unified);
  }
}

TEST_CASE("a kind override by name turns a CPU device into an integrated GPU") {
  auto devs = discover_devices({{"basic", DeviceKind::kIntegratedGpu}});
  REQUIRE(devs.is_ok());
  int igpu = 0;
  for (const auto& d : *devs) {
    if (d.name.find("basic") != std::string::npos) {
      CHECK(d.kind == DeviceKind::kIntegratedGpu);
      CHECK(d.kind_overridden);
      ++igpu;
    }
  }
  CHECK(igpu == 1);
}

TEST_CASE("a program that does not compile is reported with its build log") {
  auto devs = discover_devices();
  REQUIRE(devs.is_ok());
  REQUIRE_FALSE(devs->empty());
  cl::Context ctx((*devs)[0].device);
  auto p = build_program(ctx, (*devs)[0].device, "__kernel void k(__global int* a) { a[0] = undefined_name; }", "");
  REQUIRE_FALSE(p.is_ok());
  CHECK(p.status().message().find("undefined_name") != std::string::npos);
  auto ok = build_program(ctx, (*devs)[0].device, "__kernel void k(__global int* a) { a[0] = 1; }", "");
  CHECK(ok.is_ok());
}

TEST_CASE("unknown device kind names list the accepted ones") {
  auto k = parse_device_kind("gpu");
  REQUIRE_FALSE(k.is_ok());
  CHECK(k.status().message().find("igpu") != std::string::npos);
}
