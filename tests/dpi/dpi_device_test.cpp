// DPI kernel on every OpenCL device (PoCL: POCL_DEVICES="pthread basic" gives two) equals the native
// path byte for byte, on synthetic payloads with planted ET patterns (dense matches included).
#include <catch2/catch.hpp>

#include <cstring>
#include <random>

#include "hpr/data_dir.hpp"
#include "kernels/dpi/dpi_app.hpp"

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

// A gathered batch in plain host memory (the kernel layout of kernels/device_batch.hpp).
struct HostBatch {
  std::vector<kernels::Desc> desc;
  std::vector<uint8_t> pkts;
  std::vector<uint8_t> out;
  kernels::BatchView view() { return {desc.data(), static_cast<uint32_t>(desc.size()), pkts.data(), out.data()}; }
};

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

// Runs the app's kernel once on `dev` over `b` (raw OpenCL; the runtime's DeviceRunner does the same).
std::vector<uint8_t> run_on_device(const DpiApp& app, const cl::Device& dev, HostBatch& b) {
  cl::Context ctx(dev);
  cl::CommandQueue q(ctx, dev);
  cl::Program prog(ctx, app.kernel_source());
  try {
    prog.build({dev}, app.build_options().c_str());
  } catch (const cl::Error&) {
    FAIL("build log: " << prog.getBuildInfo<CL_PROGRAM_BUILD_LOG>(dev));
  }
  cl::Kernel k(prog, std::string(app.kernel_name()).c_str());
  auto tables = app.make_device_tables(ctx, q);
  REQUIRE(tables.is_ok());
  REQUIRE((*tables)->bind(k).is_ok());
  auto flags = CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR;
  cl::Buffer desc(ctx, flags, b.desc.size() * sizeof(kernels::Desc), b.desc.data());
  cl::Buffer pkts(ctx, flags, b.pkts.size(), b.pkts.data());
  cl::Buffer out(ctx, CL_MEM_WRITE_ONLY, b.out.size());
  k.setArg(0, desc);
  k.setArg(1, static_cast<cl_uint>(b.desc.size()));
  k.setArg(2, pkts);
  k.setArg(3, out);
  q.enqueueNDRangeKernel(k, cl::NullRange, cl::NDRange(b.desc.size()));
  std::vector<uint8_t> r(b.out.size());
  q.enqueueReadBuffer(out, CL_TRUE, 0, r.size(), r.data());
  return r;
}

std::vector<cl::Device> all_devices() {
  std::vector<cl::Platform> plats;
  cl::Platform::get(&plats);
  std::vector<cl::Device> devs;
  for (auto& p : plats) {
    std::vector<cl::Device> d;
    p.getDevices(CL_DEVICE_TYPE_ALL, &d);
    devs.insert(devs.end(), d.begin(), d.end());
  }
  return devs;
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
  auto devs = all_devices();
  REQUIRE_FALSE(devs.empty());
  auto pl = payloads(app.patterns().patterns, 2000, 1);
  pl.push_back(std::string(9216, '\0'));  // densest case: a max-size payload of zero bytes
  HostBatch b = gather(pl, app.result_bytes());
  app.run_native(b.view());
  uint64_t matches = 0;
  for (uint32_t i = 0; i < b.desc.size(); ++i) matches += app.result(b.view(), i).count;
  WARN("native: " << b.desc.size() << " payloads, " << matches << " matches");
  CHECK(matches > 0);
  for (auto& dev : devs) {
    INFO("device " << dev.getInfo<CL_DEVICE_NAME>());
    auto got = run_on_device(app, dev, b);
    CHECK(got == b.out);
  }
  WARN("devices checked: " << devs.size());
}
