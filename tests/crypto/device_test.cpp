// Device kernels (md5.cl, aes.cl) == native reference byte for byte, on every OpenCL device
// (POCL_DEVICES="pthread basic" gives two), on synthetic packets, NIST vectors and real captures.
#include <catch2/catch.hpp>
#include <filesystem>

#include "kernels/aes/aes_app.hpp"
#include "kernels/aes/key_source.hpp"
#include "kernels/md5/md5_app.hpp"
#include "runtime/flow.hpp"
#include "runtime/parser.hpp"
#include "runtime/pcap_file.hpp"
#include "tests/crypto/crypto_util.hpp"

using namespace hpr;
using namespace hpr::kernels;

namespace {

std::vector<cl::Device> devices() {
  auto d = test::all_devices();
  if (d.empty()) WARN("no OpenCL device: device tests skipped");
  return d;
}

std::string dev_name(const cl::Device& d) { return d.getInfo<CL_DEVICE_NAME>(); }

// Native and device on the same gathered batch; both outputs (and the slices) must match.
void check_equal(const App& app, DeviceRunner& dev, const std::string& dev_label, std::span<const Packet> pkts,
                 const std::string& what) {
  auto native = kernels::gather(app, pkts);
  app.run_native(native.view());
  auto device = kernels::gather(app, pkts);
  auto view = device.view();
  auto st = dev.run(view);
  INFO(what << " on " << dev_label << ": " << st.message());
  REQUIRE(st.is_ok());
  REQUIRE(device.out == native.out);
  REQUIRE(device.pkts == native.pkts);
}

test::Packets random_packets(uint32_t seed, uint32_t flows) {
  std::mt19937 rng(seed);
  test::Packets ps;
  for (int len = 0; len <= 1514; len += 1 + len / 64) ps.add(test::random_bytes(rng, len), rng() % flows, rng());
  for (int len : {15, 16, 17, 31, 32, 33, 63, 64, 65, 1460, 1472, 1480, 9000}) ps.add(test::random_bytes(rng, len), 1, 2);
  return ps;
}

}  // namespace

TEST_CASE("device: md5 kernel == native on random packets (payload and whole frame)") {
  for (const auto& d : devices()) {
    for (bool whole : {false, true}) {
      md5::Md5App app({.whole_frame = whole});
      auto dev = DeviceRunner::create(app, d);
      INFO(dev_name(d) << ": " << dev.status().message());
      REQUIRE(dev.is_ok());
      auto ps = random_packets(1, 1);
      check_equal(app, *dev, dev_name(d), ps.fix(), whole ? "md5 whole frame" : "md5 payload");
    }
  }
}

TEST_CASE("device: aes kernel == native on random packets, derived and carried IV, missing keys") {
  // 40..47 keyless, and flows >= 48 beyond capacity; random seq: both halves' IV counters.
  auto keys = test::numbered_keys(48, aes::Key{9}, 40, aes::KeyEpoch{0x5a, 1, 2, 3, 0xa5});
  for (const auto& d : devices()) {
    for (aes::IvMode mode : {aes::IvMode::kDerived, aes::IvMode::kCarried}) {
      aes::AesApp app(keys, {.iv = mode});
      auto dev = DeviceRunner::create(app, d);
      INFO(dev_name(d) << ": " << dev.status().message());
      REQUIRE(dev.is_ok());
      auto ps = random_packets(2, 52);
      check_equal(app, *dev, dev_name(d), ps.fix(), "aes");
    }
  }
}

TEST_CASE("device: aes kernel encrypts all NIST CAVS encrypt vectors (IV carried)") {
  auto vs = test::load_all_nist();
  REQUIRE(vs.size() == 588);
  auto keys = std::make_shared<aes::KeyTable>(static_cast<uint32_t>(vs.size()));
  test::Packets ps;
  std::vector<size_t> idx;
  for (size_t i = 0; i < vs.size(); ++i) {
    if (!vs[i].encrypt) continue;
    aes::Key k{};
    std::memcpy(k.data(), vs[i].key.data(), 16);
    REQUIRE(keys->set_key(static_cast<uint32_t>(i), k).is_ok());
    std::vector<uint8_t> payload = vs[i].iv;
    payload.insert(payload.end(), vs[i].pt.begin(), vs[i].pt.end());
    ps.add(payload, static_cast<uint32_t>(i), 0);
    idx.push_back(i);
  }
  REQUIRE(idx.size() == 294);
  auto& pkts = ps.fix();
  aes::AesApp app(keys, {.iv = aes::IvMode::kCarried});
  for (const auto& d : devices()) {
    auto dev = DeviceRunner::create(app, d);
    REQUIRE(dev.is_ok());
    auto b = kernels::gather(app, pkts);
    auto view = b.view();
    REQUIRE(dev->run(view).is_ok());
    for (size_t j = 0; j < idx.size(); ++j) {
      const auto& v = vs[idx[j]];
      INFO(dev_name(d) << " " << v.file << " COUNT " << v.count);
      REQUIRE(std::memcmp(b.pkts.data() + b.desc[j].off + 16, v.ct.data(), v.ct.size()) == 0);
    }
  }
}

TEST_CASE("device: md5 and aes kernels == native on every nDPI capture") {
  const std::vector<std::string> files = test::ndpi_capture_files();
  REQUIRE(files.size() > 200);
  // Flow ids from one real FlowTable, each connection's key derived from the master key and the epoch when
  // it starts (as the dispatcher does); then no key for every fifth id, so some flows hit kKeyMissing.
  constexpr uint32_t kCapacity = 1u << 16;
  auto keys = test::capture_test_keys(kCapacity);
  REQUIRE(keys);
  md5::Md5App md5_app;
  aes::AesApp aes_app(keys->table, {}, keys->source);
  auto table = FlowTable::create(kCapacity, 1'000'000'000'000ull);
  REQUIRE(table.is_ok());
  // Every packet of every capture (about 98k), all in one batch per (app, device): a few seconds
  // on PoCL since launches use a fixed work-group size (kernels/runner.cpp).
  std::vector<std::vector<uint8_t>> frames;
  std::vector<Packet> pkts;
  std::string error;
  const size_t files_read = test::load_capture_packets(files, **table, aes_app, frames, pkts, &error);
  INFO(error);
  CHECK(files_read == files.size());
  REQUIRE((*table)->full_events() == 0);
  CHECK(keys->table->key_count() == (*table)->size());
  for (uint32_t f = 4; f < kCapacity; f += 5) keys->table->clear_key(f);
  CHECK(pkts.size() > 90000);
  for (const auto& d : devices()) {
    for (const App* app : {static_cast<const App*>(&md5_app), static_cast<const App*>(&aes_app)}) {
      auto dev = DeviceRunner::create(*app, d);
      INFO(dev.status().message());
      REQUIRE(dev.is_ok());
      check_equal(*app, *dev, dev_name(d), pkts, "every packet of every capture");
    }
  }
  // The books: every packet of an unkeyed flow is a counted drop.
  auto b = kernels::gather(aes_app, pkts);
  aes_app.run_native(b.view());
  std::vector<Packet> copy = pkts;
  aes_app.finish(copy, b.view());
  uint64_t want_missing = 0;
  for (const auto& p : pkts) want_missing += p.drop == DropReason::kNone && (p.flow_id == kNoFlow || p.flow_id % 5 == 4);
  CHECK(want_missing > 0);
  CHECK(aes_app.counters().key_missing == want_missing);
  CHECK(aes_app.count_events(copy, b.view()) == aes_app.counters().encrypted);
}
