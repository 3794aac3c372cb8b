// app.place = "learned" (pipeline/place_learned.hpp): a chain's apps placed from each app's learned state at the
// start of a run. Known answers on small tables: a placement that beats the whole chain beyond the spreads is taken,
// one within them or with two stages on the host's thread is not, a missing state is named, an unused lane joins the
// last stage at weight 0, and among placements as fast as the fastest the one of least energy a bit wins.
#include "pipeline/place_learned.hpp"

#include <catch2/catch.hpp>

#include "pipeline/learn_state.hpp"

using namespace hpr;

namespace {

const std::string kTraffic = "generator sizes=imix";

// A learned state with the points {weights (summing to 1), Gbit/s, ±Gbit/s, W}.
struct Pt {
  std::vector<float> w;
  double gbps, spread, watts;
};
prof::ConfigTable state(const std::vector<Pt>& pts) {
  prof::ConfigTable t;
  std::vector<sched::MeasuredSetup> m;
  for (const Pt& p : pts) {
    sched::MeasuredSetup x;
    x.setup = {p.w, std::vector<uint32_t>(p.w.size(), 256)};
    x.rate_bps = {p.gbps * 1e9, p.spread * 1e9, 8};
    x.power_w = {p.watts, 1, 8};
    x.latency_p50_ns = {1e4, 1e3, 8};
    x.latency_p99_ns = {5e4, 1e3, 8};
    m.push_back(x);
  }
  record_measured(t, m, sched::PowerSource::kModel, kTraffic);
  return t;
}

LearnedPlacement place(const std::vector<std::string>& apps, const std::vector<std::string>& lanes,
                       const std::vector<prof::ConfigTable>& tables, uint32_t host_lanes = 0) {
  std::vector<const prof::ConfigTable*> have;
  for (const auto& t : tables) have.push_back(&t);
  return place_from_learned(apps, lanes, have, std::vector<std::string>(apps.size()), kTraffic, host_lanes);
}

}  // namespace

TEST_CASE("each app on the lanes it runs fastest on, when that beats the whole chain beyond the spreads") {
  // ipv4 runs 10 Gbit/s on native0 alone, dpi 10 on native1 alone; the whole chain on both lanes is at best
  // 1 / (1/5 + 1/4) = 2.2.
  auto ipv4 = state({{{1, 0}, 10, 0.2, 30}, {{0, 1}, 1, 0.1, 30}, {{0.5, 0.5}, 5, 0.2, 40}});
  auto dpi = state({{{1, 0}, 1, 0.1, 30}, {{0, 1}, 10, 0.2, 30}, {{0.5, 0.5}, 4, 0.2, 40}});
  LearnedPlacement p = place({"ipv4", "dpi"}, {"native0", "native1"}, {ipv4, dpi});
  INFO(p.text);
  REQUIRE(p.app_lanes.size() == 2);
  CHECK(p.app_lanes[0] == std::vector<std::string>{"native0"});
  CHECK(p.app_lanes[1] == std::vector<std::string>{"native1"});
  CHECK(p.weights == std::vector<double>{1, 1});
  CHECK(p.text.find("ipv4 on native0; dpi on native1 (est. 10.000 Gbit/s") == 0);
  CHECK(p.text.find("against the whole chain ipv4,dpi on native0, native1 (est. 2.222 Gbit/s") != std::string::npos);
  // Both lanes run on the host's one thread: two stages there would take turns, so nothing is placed.
  p = place({"ipv4", "dpi"}, {"native0", "native1"}, {ipv4, dpi}, 0b11);
  INFO(p.text);
  CHECK(p.app_lanes.empty());
  CHECK(p.text.find("not placed: no lane set measured for each app on its own lanes") == 0);
}

TEST_CASE("a placement within the spreads of the whole chain is not taken: the whole chain stays, learning") {
  // Placed: min(7, 7) = 7 ± 1 %; the whole chain on both lanes: 1 / (1/12 + 1/12) = 6 ± 30 %. 7 is more than 2 %
  // above 6, but not beyond the spreads.
  auto ipv4 = state({{{1, 0}, 7, 0.07, 30}, {{0, 1}, 1, 0.01, 30}, {{0.5, 0.5}, 12, 3.6, 30}});
  auto dpi = state({{{1, 0}, 1, 0.01, 30}, {{0, 1}, 7, 0.07, 30}, {{0.5, 0.5}, 12, 3.6, 30}});
  LearnedPlacement p = place({"ipv4", "dpi"}, {"native0", "native1"}, {ipv4, dpi});
  INFO(p.text);
  CHECK(p.app_lanes.empty());
  CHECK(p.text.find("not placed: the best placement ipv4 on native0; dpi on native1 (est. 7.000 Gbit/s ±1 %") == 0);
  CHECK(p.text.find("does not beat the whole chain on ipv4,dpi on native0, native1 (est. 6.000") != std::string::npos);
}

TEST_CASE("an app without a learned state: nothing placed, the state named") {
  auto ipv4 = state({{{1, 0}, 10, 0.2, 30}});
  LearnedPlacement p = place_from_learned({"ipv4", "dpi"}, {"native0", "native1"}, {&ipv4, nullptr},
                                          {"", "/state/learned-dpi.json not found"}, kTraffic);
  CHECK(p.app_lanes.empty());
  CHECK(p.text.find("no learned state for dpi (/state/learned-dpi.json not found)") != std::string::npos);
  // And states that never measured an app on lanes of its own: no plan to take.
  auto both = state({{{0.5, 0.5}, 10, 0.2, 30}});
  p = place({"ipv4", "dpi"}, {"native0", "native1"}, {both, both});
  CHECK(p.app_lanes.empty());
  CHECK(p.text.find("no lane set measured for each app on its own lanes") != std::string::npos);
}

TEST_CASE("a lane no stage uses joins the last stage at weight 0; the stage's shares are its point's split") {
  // Three lanes: ipv4 best on A alone, dpi best on B and C split 0.75/0.25; md5 (third) with dpi. The whole chain
  // on A is 1 / (1/8 + 1/1 + 1/1) = 0.47.
  auto ipv4 = state({{{1, 0, 0}, 8, 0.1, 30}});
  auto dpi = state({{{1, 0, 0}, 1, 0.1, 30}, {{0, 0.75, 0.25}, 8, 0.1, 30}});
  auto md5 = state({{{1, 0, 0}, 1, 0.1, 30}, {{0, 0.75, 0.25}, 16, 0.1, 30}, {{0, 1, 0}, 20, 0.1, 30}});
  LearnedPlacement p = place({"ipv4", "dpi", "md5"}, {"A", "B", "C"}, {ipv4, dpi, md5});
  INFO(p.text);
  REQUIRE(p.app_lanes.size() == 3);
  CHECK(p.app_lanes[0] == std::vector<std::string>{"A"});
  CHECK(p.app_lanes[1] == std::vector<std::string>{"B", "C"});
  CHECK(p.app_lanes[2] == std::vector<std::string>{"B", "C"});
  CHECK(p.weights[0] == Approx(1));
  CHECK(p.weights[1] == Approx(0.75));
  CHECK(p.weights[2] == Approx(0.25));
  // Lane C slow for everything: ipv4 on A, dpi,md5 on B; C joins them at weight 0.
  auto dpi2 = state({{{1, 0, 0}, 1, 0.1, 30}, {{0, 1, 0}, 8, 0.1, 30}});
  auto md52 = state({{{1, 0, 0}, 1, 0.1, 30}, {{0, 1, 0}, 16, 0.1, 30}});
  p = place({"ipv4", "dpi", "md5"}, {"A", "B", "C"}, {ipv4, dpi2, md52});
  INFO(p.text);
  REQUIRE(p.app_lanes.size() == 3);
  CHECK(p.app_lanes[1] == std::vector<std::string>{"B", "C"});
  CHECK(p.weights == std::vector<double>{1, 1, 0});
}

TEST_CASE("of the placements as fast as the fastest within their spreads, the one of least energy a bit") {
  // ipv4 on A and dpi on B, or the other way round: 10 against 9.8 Gbit/s (±5 %, a tie), the second at half the
  // power.
  auto ipv4 = state({{{1, 0}, 10, 0.5, 60}, {{0, 1}, 9.8, 0.5, 30}});
  auto dpi = state({{{1, 0}, 9.8, 0.5, 30}, {{0, 1}, 10, 0.5, 60}});
  LearnedPlacement p = place({"ipv4", "dpi"}, {"A", "B"}, {ipv4, dpi});
  INFO(p.text);
  REQUIRE(p.app_lanes.size() == 2);
  CHECK(p.app_lanes[0] == std::vector<std::string>{"B"});
  CHECK(p.app_lanes[1] == std::vector<std::string>{"A"});
}
