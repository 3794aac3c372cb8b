// Services ([[service]]): each packet to the first service it matches, through that service's chain; the output
// equals each service's chain run on its packets by the native reference; unmatched packets without a default service
// are counted as no_service; the generator's four Holt-Winters services carry four chains; bad entries are refused
// naming service[N].
#include <catch2/catch.hpp>

#include <algorithm>
#include <fstream>
#include <thread>

#include "kernels/registry.hpp"
#include "pipeline/run_config.hpp"
#include "tests/pipeline/pipeline_fixture.hpp"

using namespace hpr;
using namespace hpr::test;

namespace {

kernels::AppOptions::ServiceSpec spec(const std::string& name, const std::string& chain,
                                      const std::function<void(kernels::ServiceMatch&)>& m = {}) {
  kernels::AppOptions::ServiceSpec s{name, chain, {}};
  if (m) m(s.match);
  return s;
}

uint64_t events_of(const Summary& s, const std::string& label) {
  for (const auto& e : s.chain_events)
    if (e.app == label) return e.count;
  FAIL("no events of " << label << " in the summary");
  return 0;
}

uint64_t drops_of(const Summary& s, const std::string& reason) {
  for (const auto& [r, n] : s.drops)
    if (r == reason) return n;
  return 0;
}

// Each service's books (Summary::services) against its apps' books: what its first app was given either left for the
// output or was dropped by the chain, what its last app passed on went out, and every packet out has a latency.
void check_service_books(const Summary& s, const std::vector<std::pair<std::string, std::pair<size_t, size_t>>>& apps) {
  REQUIRE(s.services.size() == apps.size());
  uint64_t out = 0;
  for (size_t i = 0; i < apps.size(); ++i) {
    const Summary::ServiceBook& b = s.services[i];
    const auto& [first, last] = apps[i].second;
    INFO("service " << apps[i].first);
    CHECK(b.name == apps[i].first);
    CHECK(b.lost == 0);
    CHECK(b.out + b.dropped == s.chain_events[first].in);
    CHECK(b.out == s.chain_events[last].passed);
    uint64_t timed = 0;
    for (uint64_t c : b.latency_buckets) timed += c;
    CHECK(timed == b.out);
    CHECK((b.out == 0 || b.latency_p99_ns >= b.latency_p50_ns));
    out += b.out;
  }
  CHECK(out == s.tx_packets);
  const std::string text = s.to_text();
  CHECK(text.find("services    what each chain passed") != std::string::npos);
  // Each service once, with its chain, in the services block (not also as a "service NAME" line above it).
  for (const auto& [name, span] : apps) {
    CHECK(text.find("  service " + name) == std::string::npos);
    CHECK(text.find("    " + name) != std::string::npos);
  }
  CHECK(s.to_json().find("\"services\"") != std::string::npos);
}

Result<RunConfig> config_from(const std::string& toml) {
  const std::string path = tmp_path("services.toml");
  std::ofstream(path) << toml;
  return load_run_config(path);
}

}  // namespace

TEST_CASE("services: each packet through its service's chain, equal to the reference, on devices and native lanes") {
  // devices: both PoCL devices (every service's apps in turn, each on its service's packets) beside the in-place
  // native lane; devices only: the PoCL devices alone; lane threads: two native lanes on their own threads.
  enum Where { kDevices, kDevicesOnly, kLaneThreads };
  for (const char* cap : {"pcap/ndpi/1kxun.pcap", "pcap/ndpi/skype.pcap", "pcap/ndpi/webex.pcap"})
    for (Where where : {kDevices, kDevicesOnly, kLaneThreads}) {
      DYNAMIC_SECTION(cap << " " << where) {
        Summary s = check_against_reference("services", data_path(cap), [&](RunConfig& c) {
          c.app = "ipv4";  // not used with services (the name is for the log and temp files here)
          c.app_opts.services = {spec("gw", "ipv4,aes", [](auto& m) { m.proto = 6; }),
                                 spec("dns", "ipv4,dpi", [](auto& m) { m.port = 53; }),
                                 spec("rest", "md5")};
          if (where == kDevicesOnly) {
            c.native_lanes = 0;
            c.kinds = {{"basic", DeviceKind::kDiscreteGpu}};  // the copied path (pinned staging)
          }
          if (where != kLaneThreads) return;
          c.run_to_completion = false;
          c.devices.clear();
          c.native_lanes = 2;
        });
        uint64_t on_devices = 0, device_lanes = 0;
        for (const auto& l : s.lanes) {
          if (l.name.find("native") != std::string::npos) continue;
          ++device_lanes;
          on_devices += l.packets;
          CHECK_THAT(l.executor, Catch::Contains("5 kernels on one gathered batch"));
        }
        CHECK(device_lanes == (where == kLaneThreads ? 0 : 2));
        if (where == kDevicesOnly) CHECK(on_devices > 0);
        REQUIRE(s.chain_events.size() == 5);
        CHECK(s.chain_events[0].app == "gw:ipv4");
        CHECK(s.chain_events[1].app == "gw:aes");
        CHECK(s.chain_events[3].app == "dns:dpi");
        CHECK(s.chain_events[4].app == "rest:md5");
        CHECK(events_of(s, "gw:ipv4") + events_of(s, "dns:ipv4") + events_of(s, "rest:md5") > 0);
        CHECK(drops_of(s, "no_service") == 0);  // a default service takes the rest
        check_service_books(s, {{"gw", {0, 1}}, {"dns", {2, 3}}, {"rest", {4, 4}}});
      }
    }
}

TEST_CASE("services without a default: what matches none is dropped as no_service, counted") {
  const std::string cap = data_path("pcap/ndpi/skype.pcap");
  Summary s = check_against_reference("services", cap, [](RunConfig& c) {
    c.app = "ipv4";
    c.app_opts.services = {spec("udp", "md5", [](auto& m) { m.proto = 17; }),
                           spec("private", "ipv4", [](auto& m) { m.dst = 0xc0a80000; m.dst_len = 16; }),
                           spec("ef", "dpi", [](auto& m) { m.dscp = 46; })};
  });
  CHECK(drops_of(s, "no_service") > 0);
  CHECK(events_of(s, "udp:md5") > 0);
  // Per service books: every packet that reached the lanes went to one service (one app each here), or was no_service.
  uint64_t lanes = 0, in = 0;
  for (const auto& l : s.lanes) lanes += l.packets;
  for (const auto& e : s.chain_events) in += e.in;
  CHECK(in + drops_of(s, "no_service") == lanes);
  check_service_books(s, {{"udp", {0, 0}}, {"private", {1, 1}}, {"ef", {2, 2}}});
}

TEST_CASE("the generator's four Holt-Winters services carry four chains") {
  RunConfig c = base_config();
  c.app_opts.master_key = "000102030405060708090a0b0c0d0e0f";
  c.input = {.kind = "generator", .gen_packets = 0, .gen_flows = 400, .gen_sizes = "imix", .gen_seed = 7,
             .gen_rate_model = "laps-set1", .gen_rate_scale = 0.01};
  c.app_opts.services = {spec("s0", "ipv4,aes", [](auto& m) { m.gen_service = 0; }),
                         spec("s1", "ipv4,dpi", [](auto& m) { m.gen_service = 1; }),
                         spec("s2", "dpi,md5", [](auto& m) { m.gen_service = 2; }),
                         spec("s3", "md5", [](auto& m) { m.gen_service = 3; })};
  c.devices = {"none"};
  c.duration_s = 1;
  Summary s = run_to_end(c);
  check_books(s);
  CHECK(drops_of(s, "no_service") == 0);
  for (const char* label : {"s0:ipv4", "s1:ipv4", "s3:md5"}) CHECK(events_of(s, label) > 0);
  CHECK(events_of(s, "s2:md5") > 0);
}

const LaneSummary& lane_named(const Summary& s, const std::string& part) {
  for (const auto& l : s.lanes)
    if (l.name.find(part) != std::string::npos) return l;
  FAIL("no lane named *" << part << "* in the summary");
  return s.lanes.front();
}

TEST_CASE("placement per service: each service's flows run on its own lanes only, equal to the reference") {
  // Both PoCL devices and a native lane, run to completion (so that where the weights give every flow to one lane, the
  // in-place worker path would run them all there). Default weights: gw on pthread, dns on basic or native, the rest
  // native. Native only (the devices weigh 0, as a learner that settled on the native lane leaves them): gw on both
  // devices, evenly; dns on basic or native, so native; the rest native.
  enum Weights { kDefault, kNativeOnly };
  for (Weights w : {kDefault, kNativeOnly}) {
    DYNAMIC_SECTION("weights " << w) {
      Summary s = check_against_reference("services", data_path("pcap/ndpi/1kxun.pcap"), [&](RunConfig& c) {
        c.app = "ipv4";
        c.app_opts.services = {spec("gw", "ipv4,aes", [](auto& m) { m.proto = 6; }),
                               spec("dns", "ipv4,dpi", [](auto& m) { m.port = 53; }), spec("rest", "md5")};
        c.service_lanes = {{w == kDefault ? "pthread" : "cl"}, {"basic", "native"}, {"native"}};
        c.run_to_completion = true;
        c.run_to_completion_given = true;
        if (w == kNativeOnly) c.lane_weights = {{"cl", 0.0}};
      });
      REQUIRE(s.chain_events.size() == 5);
      const uint64_t gw = s.chain_events[0].in, dns = s.chain_events[2].in, rest = s.chain_events[4].in;
      const LaneSummary& pthread = lane_named(s, "pthread");
      const LaneSummary& basic = lane_named(s, "basic");
      const LaneSummary& native = lane_named(s, "native");
      INFO(s.to_text());
      CHECK(gw > 0);
      CHECK(dns > 0);
      CHECK(pthread.packets + basic.packets + native.packets == gw + dns + rest);
      // The summary says where each service was placed.
      REQUIRE(s.services.size() == 3);
      std::vector<std::string> gw_on = s.services[0].lanes, want{pthread.name};
      if (w == kNativeOnly) want.push_back(basic.name);
      std::sort(gw_on.begin(), gw_on.end());
      std::sort(want.begin(), want.end());
      CHECK(gw_on == want);
      CHECK(s.services[2].lanes == std::vector<std::string>{native.name});
      CHECK_THAT(s.to_text(), Catch::Contains("; placed on " + native.name + "\n"));
      CHECK_THAT(s.to_json(), Catch::Contains("\"lanes\""));
      if (w == kDefault) {
        CHECK(pthread.packets == gw);
        CHECK(basic.packets <= dns);
      } else {
        CHECK(pthread.packets + basic.packets == gw);
        CHECK(pthread.packets > 0);
        CHECK(basic.packets > 0);
        CHECK(native.packets == dns + rest);
      }
      check_service_books(s, {{"gw", {0, 1}}, {"dns", {2, 3}}, {"rest", {4, 4}}});
    }
  }
}

TEST_CASE("placement per service: when a service's only lane fails, its flows go on elsewhere, nothing lost") {
  Summary s = check_against_reference("services", data_path("pcap/ndpi/skype.pcap"), [](RunConfig& c) {
    c.app = "ipv4";
    c.app_opts.services = {spec("udp", "md5", [](auto& m) { m.proto = 17; }), spec("rest", "ipv4")};
    c.service_lanes = {{"native1"}, {"native0"}};
    c.devices.clear();
    c.native_lanes = 2;
    c.run_to_completion = false;
    c.run_to_completion_given = true;
    c.fail_after = {{"native1", 3}};
  });
  CHECK(s.lane_failures == 1);
  CHECK(lane_named(s, "native1").packets > 0);
  CHECK(lane_named(s, "native0").packets > s.chain_events[1].in);  // the rest's, and udp's after the failure
}

TEST_CASE(
    "placement by the learner (Pipeline::set_service_lanes): a service's flows on one lane, moved while running") {
  // Two native lane threads (packets in flight between the dispatcher and the lanes while a service moves).
  auto tweak = [](RunConfig& c) {
    c.app = "ipv4";
    c.app_opts.services = {spec("udp", "md5", [](auto& m) { m.proto = 17; }), spec("rest", "ipv4")};
    c.devices.clear();
    c.native_lanes = 2;
    c.run_to_completion = false;
    c.run_to_completion_given = true;
  };
  SECTION("placed before the first packet: each lane runs exactly its service's packets") {
    RunHooks h{.before = [](Pipeline& p) {
      CHECK(p.placeable_services() == std::vector<bool>{true, true});
      REQUIRE(p.set_service_lanes({1, 0}).is_ok());
    }};
    Summary s = check_against_reference("services", data_path("pcap/ndpi/skype.pcap"), tweak, h);
    CHECK(s.chain_events[0].in > 0);
    CHECK(lane_named(s, "native1").packets == s.chain_events[0].in);
    CHECK(lane_named(s, "native0").packets == s.chain_events[1].in);
    CHECK(s.services[0].lanes == std::vector<std::string>{lane_named(s, "native1").name});
  }
  SECTION("moved back and forth while running: equal to the reference, nothing lost or reordered") {
    // A new placement each time another 64 packets came in (how many moves a run gets depends on the threads'
    // turns: nothing here counts on one).
    size_t moves = 0;
    RunHooks h{.during = [&](Pipeline& p, const std::atomic<bool>& done) {
      const std::vector<std::vector<int16_t>> places{{1, 0}, {0, 1}, {-1, -1}, {0, -1}};
      for (uint64_t seen = 0; !done;) {
        const uint64_t rx = p.snapshot().rx_packets;
        if (rx < seen + 64) {
          std::this_thread::yield();
          continue;
        }
        seen = rx;
        REQUIRE(p.set_service_lanes(places[moves++ % places.size()]).is_ok());
      }
    }};
    Summary s = check_against_reference("services", data_path("pcap/ndpi/1kxun.pcap"), tweak, h);
    INFO(moves << " placements while running");
    CHECK(s.reorders == 0);
    check_service_books(s, {{"udp", {0, 0}}, {"rest", {1, 1}}});
  }
  SECTION("bad placements are refused, naming the service") {
    RunConfig c = pcap_config("ipv4", data_path("pcap/ndpi/skype.pcap"), tmp_path("services_bad_out.pcap"));
    tweak(c);
    c.service_lanes = {{}, {"native0"}};
    auto ctx = prepare_run(c);
    REQUIRE(ctx.is_ok());
    Pipeline& p = *(*ctx)->pipeline;
    CHECK(p.placeable_services() == std::vector<bool>{true, false});
    CHECK_THAT(p.set_service_lanes({2}).message(), Catch::Contains("service[0]"));
    CHECK_THAT(p.set_service_lanes({-1, 0}).message(), Catch::Contains("service[1].lanes"));
    CHECK(p.set_service_lanes({1, -1}).is_ok());
  }
}

TEST_CASE("placement per service with two workers: each worker places its services on its own lanes of the name") {
  if (cores_here().size() < 2) return;
  Summary s = check_against_reference("services", data_path("pcap/ndpi/skype.pcap"), [](RunConfig& c) {
    c.app = "ipv4";
    c.app_opts.services = {spec("udp", "md5", [](auto& m) { m.proto = 17; }), spec("rest", "ipv4")};
    c.service_lanes = {{"pthread"}, {"native"}};
    c.workers = 2;
    c.devices = {"all"};
    c.native_lanes = 1;
  });
  uint64_t pthread = 0, basic = 0, native = 0;
  for (const auto& l : s.lanes) {
    INFO(l.name);
    CHECK((l.name.starts_with("w0:") || l.name.starts_with("w1:")));
    (l.name.find("pthread") != std::string::npos ? pthread : l.name.find("basic") != std::string::npos ? basic : native) +=
        l.packets;
  }
  CHECK(s.chain_events[0].in > 0);
  CHECK(pthread == s.chain_events[0].in);  // udp:md5, on both workers' pthread lanes
  CHECK(basic == 0);
  CHECK(native == s.chain_events[1].in);
}

TEST_CASE("[[service]] entries read from the config file; bad ones refused naming service[N]") {
  auto ok = config_from(R"(
[[service]]
name = "gw"
chain = "ipv4,aes"
proto = "tcp"
dst = "10.0.0.0/8"
port = 443
dscp = 46
[[service]]
name = "other"
chain = "ip"
)");
  REQUIRE(ok.is_ok());
  REQUIRE(ok->app_opts.services.size() == 2);
  const auto& m = ok->app_opts.services[0].match;
  CHECK(*m.proto == 6);
  CHECK(*m.dst == 0x0a000000);
  CHECK(m.dst_len == 8);
  CHECK(*m.port == 443);
  CHECK(*m.dscp == 46);
  CHECK(ok->app_opts.services[1].chain == "ip");
  CHECK(ok->service_lanes == std::vector<std::vector<std::string>>{{}, {}});
  auto placed = config_from("[[service]]\nname = \"a\"\nchain = \"md5\"\nproto = 6\nlanes = [\"pthread\", \"native\"]\n"
                            "[[service]]\nname = \"b\"\nchain = \"dpi\"\n");
  REQUIRE(placed.is_ok());
  CHECK(placed->service_lanes == std::vector<std::vector<std::string>>{{"pthread", "native"}, {}});
  auto refused = [](const std::string& toml, const std::string& what) {
    auto r = config_from(toml);
    REQUIRE_FALSE(r.is_ok());
    INFO(r.status().message());
    CHECK(r.status().message().find(what) != std::string::npos);
  };
  refused("[[service]]\nchain = \"ipv4\"\n", "service[0].name: missing");
  refused("[[service]]\nname = \"a\"\n", "service[0].chain: missing");
  refused("[[service]]\nname = \"a\"\nchain = \"ipv4,nat\"\n", "service[0].chain (a): unknown app 'nat'");
  refused("[[service]]\nname = \"a\"\nchain = \"\"\n", "service[0].chain: want a non-empty string");
  refused("[[service]]\nname = \"a\"\nchain = \"md5\"\ndst = \"10.0.0.1/8\"\n", "service[0].dst: want a prefix without host bits");
  refused("[[service]]\nname = \"a\"\nchain = \"md5\"\ndst = \"10.0.0.0/33\"\n", "service[0].dst");
  refused("[[service]]\nname = \"a\"\nchain = \"md5\"\ndscp = 64\n", "service[0].dscp: want an integer in 0..63");
  refused("[[service]]\nname = \"a\"\nchain = \"md5\"\nproto = \"tcpp\"\n", "service[0].proto");
  refused("[[service]]\nname = \"a\"\nchain = \"md5\"\nports = 1\n", "service[0]: unknown key 'ports'");
  refused("[[service]]\nname = \"a\"\nchain = \"md5\"\n[[service]]\nname = \"a\"\nchain = \"dpi\"\n",
          "service[1].name: want a name of its own");
  refused("[service]\nname = \"a\"\n", "service must be a list of tables");
  refused("[[service]]\nname = \"a\"\nchain = \"md5\"\nlanes = \"native\"\n", "service[0].lanes: want a list of lane names");
  refused("[[service]]\nname = \"a\"\nchain = \"md5\"\nlanes = []\n", "service[0].lanes: want a list of lane names");
  refused("[[service]]\nname = \"a\"\nchain = \"md5\"\nlanes = [\"\"]\n", "service[0].lanes: want a list of lane names");
}

TEST_CASE("services: what cannot run is refused at start, naming service[N], nothing started") {
  RunConfig c = base_config();
  c.app_opts.master_key = "000102030405060708090a0b0c0d0e0f";
  auto refused = [&](const std::string& what) {
    auto r = prepare_run(c);
    REQUIRE_FALSE(r.is_ok());
    INFO(r.status().message());
    CHECK(r.status().message().find(what) != std::string::npos);
  };
  SECTION("two default services") {
    c.app_opts.services = {spec("a", "md5"), spec("b", "dpi")};
    refused("service[1] (b): a second default service (service[0], a");
  }
  SECTION("a default service before others") {
    c.app_opts.services = {spec("a", "md5", [](auto& m) { m.is_default = true; }),
                           spec("b", "dpi", [](auto& m) { m.proto = 6; })};
    refused("service[0] (a): the default service must be the last one");
  }
  SECTION("a default service with conditions") {
    c.app_opts.services = {spec("a", "md5", [](auto& m) { m.is_default = true; m.proto = 6; })};
    refused("give it no match condition");
  }
  SECTION("a chain that needs a file that is missing") {
    c.app_opts.rules = "/nonexistent/rules";
    c.app_opts.services = {spec("a", "md5", [](auto& m) { m.proto = 6; }), spec("ids", "ipv4,dpi")};
    refused("service[1].chain (ids): app.rules (--rules)");
  }
  SECTION("a service's lanes that name no lane of the run") {
    c.devices = {"none"};
    c.app_opts.services = {spec("a", "md5", [](auto& m) { m.proto = 6; }), spec("b", "dpi")};
    c.service_lanes = {{"native"}, {"gpu"}};
    refused("service[1].lanes (b): 'gpu' is in no lane's name (the lanes: native0)");
  }
  SECTION("more than eight services") {
    for (int i = 0; i < 9; ++i) c.app_opts.services.push_back(spec("s" + std::to_string(i), "md5", [&](auto& m) { m.port = static_cast<uint16_t>(i); }));
    refused("9 services, at most 8");
  }
}

TEST_CASE("LAPS in the daemon: each service is a LAPS service with lanes of its own") {
  RunConfig c = base_config();
  c.app = "md5";
  // The generator's four Holt-Winters services (every packet IP, so every packet goes through the balancer; a frame
  // without a flow, ARP say, is spread by hash over all lanes).
  c.input = {.kind = "generator", .gen_packets = 0, .gen_flows = 400, .gen_sizes = "imix", .gen_seed = 9,
             .gen_rate_model = "laps-set1", .gen_rate_scale = 0.01};
  c.duration_s = 1;
  c.devices = {"none"};
  c.balancer = "laps";
  c.run_to_completion = false;
  c.native_lanes = 2;
  c.app_opts.services = {spec("s0", "md5", [](auto& m) { m.gen_service = 0; }), spec("rest", "md5")};
  Summary s = run_to_end(c);
  check_books(s);
  REQUIRE(s.lanes.size() == 2);
  // LAPS splits the lanes between the services: native0 runs every packet of s0 and nothing else, native1 the rest.
  CHECK(s.lanes[0].packets == events_of(s, "s0:md5"));
  CHECK(s.lanes[1].packets == events_of(s, "rest:md5"));
  CHECK(s.lanes[0].packets > 0);
  CHECK(s.lanes[1].packets > 0);
  SECTION("more services than lanes is refused, naming lanes.balancer") {
    c.app_opts.services.insert(c.app_opts.services.begin(), spec("udp", "md5", [](auto& m) { m.proto = 17; }));
    auto r = prepare_run(c);
    REQUIRE_FALSE(r.is_ok());
    CHECK_THAT(r.status().message(), Catch::Contains("lanes.balancer: laps gives each of the 3 services lanes"));
  }
}

TEST_CASE("per-service shaping: a [[shaper.class]] with service = [...] takes what those services' chains passed on") {
  RunConfig c = base_config();
  c.input = {.kind = "pcap", .pcap = data_path("pcap/ndpi/skype.pcap")};
  c.output = {.kind = "null"};
  c.devices = {"none"};
  c.app_opts.services = {spec("gw", "ipv4", [](auto& m) { m.proto = 17; }), spec("rest", "md5")};
  c.shaping.enabled = true;
  c.shaping.by = ShapeBy::kClass;
  c.shaping.classes = {{.name = "gw-out", .services = {"gw"}, .rate_bytes_per_s = 100'000'000, .burst_bytes = 65536}};
  SECTION("the class's packets are the service's, the rest leaves unshaped") {
    Summary s = run_to_end(c);
    check_books(s);
    REQUIRE(s.services.size() == 2);
    REQUIRE(s.shaper_classes.size() == 1);
    CHECK(s.services[0].out > 0);
    CHECK(s.shaper_classes[0].packets == s.services[0].out);
    CHECK(s.shaper_classes[0].bytes == s.services[0].out_bytes);
    CHECK(s.shaper_unclassified == s.services[1].out);
  }
  SECTION("a service name that is not a [[service]] of the run is refused, naming the setting") {
    c.shaping.classes[0].services = {"gateway"};
    auto r = prepare_run(c);
    REQUIRE_FALSE(r.is_ok());
    INFO(r.status().message());
    CHECK(r.status().message().find("shaper.class[0].service: 'gateway' is not a [[service]] of this run (gw, rest)") !=
          std::string::npos);
  }
}

TEST_CASE("per-service books at overload: a full lane queue's drops are lost in the dropping packet's service") {
  RunConfig c = base_config();
  c.input = {.kind = "generator", .gen_packets = 20000, .gen_flows = 400, .gen_sizes = "fixed:64", .gen_seed = 5,
             .gen_rate_model = "laps-set1", .gen_rate_scale = 0.01};
  c.output = {.kind = "null"};
  c.devices = {"none"};
  c.backpressure = false;
  c.queue = 64;
  c.batch = 32;
  c.native_lanes = 2;
  c.run_to_completion = false;
  c.run_to_completion_given = true;
  c.slow_lane_us = {{"native1", 2000}};  // one lane sleeps 2 ms a batch: its queue fills
  c.app_opts.services = {spec("s0", "md5", [](auto& m) { m.gen_service = 0; }), spec("rest", "md5")};
  Summary s = run_to_end(c);
  check_books(s);
  INFO(s.to_text());
  REQUIRE(s.services.size() == 2);
  CHECK(drops_of(s, "queue_full") > 0);
  // Every generated packet has a flow and a service: each is in one service's books, sent or dropped.
  uint64_t out = 0, dropped = 0, lost = 0;
  for (const auto& b : s.services) {
    out += b.out;
    dropped += b.dropped;
    lost += b.lost;
  }
  CHECK(out == s.tx_packets);
  CHECK(lost == drops_of(s, "queue_full") + drops_of(s, "no_lane"));
  CHECK(dropped + lost == s.dropped);
  CHECK(out + dropped + lost == s.rx_packets);
}
