// Device output == native output, byte for byte (pkts after write-back and out), on every capture of
// ../shared/data/pcap/ndpi and on generated traffic that hits every drop reason, for every OpenCL
// device (ctest sets POCL_DEVICES="pthread basic": two PoCL CPU devices).
#include <catch2/catch.hpp>

#include <cstdlib>
#include <random>

#include "hpr/data_dir.hpp"
#include "ipv4_test_util.hpp"
#include "kernels/ipv4/ipv4_app.hpp"
#include "kernels/runner.hpp"
#include "runtime/opencl/devices.hpp"
#include "runtime/parser.hpp"
#include "runtime/pcap_file.hpp"

using namespace hpr::kernels::ipv4;
using hpr::kernels::DeviceRunner;
using hpr::ipv4_test::Frame;
using hpr::kernels::HostBatch;
using hpr::ipv4_test::full_table;

namespace {

// Runs the same packets natively and on the device; returns a description of the first difference.
std::string compare(const Ipv4App& app, DeviceRunner& dev, const std::vector<hpr::Packet>& pkts,
                    const std::vector<std::string>& origin) {
  HostBatch nat = hpr::kernels::gather(app, pkts);
  HostBatch devb = hpr::kernels::gather(app, pkts);
  app.run_native(nat.view());
  auto view = devb.view();
  if (auto st = dev.run(view); !st) return st.to_string();
  for (size_t i = 0; i < pkts.size(); ++i) {
    if (std::memcmp(nat.out.data() + i * 8, devb.out.data() + i * 8, 8) != 0) return fmt::format("{}: out[{}] differs", origin[i], i);
    const auto& d = nat.desc[i];
    if (std::memcmp(nat.pkts.data() + d.off, devb.pkts.data() + d.off, d.len) != 0) return fmt::format("{}: pkts[{}] differs", origin[i], i);
  }
  if (nat.pkts != devb.pkts) return "pkts padding differs";
  return {};
}

std::vector<uint32_t> reason_histogram(const Ipv4App& app, const std::vector<hpr::Packet>& pkts) {
  HostBatch b = hpr::kernels::gather(app, pkts);
  app.run_native(b.view());
  std::vector<uint32_t> h(static_cast<size_t>(hpr::DropReason::kCount));
  for (size_t i = 0; i < pkts.size(); ++i) ++h[b.out[i * 8 + 6]];
  return h;
}

}  // namespace

TEST_CASE("device == native on every capture and on generated traffic, on every OpenCL device") {
  const auto found = hpr::ipv4_test::test_devices();
  if (found.empty()) return;
  // Two configurations: strict (drops for non-IPv4 and misses, 16-bit entries) and lenient (defaults,
  // 32-bit entries).
  std::vector<std::unique_ptr<Ipv4App>> apps;
  {
    auto a = Ipv4App::create(full_table(), {.num_ports = 16, .lpm_width = LpmWidth::kNarrow});
    REQUIRE(a);
    apps.push_back(std::move(a).value());
    auto b = Ipv4App::create(full_table(), {.num_ports = 16, .default_next_hop = 5, .non_ipv4_port = 7,
                                            .lpm_width = LpmWidth::kWide});
    REQUIRE(b);
    apps.push_back(std::move(b).value());
  }

  // Every packet of every capture, parsed by the runtime parser with the checksum left to the app.
  // Packets the parser drops stay in (the executor gives them an empty slice).
  std::vector<hpr::Capture> storage;
  for (const auto& path : hpr::list_captures(hpr::data_path("pcap/ndpi"))) {
    auto c = hpr::load_capture(path);
    REQUIRE(c);
    storage.push_back(std::move(c).value());
  }
  CHECK(storage.size() == 242);
  std::vector<hpr::Packet> all;
  std::vector<std::string> origin;
  for (auto& c : storage) {
    for (size_t i = 0; i < c.frames.size(); ++i) {
      hpr::Packet p;
      p.data = c.frames[i].data();
      p.len = static_cast<uint16_t>(c.frames[i].size());
      hpr::parse(p, {.verify_ipv4_checksum = false});
      all.push_back(p);
      origin.push_back(fmt::format("{} #{}", c.path, i + 1));
    }
  }
  CHECK(all.size() > 90000);
  std::vector<Frame> gen = hpr::ipv4_test::generated_frames(20000, 7);
  std::vector<hpr::Packet> gen_pkts;
  for (auto& f : gen) gen_pkts.push_back(f.pkt);

  // The generated traffic must reach every verdict, else the comparison would prove little.
  auto hist = reason_histogram(*apps[0], gen_pkts);
  for (auto r : {hpr::DropReason::kNone, hpr::DropReason::kTruncated, hpr::DropReason::kBadVersion,
                 hpr::DropReason::kBadIhl, hpr::DropReason::kBadTotalLength, hpr::DropReason::kBadChecksum,
                 hpr::DropReason::kTtlExceeded, hpr::DropReason::kNoRoute, hpr::DropReason::kNotIPv4}) {
    INFO(hpr::drop_reason_name(r));
    CHECK(hist[static_cast<size_t>(r)] > 0);
  }
  for (size_t i = 0; i < gen_pkts.size(); ++i) {
    all.push_back(gen_pkts[i]);
    origin.push_back(fmt::format("generated #{}", i));
  }
  // Batches of one fixed size (the tail padded with generated packets): PoCL compiles one kernel
  // specialisation per work-group size it picks, and it picks by global size.
  constexpr size_t kBatch = 8192;
  for (size_t i = 0; all.size() % kBatch != 0; ++i) {
    all.push_back(gen_pkts[i]);
    origin.push_back(fmt::format("generated #{} (padding)", i));
  }

  for (auto& info : found) {
    for (auto& app : apps) {
      INFO("device " << info.name << ", options " << app->build_options());
      auto runner = DeviceRunner::create(*app, info.device);
      REQUIRE(runner);
      size_t bad = 0;
      for (size_t base = 0; base < all.size(); base += kBatch) {
        std::vector<hpr::Packet> pkts(all.begin() + base, all.begin() + base + kBatch);
        std::vector<std::string> org(origin.begin() + base, origin.begin() + base + kBatch);
        auto diff = compare(*app, *runner, pkts, org);
        if (!diff.empty() && ++bad < 5) UNSCOPED_INFO(diff);
      }
      CHECK(bad == 0);
    }
  }
}
