// Chains (`--app ipv4,aes`): each packet through each app in order, on native lanes and on OpenCL devices (each app's
// kernel in turn on one gathered batch); the output equals each app's native reference in turn, byte for byte, on
// real captures and generated traffic; each app keeps its events and log lines; bad chains are refused naming
// app.name.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "kernels/registry.hpp"
#include "pipeline/adaptive_control.hpp"
#include "pipeline/learn_state.hpp"
#include "pipeline/settings.hpp"
#include "tests/pipeline/pipeline_fixture.hpp"

using namespace hpr;
using namespace hpr::test;

namespace {

// Real captures with TTL-expired packets (ICMP from the host), packets without a route, IPv6, and payloads that the
// ET rules match.
const char* kCaptures[] = {"pcap/ndpi/1kxun.pcap", "pcap/ndpi/skype.pcap", "pcap/ndpi/webex.pcap",
                           "pcap/ndpi/6in4tunnel.pcap"};

uint64_t events_of(const Summary& s, const std::string& app) {
  for (const auto& e : s.chain_events)
    if (e.app == app) return e.count;
  FAIL("no events of " << app << " in the summary");
  return 0;
}

}  // namespace

TEST_CASE("a chain's output equals each app's native reference in turn: devices, in place, on lane threads") {
  // devices: both PoCL devices and the in-place native lane (the fixture's default); devices only: the PoCL devices
  // alone, every packet through each app's kernel in turn, `basic` as a discrete device (kind dgpu: descriptors in and
  // results out per app, the packets in once and back once); lane threads: two native lanes on their own threads.
  enum Where { kDevices, kDevicesOnly, kLaneThreads };
  for (std::string chain : {"ipv4,aes", "aes,md5", "ipv4,dpi,md5"})
    for (const char* cap : kCaptures)
      for (Where where : {kDevices, kDevicesOnly, kLaneThreads}) {
        DYNAMIC_SECTION(chain << " " << cap << " " << where) {
          Summary s = check_against_reference(chain, data_path(cap), [&](RunConfig& c) {
            if (where == kDevicesOnly) {
              c.native_lanes = 0;
              c.kinds = {{"basic", DeviceKind::kDiscreteGpu}};
            }
            if (where != kLaneThreads) return;
            c.run_to_completion = false;  // two native lanes on their own threads (the native executor)
            c.devices.clear();
            c.native_lanes = 2;
          });
          // Every app's events are in the summary, in chain order.
          REQUIRE(s.chain_events.size() == kernels::chain_apps(chain)->size());
          CHECK(s.chain_events.back().count == s.events);
          if (kernels::chain_has(chain, "ipv4")) CHECK(events_of(s, "ipv4") + s.dropped >= s.tx_packets);
          // A device lane runs the chain's kernels on one gathered batch, and got packets where it is alone.
          uint64_t on_devices = 0, device_lanes = 0;
          for (const auto& l : s.lanes) {
            const bool device = l.name.find("native") == std::string::npos;
            if (where == kDevicesOnly) CHECK(device);
            if (!device) continue;
            ++device_lanes;
            CHECK_THAT(l.executor, Catch::Contains(fmt::format("{} kernels on one gathered batch",
                                                               kernels::chain_apps(chain)->size())));
            const bool copied = where == kDevicesOnly && l.name.find("basic") != std::string::npos;
            CHECK_THAT(l.executor, Catch::Contains(copied ? "copied" : "mapped"));
            on_devices += l.packets;
          }
          CHECK(device_lanes == (where == kLaneThreads ? 0 : 2));
          if (where == kDevicesOnly) CHECK(on_devices > 0);
        }
      }
}

TEST_CASE("a packet one app drops leaves the chain with that app's reason; the apps after it do not see it") {
  // ipv4 drops TTL-expired packets (the test routes have a default route); aes after it encrypts only what ipv4
  // forwarded.
  const std::string cap = data_path("pcap/ndpi/1kxun.pcap");
  Summary s = check_against_reference("ipv4,aes", cap);
  auto reason = [&](const std::string& r) {
    for (const auto& [k, v] : s.drops)
      if (k == r) return v;
    return uint64_t{0};
  };
  CHECK(reason("ttl_exceeded") > 0);
  CHECK(events_of(s, "ipv4") == s.tx_packets);  // every packet sent was forwarded (ICMP: host frames, not counted)
  CHECK(events_of(s, "aes") > 0);
  CHECK(events_of(s, "aes") <= events_of(s, "ipv4"));
  // Each app's books: ipv4 is given every packet that reached the lanes, passes on all but its drops; aes is given
  // the same packets (those ipv4 dropped with their reason, an empty slice) and passes on what ipv4 passed.
  REQUIRE(s.chain_events.size() == 2);
  const auto& v4 = s.chain_events[0];
  const auto& aes = s.chain_events[1];
  uint64_t lanes = 0;
  for (const auto& l : s.lanes) lanes += l.packets;
  CHECK(v4.in == lanes);
  CHECK(v4.in - v4.passed == reason("ttl_exceeded") + reason("no_route") + reason("bad_checksum"));
  CHECK(aes.in == v4.in);
  CHECK(aes.passed == v4.passed - reason("key_missing"));
  CHECK(aes.passed == s.tx_packets);
  // In the other order aes encrypts first and md5 digests the ciphertext: the same digests as the reference's.
  check_against_reference("aes,md5", cap);
}

TEST_CASE("a chain on generated traffic (IMIX, IPv6, TTL 1, planted patterns) equals the reference") {
  const std::string gen = generated_capture("chain_generated.pcap", 15, {"Volume Serial Number", "cmd.exe"});
  for (std::string chain : {"ipv4,dpi,aes", "dpi,md5"}) {
    DYNAMIC_SECTION(chain) {
      Summary s = check_against_reference(chain, gen);
      if (kernels::chain_has(chain, "dpi")) CHECK(events_of(s, "dpi") > 0);  // the planted patterns
    }
  }
}

TEST_CASE("the summary names each app's events, in text and JSON") {
  Summary s = check_against_reference("ipv4,md5", data_path("pcap/ndpi/skype.pcap"));
  const std::string text = s.to_text();
  CHECK(text.find("forwarded") != std::string::npos);
  CHECK(text.find("(ipv4: ") != std::string::npos);
  CHECK(text.find("digests") != std::string::npos);
  CHECK(text.find("(md5: ") != std::string::npos);
  const auto j = nlohmann::json::parse(s.to_json());
  REQUIRE(j.contains("chain_events"));
  CHECK(j["chain_events"].size() == 2);
  CHECK(j["chain_events"][0]["app"] == "ipv4");
  CHECK(j["chain_events"][1]["name"] == "digests");
}

TEST_CASE("bad chains are refused naming app.name, nothing started") {
  RunConfig c = base_config();
  c.app_opts.master_key = "000102030405060708090a0b0c0d0e0f";
  auto refused = [&](const std::string& chain, const std::string& what) {
    c.app = chain;
    auto r = prepare_run(c);
    REQUIRE_FALSE(r.is_ok());
    INFO(r.status().message());
    CHECK(r.status().message().find(what) != std::string::npos);
    return r.status().message();
  };
  CHECK(refused("ipv4,", "empty app").find("app.name (--app)") != std::string::npos);
  refused(",aes", "empty app");
  refused("ipv4,,aes", "empty app");
  refused("", "no app named");
  CHECK(refused("ipv4,nat", "unknown app 'nat' in the chain 'ipv4,nat'").find("known: ipv4, dpi, md5, aes") !=
        std::string::npos);
  refused("ipv4,md5,ipv4", "names ipv4 twice");
  refused("ip,ipv4", "names ipv4 twice");  // ip is ipv4
  SECTION("a chain whose app needs a file that is missing names the file's setting") {
    c.app_opts.rules = "/nonexistent/rules";
    refused("ipv4,dpi", "app.rules");
  }
  SECTION("a chain without aes keys names the key settings") {
    c.app_opts.master_key.clear();
    unsetenv("HPR_MASTER_KEY");
    refused("ipv4,aes", "app aes needs keys");
  }
  // A device only, md5 of whole frames, and ipv4 rewrites the Ethernet addresses (a neighbour table).
  auto l2_rewrite_on_device = [&] {
    c.devices = {"pthread"};
    c.native_lanes = 0;
    c.app_opts.md5_whole_frame = true;
    c.port_macs = {"02:00:00:00:00:a0"};
    for (uint32_t h = 0; h < 4; ++h) c.neighbours.push_back({.next_hop = h, .port = 0, .mac = "0a:0b:0c:0d:0e:00"});
  };
  SECTION("devices only, md5 of whole frames after ipv4's Ethernet rewrite: the device is left out, saying why") {
    l2_rewrite_on_device();
    CHECK_THAT(refused("ipv4,md5", "no lane could be started"),
               Catch::Contains("md5 reads the Ethernet addresses that ipv4 rewrites"));
  }
  SECTION("the same chain in a service: the device is left out, naming the service") {
    l2_rewrite_on_device();
    c.app_opts.services = {{.name = "all", .chain = "ipv4,md5", .match = {}}};
    CHECK_THAT(refused("ipv4", "no lane could be started"),
               Catch::Contains("service all: the chain ipv4,md5 runs on native lanes only"));
  }
}

TEST_CASE("chain_apps reads a chain; chain_has finds an app in it") {
  CHECK(*kernels::chain_apps("ipv4") == std::vector<std::string>{"ipv4"});
  CHECK(*kernels::chain_apps("ip,aes") == std::vector<std::string>{"ipv4", "aes"});
  CHECK(kernels::chain_has("ipv4,aes", "aes"));
  CHECK(kernels::chain_has("ipv4,aes", "ipv4"));
  CHECK_FALSE(kernels::chain_has("ipv4,aes", "ip"));
  CHECK_FALSE(kernels::chain_has("dpi", "md5"));
}

TEST_CASE("a lane that fails mid-run: a chain's packets go whole to the other lane, none lost or reordered") {
  // A native lane fails at a submit, before any app of the chain ran on that batch: its packets are handed back
  // untouched and run through the whole chain on the other lane, so the output still equals the reference. 20,000
  // packets: more than both lane queues hold, so (back-pressure) the input cannot end before the lane fails (the
  // failure happens mid-run, with the dispatcher re-routing).
  const std::string gen = generated_capture("chain_fail.pcap", 21, {"cmd.exe"}, 20000);
  for (std::string chain : {"ipv4,aes", "ipv4,dpi,md5"}) {
    DYNAMIC_SECTION(chain) {
      Summary s = check_against_reference(chain, gen, [](RunConfig& c) {
        c.run_to_completion = false;
        c.native_lanes = 2;
        c.batch = 16;
        c.fail_after = {{"native0", 5}};
      });
      CHECK(s.lane_failures == 1);
    }
  }
}

TEST_CASE("a device lane that fails between two apps of a chain: its packets go whole to the native lane") {
  // One batch in flight: the kernel launches go batch 1 app 0, batch 1 app 1, batch 2 app 0, batch 2 app 1, ...; the
  // 4th fails, after batch 2's app 0 has run on the device and its finish on the host. The batch is handed back as it
  // was submitted and runs through the whole chain on the native lane: the output still equals the reference, and
  // each app's books count each packet once. 20,000 packets, as in the test above: the input cannot end before the
  // lane fails, and the dispatcher re-routes.
  EnvVar env("HPR_FAULT_CL", "enqueue:4@pthread");
  const std::string gen = generated_capture("chain_cl_fail.pcap", 23, {"cmd.exe"}, 20000);
  Summary s = check_against_reference("ipv4,aes", gen, [](RunConfig& c) {
    c.devices = {"pthread"};
    c.in_flight = 1;
    c.batch = 16;
  });
  CHECK(s.lane_failures == 1);
  REQUIRE(s.chain_events.size() == 2);
  uint64_t lanes = 0;
  for (const auto& l : s.lanes) lanes += l.packets;
  CHECK(s.chain_events[0].in == lanes);
  CHECK(s.chain_events[1].in == lanes);
}

TEST_CASE("apps on lanes of their own (app.place): each stage's lanes run its apps, output as the reference") {
  // ipv4 on the devices, aes on the native lane: ipv4's drops (TTL 1, no route) leave at the first stage, aes encrypts
  // what ipv4 passed on with the sequence numbers given at dispatch (its IVs equal the one-lane chain's). Then ipv4
  // natively and dpi,md5 on the devices: two apps of one stage in one gathered batch.
  const std::string gen = generated_capture("chain_place.pcap", 31, {"cmd.exe"});
  struct Case {
    const char* chain;
    std::map<std::string, std::vector<std::string>> place;
    const char* text;  // the summary's placement
  };
  for (const Case& k : {Case{"ipv4,aes", {{"ipv4", {"pthread", "basic"}}}, "ipv4 on cl"},
                        Case{"ipv4,dpi,md5", {{"ipv4", {"native"}}}, "ipv4 on native0; dpi,md5 on cl"}})
    for (const char* cap : {"pcap/ndpi/skype.pcap", "generated"}) {
      DYNAMIC_SECTION(k.chain << " " << cap) {
        const std::string path = cap == std::string("generated") ? gen : data_path(cap);
        Summary s = check_against_reference(k.chain, path, [&](RunConfig& c) { c.app_place = k.place; });
        bool shown = false;
        for (const auto& [key, v] : s.app_info) shown |= key == "placement" && v.find(k.text) != std::string::npos;
        CHECK(shown);
        // Each app ran on its stage's lanes only: the first stage took every packet, the apps after it what the
        // first passed on; each app's books count each packet once.
        uint64_t first = 0, later = 0;
        for (const auto& l : s.lanes) {
          const bool on_native = l.name.find("native") != std::string::npos;
          (on_native == (k.place.begin()->second[0] == "native") ? first : later) += l.packets;
        }
        REQUIRE(s.chain_events.size() == kernels::chain_apps(k.chain)->size());
        CHECK(first == s.chain_events[0].in);
        CHECK(later == s.chain_events[0].passed);
        for (size_t a = 1; a < s.chain_events.size(); ++a) CHECK(s.chain_events[a].in == s.chain_events[0].passed);
        CHECK(later > 0);
      }
    }
}

TEST_CASE("apps on lanes of their own with two workers: each worker's stages, output as the reference") {
  // ipv4 natively, dpi on pthread, in each of two workers (their lanes named w0:…, w1:…; the devices not shared:
  // stages run on executors of their own): both workers' first stages took every packet between them, their second
  // stages what ipv4 passed on.
  if (cores_here().size() < 2) return;
  Summary s = check_against_reference("ipv4,dpi", data_path("pcap/ndpi/skype.pcap"), [](RunConfig& c) {
    c.workers = 2;
    c.devices = {"pthread"};
    c.native_lanes = 1;
    c.app_place = {{"ipv4", {"native"}}};
  });
  uint64_t native = 0, device = 0;
  for (const auto& l : s.lanes) {
    INFO(l.name);
    CHECK((l.name.starts_with("w0:") || l.name.starts_with("w1:")));
    CHECK(l.packets > 0);
    (l.name.find("native") != std::string::npos ? native : device) += l.packets;
  }
  CHECK(s.lanes.size() == 4);
  CHECK(native == s.chain_events[0].in);
  CHECK(device == s.chain_events[0].passed);
  CHECK(s.chain_events[1].in == s.chain_events[0].passed);
}

TEST_CASE("a lane of a later stage that fails: only its app's work is re-routed, to its stage's other lane") {
  // ipv4 natively, dpi,md5 on both PoCL devices; pthread's 4th launch fails. Its packets, which ipv4 already ran on,
  // go to basic (never back to the native lane, which would run ipv4 on them again): the output still equals the
  // reference. 20,000 packets, so that the input cannot end before the lane fails.
  EnvVar env("HPR_FAULT_CL", "enqueue:4@pthread");
  const std::string gen = generated_capture("chain_place_fail.pcap", 37, {"cmd.exe"}, 20000);
  RunHooks hooks;
  hooks.before = [](Pipeline& p) {  // weights that change would move a later stage's flows without the move rule
    CHECK_FALSE(p.set_lane_weights(std::vector<float>(p.lane_count(), 1)).is_ok());
  };
  Summary s = check_against_reference(
      "ipv4,dpi,md5", gen,
      [](RunConfig& c) {
        c.app_place = {{"ipv4", {"native"}}};
        c.batch = 16;
      },
      hooks);
  CHECK(s.lane_failures == 1);
  uint64_t native = 0;
  for (const auto& l : s.lanes)
    if (l.name == "native0") native = l.packets;
  CHECK(native == s.chain_events[0].in);  // ipv4 ran each packet once
  CHECK(s.chain_events[1].in == s.chain_events[0].passed);
}

TEST_CASE("bad placements of a chain's apps are refused naming app.place, nothing started") {
  RunConfig c = base_config();
  c.app = "ipv4,dpi,md5";
  c.input = {.kind = "pcap", .pcap = data_path("pcap/ndpi/skype.pcap")};
  c.output = {.kind = "null"};
  auto refused = [&](std::map<std::string, std::vector<std::string>> place, const std::string& what) {
    c.app_place = std::move(place);
    auto r = prepare_run(c);
    REQUIRE_FALSE(r.is_ok());
    INFO(r.status().message());
    CHECK(r.status().message().find(what) != std::string::npos);
  };
  refused({{"aes", {"native"}}}, "app.place.aes (--place-app): 'aes' is not an app of the chain ipv4,dpi,md5");
  refused({{"dpi", {"gpu"}}}, "app.place.dpi: 'gpu' is in no lane's name (the lanes: ");
  refused({{"ipv4", {"native"}}, {"md5", {"native"}}},
          "app.place: lane native0 would run ipv4 and md5, which are not next to each other on the same lanes");
  refused({{"ipv4", {"native", "pthread", "basic"}}}, "app.place.dpi: no lane is left for it");
  c.adapt_table = "/tmp/table.json";
  refused({{"ipv4", {"native"}}}, "app.place (--place-app): the lanes keep their weights; adaptive.table (--table)");
  c.adapt_table.clear();
  c.run_to_completion = false;
  c.run_to_completion_given = true;
  refused({{"ipv4", {"native"}}}, "app.place (--place-app): apps on lanes of their own run to completion");
  c.run_to_completion_given = false;
  c.app = "md5";
  refused({{"md5", {"native"}}}, "app.place: places the apps of one chain (--app ipv4,dpi); md5 is one app");
}

TEST_CASE("app.place = learned: each app where its own learned state measured it fastest, output as the reference") {
  // Lanes pthread and native0; the states say ipv4 runs fastest on native0 alone and dpi on pthread alone, the whole
  // chain on both at a fifth of that: the run places ipv4 on native0 and dpi on pthread (static weights), and its
  // output, drops and result log equal the reference.
  namespace fs = std::filesystem;
  const fs::path dir = tmp_path("learned_states");
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string cap = data_path("pcap/ndpi/skype.pcap");
  auto tweak = [&](RunConfig& c) {
    c.devices = {"pthread"};
    c.native_lanes = 1;
    c.adapt_state_dir = dir.string();
  };
  RunConfig c = pcap_config("ipv4,dpi", cap, tmp_path("learned_out.pcap"));
  tweak(c);
  std::vector<DeviceInfo> devices;  // the fingerprint's
  {
    auto ctx = prepare_run(c);
    REQUIRE(ctx.is_ok());
    devices = (*ctx)->devices;
    REQUIRE(devices.size() == 1);
  }
  auto save = [&](const std::string& app, std::vector<std::pair<std::vector<float>, double>> pts) {
    prof::ConfigTable t;
    t.fingerprint = machine_fingerprint(devices, 1, app, traffic_description(c.input));
    std::vector<sched::MeasuredSetup> m;
    for (const auto& [w, gbps] : pts) {
      sched::MeasuredSetup x;
      x.setup = {w, {256, 256}};
      x.rate_bps = {gbps * 1e9, 0.05e9, 8};
      x.power_w = {30, 1, 8};
      x.latency_p50_ns = x.latency_p99_ns = {1e4, 1e3, 8};
      m.push_back(x);
    }
    record_measured(t, m, sched::PowerSource::kModel, t.fingerprint.traffic);
    REQUIRE(prof::save_table(state_file(dir.string(), app), t).is_ok());
  };
  save("ipv4", {{{0, 1}, 5}, {{1, 0}, 1}, {{0.5, 0.5}, 1}});
  save("dpi", {{{1, 0}, 5}, {{0, 1}, 1}, {{0.5, 0.5}, 1}});
  Summary s = check_against_reference("ipv4,dpi", cap, [&](RunConfig& k) {
    tweak(k);
    k.app_place_learned = true;
  });
  bool shown = false;
  for (const auto& [key, v] : s.app_info) shown |= key == "placement" && v.starts_with("ipv4 on native0; dpi on cl");
  CHECK(shown);
  REQUIRE(s.chain_events.size() == 2);
  for (const auto& l : s.lanes)
    CHECK(l.packets == (l.name == "native0" ? s.chain_events[0].in : s.chain_events[0].passed));
  // Without dpi's state nothing is placed, and the start says why.
  fs::remove(state_file(dir.string(), "dpi"));
  c.app_place_learned = true;
  auto ctx = prepare_run(c);
  REQUIRE(ctx.is_ok());
  CHECK_FALSE((*ctx)->pipeline->staged());
  CHECK((*ctx)->placed_from.find("not placed: no learned state for dpi (" + state_file(dir.string(), "dpi") +
                                 " not found)") == 0);
}

TEST_CASE("app.place = learned is refused where it cannot place, naming the setting") {
  RunConfig c = base_config();
  c.input = {.kind = "pcap", .pcap = data_path("pcap/ndpi/skype.pcap")};
  c.output = {.kind = "null"};
  c.app_place_learned = true;
  auto refused = [&](const std::string& app, const std::string& what) {
    c.app = app;
    auto r = prepare_run(c);
    REQUIRE_FALSE(r.is_ok());
    INFO(r.status().message());
    CHECK(r.status().message().find(what) != std::string::npos);
  };
  refused("md5",
          "app.place = learned (--place-app learned): places the apps of one chain (--app ipv4,dpi); md5 is one");
  c.lane_weights = {{"native", 2}};
  refused("ipv4,dpi", "app.place = learned (--place-app learned): sets the lanes' weights from the learned state");
  c.lane_weights.clear();
  c.adapt_table = "/tmp/table.json";
  refused("ipv4,dpi", "app.place = learned (--place-app learned): places from the learned state; adaptive.table");
  c.adapt_table.clear();
  c.run_to_completion = false;
  c.run_to_completion_given = true;
  refused("ipv4,dpi", "app.place = learned (--place-app learned): apps on lanes of their own run to completion");
}

TEST_CASE("app.place = learned from the file and --place-app learned; a bad value names the setting") {
  const std::string path = tmp_path("place_learned.toml");
  std::ofstream(path) << "[app]\nname = \"ipv4,dpi\"\nplace = \"learned\"\n";
  auto c = load_run_config(path);
  REQUIRE(c.is_ok());
  CHECK(c->app_place_learned);
  CHECK(c->app_place.empty());
  std::ofstream(path) << "[app]\nname = \"ipv4,dpi\"\nplace = \"best\"\n";
  auto bad = load_run_config(path);
  REQUIRE_FALSE(bad.is_ok());
  CHECK(bad.status().message().find("app.place must be \"learned\" or a table") != std::string::npos);
  const Setting* flag = find_setting("--place-app");
  REQUIRE(flag != nullptr);
  RunConfig f;
  f.app_place = {{"ipv4", {"native"}}};  // the file's, replaced by 'learned'
  REQUIRE(flag->apply(f, SettingValue{.args = {"learned"}}).is_ok());
  CHECK(f.app_place_learned);
  CHECK(f.app_place.empty());
  REQUIRE(flag->apply(f, SettingValue{.args = {"dpi=pthread"}}).is_ok());
  CHECK_FALSE(f.app_place_learned);
  CHECK(f.app_place.at("dpi") == std::vector<std::string>{"pthread"});
  auto st = flag->apply(f, SettingValue{.args = {"learned", "dpi=pthread"}});
  REQUIRE_FALSE(st.is_ok());
  CHECK(st.message().find("'learned' places every app: give it alone") != std::string::npos);
}
