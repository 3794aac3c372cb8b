// Median and spread of repeated measurements (hpr/median_spread.hpp): known answers.
#include <catch2/catch.hpp>

#include <cmath>

#include "hpr/median_spread.hpp"

using namespace hpr;

TEST_CASE("median_interval_rank: the order statistics of the median's 87.5 % interval") {
  CHECK(median_interval_rank(1) == 1);
  CHECK(median_interval_rank(4) == 1);
  CHECK(median_interval_rank(6) == 1);
  CHECK(median_interval_rank(7) == 2);
  CHECK(median_interval_rank(9) == 2);
  CHECK(median_interval_rank(10) == 3);
  CHECK(median_interval_rank(12) == 3);
}

TEST_CASE("median_spread: median and the median's confidence interval, known answers") {
  // The three neighbouring batch sizes of one pthread lane measured once each (issue 13): 7.48, 4.77, 5.92
  // Gbit/s. Median 5.92; three samples: the whole range, (7.48 - 4.77) / 2.
  auto a = median_spread({7.48, 4.77, 5.92});
  CHECK(a.median == Approx(5.92));
  CHECK(a.spread == Approx(1.355));
  CHECK(a.relative() == Approx(1.355 / 5.92));
  CHECK(a.n == 3);
  auto b = median_spread({1, 2, 3, 4, 100});
  CHECK(b.median == 3);
  CHECK(b.spread == 49.5);  // five samples: still the whole range
  auto c = median_spread({4, 1, 3, 2});
  CHECK(c.median == Approx(2.5));
  CHECK(c.spread == Approx(1.5));
  // Eight samples: [x(2), x(7)], so the wild first one (a transient) does not count.
  auto d = median_spread({5.5, 9.8, 10.0, 10.1, 10.4, 10.5, 11.0, 11.5});
  CHECK(d.median == Approx(10.25));
  CHECK(d.spread == Approx(0.6));
}

TEST_CASE("median_spread: edge cases") {
  auto none = median_spread({});
  CHECK(none.median == 0);
  CHECK(none.spread == 0);
  CHECK(none.relative() == 0);
  auto one = median_spread({42});
  CHECK(one.median == 42);
  CHECK(one.spread == 0);
  CHECK(one.relative() == 0);
  // A zero median with a non-zero spread has no finite relative spread.
  auto zero = median_spread({-1, 0, 1});
  CHECK(zero.median == 0);
  CHECK(zero.spread == 1);
  CHECK(std::isinf(zero.relative()));
}

TEST_CASE("better_beyond_spread: the medians must be further apart than both spreads and min_gain") {
  CHECK(better_beyond_spread({10, 1, 3}, {7, 1, 3}, 0.02));
  CHECK_FALSE(better_beyond_spread({10, 2, 3}, {7, 1.5, 3}, 0.02));  // 3 < 3.5
  CHECK_FALSE(better_beyond_spread({10.1, 0, 3}, {10, 0, 3}, 0.02));  // 1 % < min_gain
  CHECK_FALSE(better_beyond_spread({7, 1, 3}, {10, 1, 3}, 0.02));
  CHECK(better_beyond_spread({-5, 0.1, 3}, {-8, 0.1, 3}, 0.02));  // negative scores (energy): -5 beats -8
}
