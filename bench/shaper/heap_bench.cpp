// Heap insert / delete cost against heap size (paper §5.1.3, Tables IV-V: 32 cycles to insert,
// 48-214 cycles to delete with no cache misses). Own timing loop: for a heap of n nodes, push n
// reschedule events (size n -> 2n), then pop n (2n -> n); repeat until >= --ops operations; warm
// up once, then --reps runs; report median and spread (p90 - p10) / median. Peer in the same run:
// std::priority_queue<uint64_t> (min-heap on the same packed keys). CSV to --out.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <queue>
#include <random>
#include <vector>

#include "hpr/stats.hpp"
#include "scheduler/shaper/event_heap.hpp"

using namespace hpr::shaper;

namespace {

struct StdHeap {
  std::priority_queue<uint64_t, std::vector<uint64_t>, std::greater<>> q;
  explicit StdHeap(size_t cap) {
    std::vector<uint64_t> v;
    v.reserve(cap);
    q = decltype(q)(std::greater<>(), std::move(v));
  }
  void push(uint64_t t, uint32_t id) { q.push((t << 24) | id); }
  uint64_t top_time_ns() const { return q.top() >> 24; }
  void pop() { q.pop(); }
};

// One measurement: ns per insert and ns per delete at size n.
template <typename H>
std::pair<double, double> measure(size_t n, uint64_t min_ops, uint64_t seed) {
  H h(2 * n + 1);
  std::mt19937_64 rng(seed);
  // Reschedule delays like the shaper's: alpha / rate ~ 0.24 s at 12.5 kB/s, +-20 %.
  const uint64_t d = 240'000'000;
  std::uniform_int_distribution<uint64_t> delay(d * 8 / 10, d * 12 / 10);
  uint64_t now = 0;
  for (size_t i = 0; i < n; ++i) h.push(now + delay(rng), static_cast<uint32_t>(i));
  std::vector<uint64_t> keys(n);
  uint64_t ins_ns = 0, del_ns = 0, ops = 0;
  uint64_t sink = 0;
  using clk = std::chrono::steady_clock;
  while (ops < min_ops) {
    for (size_t i = 0; i < n; ++i) keys[i] = now + delay(rng);
    auto t0 = clk::now();
    for (size_t i = 0; i < n; ++i) h.push(keys[i], static_cast<uint32_t>(i));
    auto t1 = clk::now();
    for (size_t i = 0; i < n; ++i) {
      sink += h.top_time_ns();
      h.pop();
    }
    auto t2 = clk::now();
    now = h.top_time_ns();
    ins_ns += static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0).count());
    del_ns += static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(t2 - t1).count());
    ops += n;
  }
  if (sink == 42) fmt::print("");
  return {static_cast<double>(ins_ns) / ops, static_cast<double>(del_ns) / ops};
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"EventHeap insert/delete ns vs heap size"};
  std::string out_dir = "out/shaper";
  int reps = 5;
  uint64_t min_ops = 2'000'000;
  std::vector<size_t> sizes = {16, 64, 256, 630, 1024, 4096, 16384, 65536, 262144, 1048576};
  app.add_option("--out", out_dir, "CSV output folder");
  app.add_option("--reps", reps, "measured runs per point (after one warm-up)")->check(CLI::Range(1, 1000));
  app.add_option("--ops", min_ops, "operations per run");
  app.add_option("--sizes", sizes, "heap sizes");
  CLI11_PARSE(app, argc, argv);
  std::filesystem::create_directories(out_dir);
  std::ofstream f(out_dir + "/heap.csv");
  f << "heap_size,impl,insert_ns_median,insert_spread,delete_ns_median,delete_spread,reps\n";
  fmt::print("{:>9} | {:>22} | {:>22} | {:>22} | {:>14}\n", "size", "EventHeap ins/del ns", "Counting ins/del ns",
             "std::pq ins/del ns", "pq/Event (del)");
  for (size_t n : sizes) {
    auto run = [&](auto tag, const char* name, double& ins_med, double& del_med) {
      using H = typename decltype(tag)::type;
      (void)measure<H>(n, min_ops / 4, 99);  // warm-up
      std::vector<double> ins, del;
      for (int r = 0; r < reps; ++r) {
        auto [a, b] = measure<H>(n, min_ops, static_cast<uint64_t>(r) + 1);
        ins.push_back(a);
        del.push_back(b);
      }
      auto si = hpr::summarize(ins), sd = hpr::summarize(del);
      ins_med = si.median;
      del_med = sd.median;
      f << fmt::format("{},{},{:.2f},{:.3f},{:.2f},{:.3f},{}\n", n, name, si.median, si.spread, sd.median, sd.spread,
                       reps);
      return fmt::format("{:>9.1f} / {:<9.1f}", si.median, sd.median);
    };
    double ei, ed, ci, cd, pi, pd;
    std::string a = run(std::type_identity<EventHeap>{}, "event_heap", ei, ed);
    std::string b = run(std::type_identity<CountingEventHeap>{}, "counting_event_heap", ci, cd);
    std::string c = run(std::type_identity<StdHeap>{}, "std_priority_queue", pi, pd);
    fmt::print("{:>9} | {} | {} | {} | {:>6.2f} ({:.2f} ins)\n", n, a, b, c, pd / ed, pi / ei);
  }
  fmt::print("CSV in {}/heap.csv\n", out_dir);
  return 0;
}
