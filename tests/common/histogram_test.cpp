#include <catch2/catch.hpp>

#include <cmath>
#include <random>
#include <vector>

#include "hpr/histogram.hpp"

using namespace hpr;

TEST_CASE("every value lands in the bucket whose bounds hold it") {
  for (uint64_t v = 0; v < 100000; ++v) {
    size_t i = LogLinear::index_of(v);
    REQUIRE(LogLinear::lower(i) <= v);
    REQUIRE(v < LogLinear::lower(i) + LogLinear::width(i));
  }
  for (int e = 5; e <= LogLinear::kMaxExp; ++e) {
    uint64_t v = (1ull << e) + 12345 % (1ull << e);
    size_t i = LogLinear::index_of(v);
    CHECK(LogLinear::lower(i) <= v);
    CHECK(v < LogLinear::lower(i) + LogLinear::width(i));
    CHECK(static_cast<double>(LogLinear::width(i)) <= static_cast<double>(v) / 16.0);  // 16 per octave
  }
  CHECK(LogLinear::index_of(~0ull) == LogLinear::kBuckets - 1);
  CHECK(LogLinear::index_of(LogLinear::lower(LogLinear::kBuckets - 1)) == LogLinear::kBuckets - 1);
}

TEST_CASE("percentiles read within 3.2 % of the exact value, not at log2 bounds") {
  LatencyHistogram h;
  h.add(43'000);  // 43 us
  CHECK(std::abs(static_cast<double>(h.percentile_ns(50)) - 43'000.0) <= 0.032 * 43'000);

  LatencyHistogram g;
  std::mt19937_64 rng(7);
  std::lognormal_distribution<double> d(std::log(60'000.0), 0.8);
  std::vector<uint64_t> v;
  for (int i = 0; i < 200000; ++i) {
    v.push_back(static_cast<uint64_t>(d(rng)));
    g.add(v.back());
  }
  std::sort(v.begin(), v.end());
  for (double p : {50.0, 90.0, 99.0}) {
    double exact = static_cast<double>(v[static_cast<size_t>(p / 100.0 * static_cast<double>(v.size()))]);
    double got = static_cast<double>(g.percentile_ns(p));
    INFO("p" << p << " exact " << exact << " got " << got);
    CHECK(std::abs(got - exact) <= 0.032 * exact);
  }
  LatencyHistogram empty;
  CHECK(empty.percentile_ns(99) == 0);
}

TEST_CASE("percentiles of a difference of snapshots") {
  LatencyHistogram h;
  for (int i = 0; i < 100; ++i) h.add(1'000'000);
  auto before = h.counts();
  for (int i = 0; i < 100; ++i) h.add(10'000);
  auto after = h.counts();
  std::vector<uint64_t> d(after.size());
  for (size_t i = 0; i < d.size(); ++i) d[i] = after[i] - before[i];
  CHECK(std::abs(static_cast<double>(LogLinear::percentile(d, 99)) - 10'000.0) <= 320);
}
