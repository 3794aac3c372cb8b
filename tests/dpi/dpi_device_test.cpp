// DPI kernel on every OpenCL device (PoCL: POCL_DEVICES="pthread basic" gives two) equals the native
// path byte for byte, on synthetic payloads with planted ET patterns (dense matches included), also
// on a table in visit order (DpiConfig::automaton_train).
#include <catch2/catch.hpp>

#include <cstring>
#include <random>

#include "hpr/data_dir.hpp"
#include "kernels/dpi/dpi_app.hpp"
#include "kernels/runner.hpp"
#include "runtime/opencl/devices.hpp"
#include "tests/dpi/dpi_captures.hpp"

using namespace hpr;
using namespace hpr::dpi;

namespace {

const DpiApp& et_app() {
  static std::unique_ptr<DpiApp> app = [] {
    auto r = DpiApp::from_rule_dir(data_path("rules/et-open-2017"));
    REQUIRE(r.is_ok());
    return std::move(*r);
  }();
  return *app;
}

using kernels::HostBatch;

HostBatch gather(const std::vector<std::string>& payloads, uint32_t result_bytes) {
  HostBatch b;
  uint32_t off = 0;
  for (const auto& s : payloads) {
    b.desc.push_back({off, static_cast<uint16_t>(s.size()), 0, 0, 0});
    off += kernels::align_slice(static_cast<uint32_t>(s.size()));
  }
  b.pkts.assign(std::max<uint32_t>(off, 16), 0);
  for (size_t i = 0; i < payloads.size(); ++i) std::memcpy(b.pkts.data() + b.desc[i].off, payloads[i].data(), payloads[i].size());
  b.out.assign(payloads.size() * result_bytes, 0xAB);
  return b;
}

std::vector<std::string> payloads(const std::vector<Pattern>& p, size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<std::string> out;
  for (size_t i = 0; i < n; ++i) {
    size_t len = i % 17 == 0 ? 0 : rng() % 1500;
    std::string s(len, '\0');
    int kind = static_cast<int>(rng() % 3);
    for (auto& c : s) c = static_cast<char>(kind == 0 ? rng() % 256 : kind == 1 ? 32 + rng() % 95 : (rng() % 8 ? 0 : rng()));
    for (int j = 0, plant = static_cast<int>(rng() % 8); j < plant && len > 0; ++j) {
      const Pattern& pat = p[rng() % p.size()];
      if (pat.bytes.size() <= len) std::memcpy(s.data() + rng() % (len - pat.bytes.size() + 1), pat.bytes.data(), pat.bytes.size());
    }
    out.push_back(std::move(s));
  }
  return out;
}

std::vector<kernels::DeviceRunner>& runners(const DpiApp& app) {
  static std::vector<kernels::DeviceRunner> r = [&] {
    auto devs = discover_devices();
    REQUIRE(devs.is_ok());
    REQUIRE_FALSE(devs->empty());
    std::vector<kernels::DeviceRunner> v;
    for (auto& d : *devs) {
      auto run = kernels::DeviceRunner::create(app, d.device);
      INFO(d.name << ": " << run.status().to_string());
      REQUIRE(run.is_ok());
      v.push_back(std::move(*run));
    }
    return v;
  }();
  return r;
}

// Device result of one batch (out poisoned first, so unwritten words show).
std::vector<uint8_t> run_on(kernels::DeviceRunner& r, HostBatch& b) {
  HostBatch c = b;
  std::fill(c.out.begin(), c.out.end(), 0xCD);
  auto v = c.view();
  auto st = r.run(v);
  INFO(st.to_string());
  REQUIRE(st.is_ok());
  return c.out;
}

}  // namespace

TEST_CASE("DPI app: slice, result layout, alert line") {
  const DpiApp& app = et_app();
  CHECK(app.result_bytes() == 4 * 9);
  CHECK_FALSE(app.writes_back());
  CHECK(app.build_options() == "-DK_MATCHES=8");
  Packet p;
  CHECK(app.slice(p).len == 0);  // no payload
  p.payload_off = 54;
  p.payload_len = 100;
  CHECK(app.slice(p).offset == 54);
  CHECK(app.slice(p).len == 100);
  p.payload_len = 10000;
  CHECK(app.slice(p).len == 9216);
  CHECK(app.slice(p).flags == kDpiTruncated);

  CHECK(DpiApp::create(PatternSet{}, {}).status().code() == Code::kInvalidArgument);
  PatternSet one;
  one.patterns.push_back({"x", false, 1});
  CHECK(DpiApp::create(one, {.max_ids = 0}).status().code() == Code::kInvalidArgument);
  CHECK(DpiApp::create(one, {.native_lanes = 3}).status().code() == Code::kInvalidArgument);
  CHECK(app.config().native_lanes == 4);  // the default
  CHECK(app.config().native_engine == DpiConfig::Engine::kPrefilter);  // the default: run_native is the prefilter path
  REQUIRE(app.prefilter() != nullptr);

  // Alert line: IPv4/TCP header bytes laid out by hand.
  uint8_t frame[64] = {};
  uint8_t* ip = frame + 14;
  ip[0] = 0x45;
  ip[9] = 6;
  ip[12] = 10, ip[13] = 0, ip[14] = 0, ip[15] = 1;
  ip[16] = 192, ip[17] = 168, ip[18] = 1, ip[19] = 2;
  uint8_t* tcp = ip + 20;
  tcp[0] = 0x04, tcp[1] = 0xd2;  // 1234
  tcp[2] = 0x00, tcp[3] = 0x50;  // 80
  Packet q;
  q.data = frame;
  q.l3 = L3::kIPv4;
  q.l3_off = 14;
  q.l4 = 6;
  q.l4_off = 34;
  q.flow_id = 7;
  uint32_t ids[2] = {5, 17};
  CHECK(format_alert(1700000000123456789ull, q, {3, std::span<const uint32_t>(ids, 2)}) ==
        "1700000000.123456789 flow=7 10.0.0.1:1234 -> 192.168.1.2:80 proto=6 matches=3 ids=5,17,...");
  char small[16];
  CHECK(format_alert(std::span<char>(small, sizeof small), 0, q, {0, {}}) == sizeof small);
}

TEST_CASE("DPI kernel == native, every device, synthetic payloads") {
  const DpiApp& app = et_app();
  auto pl = payloads(app.patterns().patterns, 2000, 1);
  pl.push_back(std::string(9216, '\0'));  // densest case: a max-size payload of zero bytes
  HostBatch b = gather(pl, app.result_bytes());
  app.run_native(b.view());  // the prefilter path (the default engine)
  for (uint32_t lanes : {1u, 4u}) {  // the automaton, both variants, gives the same bytes
    HostBatch c = b;
    std::fill(c.out.begin(), c.out.end(), 0xEE);
    run_native_batch(app.dfa(), app.config().max_ids, c.view(), lanes);
    CHECK(c.out == b.out);
  }
  uint64_t matches = 0;
  for (uint32_t i = 0; i < b.desc.size(); ++i) matches += app.result(b.view(), i).count;
  WARN("native: " << b.desc.size() << " payloads, " << matches << " matches");
  CHECK(matches > 0);
  for (size_t d = 0; d < runners(app).size(); ++d) {
    INFO("device " << d);
    CHECK(run_on(runners(app)[d], b) == b.out);
  }
  WARN("devices checked: " << runners(app).size());
}

TEST_CASE("DPI kernel == native, every device, every capture") {
  const DpiApp& app = et_app();
  uint64_t pkts = 0, bytes = 0, matches = 0;
  for (const auto& pc : test::all_captures()) {
    if (pc.pkts.empty()) continue;
    HostBatch b = kernels::gather(app, pc.pkts);
    app.run_native(b.view());  // the prefilter path (the default engine)
    {
      HostBatch c = b;
      run_native_batch(app.dfa(), app.config().max_ids, c.view(), 4);
      REQUIRE(c.out == b.out);  // the automaton (4 lanes) agrees
    }
    for (uint32_t i = 0; i < b.desc.size(); ++i) {
      matches += app.result(b.view(), i).count;
      bytes += b.desc[i].len;
    }
    pkts += b.desc.size();
    for (size_t d = 0; d < runners(app).size(); ++d) {
      INFO(pc.cap.path << " on device " << d);
      REQUIRE(run_on(runners(app)[d], b) == b.out);
    }
  }
  WARN("captures: " << test::all_captures().size() << " packets " << pkts << " payload bytes " << bytes
                    << " matches " << matches << " devices " << runners(app).size());
  CHECK(matches > bytes);
}

TEST_CASE("DPI kernel on a visit-ordered table (DpiConfig::automaton_train) == native BFS order, every device") {
  const DpiApp& app = et_app();
  auto hot = DpiApp::create(app.patterns(), {.native_engine = DpiConfig::Engine::kAutomaton,
                                             .automaton_train = data_path("pcap/ndpi/1kxun.pcap")});
  INFO(hot.status().to_string());
  REQUIRE(hot.is_ok());
  REQUIRE((*hot)->dfa().stats().train_bytes > 0);
  auto pl = payloads(app.patterns().patterns, 500, 7);
  HostBatch b = gather(pl, app.result_bytes());
  app.run_native(b.view());
  const auto& pc = test::all_captures().front();
  HostBatch c = kernels::gather(app, pc.pkts);
  app.run_native(c.view());
  auto devs = discover_devices();
  REQUIRE(devs.is_ok());
  for (auto& d : *devs) {
    auto run = kernels::DeviceRunner::create(**hot, d.device);  // uploads the visit-ordered table
    INFO(d.name << ": " << run.status().to_string());
    REQUIRE(run.is_ok());
    CHECK(run_on(*run, b) == b.out);
    INFO(pc.cap.path);
    CHECK(run_on(*run, c) == c.out);
  }
}
