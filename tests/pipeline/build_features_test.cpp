// Optional dependencies (issue 14): what a build without DPDK or prometheus-cpp says when asked for them, and the
// bundle's DPDK driver folder (HPR_DPDK_DRIVER_DIR) when it is wrong. Every case runs in every build; each checks
// the behaviour of the parts that build has (hpr/build_features.hpp, from HPR_WITH_*).
#include <catch2/catch.hpp>
#include <cstdlib>

#include "hpr/build_features.hpp"
#include "pipeline/run_config.hpp"
#include "pipeline/telemetry.hpp"
#include "runtime/ports/dpdk_port.hpp"

using namespace hpr;

TEST_CASE("build_features names each optional part as on or off") {
  const std::string f = build_features();
  CHECK_THAT(f, Catch::Contains(HPR_HAVE_DPDK ? "DPDK on" : "DPDK off"));
  CHECK_THAT(f, Catch::Contains(HPR_HAVE_HYPERSCAN ? "Hyperscan on" : "Hyperscan off"));
  CHECK_THAT(f, Catch::Contains(HPR_HAVE_PROMETHEUS ? "prometheus on" : "prometheus off"));
}

TEST_CASE("without DPDK, dpdk: ports are refused naming HPR_WITH_DPDK and the ports that work") {
  if (HPR_HAVE_DPDK) {
    SUCCEED("this build has DPDK: tests/runtime/dpdk_port_test.cpp covers the ports");
    return;
  }
  Status s = dpdk_init(dpdk_default_args({"net_null0"}));
  REQUIRE_FALSE(s.is_ok());
  CHECK(s.code() == Code::kUnavailable);
  CHECK_THAT(s.message(), Catch::Contains("HPR_WITH_DPDK") && Catch::Contains("pcap:FILE"));
  CHECK_FALSE(dpdk_initialised());
  CHECK_FALSE(make_dpdk_port({.name = "net_null0"}).is_ok());
  CHECK_FALSE(make_dpdk_ports({.name = "net_null0"}).is_ok());
  CHECK_FALSE(dpdk_queues("net_null0").is_ok());
  // The whole run setup: the message reaches `hpr run`.
  RunConfig c;
  c.input = {.kind = "dpdk", .dpdk_port = "net_null0"};
  c.output = {.kind = "null"};
  c.vdevs = {"net_null0"};
  c.app = "md5";  // no table to load
  c.devices = {"none"};
  auto r = prepare_run(c);
  REQUIRE_FALSE(r.is_ok());
  CHECK_THAT(r.status().message(), Catch::Contains("built without DPDK"));
}

TEST_CASE("with DPDK, a bundle driver folder that is not a directory is named before the EAL starts") {
  if (!HPR_HAVE_DPDK) {
    SUCCEED("this build has no DPDK");
    return;
  }
  ::setenv("HPR_DPDK_DRIVER_DIR", "/nonexistent/hpr-dpdk-drivers", 1);
  Status s = dpdk_init(dpdk_default_args({"net_null0"}));
  ::unsetenv("HPR_DPDK_DRIVER_DIR");
  REQUIRE_FALSE(s.is_ok());
  CHECK(s.code() == Code::kNotFound);
  CHECK_THAT(s.message(), Catch::Contains("HPR_DPDK_DRIVER_DIR=/nonexistent/hpr-dpdk-drivers: not a directory"));
  CHECK_FALSE(dpdk_initialised());
}

TEST_CASE("the Prometheus exporter is available exactly when the build has prometheus-cpp") {
  Status a = PrometheusExporter::available();
  CHECK(a.is_ok() == static_cast<bool>(HPR_HAVE_PROMETHEUS));
  if (!HPR_HAVE_PROMETHEUS) {
    CHECK_THAT(a.message(), Catch::Contains("telemetry.prometheus (--prometheus)") &&
                                Catch::Contains("HPR_WITH_PROMETHEUS"));
    PrometheusExporter e;
    CHECK(e.start("127.0.0.1:0", false).code() == Code::kUnavailable);
  }
}
