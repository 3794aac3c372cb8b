// Live reloads (issue 17): the route table replaced 100 times while packets flow, on the in-place worker path, on
// threaded native lanes and on OpenCL lanes: nothing dropped or reordered, every packet sent once, and each packet
// routed by a table at least as new as the one in effect when the dispatcher took it in (the new routes act from the
// next batch). Generation g's table sends everything to next hop g, so each packet shows the table that routed it.
#include <catch2/catch.hpp>

#include <mutex>
#include <thread>

#include "kernels/chain/chain_app.hpp"
#include "kernels/ipv4/ipv4_app.hpp"
#include "kernels/md5/md5_app.hpp"
#include "pipeline/pipeline.hpp"
#include "runtime/checksum.hpp"
#include "runtime/opencl/devices.hpp"
#include "tests/pipeline/pipeline_fixture.hpp"

using namespace hpr;
namespace v4 = hpr::kernels::ipv4;

namespace {

constexpr uint32_t kFlows = 64;
constexpr uint16_t kFrame = 60;

// UDP/IPv4 packets of kFlows flows, numbered in their payload's first 8 bytes (the rx index), for as long as asked;
// buffers from a fixed set, back on release (from egress: hence the lock).
class NumberedSource final : public Port {
 public:
  explicit NumberedSource(size_t buffers = 8192) : mem_(buffers * 64) {
    for (size_t i = 0; i < buffers; ++i) free_.push_back(mem_.data() + i * 64);
  }
  std::string_view kind() const override { return "test"; }
  std::string describe() const override { return "numbered source"; }
  uint16_t rx_burst(Packet* pkts, uint16_t n, uint64_t now) override {
    std::lock_guard<std::mutex> g(mu_);
    uint16_t k = 0;
    for (; k < n && !free_.empty(); ++k) {
      uint8_t* f = free_.back();
      free_.pop_back();
      build(f, next_++);
      pkts[k] = Packet{};
      pkts[k].data = f;
      pkts[k].buf = f;
      pkts[k].len = kFrame;
      pkts[k].rx_ns = now;
    }
    rx_ += k;
    return k;
  }
  uint16_t tx_burst(Packet*, uint16_t) override { return 0; }
  void release(Packet* pkts, uint16_t n) override {
    std::lock_guard<std::mutex> g(mu_);
    for (uint16_t i = 0; i < n; ++i) free_.push_back(static_cast<uint8_t*>(pkts[i].buf));  // the contract: buf
  }
  PortStats stats() const override {
    std::lock_guard<std::mutex> g(mu_);
    PortStats s;
    s.rx_packets = rx_;
    s.buffers_in_use = mem_.size() / 64 - free_.size();
    return s;
  }

 private:
  static void build(uint8_t* f, uint64_t number) {
    std::memset(f, 0, 64);
    f[12] = 0x08;  // IPv4
    uint8_t* ip = f + 14;
    ip[0] = 0x45;
    store_be16(ip + 2, 36);
    ip[8] = 64;
    ip[9] = 17;
    store_be32(ip + 12, 0xc0a80000u + static_cast<uint32_t>(number % kFlows));  // 192.168.0.flow
    store_be32(ip + 16, 0x0a000001u);
    store_be16(ip + 10, ip_checksum(ip, 20));
    store_be16(ip + 20, 1000);
    store_be16(ip + 22, 2000);
    store_be16(ip + 24, 16);
    std::memcpy(ip + 28, &number, 8);
  }
  mutable std::mutex mu_;
  std::vector<uint8_t> mem_;
  std::vector<uint8_t*> free_;
  uint64_t next_ = 0, rx_ = 0;
};

// Every packet it sends: its number and the next hop the app chose.
class RecordingSink final : public Port {
 public:
  struct Sent {
    uint64_t number;
    uint16_t hop;
  };
  std::string_view kind() const override { return "test"; }
  std::string describe() const override { return "recording sink"; }
  uint16_t rx_burst(Packet*, uint16_t, uint64_t) override { return 0; }
  uint16_t tx_burst(Packet* pkts, uint16_t n) override {
    std::lock_guard<std::mutex> g(mu_);
    for (uint16_t i = 0; i < n; ++i) {
      Sent s{0, pkts[i].out_port};
      std::memcpy(&s.number, pkts[i].data + 14 + 28, 8);
      sent_.push_back(s);
    }
    return n;
  }
  void release(Packet*, uint16_t) override {}
  PortStats stats() const override { return {}; }
  std::vector<Sent> sent() const {
    std::lock_guard<std::mutex> g(mu_);
    return sent_;
  }

 private:
  mutable std::mutex mu_;
  std::vector<Sent> sent_;
};

v4::Ipv4Config table_config() {
  v4::Ipv4Config c;
  c.num_ports = 128;
  c.lpm_width = v4::LpmWidth::kNarrow;  // 32 MiB a table: a hundred of them build in seconds
  return c;
}

// Generation g: every address to next hop g. `chain`: ipv4 then md5 (a chain's reload: its ipv4 replaced).
std::shared_ptr<const kernels::App> table(uint32_t g, bool chain = false) {
  std::vector<v4::Route> routes{{.prefix = 0, .len = 0, .next_hop = g}};
  auto a = v4::Ipv4App::create(routes, table_config());
  REQUIRE(a.is_ok());
  if (!chain) return std::shared_ptr<const kernels::App>(std::move(*a));
  auto c = kernels::ChainApp::create({std::shared_ptr<kernels::App>(std::move(*a)), std::make_shared<kernels::md5::Md5App>()},
                                     kDefaultMaxFrame);
  REQUIRE(c.is_ok());
  return *c;
}

// Backpressure (nothing may be lost in the test's own ports), one native lane; `in_place`: run to completion with it
// alone, which is the in-place worker path.
PipelineConfig native_config(bool in_place, uint32_t batch = 256) {
  PipelineConfig pc;
  pc.backpressure = true;
  pc.flow_capacity = 1024;
  pc.status_interval_ns = 0;
  pc.run_to_completion = in_place;
  LaneSpec native;
  native.lane.name = "native0";
  native.lane.batch_size = batch;
  pc.lanes.push_back(native);
  return pc;
}

enum class Mode { kInPlace, kThreaded, kDevices, kDevicesChain };

// Under the sanitizers (CI's hardening runs) each 32 MiB table takes a second to build: 20 reloads there.
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
constexpr uint32_t kReloads = 20;
#else
constexpr uint32_t kReloads = 100;
#endif

void reload_while_forwarding(Mode mode) {
  const bool chain = mode == Mode::kDevicesChain;
  auto first = table(1, chain);
  PipelineConfig pc = native_config(mode == Mode::kInPlace, 32);
  if (mode == Mode::kDevices || chain) {
    auto devs = discover_devices();
    REQUIRE(devs.is_ok());
    REQUIRE(!devs->empty());
    for (const auto& d : *devs) {
      auto prog = kernels::AppProgram::create(*first, d.device);
      REQUIRE(prog.is_ok());
      LaneSpec s;
      s.kind = LaneSpec::Kind::kOpenCL;
      s.program = *prog;
      s.lane.name = "cl:" + d.name;
      s.lane.batch_size = 64;
      pc.lanes.push_back(s);
    }
  }
  NumberedSource src;
  RecordingSink sink;
  auto p = Pipeline::create(pc, first, src, sink);
  REQUIRE(p.is_ok());
  first.reset();
  Summary s;
  std::thread runner([&] { s = (*p)->run(); });
  // at[g]: packets taken in when generation g was swapped in (generation 1 from the start).
  std::vector<uint64_t> at(kReloads + 2, 0);
  for (uint32_t g = 2; g <= kReloads + 1; ++g) {
    while (src.stats().rx_packets < at[g - 1] + 500) std::this_thread::yield();  // traffic between the swaps
    auto r = (*p)->replace_app([g, chain](const kernels::App&) -> Result<std::shared_ptr<const kernels::App>> {
      return table(g, chain);
    });
    REQUIRE(r.is_ok());
    CHECK(r->generation == g);
    CHECK(r->old_freed);  // every lane, busy or idle, let go of the old tables
    REQUIRE(r->rx_at_swap.size() == 1);
    at[g] = r->rx_at_swap[0];
  }
  while (src.stats().rx_packets < at[kReloads + 1] + 5000) std::this_thread::yield();
  (*p)->request_stop();
  runner.join();
  INFO(s.to_text());
  CHECK(s.dropped == 0);
  CHECK(s.reorders == 0);
  CHECK(s.unaccounted == 0);
  CHECK(s.rx_packets == s.tx_packets);
  CHECK(src.stats().buffers_in_use == 0);
  const auto sent = sink.sent();
  REQUIRE(sent.size() == s.rx_packets);
  std::vector<uint8_t> seen(sent.size(), 0);
  std::vector<uint16_t> last_hop(kFlows, 0);
  uint64_t too_old = 0, went_back = 0, twice = 0, unknown = 0;
  for (const auto& x : sent) {
    if (x.number >= seen.size()) {
      ++unknown;
      continue;
    }
    twice += seen[x.number]++ != 0;
    // The newest generation swapped in before the packet was taken in: its table or a newer one routed it.
    uint32_t g = 1;
    while (g + 1 <= kReloads + 1 && at[g + 1] <= x.number) ++g;
    too_old += x.hop < g;
    const uint32_t flow = x.number % kFlows;
    went_back += x.hop < last_hop[flow];
    last_hop[flow] = x.hop;
  }
  CHECK(unknown == 0);
  CHECK(twice == 0);
  CHECK(too_old == 0);
  CHECK(went_back == 0);  // a flow's packets leave in order, so their tables never go back a generation
  CHECK(last_hop[0] == kReloads + 1);
  CHECK((*p)->app_version()->generation == kReloads + 1);
}

}  // namespace

TEST_CASE("100 route reloads on the in-place worker path: nothing lost or reordered, new routes from the next burst") {
  reload_while_forwarding(Mode::kInPlace);
}

TEST_CASE("100 route reloads with threaded native lanes: nothing lost or reordered, new routes from the next batch") {
  reload_while_forwarding(Mode::kThreaded);
}

TEST_CASE("100 route reloads with OpenCL lanes beside a native one: the devices get each table through the same swap") {
  reload_while_forwarding(Mode::kDevices);
}

TEST_CASE("100 route reloads of a chain (ipv4,md5) on OpenCL lanes: each app's kernel gets its new tables") {
  reload_while_forwarding(Mode::kDevicesChain);
}

TEST_CASE("a reload that cannot be built leaves the running app in place") {
  auto first = table(1);
  PipelineConfig pc = native_config(false);
  NumberedSource src;
  RecordingSink sink;
  auto p = Pipeline::create(pc, first, src, sink);
  REQUIRE(p.is_ok());
  Summary s;
  std::thread runner([&] { s = (*p)->run(); });
  auto r = (*p)->replace_app([](const kernels::App&) -> Result<std::shared_ptr<const kernels::App>> {
    return error(Code::kInvalidArgument, "routes.txt:3: bad prefix");
  });
  REQUIRE(!r.is_ok());
  CHECK(r.status().message() == "routes.txt:3: bad prefix");
  CHECK((*p)->app_version()->generation == 1);
  CHECK((*p)->app_version()->app == first);
  (*p)->request_stop();
  runner.join();
  CHECK(s.dropped == 0);
  // After the run: the dispatcher has ended, so a swap cannot happen and says why.
  auto late = (*p)->replace_app([](const kernels::App&) -> Result<std::shared_ptr<const kernels::App>> {
    return table(2);
  });
  REQUIRE(!late.is_ok());
  CHECK(late.status().message().find("stopping") != std::string::npos);
}

namespace {

// An app that says which thread destroyed it (the rest is the ipv4 app it wraps).
std::mutex g_freed_mu;
std::vector<std::pair<uint32_t, std::thread::id>> g_freed;  // (generation, thread)

class TrackedApp final : public kernels::App {
 public:
  TrackedApp(std::shared_ptr<const kernels::App> inner, uint32_t g) : in_(std::move(inner)), g_(g) {}
  ~TrackedApp() override {
    std::lock_guard<std::mutex> l(g_freed_mu);
    g_freed.emplace_back(g_, std::this_thread::get_id());
  }
  std::string_view name() const override { return in_->name(); }
  kernels::Slice slice(const Packet& p) const override { return in_->slice(p); }
  uint32_t max_slice_bytes() const override { return in_->max_slice_bytes(); }
  uint32_t result_bytes() const override { return in_->result_bytes(); }
  bool writes_back() const override { return in_->writes_back(); }
  std::string kernel_source() const override { return in_->kernel_source(); }
  std::string_view kernel_name() const override { return in_->kernel_name(); }
  Result<std::unique_ptr<kernels::DeviceTables>> make_device_tables(const cl::Context& c,
                                                                    const cl::CommandQueue& q) const override {
    return in_->make_device_tables(c, q);
  }
  void slices_in_place(std::span<const Packet> pkts, kernels::Desc* desc, uint8_t** slices) const override {
    in_->slices_in_place(pkts, desc, slices);
  }
  void run_native(const kernels::BatchView& b) const override { in_->run_native(b); }
  void finish(std::span<Packet> pkts, const kernels::BatchView& b) const override { in_->finish(pkts, b); }

 private:
  std::shared_ptr<const kernels::App> in_;
  uint32_t g_;
};

}  // namespace

TEST_CASE("the tables a reload replaces are freed by the reloading thread, never on the data path") {
  const bool in_place = GENERATE(true, false);
  INFO((in_place ? "in-place worker path" : "threaded lane"));
  {
    std::lock_guard<std::mutex> l(g_freed_mu);
    g_freed.clear();
  }
  PipelineConfig pc = native_config(in_place);
  NumberedSource src;
  RecordingSink sink;
  auto p = Pipeline::create(pc, std::make_shared<TrackedApp>(table(1), 1), src, sink);
  REQUIRE(p.is_ok());
  Summary s;
  std::thread runner([&] { s = (*p)->run(); });
  for (uint32_t g = 2; g <= 4; ++g) {
    while (src.stats().rx_packets < 1000 * g) std::this_thread::yield();
    auto r = (*p)->replace_app([g](const kernels::App&) -> Result<std::shared_ptr<const kernels::App>> {
      return std::shared_ptr<const kernels::App>(std::make_shared<TrackedApp>(table(g), g));
    });
    REQUIRE(r.is_ok());
    CHECK(r->old_freed);
  }
  (*p)->request_stop();
  runner.join();
  CHECK(s.dropped == 0);
  std::lock_guard<std::mutex> l(g_freed_mu);
  REQUIRE(g_freed.size() == 3);  // generations 1..3; 4 runs to the end
  for (const auto& [g, who] : g_freed) {
    INFO("generation " << g);
    CHECK(who == std::this_thread::get_id());
  }
}
