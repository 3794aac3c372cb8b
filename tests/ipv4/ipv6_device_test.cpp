// IPv6 path of the ipv4 app on every OpenCL device == the native path, byte for byte (issue 18): every
// packet of every capture (their IPv6 destinations covered by the SYNTHETIC IPv6 table) and generated
// IPv6 traffic that reaches every IPv6 verdict. ctest sets POCL_DEVICES="pthread basic".
#include <catch2/catch.hpp>

#include <cstdlib>
#include <random>

#include "ipv6_test_util.hpp"
#include "kernels/ipv4/ipv4_app.hpp"
#include "kernels/runner.hpp"
#include "runtime/opencl/devices.hpp"

using namespace hpr::kernels::ipv4;
using hpr::ipv4_test::Frame;
using hpr::kernels::DeviceRunner;
using hpr::kernels::HostBatch;

namespace {

std::string compare(const Ipv4App& app, DeviceRunner& dev, const std::vector<hpr::Packet>& pkts) {
  HostBatch nat = hpr::kernels::gather(app, pkts);
  HostBatch devb = hpr::kernels::gather(app, pkts);
  app.run_native(nat.view());
  auto view = devb.view();
  if (auto st = dev.run(view); !st) return st.to_string();
  if (nat.out != devb.out) return "out differs";
  if (nat.pkts != devb.pkts) return "pkts differ";
  return {};
}

}  // namespace

TEST_CASE("IPv6 device == native on every capture and on generated IPv6 traffic, on every OpenCL device") {
  const auto found = hpr::ipv4_test::test_devices();
  if (found.empty()) return;
  const auto table = hpr::ipv6_test::test_table6(3000);  // SYNTHETIC IPv6 table + the captures' addresses
  const auto routes6 = hpr::synth6::to_routes6(table, 16);
  std::vector<std::unique_ptr<Ipv4App>> apps;
  for (bool lenient : {false, true}) {
    Ipv4Config c{.num_ports = 16};
    if (lenient) {
      c.default_next_hop = 5;
      c.non_ipv4_port = 7;
    }
    auto a = Ipv4App::create(hpr::ipv4_test::full_table(), c, routes6);
    REQUIRE(a);
    apps.push_back(std::move(a).value());
  }

  std::vector<hpr::Capture> storage;
  for (const auto& path : hpr::list_captures(hpr::data_path("pcap/ndpi"))) {
    auto c = hpr::load_capture(path);
    REQUIRE(c);
    storage.push_back(std::move(c).value());
  }
  std::vector<hpr::Packet> all;
  size_t v6 = 0;
  for (auto& c : storage) {
    for (auto& fr : c.frames) {
      hpr::Packet p;
      p.data = fr.data();
      p.len = static_cast<uint16_t>(fr.size());
      hpr::parse(p, {.verify_ipv4_checksum = false});
      v6 += p.l3 == hpr::L3::kIPv6;
      all.push_back(p);
    }
  }
  CHECK(v6 > 1000);
  std::vector<Frame> gen = hpr::ipv6_test::generated6(20000, 11, table);
  std::vector<hpr::Packet> gen_pkts;
  for (auto& f : gen) gen_pkts.push_back(f.pkt);
  {  // the generated traffic reaches every IPv6 verdict
    HostBatch b = hpr::kernels::gather(*apps[0], gen_pkts);
    apps[0]->run_native(b.view());
    std::vector<uint32_t> h(static_cast<size_t>(hpr::DropReason::kCount));
    for (size_t i = 0; i < gen_pkts.size(); ++i) {
      if (gen_pkts[i].len > gen_pkts[i].l3_off) CHECK((b.out[i * 8 + 7] & kResIpv6) != 0);  // else the IPv4 kTruncated
      ++h[b.out[i * 8 + 6]];
    }
    for (auto r : {hpr::DropReason::kNone, hpr::DropReason::kTruncated, hpr::DropReason::kBadVersion,
                   hpr::DropReason::kBadTotalLength, hpr::DropReason::kTtlExceeded, hpr::DropReason::kNoRoute}) {
      INFO(hpr::drop_reason_name(r));
      CHECK(h[static_cast<size_t>(r)] > 0);
    }
  }
  all.insert(all.end(), gen_pkts.begin(), gen_pkts.end());
  constexpr size_t kBatch = 8192;  // one global size: PoCL compiles per work-group size
  for (size_t i = 0; all.size() % kBatch != 0; ++i) all.push_back(gen_pkts[i]);

  for (auto& info : found) {
    for (auto& app : apps) {
      INFO("device " << info.name << ", options " << app->build_options());
      auto runner = DeviceRunner::create(*app, info.device);
      REQUIRE(runner);
      size_t bad = 0;
      for (size_t base = 0; base < all.size(); base += kBatch) {
        std::vector<hpr::Packet> pkts(all.begin() + base, all.begin() + base + kBatch);
        auto diff = compare(*app, *runner, pkts);
        if (!diff.empty() && ++bad < 5) UNSCOPED_INFO("batch at " << base << ": " << diff);
      }
      CHECK(bad == 0);
    }
  }
}
