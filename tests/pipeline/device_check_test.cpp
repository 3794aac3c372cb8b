// The device check (pipeline/device_check.hpp, issue 14): the sample of real traffic it runs on, every app on every
// OpenCL device equal to the native reference byte for byte, a device with wrong results named with the first
// differing packet, and hpr run's check of an app with per-flow state (aes) leaving the run's keys untouched.
#include "pipeline/device_check.hpp"

#include <catch2/catch.hpp>
#include <cstdlib>

#include "hpr/data_dir.hpp"
#include "kernels/aes/aes_app.hpp"
#include "runtime/frame_pools.hpp"
#include "tests/common/env_var.hpp"
#include "tests/crypto/crypto_util.hpp"

using namespace hpr;

namespace {

kernels::AppOptions test_options() {
  kernels::AppOptions ao;
  ao.master_key = "2b7e151628aed2a6abf7158809cf4f3c";
  ao.key_epoch = "000102030405060708090a0b0c0d0e0f";
  ao.iv_counter_start = 0;
  return ao;
}

}  // namespace

TEST_CASE("device check: the sample is real captures with flow ids, or synthetic frames where there is none") {
  CheckSample s = load_check_sample(data_path("pcap/ndpi"), 600, 16, kDefaultMaxFrame);
  REQUIRE(s.pkts.size() == 600);
  CHECK_THAT(s.source, Catch::StartsWith("600 packets of 51 captures under"));
  CHECK(s.origin[0] == "1kxun.pcap #1");
  CHECK(s.flows.size() > 30);
  uint64_t bytes = 0;
  for (size_t i = 0; i < s.pkts.size(); ++i) {
    CHECK(s.pkts[i].data == s.frames[i].data());
    bytes += s.frames[i].size();
  }
  CHECK(bytes == s.frame_bytes);

  CheckSample syn = load_check_sample("/nonexistent/captures", 100, 16, kDefaultMaxFrame);
  REQUIRE(syn.pkts.size() == 100);
  CHECK_THAT(syn.source, Catch::StartsWith("100 synthetic packets (no capture under /nonexistent/captures)"));
  size_t parsed = 0;
  for (const auto& p : syn.pkts) parsed += p.drop == DropReason::kNone;
  CHECK(parsed == 100);  // IPv4 and IPv6, TCP and UDP, all well formed
  CHECK(syn.flows.size() >= 97);  // 97 flows of addresses and ports, some with TCP and UDP or IPv4 and IPv6
}

TEST_CASE("device check: every app on every OpenCL device equals the native lane on real captures") {
  const auto devs = test::all_devices();
  if (devs.empty()) WARN("no OpenCL device: skipped");
  const CheckSample s = load_check_sample(data_path("pcap/ndpi"), 2048, 32, kDefaultMaxFrame);
  for (const auto& name : kernels::app_names()) {
    auto app = kernels::make_app(name, test_options());
    REQUIRE(app);
    for (const auto& d : devs) {
      INFO(name << " on " << d.getInfo<CL_DEVICE_NAME>());
      auto prog = kernels::AppProgram::create(**app, d);
      REQUIRE(prog);
      CHECK(check_device(**app, *prog, true, s, 256).empty());
      CHECK(check_device(**app, *prog, false, s, 512).empty());  // the discrete path: copies instead of maps
    }
  }
}

TEST_CASE("device check: a device that computes wrong results is named with the first differing packet") {
  const auto devs = test::all_devices();
  if (devs.empty()) return;
  const CheckSample s = load_check_sample(data_path("pcap/ndpi"), 256, 8, kDefaultMaxFrame);
  auto app = kernels::make_app("md5", test_options());
  REQUIRE(app);
  auto prog = kernels::AppProgram::create(**app, devs[0]);
  REQUIRE(prog);
  {
    test::EnvVar f("HPR_FAULT_CL", "corrupt:2");  // from the second batch of 64 on: packet 65 is the first wrong one
    CHECK_THAT(check_device(**app, *prog, true, s, 64),
               Catch::StartsWith("computes wrong results: packet 65 of 256 (") && Catch::Contains("result byte 0 of 16"));
  }
  {
    test::EnvVar f("HPR_FAULT_CL",
                   "enqueue:1");  // a failing call is the run's lanes' business: the check does not meet it
    CHECK(check_device(**app, *prog, true, s, 64).empty());
  }
}

TEST_CASE("device check of hpr run: an aes run's keys and counters are not the check's") {
  const auto devs = test::all_devices();
  if (devs.empty()) return;
  const CheckSample s = load_check_sample(data_path("pcap/ndpi"), 256, 8, kDefaultMaxFrame);
  auto app = kernels::make_app("aes", test_options());
  REQUIRE(app);
  const auto& aes = dynamic_cast<const kernels::aes::AesApp&>(**app);
  auto prog = kernels::AppProgram::create(**app, devs[0]);
  REQUIRE(prog);
  CHECK(check_device_for_run("aes", test_options(), **app, *prog, true, s).empty());
  CHECK(aes.keys().key_count() == 0);
  CHECK(aes.counters().encrypted == 0);
}
