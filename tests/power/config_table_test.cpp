#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

#include "profiler/table/config_table.hpp"

using namespace hpr;
using namespace hpr::prof;
namespace fs = std::filesystem;

namespace {

fs::path temp_file(const char* stem) {
  std::random_device rd;
  return fs::temp_directory_path() / fmt::format("hpr-{}-{}.json", stem, rd());
}

Fingerprint machine() {
  Fingerprint f;
  f.devices = {{"pthread-AMD EPYC", "Portable Computing Language", "3.1"},
               {"basic-AMD EPYC", "Portable Computing Language", "3.1"}};
  f.app = "md5";
  f.traffic = "synthetic 25% 60B / 75% 1514B";
  return f;
}

sched::Configuration point(uint32_t batch, double gbps) {
  sched::Configuration c;
  c.device_mask = 0b11;
  c.batch = {batch, batch};
  c.split = {0.25F, 0.75F};
  c.throughput_bps = gbps * 1e9;
  c.latency_ns = 1000.0 * batch;
  c.latency_p99_ns = 1500.0 * batch;
  c.power_w = 42.5;
  c.power_source = sched::PowerSource::kModel;
  return c;
}

}  // namespace

TEST_CASE("table round trip through the incremental writer") {
  auto path = temp_file("table");
  auto w = TableWriter::create(path.string(), machine());
  REQUIRE(w.is_ok());
  REQUIRE(w->append(point(64, 1.5)).is_ok());
  REQUIRE(w->append(point(128, 2.5)).is_ok());
  // Interrupted here: what is on disk is a valid, incomplete table with both points.
  auto partial = load_table(path.string(), machine());
  REQUIRE(partial.is_ok());
  CHECK_FALSE(partial->complete);
  CHECK(partial->points.size() == 2);
  REQUIRE(w->append(point(256, 3.5)).is_ok());
  REQUIRE(w->finish().is_ok());

  auto t = load_table(path.string(), machine());
  REQUIRE(t.is_ok());
  CHECK(t->complete);
  CHECK(t->version == kTableFormatVersion);
  CHECK(t->fingerprint == machine());
  CHECK(t->fingerprint.hpr_version == HPR_VERSION);
  REQUIRE(t->points.size() == 3);
  CHECK(t->points[1].same_setup(point(128, 2.5)));
  CHECK(t->points[1].throughput_bps == 2.5e9);
  CHECK(t->points[1].latency_p99_ns == 1500.0 * 128);
  CHECK(t->points[1].power_source == sched::PowerSource::kModel);
  sched::ConfigStore store;
  REQUIRE(fill_store(*t, store).is_ok());
  CHECK(store.size() == 3);
  // A bad point is refused and not added.
  auto bad = point(64, 1);
  bad.split = {0.5F, 0.1F};
  CHECK_FALSE(w->append(bad).is_ok());
  CHECK(w->table().points.size() == 3);
  fs::remove(path);
}

TEST_CASE("a table with a different fingerprint is refused, naming the field and the override") {
  auto path = temp_file("fp");
  ConfigTable t;
  t.fingerprint = machine();
  t.points = {point(64, 1)};
  REQUIRE(save_table(path.string(), t).is_ok());

  Fingerprint other = machine();
  other.devices[1].driver = "Intel(R) OpenCL HD Graphics";
  auto r = load_table(path.string(), other);
  REQUIRE_FALSE(r.is_ok());
  CHECK(r.status().code() == Code::kInvalidArgument);
  const std::string& msg = r.status().message();
  INFO(msg);
  CHECK(msg.find("devices[1].driver") != std::string::npos);
  CHECK(msg.find("'Portable Computing Language'") != std::string::npos);
  CHECK(msg.find("'Intel(R) OpenCL HD Graphics'") != std::string::npos);
  CHECK(msg.find("allow_mismatch") != std::string::npos);
  CHECK(load_table(path.string(), other, /*allow_mismatch=*/true).is_ok());

  Fingerprint v = machine();
  v.hpr_version = "9.9.9";
  CHECK(load_table(path.string(), v).status().message().find("hpr_version") != std::string::npos);
  Fingerprint fewer = machine();
  fewer.devices.pop_back();
  CHECK(load_table(path.string(), fewer).status().message().find("2 devices") != std::string::npos);
  // Another app: a table is per app.
  Fingerprint app = machine();
  app.app = "aes";
  auto ra = load_table(path.string(), app);
  REQUIRE_FALSE(ra.is_ok());
  CHECK(ra.status().message().find("app: table has 'md5', this machine has 'aes'") != std::string::npos);
  CHECK(ra.status().message().find("allow_mismatch") != std::string::npos);
  CHECK(load_table(path.string(), app, /*allow_mismatch=*/true).is_ok());
  // Another traffic is not a refusal: the traffic is a dimension of the table (fill_store picks by it).
  Fingerprint traffic = machine();
  traffic.traffic = "caida";
  auto rt = load_table(path.string(), traffic);
  REQUIRE(rt.is_ok());
  REQUIRE(rt->points.size() == 1);
  CHECK(rt->points[0].traffic == machine().traffic);  // the table's default, filled in
  fs::remove(path);
}

TEST_CASE("a format-1 table loads: spread 0, one sample, the fingerprint's traffic") {
  auto path = temp_file("v1");
  // As `hpr profile` wrote it before format 2 (docs/scheduler/ipv4_table.json is one).
  std::ofstream(path) << R"({"format": "hpr-config-table", "version": 1, "complete": true,
    "fingerprint": {"hpr_version": ")" HPR_VERSION R"(", "app": "md5", "traffic": "synthetic 25% 60B / 75% 1514B",
      "devices": [{"name": "pthread-AMD EPYC", "driver": "Portable Computing Language", "version": "3.1"},
                  {"name": "basic-AMD EPYC", "driver": "Portable Computing Language", "version": "3.1"}]},
    "points": [{"devices": [{"device": 1, "batch": 256, "split": 1.0}], "throughput_bps": 2.5e9,
                "latency_ns": 40000.0, "latency_p99_ns": 90000.0, "power_w": 18.5, "power_source": "model"}]})";
  auto t = load_table(path.string(), machine());
  REQUIRE(t.is_ok());
  CHECK(t->version == 1);
  REQUIRE(t->points.size() == 1);
  const auto& p = t->points[0];
  CHECK(p.throughput_bps == 2.5e9);
  CHECK(p.throughput_spread_bps == 0);
  CHECK(p.latency_spread_ns == 0);
  CHECK(p.latency_p99_spread_ns == 0);
  CHECK(p.power_spread_w == 0);
  CHECK(p.samples == 1);
  CHECK(p.traffic == "synthetic 25% 60B / 75% 1514B");
  sched::ConfigStore store;
  auto f = fill_store(*t, store, machine().traffic);
  REQUIRE(f.is_ok());
  CHECK(f->inserted == 1);
  CHECK(f->note.empty());
  fs::remove(path);
}

TEST_CASE("format 2 round trip: medians, spreads, samples and the traffic of each point") {
  auto path = temp_file("v2");
  auto w = TableWriter::create(path.string(), machine());
  REQUIRE(w.is_ok());
  auto a = point(64, 1.5);
  a.throughput_spread_bps = 0.05e9;
  a.latency_spread_ns = 1200;
  a.latency_p99_spread_ns = 5400;
  a.power_spread_w = 0.75;
  a.samples = 5;
  auto b = point(64, 1.1);  // the same setup measured on other traffic
  b.traffic = "generator sizes=fixed:64 flows=1000 zipf=0 seed=1";
  b.samples = 7;
  REQUIRE(w->append(a).is_ok());
  REQUIRE(w->append(b).is_ok());
  REQUIRE(w->finish().is_ok());
  nlohmann::json j = nlohmann::json::parse(std::ifstream(path));
  CHECK(j["version"] == 2);
  CHECK(j["points"][0]["throughput_spread_bps"] == 0.05e9);
  CHECK(j["points"][0]["samples"] == 5);
  CHECK_FALSE(j["points"][0].contains("traffic"));  // the table's default
  CHECK(j["points"][1]["traffic"] == b.traffic);
  auto t = load_table(path.string(), machine());
  REQUIRE(t.is_ok());
  CHECK(t->version == kTableFormatVersion);
  REQUIRE(t->points.size() == 2);
  const auto& p = t->points[0];
  CHECK(p.same_setup(a));
  CHECK(p.throughput_bps == a.throughput_bps);
  CHECK(p.throughput_spread_bps == a.throughput_spread_bps);
  CHECK(p.latency_spread_ns == a.latency_spread_ns);
  CHECK(p.latency_p99_spread_ns == a.latency_p99_spread_ns);
  CHECK(p.power_spread_w == a.power_spread_w);
  CHECK(p.samples == 5);
  CHECK(p.traffic == machine().traffic);
  CHECK(t->points[1].traffic == b.traffic);
  CHECK(t->points[1].samples == 7);
  fs::remove(path);
}

TEST_CASE("fill_store takes the points of the requested traffic, else all of them with a note") {
  ConfigTable t;
  t.fingerprint = machine();
  auto imix = point(64, 1.5);  // no traffic of its own: the fingerprint's
  auto small = point(64, 0.5);
  small.traffic = "fixed:64";
  auto small2 = point(128, 0.7);
  small2.traffic = "fixed:64";
  t.points = {imix, small, small2};
  {
    sched::ConfigStore store;
    auto f = fill_store(t, store, "fixed:64");
    REQUIRE(f.is_ok());
    CHECK(f->inserted == 2);
    CHECK(f->note.empty());
    REQUIRE(store.size() == 2);
    CHECK(store.get(0).throughput_bps == 0.5e9);  // the 64-packet setup as measured on fixed:64
  }
  {
    sched::ConfigStore store;
    auto f = fill_store(t, store, machine().traffic);
    REQUIRE(f.is_ok());
    CHECK(f->inserted == 1);
    CHECK(store.get(0).throughput_bps == 1.5e9);
  }
  {
    sched::ConfigStore store;  // a traffic the table does not have: all points, and a note naming both sides
    auto f = fill_store(t, store, "pcap:/data/caida.pcap");
    REQUIRE(f.is_ok());
    CHECK(f->inserted == 3);
    INFO(f->note);
    CHECK(f->note.find("'pcap:/data/caida.pcap'") != std::string::npos);
    CHECK(f->note.find("'fixed:64'") != std::string::npos);
    CHECK(f->note.find(machine().traffic) != std::string::npos);
    CHECK(store.size() == 2);  // the 64-packet setup is one configuration
  }
  {
    sched::ConfigStore store;  // no traffic asked for: every point, no note
    auto f = fill_store(t, store);
    REQUIRE(f.is_ok());
    CHECK(f->inserted == 3);
    CHECK(f->note.empty());
  }
}

TEST_CASE("bad table files give actionable errors") {
  auto path = temp_file("bad");
  CHECK(load_table(path.string(), machine()).status().code() == Code::kNotFound);
  std::ofstream(path) << "{ not json";
  CHECK(load_table(path.string(), machine()).status().message().find("not valid JSON") != std::string::npos);
  std::ofstream(path, std::ios::trunc) << R"({"format":"something-else"})";
  CHECK(load_table(path.string(), machine()).status().message().find("hpr-config-table") != std::string::npos);
  ConfigTable t;
  t.fingerprint = machine();
  t.version = 7;
  REQUIRE(save_table(path.string(), t).is_ok());
  CHECK(load_table(path.string(), machine()).status().message().find("version 7") != std::string::npos);
  t.version = kTableFormatVersion;
  auto p = point(64, 1);
  p.batch[0] = 0;
  t.points = {point(64, 1), p};
  REQUIRE(save_table(path.string(), t).is_ok());
  CHECK(load_table(path.string(), machine()).status().message().find("points[1]") != std::string::npos);
  // Numbers of the wrong kind or out of range (found by fuzz_config_table): an error naming the field, no
  // undefined conversion.
  std::ofstream(path, std::ios::trunc) << R"({"format":"hpr-config-table","version":3.3e30})";
  auto big = load_table(path.string(), machine());
  REQUIRE_FALSE(big.is_ok());
  CHECK(big.status().message().find("bad table header") != std::string::npos);
  CHECK(big.status().message().find("expected an integer") != std::string::npos);
  const std::pair<const char*, const char*> cases[] = {{R"("batch": -5e300, "split": 1)", "expected an integer"},
                                                       {R"("batch": 4294967296, "split": 1)", "out of range"},
                                                       {R"("batch": 1, "split": 1e300)", "out of range"}};
  for (const auto& [field, says] : cases) {
    INFO(field);
    REQUIRE(save_table(path.string(), t).is_ok());
    nlohmann::json j = nlohmann::json::parse(std::ifstream(path));
    j["points"] = nlohmann::json::parse(std::string(R"([{"devices": [{"device": 0, )") + field +
                                        R"(}], "throughput_bps": 1, "latency_ns": 1, "power_w": 1}])");
    std::ofstream(path, std::ios::trunc) << j.dump();
    auto r = load_table(path.string(), machine());
    REQUIRE_FALSE(r.is_ok());
    CHECK(r.status().message().find("points[0]") != std::string::npos);
    CHECK(r.status().message().find(says) != std::string::npos);
  }
  // Format-2 fields: a spread must be a finite number >= 0, samples an integer >= 1; the error names the point
  // (index and setup) and the field.
  const std::pair<const char*, const char*> v2_cases[] = {
      {R"("throughput_spread_bps": -1)", "throughput_spread_bps = -1 is not >= 0"},
      {R"("latency_spread_ns": null)", "type must be number"},
      {R"("latency_p99_spread_ns": -0.5)", "latency_p99_spread_ns"},
      {R"("power_spread_w": "2 W")", "type must be number"},
      {R"("samples": 0)", "samples = 0"},
      {R"("samples": 2.5)", "expected an integer"},
      {R"("samples": -3)", "out of range"},
      {R"("traffic": 7)", "type must be string"}};
  for (const auto& [field, says] : v2_cases) {
    INFO(field);
    REQUIRE(save_table(path.string(), t).is_ok());
    nlohmann::json j = nlohmann::json::parse(std::ifstream(path));
    j["points"] = nlohmann::json::parse(
        std::string(R"([{"devices": [{"device": 0, "batch": 64, "split": 1}], "throughput_bps": 1, "latency_ns": 1,
                        "power_w": 1, )") + field + "}]");
    std::ofstream(path, std::ios::trunc) << j.dump();
    auto r = load_table(path.string(), machine());
    REQUIRE_FALSE(r.is_ok());
    INFO(r.status().message());
    CHECK(r.status().message().find("points[0]") != std::string::npos);
    CHECK(r.status().message().find(says) != std::string::npos);
  }
  std::ofstream(path, std::ios::trunc) << R"({"format":"hpr-config-table","version":3})";
  CHECK(load_table(path.string(), machine()).status().message().find("reads 1 to 2") != std::string::npos);
  fs::remove(path);
}
