// Decision cost of the adaptive scheduler (hetero-opencl-adaptive-scheduler §4.2.1: O(log N)) with a table of
// --configs configurations (goal: under 1 µs per decision at 10,000). Measures
//   * store:     ConfigStore::best (energy policy) for a varying rate;
//   * decision:  AdaptiveScheduler::step with measurements that match the table (Step 3 check + Step 1 lookup);
//   * update:    ConfigStore::update with a drift beyond δ, then ConfigStore::best (the cost a table update adds);
//   * peer:      the same energy-policy answer by a linear scan over the configurations (no index).
// Warm-up, then --runs runs of --iters calls each; median and spread per call; CSV to --out.
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "hpr/stats.hpp"
#include "scheduler/adaptive/adaptive_scheduler.hpp"

using namespace hpr::sched;

namespace {

template <typename F>
std::vector<double> time_runs(int runs, int iters, F&& f) {
  for (int i = 0; i < iters / 10; ++i) f(i);  // warm-up
  std::vector<double> ns;
  for (int r = 0; r < runs; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < iters; ++i) f(i);
    auto t1 = std::chrono::steady_clock::now();
    ns.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count() / iters);
  }
  return ns;
}

volatile uint64_t g_sink = 0;

}  // namespace

int main(int argc, char** argv) {
  CLI::App cli{"adaptive scheduler decision cost"};
  int n = 10000, runs = 7, iters = 200000;
  std::string out = "out/fig7/decision_bench.csv";
  cli.add_option("--configs", n, "configurations in the table");
  cli.add_option("--runs", runs, "repetitions (>= 5)");
  cli.add_option("--iters", iters, "calls per run");
  cli.add_option("--out", out, "CSV file");
  CLI11_PARSE(cli, argc, argv);

  std::mt19937_64 rng(42);
  std::uniform_real_distribution<double> thr(0.5e9, 60e9), lat(10e3, 50e6), pw(30, 300);
  ConfigStore store;
  for (int i = 0; i < n; ++i) {
    Configuration c;
    c.device_mask = 1 + static_cast<uint32_t>(i % 7);
    int members = c.device_count();
    float share = 1.0F / static_cast<float>(members);
    float sum = 0;
    int last = 0;
    for (int d = 0; d < 3; ++d) {
      if (!c.uses(d)) continue;
      c.batch[d] = 64U << (i / 7 % 11);
      c.split[d] = share;
      sum += share;
      last = d;
    }
    c.split[last] += 1.0F - sum;
    c.batch[last] += static_cast<uint32_t>(i / 77);  // distinct setups
    c.throughput_bps = thr(rng);
    c.latency_ns = lat(rng);
    c.latency_p99_ns = c.latency_ns * 1.3;
    c.power_w = pw(rng);
    c.power_source = PowerSource::kModel;
    if (!store.insert(c)) return 1;
  }
  std::vector<double> rates(4096);
  for (auto& r : rates) r = std::uniform_real_distribution<double>(1e9, 40e9)(rng);

  auto store_ns = time_runs(runs, iters, [&](int i) {
    g_sink = g_sink + store.best({Policy::kEnergyCritical, rates[i & 4095]});
  });

  auto peer_ns = time_runs(runs, iters / 100, [&](int i) {
    double rate = rates[i & 4095];
    ConfigId best = kNoConfig;
    double best_w = 1e300;
    for (ConfigId id = 0; id < store.size(); ++id) {
      const auto& c = store.get(id);
      if (c.throughput_bps >= rate && c.power_w < best_w) {
        best_w = c.power_w;
        best = id;
      }
    }
    g_sink = g_sink + best;
  });

  AdaptiveParams params;
  auto sched = AdaptiveScheduler::create(params, {&store});
  if (!sched) return 1;
  Measurement m;
  uint64_t now = 0;
  auto step_ns = time_runs(runs, iters, [&](int i) {
    // Rates move in steps, as traffic does; the measurement reports what the table says (no drift).
    m.offered_bps = rates[(i >> 6) & 4095];
    m.now_ns = (now += 20'000'000);
    m.epoch = sched->decision().epoch;
    ConfigId id = sched->decision().config;
    if (id != kNoConfig) {
      const auto& c = store.get(id);
      m.capacity_bps = c.throughput_bps;
      m.achieved_bps = std::min(m.offered_bps, c.throughput_bps);
      m.latency_ns = c.latency_ns;
      m.latency_p99_ns = c.latency_p99_ns;
      m.power_w = c.power_w;
    }
    g_sink = g_sink + sched->step(m).epoch;
  });

  // A drift: one configuration's measurement moves by more than δ (it alternates between its stored values and
  // 1.5× / 0.7× of them), written back with update(), then the next decision's lookup. The store keeps its
  // policy indexes up to date in place (before: a full O(N log N) rebuild at the next lookup).
  std::vector<Configuration> orig;
  for (ConfigId id = 0; id < store.size(); ++id) orig.push_back(store.get(id));
  auto update_ns = time_runs(runs, std::max(1, iters / 100), [&](int i) {
    auto id = static_cast<ConfigId>((static_cast<uint64_t>(i) * 7919) % store.size());
    const Configuration& o = orig[id];
    bool drift = store.get(id).throughput_bps == o.throughput_bps;
    double f = drift ? 1.5 : 1.0, g = drift ? 0.7 : 1.0;
    store.update(id, o.throughput_bps * f, o.latency_ns, o.latency_p99_ns, o.power_w * g, o.power_source);
    g_sink = g_sink + store.best({Policy::kEnergyCritical, rates[i & 4095]});
  });

  auto s = hpr::summarize(store_ns), p = hpr::summarize(peer_ns), d = hpr::summarize(step_ns),
       u = hpr::summarize(update_ns);
  fmt::print("configs={} runs={} (table: {} nodes in the throughput tree)\n", n, runs,
             store.node_count(Metric::kThroughput));
  fmt::print("store.best (energy)     median {:8.1f} ns/decision  spread {:.3f}\n", s.median, s.spread);
  fmt::print("scheduler.step          median {:8.1f} ns/decision  spread {:.3f}  (switches {}, table updates {})\n",
             d.median, d.spread, sched->device_switches(), sched->table_updates());
  fmt::print("store.update + best     median {:8.1f} ns/update    spread {:.3f}  (a drift > δ, then a lookup)\n",
             u.median, u.spread);
  fmt::print("peer: linear scan       median {:8.1f} ns/decision  spread {:.3f}\n", p.median, p.spread);
  fmt::print("ratio peer / store.best = {:.1f}x, peer / step = {:.1f}x\n", p.median / s.median, p.median / d.median);
  std::filesystem::create_directories(std::filesystem::path(out).parent_path());
  std::ofstream csv(out);
  csv << "what,configs,runs,median_ns,p1_ns,p99_ns,spread\n";
  for (auto [name, st] : {std::pair{"store_best", s}, std::pair{"scheduler_step", d},
                          std::pair{"store_update_then_best", u}, std::pair{"peer_linear_scan", p}})
    csv << fmt::format("{},{},{},{:.2f},{:.2f},{:.2f},{:.4f}\n", name, n, runs, st.median, st.p1, st.p99, st.spread);
  return 0;
}
