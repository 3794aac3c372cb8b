// Generator throughput: packets per second one core generates unpaced (rx_burst of 32 + release),
// for 64 B frames (60 without FCS), IMIX (Table I), 1514 B frames, a million Zipf flows, capture
// templates, and planted DPI patterns. Peer in the same run: "replay", handing out pre-built frames
// of the same sizes from the same kind of pool (what a capture replay or a template-copy generator
// such as pktgen costs); the ratio generator / replay shows what synthesising each packet costs.
// Median of --runs timed runs after one warm-up run, spread = (p90 - p10) / median.
//
//   build/bench/generator/generator_bench [--runs 7] [--packets 2000000] [--out out/generator]
// Writes <out>/generator_runs.csv (every run) and <out>/generator_summary.csv.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "hpr/clock.hpp"
#include "hpr/data_dir.hpp"
#include "hpr/stats.hpp"
#include "runtime/pool.hpp"
#include "runtime/ports/generator.hpp"

using namespace hpr;

namespace {

struct Scenario {
  std::string name;
  GeneratorConfig cfg;
};

// Mpps on the wall clock and per CPU-second of this thread (the machine this was written on is
// shared by several builds at once: CPU time gives the per-core rate, wall time what a user sees).
struct RunResult {
  double mpps, gbps, cpu_mpps;
};

uint64_t thread_cpu_ns() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}

constexpr uint16_t kBurst = 32;

RunResult time_generator(GeneratorPort& g, uint64_t packets) {
  Packet pk[kBurst];
  uint64_t done = 0, bytes = 0;
  uint64_t t0 = monotonic_ns(), c0 = thread_cpu_ns();
  while (done < packets) {
    uint16_t got = g.rx_burst(pk, kBurst, 0);
    for (uint16_t i = 0; i < got; ++i) bytes += pk[i].len;
    g.release(pk, got);
    done += got;
  }
  double s = static_cast<double>(monotonic_ns() - t0) * 1e-9;
  double cs = static_cast<double>(thread_cpu_ns() - c0) * 1e-9;
  return {static_cast<double>(done) / s / 1e6, static_cast<double>(bytes) * 8 / s / 1e9,
          static_cast<double>(done) / cs / 1e6};
}

// Peer: copy pre-built frames (4096 of them, made by the generator itself) into pool buffers.
struct Replay {
  std::vector<std::vector<uint8_t>> frames;
  std::unique_ptr<PacketPool> pool;
  explicit Replay(const GeneratorConfig& cfg) {
    GeneratorConfig c = cfg;
    c.max_packets = 0;
    auto g = std::move(make_generator(c).value());
    Packet pk[kBurst];
    while (frames.size() < 4096) {
      uint16_t got = g->rx_burst(pk, kBurst, 0);
      for (uint16_t i = 0; i < got; ++i) frames.emplace_back(pk[i].data, pk[i].data + pk[i].len);
      g->release(pk, got);
    }
    pool = std::move(PacketPool::create(cfg.pool_slots, 9216).value());
  }
  RunResult run(uint64_t packets) {
    Packet pk[kBurst];
    uint64_t done = 0, bytes = 0;
    size_t next = 0;
    uint64_t t0 = monotonic_ns(), c0 = thread_cpu_ns();
    while (done < packets) {
      uint32_t got = pool->alloc(pk, kBurst);
      for (uint32_t i = 0; i < got; ++i) {
        const auto& f = frames[next];
        next = (next + 1) & 4095;
        std::memcpy(pk[i].data, f.data(), f.size());
        pk[i].len = static_cast<uint16_t>(f.size());
        bytes += pk[i].len;
      }
      pool->free(pk, got);
      done += got;
    }
    double s = static_cast<double>(monotonic_ns() - t0) * 1e-9;
    double cs = static_cast<double>(thread_cpu_ns() - c0) * 1e-9;
    return {static_cast<double>(done) / s / 1e6, static_cast<double>(bytes) * 8 / s / 1e9,
            static_cast<double>(done) / cs / 1e6};
  }
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"hpr traffic generator throughput (unpaced, one core)"};
  int runs = 7;
  uint64_t packets = 2'000'000;
  std::string out = "out/generator";
  std::string only;
  app.add_option("--runs", runs, "timed runs per scenario (after one warm-up)")->check(CLI::PositiveNumber);
  app.add_option("--packets", packets, "packets per run")->check(CLI::PositiveNumber);
  app.add_option("--out", out, "output directory for the CSV files");
  app.add_option("--only", only, "run only the scenario with this name");
  CLI11_PARSE(app, argc, argv);

  std::vector<Scenario> sc;
  {
    GeneratorConfig c;
    c.flows = 1024;
    c.size_bytes = 60;
    sc.push_back({"64B_1k_uniform", c});
    c.size_bytes = 1514;
    sc.push_back({"1514B_1k_uniform", c});
    c.size_mode = SizeMode::kImix;
    sc.push_back({"imix_1k_uniform", c});
    GeneratorConfig z;
    z.flows = 1'000'000;
    z.popularity = Popularity::kZipf;
    z.zipf_s = 1.0;
    z.size_bytes = 60;
    sc.push_back({"64B_1M_zipf", z});
    z.size_mode = SizeMode::kImix;
    z.ipv6_share = 0.2;
    sc.push_back({"imix_1M_zipf_v6", z});
    GeneratorConfig t;
    t.template_capture = data_path("pcap/ndpi/1kxun.pcap");
    t.flows = 100'000;
    t.size_mode = SizeMode::kImix;
    sc.push_back({"imix_100k_templates", t});
    GeneratorConfig p = c;
    p.patterns = {"GET /index.html", "SELECT * FROM", "cmd.exe", "/etc/passwd"};
    p.pattern_match_rate = 0.1;
    p.l4_checksums = true;
    sc.push_back({"imix_patterns_l4csum", p});
  }

  std::filesystem::create_directories(out);
  std::ofstream runs_csv(out + "/generator_runs.csv");
  std::ofstream sum_csv(out + "/generator_summary.csv");
  runs_csv << "scenario,impl,run,mpps,gbps,cpu_mpps\n";
  sum_csv << "scenario,gen_mpps_median,gen_mpps_p10,gen_mpps_p90,gen_spread,gen_gbps_median,gen_cpu_mpps_median,"
             "gen_cpu_spread,replay_mpps_median,replay_spread,replay_cpu_mpps_median,ratio,cpu_ratio\n";
  fmt::print("{:<22} {:>9} {:>7} {:>7} {:>9} {:>7} {:>10} {:>9} {:>6} {:>9}\n", "scenario", "gen Mpps", "spread",
             "Gb/s", "gen cpu", "spread", "replay", "rep cpu", "ratio", "cpu ratio");
  for (auto& s : sc) {
    if (!only.empty() && s.name != only) continue;
    auto gr = make_generator(s.cfg);
    if (!gr) {
      fmt::print(stderr, "{}: {}\n", s.name, gr.status().to_string());
      continue;
    }
    auto g = std::move(gr.value());
    Replay rep(s.cfg);
    time_generator(*g, packets / 4);  // warm-up (page-in of pool and tables)
    rep.run(packets / 4);
    std::vector<double> gm, gg, rm, gc, rc;
    for (int r = 0; r < runs; ++r) {  // interleaved so that both see the same machine state
      RunResult a = time_generator(*g, packets);
      RunResult b = rep.run(packets);
      gm.push_back(a.mpps);
      gg.push_back(a.gbps);
      rm.push_back(b.mpps);
      gc.push_back(a.cpu_mpps);
      rc.push_back(b.cpu_mpps);
      runs_csv << fmt::format("{},generator,{},{:.4f},{:.4f},{:.4f}\n", s.name, r, a.mpps, a.gbps, a.cpu_mpps);
      runs_csv << fmt::format("{},replay,{},{:.4f},{:.4f},{:.4f}\n", s.name, r, b.mpps, b.gbps, b.cpu_mpps);
    }
    Summary g_s = summarize(gm), r_s = summarize(rm), gc_s = summarize(gc), rc_s = summarize(rc);
    double ratio = g_s.median / r_s.median, cpu_ratio = gc_s.median / rc_s.median;
    fmt::print("{:<22} {:>9.2f} {:>6.1f}% {:>7.2f} {:>9.2f} {:>6.1f}% {:>10.2f} {:>9.2f} {:>6.2f} {:>9.2f}\n", s.name,
               g_s.median, 100 * g_s.spread, median(gg), gc_s.median, 100 * gc_s.spread, r_s.median, rc_s.median, ratio,
               cpu_ratio);
    sum_csv << fmt::format("{},{:.4f},{:.4f},{:.4f},{:.4f},{:.4f},{:.4f},{:.4f},{:.4f},{:.4f},{:.4f},{:.4f},{:.4f}\n",
                           s.name, g_s.median, percentile(gm, 10), percentile(gm, 90), g_s.spread, median(gg),
                           gc_s.median, gc_s.spread, r_s.median, r_s.spread, rc_s.median, ratio, cpu_ratio);
  }
  fmt::print("CSV: {}/generator_runs.csv, {}/generator_summary.csv\n", out, out);
  return 0;
}
