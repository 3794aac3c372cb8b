// Egress shaping by class in the daemon: [[shaper.class]] and [shaper.adaptive] parsing and checks,
// matching on DSCP and output port, and two classes shaped to their own rates with the books balanced.
#include <catch2/catch.hpp>
#include <fstream>
#include <nlohmann/json.hpp>

#include "tests/pipeline/pipeline_fixture.hpp"
#include "tests/runtime/test_frames.hpp"

using namespace hpr;
using namespace hpr::test;

namespace {

constexpr uint32_t kTen = 0x0a000002, kPort3 = 0xc0a80101;  // 10.0.0.2 → port 2, 192.168.1.1 → port 3

std::vector<uint8_t> v4(uint8_t dscp, uint32_t dst, uint16_t payload = 60, uint16_t sport = 1000) {
  auto f = ipv4_frame(17, payload, 64, 0x0a000001, dst, sport);
  f[15] = static_cast<uint8_t>(dscp << 2);  // TOS: DSCP in the upper 6 bits
  fix_ipv4_checksum(f);
  return f;
}

std::vector<uint8_t> v6(uint8_t dscp, uint16_t payload = 60) {
  std::vector<uint8_t> f(14 + 40 + 8 + payload, 0);
  f[12] = 0x86;
  f[13] = 0xdd;
  uint8_t* ip = f.data() + 14;
  const uint8_t tc = static_cast<uint8_t>(dscp << 2);
  ip[0] = static_cast<uint8_t>(0x60 | (tc >> 4));
  ip[1] = static_cast<uint8_t>((tc & 0x0f) << 4);
  ip[4] = static_cast<uint8_t>((8 + payload) >> 8);
  ip[5] = static_cast<uint8_t>(8 + payload);
  ip[6] = 17;
  ip[7] = 64;
  ip[23] = 1;  // 2001:db8::1 → 2001:db8::2
  ip[39] = 2;
  for (int a : {8, 24}) {
    ip[a] = 0x20;
    ip[a + 1] = 0x01;
    ip[a + 2] = 0x0d;
    ip[a + 3] = 0xb8;
  }
  uint8_t* u = ip + 40;
  u[0] = 0x04;
  u[2] = 0x00;
  u[3] = 0x35;
  u[4] = static_cast<uint8_t>((8 + payload) >> 8);
  u[5] = static_cast<uint8_t>(8 + payload);
  return f;
}

std::string write_capture(const std::string& name, const std::vector<std::vector<uint8_t>>& frames) {
  std::string p = tmp_path(name);
  auto w = PcapWriter::open(p);
  REQUIRE(w.is_ok());
  uint64_t ts = 1'000'000'000;
  for (const auto& f : frames) w->write(ts += 1000, f);
  REQUIRE(w->finish().is_ok());
  return p;
}

std::string write_toml(const std::string& text) {
  std::string p = tmp_path("shaper.toml");
  std::ofstream(p) << text;
  return p;
}

// The error message of loading (then validating) a configuration, or "" when it is accepted.
std::string config_error(const std::string& text) {
  auto r = load_run_config(write_toml(text));
  if (!r) return r.status().message();
  Status v = validate(*r);
  return v.is_ok() ? "" : v.message();
}

const Summary::ShaperClass& cls(const Summary& s, const std::string& name) {
  for (const auto& c : s.shaper_classes)
    if (c.name == name) return c;
  FAIL("no class " << name);
  return s.shaper_classes.front();
}

uint64_t drops_of(const Summary& s, const std::string& reason) {
  for (const auto& [r, n] : s.drops)
    if (r == reason) return n;
  return 0;
}

// Buckets must hold the largest frame: these 4096-byte ones go with ports.max_frame = 4096.
constexpr const char* kTwoClasses = R"(
[ports]
max_frame = 4096

[shaper]
enabled = true
by = "class"
queue_packets = 16

[[shaper.class]]
name = "voice"
dscp = [46, 34]
rate_bps = 4e6
burst_bytes = 4096

[[shaper.class]]
name = "to-lan"
out_port = 3
service = ["gw", "dns"]
rate_bps = 1000000
burst_bytes = 8192
alpha_bytes = 1024

[[shaper.class]]
name = "rest"
rate_bps = 2e6
burst_bytes = 4096

[shaper.adaptive]
enabled = true
gamma = 1.5
delta_th = 2
period_s = 0.5
)";

}  // namespace

TEST_CASE("[[shaper.class]] and [shaper.adaptive] are read from the configuration file") {
  auto r = load_run_config(write_toml(kTwoClasses));
  REQUIRE(r.is_ok());
  CHECK(validate(*r).is_ok());
  const ShapingConfig& sc = r->shaping;
  CHECK(sc.enabled);
  CHECK(sc.by == ShapeBy::kClass);
  CHECK(sc.queue_packets == 16);
  REQUIRE(sc.classes.size() == 3);
  CHECK(sc.classes[0].name == "voice");
  CHECK(sc.classes[0].dscp == std::vector<uint8_t>{46, 34});
  CHECK(sc.classes[0].ports.empty());
  CHECK(sc.classes[0].rate_bytes_per_s == 500'000);
  CHECK(sc.classes[0].burst_bytes == 4096);
  CHECK(sc.classes[0].alpha_bytes == 0);
  CHECK(sc.classes[1].ports == std::vector<uint16_t>{3});
  CHECK(sc.classes[1].dscp.empty());
  CHECK(sc.classes[1].services == std::vector<std::string>{"gw", "dns"});
  CHECK(sc.classes[0].services.empty());
  CHECK(sc.classes[1].rate_bytes_per_s == 125'000);
  CHECK(sc.classes[1].alpha_bytes == 1024);
  CHECK(sc.classes[2].name == "rest");
  CHECK(sc.adaptive.enabled);
  CHECK(sc.adaptive.gamma == 1.5);
  CHECK(sc.adaptive.delta_th == 2);
  CHECK(sc.adaptive.period_ns == 500'000'000);
  // Adaptive alpha is off by default; the old per-flow keys still work.
  auto flow = load_run_config(
      write_toml("[ports]\nmax_frame = 4096\n[shaper]\nenabled = true\nrate_bps = 8e6\nburst_bytes = 4096\n"));
  REQUIRE(flow.is_ok());
  CHECK(validate(*flow).is_ok());
  CHECK(flow->shaping.by == ShapeBy::kFlow);
  CHECK(flow->shaping.rate_bytes_per_s == 1'000'000);
  CHECK_FALSE(flow->shaping.adaptive.enabled);
  auto port = load_run_config(write_toml("[shaper]\nby = \"port\"\n"));
  REQUIRE(port.is_ok());
  CHECK(port->shaping.by == ShapeBy::kPort);
}

TEST_CASE("config/hpr.toml loads, and its commented class example is valid when switched on") {
  std::ifstream in(std::string(HPR_SOURCE_DIR) + "/config/hpr.toml");
  REQUIRE(in.good());
  std::string text, line;
  bool example = false;
  while (std::getline(in, line)) {
    if (line.rfind("# [[shaper.class]]", 0) == 0) example = true;
    if (line.rfind("[shaper.adaptive]", 0) == 0) example = false;
    if (example && line.rfind("# ", 0) == 0) line = line.substr(2);
    if (line.rfind("enabled = false", 0) == 0) line = "enabled = true";
    if (line.rfind("by = \"flow\"", 0) == 0) line = "by = \"class\"";
    text += line + "\n";
  }
  auto r = load_run_config(write_toml(text));
  REQUIRE(r.is_ok());
  CHECK(validate(*r).is_ok());
  CHECK(r->shaping.enabled);
  CHECK(r->shaping.adaptive.enabled);
  REQUIRE(r->shaping.classes.size() == 3);
  CHECK(r->shaping.classes[1].ports == std::vector<uint16_t>{1});
  CHECK(r->shaping.classes[2].name == "default");
}

TEST_CASE("bad shaper classes: the error names the setting") {
  const std::string ports = "[ports]\nmax_frame = 4096\n";  // the 4096-byte buckets below hold the largest frame
  const std::string head = ports + "[shaper]\nenabled = true\nby = \"class\"\n";
  const std::string ok = "[[shaper.class]]\nname = \"a\"\ndscp = 46\nrate_bps = 1e6\nburst_bytes = 4096\n";
  struct Case {
    const char* what;
    std::string toml;
    const char* expect;
  };
  const Case cases[] = {
      {"a rate of 0", head + ok + "[[shaper.class]]\nname = \"b\"\nrate_bps = 0\nburst_bytes = 4096\n",
       "shaper.class[1].rate_bps must be > 0"},
      {"no rate", head + "[[shaper.class]]\nname = \"a\"\nburst_bytes = 4096\n",
       "shaper.class[0].rate_bps must be > 0"},
      {"a negative rate", head + "[[shaper.class]]\nname = \"a\"\nrate_bps = -5\n", "shaper.class[0].rate_bps = -5"},
      {"a burst below the largest frame", head + "[[shaper.class]]\nname = \"a\"\nrate_bps = 1e6\nburst_bytes = 1500\n",
       "shaper.class[0].burst_bytes: 1500 is below the largest frame"},
      {"alpha above the burst",
       head + "[[shaper.class]]\nname = \"a\"\nrate_bps = 1e6\nburst_bytes = 4096\nalpha_bytes = 5000\n",
       "shaper.class[0].alpha_bytes: 5000 is above its burst_bytes"},
      {"a DSCP of 64", head + "[[shaper.class]]\nname = \"a\"\ndscp = [46, 64]\nrate_bps = 1e6\nburst_bytes = 4096\n",
       "shaper.class[0].dscp must be an integer 0..63"},
      {"a DSCP as text", head + "[[shaper.class]]\nname = \"a\"\ndscp = \"EF\"\nrate_bps = 1e6\nburst_bytes = 4096\n",
       "shaper.class[0].dscp must be an integer 0..63"},
      {"an output port of 70000",
       head + "[[shaper.class]]\nname = \"a\"\nout_port = 70000\nrate_bps = 1e6\nburst_bytes = 4096\n",
       "shaper.class[0].out_port must be an integer 0..65535"},
      {"a service as a number",
       head + "[[shaper.class]]\nname = \"a\"\nservice = 3\nrate_bps = 1e6\nburst_bytes = 4096\n",
       "shaper.class[0].service must be a name or a list of names"},
      {"a misspelt key", head + "[[shaper.class]]\nname = \"a\"\ndcsp = 46\nrate_bps = 1e6\nburst_bytes = 4096\n",
       "shaper.class[0]: unknown key 'dcsp'"},
      {"no name", head + "[[shaper.class]]\ndscp = 46\nrate_bps = 1e6\nburst_bytes = 4096\n", "shaper.class[0].name"},
      {"a name used twice", head + ok + ok, "shaper.class[1].name: 'a' is used twice"},
      {"a catch-all class before others",
       head + "[[shaper.class]]\nname = \"all\"\nrate_bps = 1e6\nburst_bytes = 4096\n" + ok,
       "shaper.class[0] ('all') has no dscp, out_port or service"},
      {"by class without classes", head, "shaper.by = \"class\" needs at least one [[shaper.class]]"},
      {"classes with by flow",
       ports + "[shaper]\nenabled = true\nby = \"flow\"\nrate_bps = 1e6\nburst_bytes = 4096\n" + ok,
       "classes are used only with shaper.by = \"class\""},
      {"class not a list of tables", head + "class = 3\n", "shaper.class must be a list of tables"},
      {"an unknown mode", "[shaper]\nby = \"dscp\"\n", "shaper.by must be flow, port or class, not 'dscp'"},
      {"a misspelt [shaper] key", "[shaper]\nburst = 4096\n", "shaper: unknown key 'burst'"},
      {"gamma of 1", head + ok + "[shaper.adaptive]\nenabled = true\ngamma = 1.0\n",
       "shaper.adaptive.gamma: 1 must be in (1, 1000]"},
      {"delta_th above 254", head + ok + "[shaper.adaptive]\nenabled = true\ndelta_th = 300\n",
       "shaper.adaptive.delta_th"},
      {"a sampling period of 0", head + ok + "[shaper.adaptive]\nenabled = true\nperiod_s = 0\n",
       "shaper.adaptive.period_s"},
      {"a misspelt adaptive key", head + ok + "[shaper.adaptive]\nalpha_min = 3000\n",
       "shaper.adaptive: unknown key 'alpha_min'"},
  };
  for (const auto& c : cases) {
    DYNAMIC_SECTION(c.what) {
      std::string e = config_error(c.toml);
      INFO(e);
      CHECK(e.find(c.expect) != std::string::npos);
    }
  }
  CHECK(config_error(head + ok) == "");
}

TEST_CASE(
    "classes match on DSCP (IPv4 and IPv6) and output port; the first match wins; a catch-all last is the default") {
  std::vector<std::vector<uint8_t>> frames;
  for (int i = 0; i < 20; ++i) {
    frames.push_back(v4(46, kTen));    // voice (EF)
    frames.push_back(v6(46));          // voice (EF over IPv6)
    frames.push_back(v4(10, kPort3));  // to-lan (AF11 routed to port 3)
    frames.push_back(v4(46, kPort3));  // voice: listed first
    frames.push_back(v4(0, kTen));     // best effort to port 2: no class
    std::vector<uint8_t> arp(60, 0);   // not IP: no DSCP, port 0: no class
    arp[12] = 0x08;
    arp[13] = 0x06;
    frames.push_back(arp);
  }
  RunConfig c = base_config();
  c.input = {.kind = "pcap", .pcap = write_capture("classes.pcap", frames)};
  c.output = {.kind = "null"};
  c.devices = {"none"};
  c.shaping.enabled = true;
  c.shaping.by = ShapeBy::kClass;
  c.shaping.classes = {{.name = "voice", .dscp = {46}, .rate_bytes_per_s = 100'000'000, .burst_bytes = 65536},
                       {.name = "to-lan", .ports = {3}, .rate_bytes_per_s = 100'000'000, .burst_bytes = 65536}};
  SECTION("packets of no class leave unshaped") {
    Summary s = run_to_end(c);
    check_books(s);
    CHECK(s.tx_packets == frames.size());
    REQUIRE(s.shaper_classes.size() == 2);
    CHECK(cls(s, "voice").packets == 60);
    CHECK(cls(s, "to-lan").packets == 20);
    CHECK(s.shaper_unclassified == 40);
    CHECK(s.shaped_queues == 2);
  }
  SECTION("a class with no match listed last takes the rest") {
    c.shaping.classes.push_back({.name = "default", .rate_bytes_per_s = 100'000'000, .burst_bytes = 65536});
    Summary s = run_to_end(c);
    check_books(s);
    CHECK(cls(s, "voice").packets == 60);
    CHECK(cls(s, "to-lan").packets == 20);
    CHECK(cls(s, "default").packets == 40);
    CHECK(s.shaper_unclassified == 0);
    uint64_t bytes = 0;
    for (const auto& k : s.shaper_classes) bytes += k.bytes;
    CHECK(bytes == s.tx_bytes);
  }
  SECTION("the JSON summary carries the classes and the shaper gauges") {
    Summary s = run_to_end(c);
    auto j = nlohmann::json::parse(s.to_json());
    REQUIRE(j.contains("shaper"));
    for (const char* k : {"queues", "throttled", "heap", "heap_high_water", "waiting", "reschedules", "delayed_packets",
                          "unclassified"})
      CHECK(j["shaper"].contains(k));
    REQUIRE(j["shaper"]["classes"].size() == 2);
    CHECK(j["shaper"]["classes"][0]["name"] == "voice");
    CHECK(j["shaper"]["classes"][0]["packets"] == 60);
    CHECK(j["shaper"]["classes"][0]["rate_bps"] == 800'000'000);
  }
}

// Two classes offered far more than their rates (a capture read in a loop for a second): each sends at
// most burst + rate x time (the shaper's conformance bound, exact), both are saturated (their queues
// overflow), and their output is in the ratio of their rates within generous bounds; the books
// balance with what overflowed counted as shaper_queue_full and what still waited at the stop as
// shaper_drain. With [shaper.adaptive], alpha of a saturated class grows above its alpha_min.
TEST_CASE("two classes shaped to 4 and 1 Mbit/s get output in that ratio; books balance") {
  std::vector<std::vector<uint8_t>> frames;
  for (int i = 0; i < 40; ++i) {
    frames.push_back(v4(46, kTen, 958, static_cast<uint16_t>(1000 + i % 4)));  // 1000-byte frames
    frames.push_back(v4(10, kTen, 958, static_cast<uint16_t>(2000 + i % 4)));
  }
  for (int i = 0; i < 10; ++i) frames.push_back(v4(0, kTen, 958, 3000));  // no class: unshaped
  RunConfig c = base_config();
  c.input = {.kind = "pcap", .pcap = write_capture("ratio.pcap", frames), .loops = 0};
  c.output = {.kind = "null"};
  c.devices = {"none"};
  c.duration_s = 1.0;
  c.shaping.enabled = true;
  c.shaping.by = ShapeBy::kClass;
  c.shaping.queue_packets = 8;
  c.shaping.drain_timeout_ns = 0;
  const uint64_t gold_rate = 500'000, bronze_rate = 125'000;  // 4 and 1 Mbit/s
  const uint32_t burst = 4096;
  c.max_frame = burst;  // buckets hold the largest frame
  c.shaping.classes = {
      {.name = "gold", .dscp = {46}, .rate_bytes_per_s = gold_rate, .burst_bytes = burst, .alpha_bytes = 1024},
      {.name = "bronze", .dscp = {10}, .rate_bytes_per_s = bronze_rate, .burst_bytes = burst, .alpha_bytes = 1024}};
  const bool adaptive = GENERATE(false, true);
  // Sampling periods of 200 ms: alpha falls by gamma for each period without a reschedule, so with 20 ms periods an
  // egress thread held off the core for 20 ms (a loaded CI machine) undid the growth by the end of the run.
  c.shaping.adaptive = {.enabled = adaptive, .gamma = 2, .delta_th = 0, .period_ns = 200'000'000};
  INFO("adaptive " << adaptive);
  Summary s = run_to_end(c);
  check_books(s);
  INFO(s.to_text());
  const auto& gold = cls(s, "gold");
  const auto& bronze = cls(s, "bronze");
  CHECK(gold.bytes <= burst + gold_rate * s.seconds);
  CHECK(bronze.bytes <= burst + bronze_rate * s.seconds);
  CHECK(gold.dropped > 0);  // saturated: the queue overflowed
  CHECK(bronze.dropped > 0);
  CHECK(gold.packets + bronze.packets + s.shaper_unclassified == s.tx_packets);
  CHECK(drops_of(s, "shaper_queue_full") == gold.dropped + bronze.dropped);
  CHECK(bronze.bytes >= 2 * burst);
  const double ratio = static_cast<double>(gold.bytes) / static_cast<double>(bronze.bytes);
  CHECK(ratio > 2.5);  // rates 4:1; the equal bursts pull it towards 1 on a short or stalled run
  CHECK(ratio < 5.0);
  CHECK(s.shaper_reschedules > 0);
  if (adaptive) {
    CHECK(gold.alpha_bytes > 1024);
  } else {
    CHECK(gold.alpha_bytes == 1024);
    CHECK(bronze.alpha_bytes == 1024);
  }
}
