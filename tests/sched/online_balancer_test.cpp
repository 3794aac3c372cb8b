// OnlineBalancer (learning mode) against simulated runs: lanes that share cores, noisy samples, a settling quantum
// after each change, a lane slowed down mid-run, the energy policy dropping a lane that does not pay for itself.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <random>
#include <utility>

#include "scheduler/adaptive/online_balancer.hpp"
#include "hpr/median_spread.hpp"

using namespace hpr::sched;

namespace {

constexpr uint64_t kQuantumNs = 40'000'000;

// A run under saturation (the input is paced by backpressure, so offered = achieved): `rate(setup)` in Gbit/s,
// multiplied by uniform noise of ±noise; the quantum after a change measures a transition (half the rate).
struct World {
  std::function<double(const Setup&)> rate;
  std::function<double(const Setup&)> power = [](const Setup&) { return 50.0; };
  std::function<double(const Setup&)> p99_ns = [](const Setup&) { return 0.0; };  // 0: not measured
  std::vector<double> cap;  // per lane alone, for lane_util
  double noise = 0.1;
  std::mt19937_64 rng{7};
  Setup last;
  uint64_t now = 0;

  QuantumFigures quantum(const Setup& s) {
    std::uniform_real_distribution<double> u(1 - noise, 1 + noise);
    double g = rate(s) * u(rng) * (s == last || last.weight.empty() ? 1.0 : 0.5);
    last = s;
    now += kQuantumNs;
    QuantumFigures q{.now_ns = now, .offered_bps = g * 1e9, .achieved_bps = g * 1e9, .power_w = power(s),
                     .latency_p99_ns = p99_ns(s) * u(rng)};
    for (size_t i = 0; i < s.weight.size(); ++i) {  // a lane with no capacity hangs: busy, nothing delivered
      q.lane_bps.push_back(cap[i] > 0 ? g * 1e9 * s.weight[i] : 0);
      q.lane_util.push_back(cap[i] > 0 ? std::min(1.0, g * s.weight[i] / cap[i]) : s.weight[i] > 0 ? 1.0 : 0);
    }
    return q;
  }
};

// Lanes on one CPU: the run is bounded by the lane that saturates first, and every extra active lane takes
// `contention` of the others' cores. A lane of capacity 0 hangs: it keeps its cores busy and its share of the input
// is lost.
std::function<double(const Setup&)> shared_cores(std::vector<double> cap, double contention) {
  return [cap, contention](const Setup& s) {
    double r = 1e18, lost = 0;
    int active = 0;
    for (size_t i = 0; i < cap.size(); ++i) {
      if (s.weight[i] <= 0) continue;
      ++active;
      if (cap[i] > 0) r = std::min(r, cap[i] / s.weight[i]);
      else lost += s.weight[i];
    }
    return lost >= 1 ? 0 : r * (1 - lost) / (1 + contention * (active - 1));
  };
}

// The best static setup over a grid of shares (steps of 1/16) for three lanes.
double best_static(const std::function<double(const Setup&)>& f, size_t n, std::vector<uint32_t> batch) {
  double best = 0;
  for (int a = 0; a <= 16; ++a)
    for (int b = 0; a + b <= 16; ++b) {
      Setup s{{a / 16.f, b / 16.f, (16 - a - b) / 16.f}, batch};
      if (n == 2 && a + b != 16) continue;
      s.weight.resize(n);
      best = std::max(best, f(s));
    }
  return best;
}

// Lanes whose power adds per busy lane (the models do; a meter measures the same): 6 W idle once, and lane i's dyn[i]
// watts × its busy share. The run carries the offered rate up to the lane that saturates first; figures ±1 %.
struct PowerAdds {
  std::vector<double> cap, dyn{14, 24, 6};
  std::mt19937_64 rng;
  uint64_t now = 0;

  QuantumFigures quantum(const Setup& s, double offered_gbps) {
    std::uniform_real_distribution<double> jitter(0.99, 1.01);
    now += kQuantumNs;
    double g = offered_gbps, watts = 6;
    for (size_t l = 0; l < cap.size(); ++l)
      if (s.weight[l] > 0) g = std::min(g, cap[l] / s.weight[l]);
    QuantumFigures q{.now_ns = now, .offered_bps = offered_gbps * 1e9 * jitter(rng), .achieved_bps = g * 1e9 * jitter(rng)};
    for (size_t l = 0; l < cap.size(); ++l) {
      const double busy = std::min(1.0, g * s.weight[l] / cap[l]);
      watts += dyn[l] * busy;
      q.lane_bps.push_back(g * 1e9 * s.weight[l]);
      q.lane_util.push_back(busy);
    }
    q.power_w = watts * jitter(rng);
    return q;
  }
};

OnlineBalancer make(size_t n, BalancerParams p = {}, std::optional<Setup> start = {}) {
  auto b = OnlineBalancer::create(p, std::vector<uint32_t>(n, 256), std::vector<uint32_t>(n, 0), start);
  REQUIRE(b.is_ok());
  return std::move(*b);
}

void run(OnlineBalancer& b, World& w, int quanta) {
  for (int i = 0; i < quanta; ++i) b.step(w.quantum(b.setup()));
}

// Three lanes on one CPU (any mix is worse than lane 0 alone), run until the learner holds lane 0 alone.
std::pair<World, OnlineBalancer> held_on_lane0() {
  std::vector<double> cap{3.0, 1.0, 0.5};
  World w{.rate = shared_cores(cap, 1.0), .cap = cap, .noise = 0.05};
  auto b = make(3);
  run(b, w, 300);
  REQUIRE(b.incumbent().weight[0] > 0.99f);
  REQUIRE(std::string(b.phase_name()) == "hold");
  return {std::move(w), std::move(b)};
}

// The whole machine at `f` of its speed (a VM's steal time, another process): every setup's rate and what each lane's
// busy time delivers fall alike, so no lane's own rate per busy second changes. Returns what restores it.
std::function<void()> slow_machine(World& w, double f) {
  auto rate = w.rate;
  const std::vector<double> cap = w.cap;
  w.rate = [rate, f](const Setup& s) { return f * rate(s); };
  for (double& c : w.cap) c *= f;
  return [&w, rate, cap] {
    w.rate = rate;
    w.cap = cap;
  };
}

// Independent devices (the best split is 0.75 / 0.25 / 0), run until the learner holds a mix of lanes 0 and 1.
std::pair<World, OnlineBalancer> held_on_mix() {
  std::vector<double> cap{3.0, 1.0, 0.01};
  World w{.rate = shared_cores(cap, 0.0), .cap = cap, .noise = 0.05};
  auto b = make(3);
  run(b, w, 750);
  INFO(b.incumbent().describe());
  REQUIRE(b.incumbent().weight[0] >= 0.6f);
  REQUIRE(b.incumbent().weight[1] > 0.1f);
  REQUIRE(std::string(b.phase_name()) == "hold");
  return {std::move(w), std::move(b)};
}

}  // namespace

TEST_CASE("OnlineBalancer: finds the best setup within 0.95x of the best static one, despite noise") {
  // {lane caps, contention}: IPv4 here (the native lane alone wins), DPI here (the pthread device alone wins),
  // independent devices (a split wins: 0.75 / 0.25 / 0).
  auto [cap, contention] = GENERATE(table<std::vector<double>, double>({
      {{2.0, 1.0, 5.0}, 0.3},
      {{1.6, 0.5, 0.9}, 0.3},
      {{3.0, 1.0, 0.01}, 0.0},
  }));
  World w{.rate = shared_cores(cap, contention), .cap = cap};
  auto b = make(3);
  run(b, w, 50);  // 2 s at 40 ms quanta
  double best = best_static(w.rate, 3, {256, 256, 256});
  INFO(b.incumbent().describe() << " " << w.rate(b.incumbent()) << " best " << best);
  CHECK(w.rate(b.incumbent()) >= 0.8 * best);
  run(b, w, 700);
  INFO(b.incumbent().describe() << " " << w.rate(b.incumbent()) << " best " << best);
  CHECK(w.rate(b.incumbent()) >= 0.95 * best);
  CHECK(b.blocks() > 0);
}

TEST_CASE("OnlineBalancer: the first decision comes within 30 quanta (0.9 s at the learning quantum)") {
  World w{.rate = shared_cores({2.0, 1.0, 5.0}, 0.3), .cap = {2.0, 1.0, 5.0}};
  auto b = make(3);
  int first = -1;
  for (int i = 0; i < 30 && first < 0; ++i) {
    b.step(w.quantum(b.setup()));
    if (b.wins() > 0) first = i;
  }
  CHECK(first >= 0);
}

TEST_CASE("OnlineBalancer: a lane far slower per busy second is not run alone; it gets its share in steps") {
  // 16 workers' native lanes (16 units) beside one GPU that they all share (1.8 units, counted once): the GPU alone
  // would run at 1/9 of the rate. The best split gives it about 1/10, 11 % more than native alone: ±5 % noise (the
  // spread of 16-worker runs there was 3-10 %), so that the gain is larger than the spreads.
  std::vector<double> cap{16.0, 1.8};
  World w{.rate = shared_cores(cap, 0.0), .cap = cap, .noise = 0.05};
  auto b = make(2);
  bool gpu_alone = false;
  int equal = 0;  // quanta at the start's equal shares (a fifth of the rate)
  std::string ev;
  for (int i = 0; i < 50; ++i) {  // 2 s at 40 ms quanta
    equal += b.setup().weight[1] >= 0.5f;
    b.step(w.quantum(b.setup()));
    gpu_alone = gpu_alone || b.setup().weight[0] == 0;
    if (b.event().find("not run alone") != std::string::npos) ev = b.event();
  }
  CHECK_FALSE(gpu_alone);
  CHECK(ev.find("lane 1") != std::string::npos);
  // The start's settling quantum and its min_samples (4): the first solo block takes those samples as the
  // incumbent's instead of visiting it again.
  CHECK(equal <= 5);
  double best = best_static(w.rate, 2, {256, 256});
  INFO(b.incumbent().describe() << " " << w.rate(b.incumbent()) << " best " << best);
  CHECK(b.incumbent().weight[1] > 0);
  CHECK(w.rate(b.incumbent()) >= 0.95 * best);
}

TEST_CASE("OnlineBalancer: noise alone does not move the load around") {
  // Every setup delivers the same; ±20 % noise. Wins are chance; few trials may be won.
  World w{.rate = [](const Setup&) { return 4.0; }, .cap = {4, 4, 4}, .noise = 0.2};
  auto b = make(3);
  run(b, w, 60000);  // 40 min of quanta: hold periods grow to 64 s
  INFO("blocks " << b.blocks() << " wins " << b.wins());
  CHECK(b.blocks() > 30);
  CHECK(b.wins() * 10 <= b.blocks());
}

TEST_CASE("OnlineBalancer: a lane slowed down mid-run loses its load within 1 s, and gets it back") {
  std::vector<double> cap{3.0, 1.0, 0.01};  // independent devices: best split 0.75 / 0.25
  World w{.rate = shared_cores(cap, 0.0), .cap = cap};
  auto b = make(3);
  run(b, w, 750);
  REQUIRE(b.incumbent().weight[0] >= 0.6f);
  w.cap[0] = 0.3;  // lane 0 is ten times slower from now on
  w.rate = shared_cores(w.cap, 0.0);
  int quanta = 0;
  while (quanta < 100 && b.setup().weight[0] > 0.25f) {
    b.step(w.quantum(b.setup()));
    ++quanta;
  }
  INFO(b.setup().describe());
  CHECK(quanta <= 25);  // 1 s at 40 ms quanta
  CHECK(b.restarts() >= 1);
  w.cap[0] = 3.0;  // it recovers: the periodic re-check finds it again
  w.rate = shared_cores(w.cap, 0.0);
  run(b, w, 3000);
  CHECK(b.incumbent().weight[0] >= 0.5f);
}

TEST_CASE("OnlineBalancer: on shared cores a lane that slowed down alone is probed alone, and gets its load back") {
  // Lanes on one CPU, each extra lane halving the others: any mix is worse than the best lane alone, so a move
  // of 1/8 towards a lane that recovered loses, and only a visit of it alone shows the recovery. Lane 0 stalls (its
  // rate per busy second falls a hundredfold), or hangs: busy, nothing delivered (a rate of 0, not a hundredth).
  const double stalled = GENERATE(0.03, 0.0);
  INFO("lane 0's capacity while stalled: " << stalled);
  std::vector<double> cap{3.0, 2.0, 0.5};
  World w{.rate = shared_cores(cap, 1.0), .cap = cap, .noise = 0.05};
  auto b = make(3);
  run(b, w, 300);
  REQUIRE(b.incumbent().weight[0] > 0.99f);
  w.cap[0] = stalled;
  w.rate = shared_cores(w.cap, 1.0);
  run(b, w, 250);
  REQUIRE(b.incumbent().weight[1] > 0.99f);
  w.cap[0] = 3.0;  // it recovers
  w.rate = shared_cores(w.cap, 1.0);
  int quanta = 0;
  while (quanta < 1000 && b.incumbent().weight[0] < 0.99f) {
    b.step(w.quantum(b.setup()));
    ++quanta;
  }
  INFO(b.incumbent().describe());
  CHECK(quanta <= 400);  // 16 s at 40 ms quanta: the probes after 1, 2, 4, 8 s of hold
}

TEST_CASE("OnlineBalancer: a dip of the whole machine under a one-lane incumbent costs a check, not a search") {
  // Lanes on one CPU (any mix is worse than lane 0 alone). The machine slows to 60 % for 6 quanta (a VM's steal time,
  // another process): every lane alike, so no lane's own rate per busy second falls. Before the check, such a dip
  // visited every lane alone and the mixes (about 1.3 s of quanta at a fraction of the rate, on a real run).
  auto [w, b] = held_on_lane0();
  const uint64_t restarts = b.restarts(), checks = b.checks();
  const auto back = slow_machine(w, 0.6);
  run(b, w, 6);
  back();
  int away = 0;  // quanta not on lane 0 alone
  for (int i = 0; i < 100; ++i) {
    b.step(w.quantum(b.setup()));
    away += b.setup().weight[0] < 0.99f;
  }
  INFO(b.incumbent().describe() << ", " << away << " quanta away from lane 0 alone");
  CHECK(b.checks() == checks + 1);
  CHECK(b.restarts() == restarts);
  CHECK(b.incumbent().weight[0] > 0.99f);
  CHECK(away <= 12);  // the two candidates, two visits of a settling quantum and two scored ones at most
}

TEST_CASE("OnlineBalancer: a check does not run alone a lane that the solo phase does not run alone") {
  // Lane 1 delivers under 1/4 of lane 0's bits per busy second: the solo phase estimates it instead of running it
  // alone, and so does the check after a dip of the whole machine; it only tries a step towards it.
  std::vector<double> cap{8.0, 1.0};
  World w{.rate = shared_cores(cap, 1.0), .cap = cap, .noise = 0.05};
  auto b = make(2);
  run(b, w, 300);
  REQUIRE(b.incumbent().weight[0] > 0.99f);
  REQUIRE(std::string(b.phase_name()) == "hold");
  const uint64_t restarts = b.restarts(), checks = b.checks();
  const auto back = slow_machine(w, 0.6);
  bool alone1 = false, step = false;
  std::string ev;
  for (int i = 0; i < 106; ++i) {
    if (i == 6) back();
    b.step(w.quantum(b.setup()));
    alone1 = alone1 || b.setup().weight[0] <= 0;
    step = step || (b.setup().weight[1] > 0.1f && b.setup().weight[1] < 0.2f);
    if (b.event().find("check") != std::string::npos) ev = b.event();
  }
  INFO(ev);
  CHECK(b.checks() == checks + 1);
  CHECK(b.restarts() == restarts);
  CHECK_FALSE(alone1);
  CHECK(step);
  CHECK(ev.find("alone") == std::string::npos);
  CHECK(b.incumbent().weight[0] > 0.99f);
}

TEST_CASE("OnlineBalancer: a check that the other lane wins searches again and moves the load") {
  // Lane 0 alone, then it slows to 60 % (its own rate does not halve) while lane 1 becomes faster than that alone.
  auto [w, b] = held_on_lane0();
  const uint64_t restarts = b.restarts(), checks = b.checks();
  w.cap = {1.8, 2.5, 0.5};
  w.rate = shared_cores(w.cap, 1.0);
  int quanta = 0;
  while (quanta < 200 && b.incumbent().weight[1] < 0.99f) {
    b.step(w.quantum(b.setup()));
    ++quanta;
  }
  INFO(b.incumbent().describe());
  CHECK(b.checks() == checks + 1);
  CHECK(b.restarts() == restarts + 1);
  CHECK(quanta <= 75);  // 3 s at 40 ms quanta
}

TEST_CASE("OnlineBalancer: a dip of the whole machine under a mix costs a check, not a search") {
  // The machine slows to 60 % for 6 quanta, every lane alike. The check: lane 0 (the most per busy second) alone, and
  // 1/8 of the share from lane 1 to lane 0; both lose to the split once the machine is back.
  auto [w, b] = held_on_mix();
  const Setup held = b.incumbent();
  const uint64_t restarts = b.restarts(), checks = b.checks();
  const auto back = slow_machine(w, 0.6);
  run(b, w, 6);
  back();
  int away = 0;  // quanta not on the split held before the dip
  for (int i = 0; i < 100; ++i) {
    b.step(w.quantum(b.setup()));
    away += !(b.setup() == held);
  }
  INFO(b.incumbent().describe() << ", " << away << " quanta away from " << held.describe());
  CHECK(b.checks() == checks + 1);
  CHECK(b.restarts() == restarts);
  CHECK(b.incumbent() == held);
  CHECK(away <= 12);
}

TEST_CASE("OnlineBalancer: a check under a mix that a lane alone wins searches again") {
  // Lane 1 slows to 55 % of its rate (not below half: it keeps its share) while lane 0 stays: lane 0 alone now beats
  // the 0.75 / 0.25 split (3.0 against 2.2 Gbit/s), and the search finds the new split (about 0.85 / 0.15, 3.55).
  auto [w, b] = held_on_mix();
  const uint64_t restarts = b.restarts(), checks = b.checks();
  w.cap = {3.0, 0.55, 0.01};
  w.rate = shared_cores(w.cap, 0.0);
  run(b, w, 300);
  INFO(b.incumbent().describe() << " " << w.rate(b.incumbent()));
  CHECK(b.checks() == checks + 1);
  CHECK(b.restarts() == restarts + 1);
  CHECK(w.rate(b.incumbent()) >= 0.95 * best_static(w.rate, 3, {256, 256, 256}));
}

TEST_CASE("OnlineBalancer: at a rate every setup carries, the throughput policy takes the lower p99") {
  // Paced at 2 Gbit/s, which every setup carries; lane 2 alone answers in 5 us, any share on lanes 0 or 1 (batching
  // devices) puts 100 us in the tail. Throughput alone cannot tell the setups apart.
  World w{.rate = [](const Setup&) { return 2.0; }, .cap = {4.0, 4.0, 8.0}, .noise = 0.03};
  w.p99_ns = [](const Setup& s) { return s.weight[0] > 0 || s.weight[1] > 0 ? 100e3 : 5e3; };
  auto b = make(3);
  run(b, w, 100);  // 4 s
  INFO(b.incumbent().describe());
  CHECK(b.incumbent().weight[2] > 0.99f);
  // And not on throughput noise alone: the same world without a latency difference stays where it started.
  World flat{.rate = [](const Setup&) { return 2.0; }, .cap = {4.0, 4.0, 8.0}, .noise = 0.03};
  flat.p99_ns = [](const Setup&) { return 50e3; };
  auto c = make(3);
  run(c, flat, 100);
  CHECK(c.wins() == 0);
  // Where the start does not carry the rate, the lower p99 is taken among the candidates that beat it and are as
  // fast as the fastest: lane 0 alone a little faster (within the spreads) than lane 2 alone, whose p99 is lower.
  World slow_start{.rate = [](const Setup& s) { return s.weight[1] > 0 ? 1.6 : s.weight[0] > 0 ? 2.02 : 2.0; },
                   .cap = {4.0, 4.0, 8.0}, .noise = 0.03};
  slow_start.p99_ns = w.p99_ns;
  auto d = make(3);
  run(d, slow_start, 100);
  INFO(d.incumbent().describe());
  CHECK(d.incumbent().weight[2] > 0.99f);
}

TEST_CASE("OnlineBalancer: at a known pace, catch-up bursts do not outscore the setup with the lower p99") {
  // Paced at 2 Gbit/s (--rate-pps). A setup with a share on lanes 0 or 1 (batching devices) falls behind and
  // catches up: its quanta deliver 0.98-1.10 of the pace, 3 % above lane 2 alone in the median (what the half-rate
  // bench measured: 15.62 +- 0.43 against 15.14 +- 0.04 Gbit/s), with 100 us in the tail against lane 2's 5 us.
  auto learn = [](double pace_bps, std::optional<Setup> saved = {}) {
    std::mt19937_64 rng{5};
    std::uniform_real_distribution<double> behind(0.98, 1.10), steady(0.99, 1.0), jitter(0.97, 1.03);
    auto b = make(3, {}, saved);
    uint64_t now = 0;
    for (int i = 0; i < 150; ++i) {
      now += kQuantumNs;
      const Setup& s = b.setup();
      const bool batching = s.weight[0] > 0 || s.weight[1] > 0;
      const double g = 2e9 * (batching ? behind(rng) : steady(rng));
      QuantumFigures q{.now_ns = now, .offered_bps = g, .achieved_bps = g, .power_w = 50,
                       .latency_p99_ns = (batching ? 100e3 : 5e3) * jitter(rng), .pace_bps = pace_bps};
      for (size_t l = 0; l < 3; ++l) {
        q.lane_bps.push_back(g * s.weight[l]);
        q.lane_util.push_back(0.3 * s.weight[l]);
      }
      b.step(q);
    }
    return b.incumbent();
  };
  const Setup paced = learn(2e9);
  INFO(paced.describe());
  CHECK(paced.weight[2] > 0.99f);
  const Setup unknown = learn(0);  // a port's rate is not known: the bursts count (the case before the cap)
  INFO(unknown.describe());
  CHECK(unknown.weight[2] < 0.99f);
  // A mix saved by an earlier run is tried against the lanes alone, not held: its re-checks move 1/8 at a time, and
  // the p99 stays the PoCL lane's as long as that lane has any share.
  const Setup from_saved = learn(2e9, Setup{{0.5f, 0, 0.5f}, {256, 256, 256}});
  INFO(from_saved.describe());
  CHECK(from_saved.weight[2] > 0.99f);
}

TEST_CASE("OnlineBalancer: the energy policy drops a lane whose throughput does not pay for its power") {
  // Lane 1 adds 3 % throughput for 40 % more power.
  std::function<double(const Setup&)> rate = [](const Setup& s) {
    return s.weight[0] > 0 && s.weight[1] > 0 ? 5.15 : s.weight[0] > 0 ? 5.0 : 1.0;
  };
  auto power = [](const Setup& s) { return 50.0 + (s.weight[1] > 0 ? 20.0 : 0.0); };
  auto policy = GENERATE(Policy::kThroughputCritical, Policy::kEnergyCritical);
  World w{.rate = rate, .power = power, .cap = {5, 1}, .noise = 0.01};
  auto b = make(2, {.policy = policy});
  b.step(w.quantum(b.setup()));
  run(b, w, 1000);
  INFO(policy_name(policy) << ": " << b.incumbent().describe());
  if (policy == Policy::kEnergyCritical)
    CHECK(b.incumbent().weight[1] == 0.f);
  else
    CHECK(b.incumbent().weight[1] > 0.f);
}

TEST_CASE("OnlineBalancer: under the energy policy no mix is tried where every lane alone carries the rate") {
  // 1 Gbit/s offered. Power adds per busy lane: 6 W idle once, and lane i's dynamic watts × its busy share; so a
  // mix's energy per bit is a blend of its lanes' and cannot beat the best lane alone, if every lane carries the rate
  // alone. Where a lane cannot (capacity 0.6), a mix with it may cost less than any lane alone: the block runs.
  // Nor do the hold's re-checks make mixes (their shift pass): over 20 s, two re-checks.
  auto learn = [](std::vector<double> cap, bool& mixed, bool& shifted) {
    PowerAdds w{.cap = cap, .rng = std::mt19937_64{3}};
    auto b = make(3, {.policy = Policy::kEnergyCritical});
    mixed = shifted = false;
    for (int i = 0; i < 500; ++i) {
      mixed |= std::string(b.phase_name()) == "mix";
      shifted |= std::string(b.phase_name()) == "shift";
      b.step(w.quantum(b.setup(), 1.0));
    }
    return b.incumbent();
  };
  bool mixed = true, shifted = true;
  const Setup all_carry = learn({2.0, 2.0, 1.5}, mixed, shifted);
  INFO(all_carry.describe());
  CHECK(all_carry.weight[2] > 0.99f);  // the least watts per bit
  CHECK_FALSE(mixed);
  CHECK_FALSE(shifted);
  learn({2.0, 2.0, 0.6}, mixed, shifted);  // lane 2 cannot carry 1 Gbit/s alone: the mix block runs, and shifts
  CHECK(mixed);
  CHECK(shifted);
}

TEST_CASE("OnlineBalancer: under the energy policy the search after a step down of the offered rate scores energy") {
  // hpr report's rate steps: 1 Gbit/s for 4 s, then 0.3. Every lane carries both; power adds per busy lane, so lane
  // 2 alone costs least and no mix can beat it. With the offered-rate window's median still at 1 Gbit/s after the
  // step, every quantum at 0.3 scored as a shortfall (one score for all setups): the solo block could not see that
  // every lane carried the rate, and the mix block ran its 12 samples a candidate at twice the watts.
  PowerAdds w{.cap = {2.0, 2.0, 1.5}, .rng = std::mt19937_64{5}};
  auto b = make(3, {.policy = Policy::kEnergyCritical});
  bool mixed_after = false;
  int to_hold = -1;
  for (int i = 0; i < 200; ++i) {
    if (i >= 100) {
      mixed_after |= std::string(b.phase_name()) == "mix";
      if (to_hold < 0 && i > 105 && std::string(b.phase_name()) == "hold") to_hold = i - 100;
    }
    b.step(w.quantum(b.setup(), i < 100 ? 1.0 : 0.3));
  }
  INFO(b.incumbent().describe() << ", back in hold after " << to_hold << " quanta");
  CHECK(b.restarts() >= 1);  // the step was seen
  CHECK_FALSE(mixed_after);
  CHECK(b.incumbent().weight[2] > 0.99f);
  CHECK(to_hold > 0);
  CHECK(to_hold <= 40);
}

TEST_CASE("OnlineBalancer: the energy policy at a low paced rate: jitter and catch-up bursts of the input are no shortfall") {
  // DPI at 0.14 Gbit/s offered (report of 2026-11-24): every lane carries it; lane 2 alone at the least power. The
  // offered rate of a quantum jitters by ±5 % and now and then a stalled quantum is followed by a catch-up burst;
  // achieved follows offered. Scored against the largest offered rate of the last 2 s, every setup's quanta were
  // shortfalls, told apart by jitter only, and the learner settled on a 56 W setup.
  std::mt19937_64 rng{11};
  std::uniform_real_distribution<double> jitter(0.95, 1.05);
  auto power = [](const Setup& s) { return s.weight[2] > 0.999f ? 14.0 : s.weight[0] > 0.999f ? 17.0 : 56.0; };
  auto b = make(3, {.policy = Policy::kEnergyCritical});
  uint64_t now = 0;
  for (int i = 0; i < 1500; ++i) {
    double g = 0.14e9 * jitter(rng);
    if (i % 40 == 20) g *= 0.45;  // a stalled quantum ...
    if (i % 40 == 21) g *= 2.1;   // ... and the burst that catches up
    now += kQuantumNs;
    const Setup& s = b.setup();
    QuantumFigures q{.now_ns = now, .offered_bps = g, .achieved_bps = g, .power_w = power(s)};
    for (size_t l = 0; l < 3; ++l) {
      q.lane_bps.push_back(g * s.weight[l]);
      q.lane_util.push_back(0.2 * s.weight[l]);
    }
    b.step(q);
  }
  INFO(b.incumbent().describe());
  CHECK(b.incumbent().weight[2] > 0.999f);
}

TEST_CASE("OnlineBalancer: under the energy policy a saved setup is tried against the lanes alone, and a rate step searches again") {
  // The saved setup is the 56 W lane, the best per bit at saturation (a profile table); at 0.14 Gbit/s lane 2 alone
  // carries the load for 14 W.
  auto power = [](const Setup& s) { return s.weight[2] > 0.999f ? 14.0 : s.weight[0] > 0.999f ? 17.0 : 56.0; };
  auto b = make(3, {.policy = Policy::kEnergyCritical}, Setup{{0, 1, 0}, {256, 256, 256}});
  uint64_t now = 0;
  bool moved_event = false;
  auto run_at = [&](double gbps, int quanta) {
    for (int i = 0; i < quanta; ++i) {
      now += kQuantumNs;
      const Setup& s = b.setup();
      QuantumFigures q{.now_ns = now, .offered_bps = gbps * 1e9, .achieved_bps = gbps * 1e9, .power_w = power(s)};
      for (size_t l = 0; l < 3; ++l) {
        q.lane_bps.push_back(gbps * 1e9 * s.weight[l]);
        q.lane_util.push_back(0.2 * s.weight[l]);
      }
      b.step(q);
      moved_event |= b.event().find("offered rate moved") != std::string::npos;
    }
  };
  run_at(0.14, 300);
  INFO(b.incumbent().describe());
  CHECK(b.incumbent().weight[2] > 0.999f);  // held before: the saved setup was never compared at this load
  const uint64_t restarts = b.restarts();
  run_at(0.45, 100);  // lane 2 still carries it: only the rate step says to look again
  CHECK(moved_event);
  CHECK(b.restarts() > restarts);
  CHECK(b.incumbent().weight[2] > 0.999f);
}

TEST_CASE("OnlineBalancer: batch sizes of searched lanes move towards the best one") {
  // One device lane whose rate peaks at batch 1024.
  std::function<double(const Setup&)> rate = [](const Setup& s) {
    double x = std::log2(static_cast<double>(s.batch[0]));
    return 4.0 - 0.3 * std::fabs(x - 10);
  };
  World w{.rate = rate, .cap = {4}, .noise = 0.02};
  auto b = OnlineBalancer::create({}, {64}, {4096});
  REQUIRE(b.is_ok());
  run(*b, w, 400);
  CHECK(b->incumbent().batch[0] == 1024);
}

TEST_CASE("OnlineBalancer: each lane's batch is searched up to its own largest") {
  // Two device lanes whose rates rise with the batch up to 8192 (a discrete GPU's copies and launch per batch), and a
  // native lane that adds a little: every lane with a share adds its rate. Lane 0 may go to 16384, lane 1 (a CPU
  // device's bound) to 2048; the native lane's batch is not searched.
  std::function<double(const Setup&)> rate = [](const Setup& s) {
    double r = s.weight[2] > 0 ? 0.5 : 0.0;
    for (int i : {0, 1})
      if (s.weight[i] > 0) r += 2.0 - 0.2 * std::fabs(std::log2(static_cast<double>(s.batch[i])) - 13);
    return r;
  };
  World w{.rate = rate, .cap = {4, 4, 4}, .noise = 0.02};
  auto b = OnlineBalancer::create({}, {256, 256, 256}, {16384, 2048, 0});
  REQUIRE(b.is_ok());
  uint32_t widest1 = 0;
  for (int i = 0; i < 3000; ++i) {
    widest1 = std::max(widest1, b->step(w.quantum(b->setup())).batch[1]);
    REQUIRE(b->setup().batch[2] == 256);
  }
  CHECK(b->incumbent().batch[0] == 8192);
  CHECK(b->incumbent().batch[1] == 2048);
  CHECK(widest1 == 2048);
  CHECK(OnlineBalancer::create({}, {256}, {8}).status().message().find("largest batch 8") != std::string::npos);
}

TEST_CASE("OnlineBalancer: after a batch win the search goes on from the winner, not back to the batch it beat") {
  // One device lane whose rate rises with every doubling (a discrete GPU): each pass after a win has one candidate,
  // the next doubling, so no smaller batch than the incumbent's runs until the search holds.
  std::function<double(const Setup&)> rate = [](const Setup& s) { return std::log2(static_cast<double>(s.batch[0])); };
  World w{.rate = rate, .cap = {20}, .noise = 0.02};
  auto b = OnlineBalancer::create({}, {256}, {4096});
  REQUIRE(b.is_ok());
  int i = 0;
  for (; i < 2000 && std::string(b->phase_name()) != "hold"; ++i) {
    b->step(w.quantum(b->setup()));
    if (b->incumbent().batch[0] > 256) REQUIRE(b->setup().batch[0] >= b->incumbent().batch[0]);
  }
  CHECK(std::string(b->phase_name()) == "hold");
  CHECK(b->incumbent().batch[0] == 4096);
}

TEST_CASE("OnlineBalancer: a saved setup is in force from the start and held") {
  World w{.rate = shared_cores({2.0, 1.0, 5.0}, 0.3), .cap = {2.0, 1.0, 5.0}, .noise = 0.02};
  Setup saved{{0, 0, 1}, {256, 256, 256}};
  auto b = make(3, {}, saved);
  CHECK(b.setup() == saved);
  run(b, w, 10);
  CHECK(b.setup() == saved);
  CHECK(std::string(b.phase_name()) == "hold");
}

TEST_CASE("OnlineBalancer: a poor saved setup is re-checked within about a second, not after a whole hold") {
  // Figures saved under a disturbance: the saved split is a third of what lane 2 alone delivers.
  World w{.rate = shared_cores({2.0, 1.0, 5.0}, 0.3), .cap = {2.0, 1.0, 5.0}, .noise = 0.05};
  Setup saved{{0.5f, 0.5f, 0}, {256, 256, 256}};
  auto b = make(3, {}, saved);
  int quanta = 0;
  while (quanta < 200 && b.incumbent().weight[2] < 0.99f) {
    b.step(w.quantum(b.setup()));
    ++quanta;
  }
  INFO(b.incumbent().describe());
  CHECK(quanta <= 100);  // 4 s at 40 ms quanta: a whole hold (hold_s) alone would be 100 quanta before the re-check
  CHECK(b.restarts() >= 1);
}

TEST_CASE("OnlineBalancer: a good saved setup is re-checked once soon, then after whole holds") {
  World w{.rate = shared_cores({2.0, 1.0, 5.0}, 0.5), .cap = {2.0, 1.0, 5.0}, .noise = 0.05};
  Setup saved{{0, 0, 1}, {256, 256, 256}};
  auto b = make(3, {}, saved);
  std::vector<int> rechecks;  // quanta at which a re-check left the hold
  std::string was = b.phase_name();
  for (int i = 0; i < 250; ++i) {  // 10 s
    b.step(w.quantum(b.setup()));
    if (was == "hold" && std::string(b.phase_name()) != "hold") rechecks.push_back(i);
    was = b.phase_name();
  }
  REQUIRE(rechecks.size() >= 2);
  CHECK(rechecks[0] <= 40);  // warm-up, start samples and saved_hold_s (1 s): about 34 quanta
  CHECK(rechecks[1] - rechecks[0] >= 100);  // then hold_s (4 s), not 2 x saved_hold_s
  CHECK(b.incumbent() == saved);
}

TEST_CASE("OnlineBalancer: a re-check whose moves clearly lose ends after one visit of each") {
  // Lane 2 alone is best, and a move of first_step to either other lane loses about a quarter (cores shared).
  auto off_incumbent = [](double clear_loss) {
    World w{.rate = shared_cores({2.0, 1.0, 5.0}, 0.5), .cap = {2.0, 1.0, 5.0}, .noise = 0.05};
    BalancerParams p;
    p.clear_loss = clear_loss;
    auto b = make(3, p);
    run(b, w, 200);
    REQUIRE(b.incumbent().weight[2] > 0.99f);
    int off = 0;
    for (int i = 0; i < 2000; ++i) {  // 80 s: re-checks after 4, 8, 16, 32 s of hold
      b.step(w.quantum(b.setup()));
      off += b.setup() == b.incumbent() ? 0 : 1;
    }
    CHECK(b.incumbent().weight[2] > 0.99f);
    CHECK(b.incumbent_score().n >= p.min_samples);  // the hold's drift reference: not one visit's 2 samples
    return off;
  };
  int with = off_incumbent(BalancerParams{}.clear_loss), without = off_incumbent(0);
  INFO("quanta off the incumbent: " << with << " with the clear-loss rule, " << without << " without");
  CHECK(with > 0);
  CHECK(with * 4 <= without * 3);
}

TEST_CASE("OnlineBalancer: a lost lane gets no share again") {
  World w{.rate = shared_cores({2.0, 1.0, 5.0}, 0.3), .cap = {2.0, 1.0, 5.0}};
  auto b = make(3);
  run(b, w, 30);
  b.lane_lost(2);
  w.rate = shared_cores({2.0, 1.0, 0.0}, 0.3);
  for (int i = 0; i < 600; ++i) {
    b.step(w.quantum(b.setup()));
    REQUIRE(b.setup().weight[2] == 0.f);
  }
  CHECK(b.incumbent().weight[0] > 0.f);
}

TEST_CASE("OnlineBalancer: bad parameters and setups are refused, naming the setting") {
  BalancerParams p;
  p.delta = 0;
  CHECK(OnlineBalancer::create(p, {256}, {0}).status().message().find("delta") != std::string::npos);
  p = {};
  p.min_samples = 5;
  p.max_samples = 3;
  CHECK_FALSE(OnlineBalancer::create(p, {256}, {0}).is_ok());
  p = {};
  p.clear_loss = 1;
  CHECK(OnlineBalancer::create(p, {256}, {0}).status().message().find("clear_loss") != std::string::npos);
  p = {};
  p.saved_hold_s = 0;
  CHECK(OnlineBalancer::create(p, {256}, {0}).status().message().find("saved_hold_s") != std::string::npos);
  p = {};
  p.place_recheck_hold_s = -1;
  CHECK(OnlineBalancer::create(p, {256}, {0}).status().message().find("place_recheck_hold_s") != std::string::npos);
  p = {};
  p.policy = Policy::kLatencyTarget;
  CHECK(OnlineBalancer::create(p, {256}, {0}).status().message().find("latency target") != std::string::npos);
  CHECK_FALSE(OnlineBalancer::create({}, {}, {}).is_ok());
  CHECK_FALSE(OnlineBalancer::create({}, {256, 256}, {0}).is_ok());
  CHECK_FALSE(OnlineBalancer::create({}, {256, 256}, {0, 0}, Setup{{1}, {256}}).is_ok());
  CHECK_FALSE(OnlineBalancer::create({}, {256, 256}, {0, 0}, Setup{{0, 0}, {256, 256}}).is_ok());
  CHECK_FALSE(OnlineBalancer::create({}, {256, 256}, {0, 0}, Setup{{NAN, 1}, {256, 256}}).is_ok());
}

namespace {

// Services placed on lanes (issue 15): service s is share[s] of the traffic and costs cost[l][s] seconds per Gbit on
// lane l; lanes do not share cores (a GPU beside the CPU). A service placed on a lane sends it all its traffic; the
// others split by the shares. The run is bounded by the lane that saturates first; figures ±noise.
struct ServiceWorld {
  std::vector<double> share;
  std::vector<std::vector<double>> cost;  // [lane][service]
  double noise = 0.05;
  std::mt19937_64 rng{11};
  uint64_t now = 0;

  std::vector<double> load(const Setup& s) const {  // seconds per Gbit of the whole traffic, per lane
    std::vector<double> out(cost.size(), 0.0);
    for (size_t k = 0; k < share.size(); ++k)
      for (size_t l = 0; l < cost.size(); ++l) {
        const int16_t p = k < s.place.size() ? s.place[k] : -1;
        const double f = p >= 0 ? (p == static_cast<int16_t>(l) ? 1.0 : 0.0) : s.weight[l];
        out[l] += share[k] * f * cost[l][k];
      }
    return out;
  }
  double rate(const Setup& s) const {
    const auto ld = load(s);
    return 1 / *std::max_element(ld.begin(), ld.end());
  }
  QuantumFigures quantum(const Setup& s) {
    std::uniform_real_distribution<double> u(1 - noise, 1 + noise);
    const double g = rate(s) * u(rng);
    now += kQuantumNs;
    QuantumFigures q{.now_ns = now, .offered_bps = g * 1e9, .achieved_bps = g * 1e9, .power_w = 50};
    const auto ld = load(s);
    for (size_t l = 0; l < cost.size(); ++l) {
      const double busy = std::min(1.0, g * ld[l]);
      double bits = 0;  // what the lane delivered: its traffic
      for (size_t k = 0; k < share.size(); ++k) {
        const int16_t p = k < s.place.size() ? s.place[k] : -1;
        bits += g * 1e9 * share[k] * (p >= 0 ? (p == static_cast<int16_t>(l) ? 1.0 : 0.0) : s.weight[l]);
      }
      q.lane_bps.push_back(bits);
      q.lane_util.push_back(busy);
    }
    return q;
  }
};

// Native (lane 0) does every service at 1 Gbit/s but the second (DPI) at 1/8; the device (lane 1) does the second at
// 2 Gbit/s and the others at 0.5. Best of the shares alone: about 0.97 Gbit/s; with the DPI service on the device,
// the rest shared: about 1.9.
ServiceWorld dpi_on_device() { return {.share = {0.4, 0.3, 0.3}, .cost = {{1, 8, 1}, {2, 0.5, 2}}}; }

OnlineBalancer make_placing(size_t lanes, std::vector<bool> placeable, BalancerParams p = {}) {
  auto b = OnlineBalancer::create(p, std::vector<uint32_t>(lanes, 256), std::vector<uint32_t>(lanes, 0), {},
                                  std::move(placeable));
  REQUIRE(b.is_ok());
  return std::move(*b);
}

double best_shares(const ServiceWorld& w) {  // the best setup without placement, shares in steps of 1/64
  double best = 0;
  for (int a = 0; a <= 64; ++a)
    best = std::max(best, w.rate(Setup{{a / 64.f, 1 - a / 64.f}, {256, 256}, {-1, -1, -1}}));
  return best;
}

}  // namespace

TEST_CASE("OnlineBalancer: places a service on the lane that suits it, beyond the best shares for the whole mix") {
  ServiceWorld w = dpi_on_device();
  auto b = make_placing(2, {true, true, true});
  REQUIRE(b.incumbent().place == std::vector<int16_t>{-1, -1, -1});
  bool placed_event = false;
  for (int i = 0; i < 1500; ++i) {
    b.step(w.quantum(b.setup()));
    placed_event |= b.event().find("place: ") == 0;
  }
  INFO(b.incumbent().describe());
  CHECK(placed_event);
  CHECK(b.incumbent().place[1] == 1);  // DPI on the device
  CHECK(b.incumbent().describe().find(" p ") != std::string::npos);
  const double shares = best_shares(w);
  CHECK(shares < 1.0);
  CHECK(w.rate(b.incumbent()) > 1.4 * shares);
  const std::string phase = b.phase_name();  // settled: holding, or in a re-check (its place pass after a long hold)
  CHECK((phase == "hold" || phase == "batch" || phase == "shift" || phase == "place"));
}

TEST_CASE("OnlineBalancer: a service the user placed (not placeable) is never placed; no placement where none pays") {
  SECTION("not placeable") {
    ServiceWorld w = dpi_on_device();
    auto b = make_placing(2, {true, false, true});
    for (int i = 0; i < 1500; ++i) {
      b.step(w.quantum(b.setup()));
      REQUIRE(b.setup().place[1] == -1);
    }
  }
  SECTION("every service costs the same everywhere: the shares do it all") {
    ServiceWorld w{.share = {0.4, 0.3, 0.3}, .cost = {{1, 1, 1}, {2, 2, 2}}};
    auto b = make_placing(2, {true, true, true});
    for (int i = 0; i < 1500; ++i) b.step(w.quantum(b.setup()));
    INFO(b.incumbent().describe());
    CHECK(w.rate(b.incumbent()) > 0.9 * best_shares(w));
  }
}

TEST_CASE("OnlineBalancer: a lost lane's services go back among the shares") {
  ServiceWorld w = dpi_on_device();
  auto b = make_placing(2, {true, true, true});
  for (int i = 0; i < 1500; ++i) b.step(w.quantum(b.setup()));
  REQUIRE(b.incumbent().place[1] == 1);
  b.lane_lost(1);
  CHECK(b.incumbent().place[1] == -1);
  CHECK(b.setup().place[1] == -1);
  w.cost[1] = {1e9, 1e9, 1e9};  // lane 1 takes nothing more
  for (int i = 0; i < 600; ++i) {
    b.step(w.quantum(b.setup()));
    REQUIRE_FALSE(b.setup().takes(1));
  }
}

TEST_CASE("OnlineBalancer: the hold's re-checks place a service on a lane that became good for it") {
  // The device is hopeless for everything at first: the native lane takes all. Then it does DPI at 2 Gbit/s (its
  // other tenant left, say), the rest as badly as before: the native lane delivers what it did, so no drift starts a
  // search, and a share moved to the device still loses; only a re-check's place pass finds the placement.
  ServiceWorld w{.share = {0.4, 0.3, 0.3}, .cost = {{1, 8, 1}, {200, 64, 200}}};
  const int seed = GENERATE(1, 2, 3, 4, 5, 6, 7, 8);
  w.rng.seed(seed);
  // Only re-checks after holds of place_recheck_hold_s (16 s) or more place: with it beyond every hold, none does.
  BalancerParams p;
  const bool long_holds_place = GENERATE(true, false);
  if (!long_holds_place) p.place_recheck_hold_s = 1e9;
  auto b = make_placing(2, {true, true, true}, p);
  for (int i = 0; i < 1500; ++i) b.step(w.quantum(b.setup()));
  INFO(b.incumbent().describe());
  REQUIRE(b.incumbent().place[1] == -1);
  REQUIRE(b.incumbent().weight[1] < 0.1f);
  REQUIRE(std::string(b.phase_name()) == "hold");
  const uint64_t restarts = b.restarts();
  w.cost[1][1] = 0.5;
  for (int i = 0; i < 2000; ++i) b.step(w.quantum(b.setup()));  // 80 s: re-checks after up to 64 s of hold
  INFO(b.incumbent().describe() << ", searches again: " << b.restarts() - restarts);
  CHECK(b.incumbent().place[1] == (long_holds_place ? 1 : -1));
}

TEST_CASE("OnlineBalancer: after leaving a setup with a deep backlog, its p99 is waited out before scoring") {
  // dpi,md5 on PoCL pthread and a native lane (2 cores): native0 alone 1.9 Gbit/s; any share on pthread makes it the
  // bottleneck (0.37 alone) with a p99 of 120 ms, three 40 ms quanta. Leaving such a setup, the flows it held wait
  // for its backlog: for ceil(p99 / quantum) quanta the run delivers a third of the new setup's rate. One settling
  // quantum scored native0 alone at a third and kept the mix (learning ran 0.41x native0 alone there).
  const std::vector<double> cap{0.37, 1.9};
  World w{.rate = shared_cores(cap, 0.5), .cap = cap, .noise = 0.05};  // the lanes share the cores
  w.p99_ns = [](const Setup& s) { return s.weight[0] > 0 ? 120e6 : 1e6; };
  Setup before;
  int transition = 0;
  auto b = make(2);
  for (int i = 0; i < 200; ++i) {
    const Setup s = b.setup();
    if (!before.weight.empty() && s != before) transition = static_cast<int>(std::ceil(w.p99_ns(before) / kQuantumNs));
    before = s;
    QuantumFigures q = w.quantum(s);
    if (transition > 0) {
      --transition;
      q.achieved_bps = q.offered_bps = q.achieved_bps / 3;
      for (double& x : q.lane_bps) x /= 3;
    }
    b.step(q);
  }
  INFO(b.incumbent().describe());
  CHECK(b.incumbent().weight[1] > 0.99f);
}
