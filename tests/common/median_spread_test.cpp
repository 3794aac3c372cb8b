// Median and spread of repeated measurements (hpr/median_spread.hpp): known answers.
#include <catch2/catch.hpp>

#include <cmath>

#include "hpr/median_spread.hpp"

using namespace hpr;

TEST_CASE("median_spread: median and median absolute deviation, known answers") {
  // The three neighbouring batch sizes of one pthread lane measured once each (issue 13): 7.48, 4.77, 5.92
  // Gbit/s. Median 5.92; deviations 1.56, 1.15, 0 → MAD 1.15.
  auto a = median_spread({7.48, 4.77, 5.92});
  CHECK(a.median == Approx(5.92));
  CHECK(a.spread == Approx(1.15));
  CHECK(a.relative() == Approx(1.15 / 5.92));
  // One outlier does not inflate the spread (half the range would be 49.5).
  auto b = median_spread({1, 2, 3, 4, 100});
  CHECK(b.median == 3);
  CHECK(b.spread == 1);
  // Even count: both medians interpolate. {1,2,3,4}: median 2.5, deviations 1.5, .5, .5, 1.5 → 1.
  auto c = median_spread({4, 1, 3, 2});
  CHECK(c.median == Approx(2.5));
  CHECK(c.spread == Approx(1.0));
  // More agreeing samples shrink it: {10, 12} has MAD 1, {10, 12, 11, 11, 11} has 0.
  CHECK(median_spread({10, 12}).spread == Approx(1));
  CHECK(median_spread({10, 12, 11, 11, 11}).spread == 0);
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
