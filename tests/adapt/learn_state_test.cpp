// Learning mode's saved state (pipeline/learn_state.hpp): where it lives, what a corrupt or foreign file becomes,
// which saved setup a run starts from, how measured setups are recorded.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "pipeline/learn_state.hpp"
#include "scheduler/store/config_store.hpp"

using namespace hpr;
namespace fs = std::filesystem;

namespace {

prof::Fingerprint machine(const std::string& app = "ipv4") {
  prof::Fingerprint fp;
  fp.devices = {{"pthread", "Portable Computing Language", "3.1"}, {"native0", "hpr", HPR_VERSION}};
  fp.app = app;
  fp.traffic = "generator sizes=imix";
  return fp;
}

sched::MeasuredSetup measured(std::vector<float> w, double gbps, double watts, uint32_t batch = 256) {
  sched::MeasuredSetup m;
  m.setup = {w, std::vector<uint32_t>(w.size(), batch)};
  m.rate_bps = {gbps * 1e9, 0.1e9, 4};
  m.power_w = {watts, 1, 4};
  m.latency_p50_ns = {1e4, 1e3, 4};
  m.latency_p99_ns = {5e4, 1e3, 4};
  return m;
}

struct TempDir {
  fs::path path = fs::temp_directory_path() / ("hpr-state-" + std::to_string(::getpid()));
  TempDir() { fs::create_directories(path); }
  ~TempDir() { fs::remove_all(path); }
};

}  // namespace

TEST_CASE("default_state_dir: HPR_STATE_DIR first, then /var/lib/hpr for root, then XDG and HOME") {
  ::setenv("HPR_STATE_DIR", "/srv/hpr-state", 1);
  CHECK(default_state_dir() == "/srv/hpr-state");
  ::unsetenv("HPR_STATE_DIR");
  ::setenv("XDG_STATE_HOME", "/tmp/xdg-state", 1);
  CHECK(default_state_dir() == (::geteuid() == 0 ? "/var/lib/hpr" : "/tmp/xdg-state/hpr"));
  ::setenv("HPR_STATE_DIR", "none", 1);  // as the suite runs
  CHECK(state_file("/d", "md5") == "/d/learned-md5.json");
}

TEST_CASE("record_measured: adds, replaces the same setup and traffic, keeps the newest max_points") {
  prof::ConfigTable t;
  t.fingerprint = machine();
  CHECK(record_measured(t, {measured({1, 0}, 5, 40), measured({0, 1}, 7, 50)}, sched::PowerSource::kModel, "gen"));
  REQUIRE(t.points.size() == 2);
  CHECK(t.points[0].device_mask == 1);
  CHECK(t.points[1].device_mask == 2);
  CHECK(t.points[1].throughput_bps == 7e9);
  CHECK(t.points[1].throughput_spread_bps == 0.1e9);
  CHECK(t.points[1].samples == 4);
  CHECK(t.points[1].power_source == sched::PowerSource::kModel);
  CHECK(t.points[1].traffic == "gen");
  record_measured(t, {measured({1, 0}, 6, 40)}, sched::PowerSource::kModel, "gen");  // re-measured: replaced
  REQUIRE(t.points.size() == 2);
  CHECK(t.points[1].throughput_bps == 6e9);
  record_measured(t, {measured({1, 0}, 3, 40)}, sched::PowerSource::kModel, "pcap:x");  // other traffic: added
  CHECK(t.points.size() == 3);
  record_measured(t, {measured({0.5f, 0.5f}, 8, 60)}, sched::PowerSource::kModel, "gen", 2);
  REQUIRE(t.points.size() == 2);  // the oldest went
  CHECK(t.points[1].split[0] == 0.5f);
  std::vector<float> nine(9, 1.f / 9);
  CHECK_FALSE(record_measured(t, {measured(nine, 9, 60)}, sched::PowerSource::kModel, "gen"));  // > kMaxDevices
}

TEST_CASE("best_saved_setup: the policy's best among the run's traffic, unused lanes at the run's batch") {
  prof::ConfigTable t;
  record_measured(t, {measured({1, 0}, 5, 30), measured({0, 1}, 7, 60, 1024), measured({0.5f, 0.5f}, 6.9, 45)},
                  sched::PowerSource::kModel, "gen");
  record_measured(t, {measured({1, 0}, 50, 30)}, sched::PowerSource::kModel, "other");
  sched::BalancerParams p;
  auto s = best_saved_setup(t, p, "gen", 2, 128);
  REQUIRE(s.has_value());
  CHECK(s->weight == std::vector<float>{0, 1});
  CHECK(s->batch == std::vector<uint32_t>{128, 1024});
  p.policy = sched::Policy::kEnergyCritical;  // within δ of the best rate, the fewest nJ per bit: the split
  s = best_saved_setup(t, p, "gen", 2, 128);
  REQUIRE(s.has_value());
  CHECK(s->weight == std::vector<float>{0.5f, 0.5f});
  p.policy = sched::Policy::kThroughputCritical;
  s = best_saved_setup(t, p, "unseen traffic", 2, 128);  // none measured on it: all points
  REQUIRE(s.has_value());
  CHECK(s->weight == std::vector<float>{1, 0});
  auto one = best_saved_setup(t, p, "gen", 1, 128);  // a run of one lane: only the setups within it
  REQUIRE(one.has_value());
  CHECK(one->weight == std::vector<float>{1});
  CHECK_FALSE(best_saved_setup(prof::ConfigTable{}, p, "gen", 2, 128).has_value());
}

TEST_CASE("load_learn_state: missing, kept, corrupt and foreign files") {
  TempDir d;
  std::string path = state_file(d.path.string(), "ipv4");
  auto none = load_learn_state(path, machine());
  CHECK(none.table.points.empty());
  CHECK(none.note.find("no saved state") != std::string::npos);

  prof::ConfigTable t;
  t.fingerprint = machine();
  record_measured(t, {measured({1, 0}, 5, 30)}, sched::PowerSource::kModel, "gen");
  REQUIRE(prof::save_table(path, t).is_ok());
  auto kept = load_learn_state(path, machine());
  CHECK(kept.table.points.size() == 1);
  CHECK(kept.note.find("1 setups measured before") != std::string::npos);

  auto foreign = load_learn_state(path, machine("md5"));  // another app: set aside, afresh
  CHECK(foreign.table.points.empty());
  CHECK(foreign.note.find("set aside as " + path + ".set-aside-") != std::string::npos);
  CHECK_FALSE(fs::exists(path));

  { std::ofstream(path) << "{\"format\": \"hpr-config-table\", \"points\": [tru"; }
  auto corrupt = load_learn_state(path, machine());
  CHECK(corrupt.table.points.empty());
  CHECK(corrupt.note.find("set aside") != std::string::npos);
  CHECK_FALSE(fs::exists(path));
  size_t aside = 0;
  for (const auto& e : fs::directory_iterator(d.path)) aside += e.path().string().find(".set-aside-") != std::string::npos;
  CHECK(aside >= 1);
}

TEST_CASE("a placement of services is kept with its setup, read back, started from; the --table store leaves it out") {
  TempDir d;
  const std::string path = state_file(d.path.string(), "services:a,b,c");
  prof::ConfigTable t;
  t.fingerprint = machine("services:a,b,c");
  sched::MeasuredSetup placed = measured({0.5f, 0.5f}, 9, 30);
  placed.setup.place = {1, -1, -1};
  sched::MeasuredSetup shares = measured({0.5f, 0.5f}, 6, 30);
  shares.setup.place = {-1, -1, -1};  // no service placed: the plain setup
  REQUIRE(record_measured(t, {placed, shares}, sched::PowerSource::kModel, "gen"));
  REQUIRE(t.points.size() == 2);  // same shares and batches, another placement: another setup
  CHECK(t.points[0].place == std::vector<int16_t>{1, -1, -1});
  CHECK(t.points[1].place.empty());
  CHECK_THAT(t.points[0].describe(), Catch::EndsWith(" p=[1,-,-]"));
  REQUIRE(prof::save_table(path, t).is_ok());
  auto kept = load_learn_state(path, machine("services:a,b,c"));
  REQUIRE(kept.table.points.size() == 2);
  CHECK(kept.table.points[0].place == std::vector<int16_t>{1, -1, -1});
  auto s = best_saved_setup(kept.table, {}, "gen", 2, 128);
  REQUIRE(s.has_value());
  CHECK(s->place == std::vector<int16_t>{1, -1, -1});

  sched::ConfigStore store(sched::StoreOptions{});
  auto filled = prof::fill_store(kept.table, store, "gen");
  REQUIRE(filled.is_ok());
  CHECK(filled->inserted == 1);
  CHECK_THAT(filled->note, Catch::Contains("1 points place services"));

  sched::Configuration bad = t.points[0];
  bad.place = {9};
  CHECK_THAT(sched::validate(bad).message(), Catch::Contains("place[0] = 9"));
  nlohmann::json j = t.points[0];
  j["place"] = 1;
  sched::Configuration c;
  CHECK_THROWS(from_json(j, c));
  j["place"] = {0, "x"};
  CHECK_THROWS(from_json(j, c));
}
