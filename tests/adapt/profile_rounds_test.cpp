// Repeated, interleaved samples of `hpr profile` (pipeline/profile_rounds.hpp): the rounds of a block, when a
// block ends, the medians and spreads written into a point, the flags' checks. Deterministic: no pipeline.
#include <catch2/catch.hpp>

#include <limits>
#include <vector>

#include "pipeline/profile_rounds.hpp"

using namespace hpr;

namespace {

sched::Configuration lane(int dev, uint32_t batch) {
  sched::Configuration c;
  c.device_mask = 1U << dev;
  c.batch[dev] = batch;
  c.split[dev] = 1;
  return c;
}

PointSample rate(double gbps, double watts = 20) { return {gbps * 1e9, 1e5, 2e5, watts}; }

}  // namespace

TEST_CASE("summarize: medians, spreads (half-widths of the medians' intervals) and the sample count") {
  // The pthread lane's neighbours of issue 13, measured three times at one batch size.
  auto c = summarize(lane(0, 64), {{7.48e9, 100e3, 900e3, 20.0},
                                   {4.77e9, 140e3, 700e3, 21.0},
                                   {5.92e9, 120e3, 800e3, 23.0}});
  CHECK(c.throughput_bps == Approx(5.92e9));
  CHECK(c.throughput_spread_bps == Approx(1.355e9));  // three samples: half the range
  CHECK(c.latency_ns == Approx(120e3));
  CHECK(c.latency_spread_ns == Approx(20e3));
  CHECK(c.latency_p99_ns == Approx(800e3));
  CHECK(c.latency_p99_spread_ns == Approx(100e3));
  CHECK(c.power_w == Approx(21.0));
  CHECK(c.power_spread_w == Approx(1.5));
  CHECK(c.samples == 3);
  CHECK(c.same_setup(lane(0, 64)));
  CHECK_FALSE(within_spread(c, 0.2));  // 1.355 / 5.92 = 0.23
  CHECK(within_spread(c, 0.25));
  auto one = summarize(lane(0, 64), {rate(3)});
  CHECK(one.throughput_spread_bps == 0);
  CHECK(one.samples == 1);
  CHECK(within_spread(one, 0));
}

TEST_CASE("blocks: consecutive points of one device set and split") {
  std::vector<sched::Configuration> grid{lane(0, 64), lane(0, 128), lane(1, 64), lane(1, 128), lane(1, 256)};
  auto pair = [](uint32_t b, float s0) {
    sched::Configuration c;
    c.device_mask = 0b11;
    c.batch = {b, b};
    c.split = {s0, 1 - s0};
    return c;
  };
  grid.push_back(pair(64, 0.25F));
  grid.push_back(pair(128, 0.25F));
  grid.push_back(pair(64, 0.5F));
  auto b = profile_blocks(grid);
  REQUIRE(b.size() == 4);
  CHECK(b[0] == std::pair<size_t, size_t>{0, 2});
  CHECK(b[1] == std::pair<size_t, size_t>{2, 5});
  CHECK(b[2] == std::pair<size_t, size_t>{5, 7});
  CHECK(b[3] == std::pair<size_t, size_t>{7, 8});
  CHECK(profile_blocks({}).empty());
}

TEST_CASE("rounds: each point once per round, in order; the block ends at min_samples when all are within δ") {
  std::vector<sched::Configuration> grid{lane(0, 32), lane(0, 64), lane(0, 128), lane(0, 256)};
  BlockRounds r(grid, 1, 4, {.min_samples = 3, .max_samples = 7, .spread_delta = 0.05});
  REQUIRE(r.size() == 3);
  std::vector<size_t> visited;
  while (!r.done()) {
    visited.push_back(r.next());
    r.record(rate(static_cast<double>(r.next())));  // steady: 1, 2, 3 Gbit/s, spread 0
  }
  CHECK(visited == std::vector<size_t>{1, 2, 3, 1, 2, 3, 1, 2, 3});
  CHECK(r.rounds() == 3);
  auto pts = r.points(1);
  REQUIRE(pts.size() == 3);
  CHECK(pts[1].batch[0] == 128);
  CHECK(pts[1].throughput_bps == 2e9);
  CHECK(pts[1].samples == 3);
  r.record(rate(9));  // done: ignored
  CHECK(r.points(1)[0].samples == 3);
}

TEST_CASE("rounds: one noisy point keeps the whole block sampling, until max_samples") {
  std::vector<sched::Configuration> grid{lane(0, 64), lane(0, 128)};
  BlockRounds r(grid, 0, 2, {.min_samples = 3, .max_samples = 6, .spread_delta = 0.05});
  int k = 0;
  while (!r.done()) {
    bool noisy = r.next() == 1;
    // Relative spread after 3, 4, 5, 6 samples: 1/5, 0.5/4.75, 0.5/5, 0.65/4.75 — never within 0.05.
    const double noise[] = {4.0, 5.0, 6.0, 4.5, 5.5, 4.2};
    r.record(rate(noisy ? noise[k] : 5.0));
    k += noisy ? 1 : 0;
  }
  CHECK(r.rounds() == 6);
  auto pts = r.points(1);
  CHECK(pts[0].samples == 6);
  CHECK(pts[1].samples == 6);
  CHECK(within_spread(pts[0], 0.05));
  CHECK_FALSE(within_spread(pts[1], 0.05));
}

TEST_CASE("rounds: a spread that comes within δ after min_samples ends the block there") {
  std::vector<sched::Configuration> grid{lane(0, 64)};
  BlockRounds r(grid, 0, 1, {.min_samples = 3, .max_samples = 9, .spread_delta = 0.05});
  for (double g : {5.0, 5.1, 5.05}) r.record(rate(g));  // median 5.05, spread 0.05 (0.01): within δ at round 3
  CHECK(r.done());
  BlockRounds s(grid, 0, 1, {.min_samples = 3, .max_samples = 9, .spread_delta = 0.05});
  for (double g : {5.0, 8.0, 3.0}) s.record(rate(g));  // median 5, spread 2.5
  CHECK_FALSE(s.done());
  for (double g : {5.1, 4.9, 5.05}) s.record(rate(g));  // six samples: still the whole range
  CHECK_FALSE(s.done());
  s.record(rate(4.95));  // seven: [x(2), x(6)] = [4.9, 5.1], spread 0.1 (0.02)
  CHECK(s.done());
  CHECK(s.rounds() == 7);
}

TEST_CASE("rounds: power counts for the spread as throughput does") {
  std::vector<sched::Configuration> grid{lane(0, 64)};
  BlockRounds r(grid, 0, 1, {.min_samples = 2, .max_samples = 4, .spread_delta = 0.05});
  for (double w : {10.0, 14.0}) r.record(rate(5, w));  // power median 12, spread 2
  CHECK_FALSE(r.done());
}

TEST_CASE("rounds interrupted mid-round: the points with min_samples samples are a prefix of the block") {
  std::vector<sched::Configuration> grid{lane(0, 64), lane(0, 128), lane(0, 256)};
  BlockRounds r(grid, 0, 3, {.min_samples = 3, .max_samples = 7, .spread_delta = 0.05});
  for (int i = 0; i < 7; ++i) r.record(rate(5));  // two rounds and the first point of the third
  CHECK_FALSE(r.done());
  auto kept = r.points(3);
  REQUIRE(kept.size() == 1);
  CHECK(kept[0].batch[0] == 64);
  CHECK(r.points(2).size() == 3);
  CHECK(r.point(1).samples == 2);
}

TEST_CASE("sampling flags are checked, the error names the flag") {
  CHECK(validate(SampleRule{}).is_ok());
  CHECK(validate(SampleRule{.min_samples = 1, .max_samples = 1, .spread_delta = 0}).is_ok());
  auto msg = [](SampleRule r) { return validate(r).message(); };
  CHECK(msg({.min_samples = 0, .max_samples = 7, .spread_delta = 0.05}).find("--min-samples 0") != std::string::npos);
  CHECK(msg({.min_samples = 5, .max_samples = 3, .spread_delta = 0.05}).find("--max-samples 3") != std::string::npos);
  CHECK(msg({.min_samples = 3, .max_samples = 5000, .spread_delta = 0.05}).find("--max-samples 5000") !=
        std::string::npos);
  CHECK(msg({.min_samples = 3, .max_samples = 7, .spread_delta = -0.1}).find("--spread -0.1") != std::string::npos);
  CHECK(msg({.min_samples = 3, .max_samples = 7, .spread_delta = std::numeric_limits<double>::quiet_NaN()})
            .find("--spread") != std::string::npos);
  CHECK(validate(SampleRule{.min_samples = 0}).code() == Code::kInvalidArgument);
}
