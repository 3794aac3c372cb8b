// Device kernels (md5.cl, aes.cl) == native reference byte for byte, on every OpenCL device
// (POCL_DEVICES="pthread basic" gives two), on synthetic packets, NIST vectors and real captures.
#include <catch2/catch.hpp>

#include <filesystem>

#include "kernels/aes/aes_app.hpp"
#include "kernels/md5/md5_app.hpp"
#include "tests/crypto/cl_util.hpp"

#if __has_include("runtime/pcap_file.hpp") && __has_include("runtime/parser.hpp")
#include "runtime/parser.hpp"
#include "runtime/pcap_file.hpp"
#define HPR_CRYPTO_HAVE_CAPTURES 1
#endif

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
void check_equal(const App& app, test::DeviceApp& dev, std::span<const Packet> pkts, const std::string& what) {
  auto native = test::gather(app, pkts);
  app.run_native(native.view());
  auto device = test::gather(app, pkts);
  auto st = dev.run(device);
  INFO(what << " on " << dev_name(dev.dev) << ": " << st.message());
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
      auto dev = test::DeviceApp::create(app, d);
      INFO(dev_name(d) << ": " << dev.status().message());
      REQUIRE(dev.is_ok());
      auto ps = random_packets(1, 1);
      check_equal(app, **dev, ps.fix(), whole ? "md5 whole frame" : "md5 payload");
    }
  }
}

TEST_CASE("device: aes kernel == native on random packets, derived and carried IV, missing keys") {
  auto keys = std::make_shared<aes::KeyTable>(48);
  aes::fill_derived(*keys, aes::Key{9}, 0, 40);  // 40..47 keyless, and flows >= 48 beyond capacity
  for (const auto& d : devices()) {
    for (aes::IvMode mode : {aes::IvMode::kDerived, aes::IvMode::kCarried}) {
      aes::AesApp app(keys, {.iv = mode});
      auto dev = test::DeviceApp::create(app, d);
      INFO(dev_name(d) << ": " << dev.status().message());
      REQUIRE(dev.is_ok());
      auto ps = random_packets(2, 52);
      check_equal(app, **dev, ps.fix(), "aes");
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
    auto dev = test::DeviceApp::create(app, d);
    REQUIRE(dev.is_ok());
    auto b = test::gather(app, pkts);
    REQUIRE((*dev)->run(b).is_ok());
    for (size_t j = 0; j < idx.size(); ++j) {
      const auto& v = vs[idx[j]];
      INFO(dev_name(d) << " " << v.file << " COUNT " << v.count);
      REQUIRE(std::memcmp(b.pkts.data() + b.desc[j].off + 16, v.ct.data(), v.ct.size()) == 0);
    }
  }
}

#ifdef HPR_CRYPTO_HAVE_CAPTURES
TEST_CASE("device: md5 and aes kernels == native on every nDPI capture") {
  namespace fs = std::filesystem;
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(data_path("pcap/ndpi")))
    if (e.path().extension() == ".pcap" || e.path().extension() == ".pcapng") files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  REQUIRE(files.size() > 200);
  auto keys = std::make_shared<aes::KeyTable>(1024);
  aes::fill_derived(*keys, aes::Key{1}, 0, 1000);  // flow ids 1000..1023 keyless
  md5::Md5App md5_app;
  aes::AesApp aes_app(keys);
  for (const auto& d : devices()) {
    auto dm = test::DeviceApp::create(md5_app, d);
    auto da = test::DeviceApp::create(aes_app, d);
    REQUIRE(dm.is_ok());
    REQUIRE(da.is_ok());
    size_t total = 0;
    for (const auto& f : files) {
      auto cap = load_capture(f);
      if (!cap.is_ok()) continue;  // unsupported link types are the parser's tests' business
      std::vector<Packet> pkts;
      for (size_t i = 0; i < cap->frames.size(); ++i) {
        Packet p;
        p.data = cap->frames[i].data();
        p.len = static_cast<uint16_t>(cap->frames[i].size());
        parse(p);
        p.flow_id = static_cast<uint32_t>(i % 1024);  // stand-in for FlowTable ids
        p.seq = static_cast<uint32_t>(i);
        pkts.push_back(p);
      }
      total += pkts.size();
      check_equal(md5_app, **dm, pkts, f);
      check_equal(aes_app, **da, pkts, f);
    }
    CHECK(total > 50000);
  }
}
#else
TEST_CASE("device: captures (pending runtime/pcap_file.hpp and runtime/parser.hpp on main)") {
  WARN("capture comparison not compiled: merge main once load_capture() and parse() land");
}
#endif
