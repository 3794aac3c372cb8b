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
  Fingerprint traffic = machine();
  traffic.traffic = "caida";
  CHECK(load_table(path.string(), traffic).status().message().find("traffic") != std::string::npos);
  fs::remove(path);
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
  fs::remove(path);
}
