#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "scheduler/store/config_store.hpp"

using namespace hpr::sched;

namespace {

constexpr double G = 1e9;

Configuration cfg(uint32_t mask, uint32_t batch, double thr_bps, double lat_ns, double power_w) {
  Configuration c;
  c.device_mask = mask;
  int n = __builtin_popcount(mask);
  for (int d = 0; d < kMaxDevices; ++d) {
    if (!c.uses(d)) continue;
    c.batch[d] = batch;
    c.split[d] = 1.0F / static_cast<float>(n);
  }
  if (n == 3) c.split[2] = 1.0F - 2.0F / 3.0F * 1.0F;  // keep the sum at 1 in float
  c.throughput_bps = thr_bps;
  c.latency_ns = lat_ns;
  c.latency_p99_ns = lat_ns * 1.5;
  c.power_w = power_w;
  c.power_source = PowerSource::kModel;
  return c;
}

}  // namespace

TEST_CASE("validate rejects bad configurations with the field name") {
  Configuration c = cfg(0b1, 64, 1 * G, 1e3, 10);
  REQUIRE(validate(c).is_ok());
  auto empty = c;
  empty.device_mask = 0;
  CHECK(validate(empty).message().find("device_mask") != std::string::npos);
  auto nobatch = c;
  nobatch.batch[0] = 0;
  CHECK(validate(nobatch).message().find("batch[0]") != std::string::npos);
  auto badsplit = c;
  badsplit.split[0] = 0.5F;
  CHECK(validate(badsplit).message().find("split") != std::string::npos);
  auto negpower = c;
  negpower.power_w = -1;
  CHECK(validate(negpower).message().find("power_w") != std::string::npos);
  ConfigStore s;
  CHECK_FALSE(s.insert(empty).is_ok());
}

TEST_CASE("exact and nearest lookups in each tree") {
  ConfigStore s;
  REQUIRE(s.insert(cfg(0b001, 64, 10 * G, 100e3, 50)).is_ok());
  REQUIRE(s.insert(cfg(0b010, 64, 20 * G, 200e3, 80)).is_ok());
  REQUIRE(s.insert(cfg(0b100, 64, 40 * G, 400e3, 160)).is_ok());
  CHECK(s.node_count(Metric::kThroughput) == 3);

  auto ex = s.find_exact(Metric::kThroughput, 20 * G);
  REQUIRE(ex);
  CHECK(ex->size == 1);
  CHECK(s.get(ex->best_by[static_cast<int>(Metric::kPower)]).device_mask == 0b010);
  CHECK_FALSE(s.find_exact(Metric::kThroughput, 21 * G));

  CHECK(s.find_nearest(Metric::kThroughput, 14 * G)->key == 10 * G);
  CHECK(s.find_nearest(Metric::kThroughput, 16 * G)->key == 20 * G);
  CHECK(s.find_nearest(Metric::kThroughput, 1 * G)->key == 10 * G);    // below the smallest
  CHECK(s.find_nearest(Metric::kThroughput, 100 * G)->key == 40 * G);  // above the largest
  CHECK(s.find_nearest(Metric::kPower, 150)->key == 160);
  CHECK(s.find_nearest(Metric::kLatency, 190e3)->key == 200e3);
  CHECK_FALSE(ConfigStore().find_nearest(Metric::kPower, 1));
}

TEST_CASE("nodes within delta of their neighbour are merged; members ordered by the other metrics") {
  ConfigStore s(StoreOptions{.delta = 0.10});
  // 10.0, 10.5 and 9.5 Gbit/s are within 10 % of the 10 Gbit/s node; 12 is not.
  auto a = *s.insert(cfg(0b001, 64, 10.0 * G, 300e3, 60));
  auto b = *s.insert(cfg(0b001, 128, 10.5 * G, 100e3, 90));
  auto c = *s.insert(cfg(0b001, 256, 9.5 * G, 200e3, 40));
  auto d = *s.insert(cfg(0b001, 512, 12.0 * G, 500e3, 70));
  CHECK(s.node_count(Metric::kThroughput) == 2);
  auto node = s.find_exact(Metric::kThroughput, 10.0 * G);
  REQUIRE(node);
  CHECK(node->size == 3);
  CHECK(node->best_by[static_cast<int>(Metric::kPower)] == c);    // least power (reversed, normalised)
  CHECK(node->best_by[static_cast<int>(Metric::kLatency)] == b);  // least latency
  CHECK(s.find_exact(Metric::kThroughput, 12.0 * G)->best_by[static_cast<int>(Metric::kPower)] == d);
  // Power tree: 60, 90, 40, 70 → 60 and 70 are apart by 16 % > δ; nothing merges there.
  CHECK(s.node_count(Metric::kPower) == 4);
  (void)a;
}

TEST_CASE("the three policies pick the right configuration on a hand-made table") {
  ConfigStore s;
  // id0: iGPU-like: slow, frugal.  id1: CPU-like: fast, low latency.  id2: dGPU-like: fastest, hungry, slow.
  auto igpu = *s.insert(cfg(0b010, 1024, 5 * G, 400e3, 40));
  auto cpu = *s.insert(cfg(0b001, 64, 20 * G, 50e3, 90));
  auto dgpu = *s.insert(cfg(0b100, 8192, 30 * G, 3000e3, 200));
  auto pair = *s.insert(cfg(0b011, 1024, 24 * G, 420e3, 110));

  SECTION("energy-critical: least power that sustains R") {
    CHECK(s.best({Policy::kEnergyCritical, 1 * G}) == igpu);
    CHECK(s.best({Policy::kEnergyCritical, 5 * G}) == igpu);
    CHECK(s.best({Policy::kEnergyCritical, 6 * G}) == cpu);
    CHECK(s.best({Policy::kEnergyCritical, 22 * G}) == pair);
    CHECK(s.best({Policy::kEnergyCritical, 28 * G}) == dgpu);
    CHECK(s.best({Policy::kEnergyCritical, 99 * G}) == dgpu);  // nothing sustains: the most throughput
  }
  SECTION("latency-critical: least latency that sustains R") {
    CHECK(s.best({Policy::kLatencyCritical, 1 * G}) == cpu);
    CHECK(s.best({Policy::kLatencyCritical, 21 * G}) == pair);
    CHECK(s.best({Policy::kLatencyCritical, 25 * G}) == dgpu);
  }
  SECTION("throughput-critical: the most throughput") { CHECK(s.best({Policy::kThroughputCritical}) == dgpu); }
  SECTION("latency target: least power within the latency target that sustains R") {
    CHECK(s.best({Policy::kLatencyTarget, 1 * G, 1000e3}) == igpu);
    CHECK(s.best({Policy::kLatencyTarget, 1 * G, 100e3}) == cpu);   // iGPU p99 600 µs misses 100 µs
    CHECK(s.best({Policy::kLatencyTarget, 22 * G, 700e3}) == pair);
    CHECK(s.best({Policy::kLatencyTarget, 28 * G, 100e3}) == dgpu);  // unreachable target: lowest latency
  }
  CHECK(ConfigStore().best({Policy::kEnergyCritical, 1 * G}) == kNoConfig);
}

TEST_CASE("update after drift: only beyond delta, and the policies see the new values") {
  ConfigStore s;
  auto igpu = *s.insert(cfg(0b010, 1024, 10 * G, 400e3, 40));
  auto cpu = *s.insert(cfg(0b001, 64, 20 * G, 50e3, 90));
  CHECK(s.best({Policy::kEnergyCritical, 8 * G}) == igpu);
  // 5 % lower: within δ, ignored.
  CHECK_FALSE(s.update(igpu, 9.5 * G, 400e3, 600e3, 40, PowerSource::kModel));
  CHECK(s.get(igpu).throughput_bps == 10 * G);
  // Throttled to 6 Gbit/s: stored, trees re-indexed, energy policy moves to the CPU for 8 Gbit/s.
  CHECK(s.update(igpu, 6 * G, 400e3, 600e3, 40, PowerSource::kRapl));
  CHECK(s.get(igpu).throughput_bps == 6 * G);
  CHECK(s.get(igpu).power_source == PowerSource::kRapl);
  CHECK(s.find_exact(Metric::kThroughput, 6 * G));
  CHECK_FALSE(s.find_exact(Metric::kThroughput, 10 * G));
  CHECK(s.best({Policy::kEnergyCritical, 8 * G}) == cpu);
  // Re-inserting the same setup updates in place rather than duplicating.
  auto again = s.insert(cfg(0b010, 1024, 12 * G, 400e3, 40));
  REQUIRE(again);
  CHECK(*again == igpu);
  CHECK(s.size() == 2);
  CHECK(s.best({Policy::kEnergyCritical, 8 * G}) == igpu);
}

TEST_CASE("policy and power-source names round trip; bad names are refused") {
  for (auto p : {Policy::kEnergyCritical, Policy::kLatencyCritical, Policy::kThroughputCritical,
                 Policy::kLatencyTarget})
    CHECK(*parse_policy(policy_name(p)) == p);
  CHECK(parse_policy("fast").status().message().find("'fast'") != std::string::npos);
  CHECK(*parse_power_source("nvml") == PowerSource::kNvml);
  CHECK_FALSE(parse_power_source("guess").is_ok());
}

TEST_CASE("configuration json round trip") {
  Configuration c = cfg(0b101, 2048, 12.5 * G, 1234, 77.5);
  c.split[0] = 0.25F;
  c.split[2] = 0.75F;
  nlohmann::json j = c;
  Configuration back = j.get<Configuration>();
  CHECK(back.same_setup(c));
  CHECK(back.throughput_bps == c.throughput_bps);
  CHECK(back.power_source == PowerSource::kModel);
  CHECK(back.describe() == "dev{0,2} b=[2048,2048] s=[0.25,0.75]");
}

namespace {

Configuration with_spread(Configuration c, double thr_spread_bps, double lat_spread_ns, double power_spread_w) {
  c.throughput_spread_bps = thr_spread_bps;
  c.latency_spread_ns = lat_spread_ns;
  c.power_spread_w = power_spread_w;
  c.samples = 5;
  return c;
}

}  // namespace

TEST_CASE("validate names a bad spread or sample count") {
  Configuration c = with_spread(cfg(0b1, 64, 1 * G, 1e3, 10), 1e7, 10, 0.5);
  REQUIRE(validate(c).is_ok());
  auto neg = c;
  neg.power_spread_w = -0.5;
  CHECK(validate(neg).message().find("power_spread_w") != std::string::npos);
  auto inf = c;
  inf.throughput_spread_bps = std::numeric_limits<double>::infinity();
  CHECK(validate(inf).message().find("throughput_spread_bps") != std::string::npos);
  auto nan = c;
  nan.latency_p99_spread_ns = std::nan("");
  CHECK(validate(nan).message().find("latency_p99_spread_ns") != std::string::npos);
  auto none = c;
  none.samples = 0;
  CHECK(validate(none).message().find("samples") != std::string::npos);
}

TEST_CASE("energy policy: a power difference within the two spreads is a tie, won by the lower latency") {
  // One lane at two batch sizes, both sustaining 8 Gbit/s; 47 vs 50 W is 6 % apart (beyond tie_tolerance).
  auto small = cfg(0b1, 64, 10 * G, 100e3, 50);
  auto large = cfg(0b1, 128, 10 * G, 200e3, 47);
  {
    ConfigStore s;  // exact figures (spread 0): the less power wins, as before
    REQUIRE(s.insert(small));
    auto l = *s.insert(large);
    CHECK(s.best({Policy::kEnergyCritical, 8 * G}) == l);
  }
  {
    ConfigStore s;  // ±3 W each: 3 W apart is within 6 W, a tie; the lower latency wins
    auto a = *s.insert(with_spread(small, 0, 0, 3));
    REQUIRE(s.insert(with_spread(large, 0, 0, 3)));
    CHECK(s.best({Policy::kEnergyCritical, 8 * G}) == a);
  }
  {
    ConfigStore s;  // one spread is enough: 3 W apart, ±4 W and ±0
    auto a = *s.insert(with_spread(small, 0, 0, 4));
    REQUIRE(s.insert(large));
    CHECK(s.best({Policy::kEnergyCritical, 8 * G}) == a);
  }
  {
    ConfigStore s;  // ±1 W each: 3 W apart is a real difference; the less power wins
    REQUIRE(s.insert(with_spread(small, 0, 0, 1)));
    auto l = *s.insert(with_spread(large, 0, 0, 1));
    CHECK(s.best({Policy::kEnergyCritical, 8 * G}) == l);
  }
}

TEST_CASE("latency policy: a latency difference within the spreads is a tie, won by the lower power") {
  auto fast = cfg(0b01, 64, 10 * G, 90e3, 60);
  auto frugal = cfg(0b10, 64, 10 * G, 100e3, 40);
  ConfigStore exact;
  auto f = *exact.insert(fast);
  REQUIRE(exact.insert(frugal));
  CHECK(exact.best({Policy::kLatencyCritical, 5 * G}) == f);
  ConfigStore noisy;
  REQUIRE(noisy.insert(with_spread(fast, 0, 8e3, 0)));
  auto g = *noisy.insert(with_spread(frugal, 0, 8e3, 0));
  CHECK(noisy.best({Policy::kLatencyCritical, 5 * G}) == g);
}

TEST_CASE("throughput policy: throughputs within their spreads tie, the lower power wins") {
  auto dear = cfg(0b01, 64, 10.6 * G, 100e3, 80);
  auto cheap = cfg(0b10, 64, 10.0 * G, 100e3, 60);
  auto far = cfg(0b11, 64, 8.0 * G, 100e3, 30);  // 2.6 Gbit/s below the top: beyond any spread here
  ConfigStore exact;
  auto d = *exact.insert(dear);
  REQUIRE(exact.insert(cheap));
  REQUIRE(exact.insert(far));
  CHECK(exact.best({Policy::kThroughputCritical}) == d);
  ConfigStore noisy;  // 0.6 Gbit/s apart, ±0.5 each
  REQUIRE(noisy.insert(with_spread(dear, 0.5 * G, 0, 0)));
  auto c = *noisy.insert(with_spread(cheap, 0.5 * G, 0, 0));
  REQUIRE(noisy.insert(with_spread(far, 0.5 * G, 0, 0)));
  CHECK(noisy.best({Policy::kThroughputCritical}) == c);
  // Nothing sustains 50 Gbit/s: the same fallback answer.
  CHECK(noisy.best({Policy::kEnergyCritical, 50 * G}) == c);
  ConfigStore tight;  // ±0.2 each: 0.6 apart is a difference
  auto t = *tight.insert(with_spread(dear, 0.2 * G, 0, 0));
  REQUIRE(tight.insert(with_spread(cheap, 0.2 * G, 0, 0)));
  CHECK(tight.best({Policy::kThroughputCritical}) == t);
}

TEST_CASE("latency target: powers within their spreads tie, the lower latency that meets the target wins") {
  auto a = cfg(0b001, 64, 10 * G, 200e3, 40);   // p99 300 µs
  auto b = cfg(0b010, 64, 10 * G, 100e3, 42);   // p99 150 µs
  auto miss = cfg(0b100, 64, 10 * G, 50e3, 41);  // p99 75 µs, but slow
  miss.throughput_bps = 1 * G;
  ConfigStore exact;
  auto ea = *exact.insert(a);
  REQUIRE(exact.insert(b));
  REQUIRE(exact.insert(miss));
  CHECK(exact.best({Policy::kLatencyTarget, 5 * G, 400e3}) == ea);
  ConfigStore noisy;  // 2 W apart, ±3 W each; `miss` ties on power too but does not sustain 5 Gbit/s
  REQUIRE(noisy.insert(with_spread(a, 0, 0, 3)));
  auto nb = *noisy.insert(with_spread(b, 0, 0, 3));
  REQUIRE(noisy.insert(with_spread(miss, 0, 0, 3)));
  CHECK(noisy.best({Policy::kLatencyTarget, 5 * G, 400e3}) == nb);
  // A tied configuration with the lower median latency but a p99 beyond the target does not take it.
  auto b_tail = with_spread(b, 0, 0, 3);
  b_tail.latency_p99_ns = 500e3;
  ConfigStore tail;
  auto ta = *tail.insert(with_spread(a, 0, 0, 3));
  REQUIRE(tail.insert(b_tail));
  CHECK(tail.best({Policy::kLatencyTarget, 5 * G, 400e3}) == ta);
}

TEST_CASE("a live update keeps the spreads and counts one sample") {
  ConfigStore s;
  auto id = *s.insert(with_spread(cfg(0b1, 64, 10 * G, 100e3, 50), 1 * G, 5e3, 2));
  REQUIRE(s.update(id, 5 * G, 100e3, 150e3, 50, PowerSource::kModel));
  CHECK(s.get(id).samples == 1);
  CHECK(s.get(id).throughput_spread_bps == 1 * G);
  CHECK(s.get(id).power_spread_w == 2);
}

namespace {

// Random inserts and updates after the first query must answer as a store built from scratch. `spread`: also
// give every configuration random spreads (ties decided by them, not only by tie_tolerance).
void check_incremental_equals_rebuild(bool spread) {
  // Coarse values so that many throughputs are equal and many powers / latencies tie within tie_tolerance.
  std::mt19937 rng(7);
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
  auto thr = [&] { return (1 + pick(12)) * 2.5 * G; };
  auto lat = [&] { return (1 + pick(6)) * 100e3 * (1 + 0.005 * pick(3)); };
  auto pw = [&] { return (20 + 10 * pick(8)) * (1 + 0.005 * pick(3)); };
  ConfigStore s;
  std::vector<Configuration> setups;
  for (uint32_t b = 64; b <= 65536; b *= 2)
    for (uint32_t mask = 1; mask < 8; ++mask) {
      setups.push_back(cfg(mask, b, thr(), lat(), pw()));
      if (spread) setups.back() = with_spread(setups.back(), pick(4) * 1.25 * G, pick(3) * 50e3, pick(4) * 5.0);
    }
  for (size_t i = 0; i < setups.size() / 2; ++i) REQUIRE(s.insert(setups[i]));
  std::vector<Query> queries{{Policy::kThroughputCritical}};
  for (double r = 0; r <= 32 * G; r += 1.25 * G) {
    queries.push_back({Policy::kEnergyCritical, r});
    queries.push_back({Policy::kLatencyCritical, r});
    queries.push_back({Policy::kLatencyTarget, r, 300e3});
  }
  // Hand-made first: the cheapest configuration gets dearer without moving in the throughput order, and one
  // further down the order becomes the answer (the refold must not stop at the unchanged minimum id).
  {
    ConfigStore h;
    auto a = *h.insert(cfg(0b001, 64, 1 * G, 100e3, 25));
    (void)*h.insert(cfg(0b010, 64, 2 * G, 100e3, 40));
    auto x = *h.insert(cfg(0b100, 64, 3 * G, 100e3, 20));
    CHECK(h.best({Policy::kEnergyCritical, 0}) == x);
    REQUIRE(h.update(x, 3 * G, 100e3, 150e3, 30, PowerSource::kModel));
    CHECK(h.best({Policy::kEnergyCritical, 0}) == a);
  }
  size_t next = setups.size() / 2;
  for (int round = 0; round < 200; ++round) {
    (void)s.best(queries[0]);  // the policy indexes exist from here on: the changes below are incremental
    if (next < setups.size() && pick(3) == 0) {
      REQUIRE(s.insert(setups[next++]));
    } else {
      auto id = static_cast<ConfigId>(pick(static_cast<int>(s.size())));
      double p = pick(2) ? pw() : s.get(id).power_w;  // sometimes power only, sometimes throughput only
      double t = p == s.get(id).power_w ? thr() : s.get(id).throughput_bps;
      s.update(id, t, lat(), 1.5 * lat(), p, PowerSource::kModel);
    }
    ConfigStore fresh;  // the same configurations, same ids, indexes built once at the first query
    for (ConfigId id = 0; id < s.size(); ++id) REQUIRE(fresh.insert(s.get(id)));
    for (const auto& q : queries) {
      INFO("round " << round << " policy " << policy_name(q.policy) << " rate " << q.rate_bps / G);
      CHECK(s.best(q) == fresh.best(q));
    }
  }
}

}  // namespace

TEST_CASE("inserts and updates after the first query answer as a store built from scratch, ties included") {
  check_incremental_equals_rebuild(false);
}

TEST_CASE("inserts and updates after the first query answer as a store built from scratch, with spreads") {
  check_incremental_equals_rebuild(true);
}
