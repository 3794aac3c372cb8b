#include <catch2/catch.hpp>

#include "hpr/stats.hpp"
#include "hpr/status.hpp"

using namespace hpr;

static Result<int> parse_positive(int v) {
  if (v <= 0) return error(Code::kInvalidArgument, "value {} must be positive", v);
  return v;
}

TEST_CASE("Result carries a value or an actionable error") {
  auto ok = parse_positive(3);
  REQUIRE(ok.is_ok());
  CHECK(*ok == 3);
  auto bad = parse_positive(-1);
  REQUIRE_FALSE(bad.is_ok());
  CHECK(bad.status().code() == Code::kInvalidArgument);
  CHECK(bad.status().to_string() == "invalid argument: value -1 must be positive");
}

TEST_CASE("percentile interpolates between ranks") {
  std::vector<double> v{1, 2, 3, 4};
  CHECK(median(v) == Approx(2.5));
  CHECK(percentile(v, 0) == 1);
  CHECK(percentile(v, 100) == 4);
}
