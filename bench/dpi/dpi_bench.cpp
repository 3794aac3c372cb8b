// DPI benchmark: the native Aho-Corasick lane (whole-set automaton, 1 and 4 lanes, and the prefilter
// path on the CPU's best SIMD path) beside Hyperscan block mode (the peer, same patterns,
// same packets, every match counted through a callback). The OpenCL devices are swept by
// bench/apps/app_bench (the pipeline's executors, buffers allocated once).
//
// Pattern sets: the full ET Open 2017 set, and its patterns of >= 4 bytes.
// Workloads: capture payloads replayed (all of pcap/ndpi, in file order), and synthetic frames of
//   64 bytes, 1,514 bytes and the paper's mix (25% 64-byte, 75% 1,514-byte), whose payloads
//   (frame - 54 bytes of Ethernet/IPv4/TCP headers) are cut from the capture payload byte stream,
//   so the match density is that of real traffic. Each workload has --distinct payloads (16,384);
//   a run scans max(batch, distinct) of them (the largest batch repeats them), so every batch size
//   sees the same bytes.
// Throughput: Gbit/s of frame bytes (8 * sum of frame lengths / time) and Mpps; also the payload
//   scan rate; each per wall time and per thread CPU time (the machine is shared). Each cell:
//   warm-up, then `runs` runs; median and spread ((p90-p10)/median).
// Batch latency: time of one batch (the scan loop), median and p99 over all batches of all runs.
// CSV: --out (default out/dpi/dpi_bench.csv).
// --series N and --callgrind ENGINE replace the matrix by the interleaved capture series and the
// callgrind pass (dpi_series.hpp); --callgrind ENGINE --steps counts that pass by single-stepping instead.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "hpr/clock.hpp"
#include "hpr/data_dir.hpp"
#include "hpr/stats.hpp"
#include "kernels/dpi/dpi_app.hpp"
#include "kernels/dpi/hs_peer.hpp"
#include "kernels/runner.hpp"
#include "runtime/parser.hpp"
#include "runtime/pcap_file.hpp"
#include "bench/dpi/dpi_workload.hpp"
#include "bench/dpi/dpi_series.hpp"

using namespace hpr;
using namespace hpr::dpi;
using namespace hpr::dpi::bench;

namespace {

// Frames of the given sizes (cycled), payloads cut from `stream`.
Workload synthetic_workload(const std::string& name, const DpiApp& app, const std::vector<uint8_t>& stream,
                            const std::vector<uint32_t>& sizes, size_t n) {
  Workload w{name, {}, {}};
  size_t pos = 0;
  uint32_t off = 0;
  for (size_t i = 0; i < n; ++i) {
    uint32_t frame = sizes[i % sizes.size()];
    uint32_t len = frame - kHeaderBytes;
    w.pool.desc.push_back({off, static_cast<uint16_t>(len), 0, 0, 0});
    w.frame_len.push_back(frame);
    off += kernels::align_slice(len);
  }
  w.pool.pkts.resize(off);
  for (auto& d : w.pool.desc) {
    for (uint32_t j = 0; j < d.len; ++j) {
      w.pool.pkts[d.off + j] = stream[pos];
      pos = pos + 1 == stream.size() ? 0 : pos + 1;
    }
  }
  w.pool.out.assign(n * app.result_bytes(), 0);
  return w;
}

struct Cell {
  std::vector<double> cpu_gbps;  // frame Gbit/s per second of this thread's CPU time
  std::vector<double> gbps, mpps, payload_gbps, batch_us;
  uint64_t matches = 0;
  uint64_t payload_bytes = 0;  // of the last run
};

// One run = one pass over the first max(batch, distinct) descriptors in windows of `batch`, so
// every batch size scans the same payloads (the pool holds `distinct` payloads; its descriptor
// array repeats them up to the largest batch). One warm-up run, then `runs` runs.
template <typename Fn>
Cell measure(Workload& w, uint32_t result_bytes, uint32_t batch, int runs, uint32_t distinct, Fn&& fn) {
  Cell c;
  const uint32_t n_desc = static_cast<uint32_t>(w.pool.desc.size());
  batch = std::min(batch, n_desc);
  const uint32_t windows = std::max(1u, std::min(std::max(batch, distinct), n_desc) / batch);
  for (int r = -1; r < runs; ++r) {
    uint64_t frame_bytes = 0, payload_bytes = 0, pkts = 0, matches = 0;
    uint64_t t0 = monotonic_ns(), c0 = thread_cpu_ns();
    for (uint32_t win = 0; win < windows; ++win) {
      uint32_t s = win * batch;
      kernels::BatchView v{w.pool.desc.data() + s, batch, w.pool.pkts.data(), w.pool.out.data() + size_t{s} * result_bytes};
      uint64_t b0 = monotonic_ns();
      fn(v);
      uint64_t b1 = monotonic_ns();
      if (r >= 0) c.batch_us.push_back((b1 - b0) / 1e3);
      for (uint32_t i = 0; i < batch; ++i) {
        frame_bytes += w.frame_len[s + i];
        payload_bytes += v.desc[i].len;
        matches += reinterpret_cast<const uint32_t*>(v.out)[size_t{i} * (result_bytes / 4)];
      }
      pkts += batch;
    }
    double sec = (monotonic_ns() - t0) / 1e9;
    double cpu_sec = (thread_cpu_ns() - c0) / 1e9;
    if (r < 0) continue;
    c.cpu_gbps.push_back(frame_bytes * 8 / cpu_sec / 1e9);
    c.gbps.push_back(frame_bytes * 8 / sec / 1e9);
    c.payload_gbps.push_back(payload_bytes * 8 / sec / 1e9);
    c.mpps.push_back(pkts / sec / 1e6);
    c.matches = matches;
    c.payload_bytes = payload_bytes;
  }
  return c;
}

// Repeats the pool's descriptors (and frame lengths) until there are `n`.
void repeat_to(Workload& w, size_t n, uint32_t result_bytes) {
  const size_t d = w.pool.desc.size();
  for (size_t i = d; i < n; ++i) {
    w.pool.desc.push_back(w.pool.desc[i % d]);
    w.frame_len.push_back(w.frame_len[i % d]);
  }
  w.pool.out.assign(n * result_bytes, 0);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App cli{"DPI: native Aho-Corasick vs Hyperscan"};
  std::string out_path = "out/dpi/dpi_bench.csv";
  std::string rules = data_path("rules/et-open-2017");
  int runs = 5;
  uint32_t distinct = 16384;
  std::vector<uint32_t> batches = {64, 256, 1024, 4096, 16384, 65536};
  std::vector<std::string> only_workloads;
  cli.add_option("--out", out_path, "CSV output path");
  cli.add_option("--rules", rules, "rule directory");
  cli.add_option("--runs", runs, "measured runs per cell (>= 5 recommended)");
  cli.add_option("--distinct", distinct, "distinct payloads per workload; a run scans max(batch, distinct)");
  cli.add_option("--batches", batches, "batch sizes");
  cli.add_option("--workloads", only_workloads, "subset of capture,64,1514,mix");
  int series = 0;
  uint32_t series_batch = 1024;
  std::string callgrind_engine, callgrind_set = "et-full";
  uint32_t sample = 2000;
  cli.add_option("--series", series, "instead of the matrix: this many interleaved rounds on all capture payloads "
                                     "(dpi_series.hpp), CSV to --out");
  cli.add_option("--series-batch", series_batch, "batch size of --series");
  uint32_t series_payloads = 0;
  cli.add_option("--series-payloads", series_payloads, "--series on the first N capture payloads (0: all)");
  cli.add_option("--callgrind", callgrind_engine, "instead of the matrix: one pass of this engine for callgrind");
  cli.add_option("--callgrind-set", callgrind_set, "et-full or et-ge4");
  cli.add_option("--sample", sample, "capture payloads of --callgrind");
  bool steps = false;
  cli.add_flag("--steps", steps, "with --callgrind ENGINE: count the pass's instructions by single-stepping it on "
                                 "this CPU (any SIMD path; no valgrind; about 20 us an instruction)");
  CLI11_PARSE(cli, argc, argv);
  if (series > 0) return run_series(rules, series, series_batch, series_payloads, out_path);
  if (!callgrind_engine.empty()) return run_callgrind(rules, callgrind_engine, callgrind_set, sample, steps);

  auto full = load_rule_dir(rules);
  if (!full.is_ok()) {
    fmt::print(stderr, "{}\n", full.status().to_string());
    return 1;
  }
  std::filesystem::create_directories(std::filesystem::path(out_path).parent_path());
  std::ofstream csv(out_path);
  csv << "set,patterns,workload,batch,engine,gbps_median,gbps_spread,mpps_median,payload_gbps_median,"
         "batch_us_median,batch_us_p99,matches_per_payload_byte,ratio_vs_hyperscan,cpu_gbps_median,cpu_gbps_spread,cpu_ratio_vs_hyperscan\n";

  const uint32_t max_batch = *std::max_element(batches.begin(), batches.end());
  for (int set_i = 0; set_i < 2; ++set_i) {
    PatternSet ps = set_i == 0 ? *full : filter_min_length(*full, 4);
    std::string set_name = set_i == 0 ? "et-full" : "et-ge4";
    size_t npat = ps.patterns.size();
    auto app_r = DpiApp::create(std::move(ps), {.native_engine = DpiConfig::Engine::kPrefilter});
    if (!app_r.is_ok()) { fmt::print(stderr, "{}\n", app_r.status().to_string()); return 1; }
    const DpiApp& app = **app_r;
    auto hs_r = HsPeer::compile(app.patterns().patterns);
    if (!hs_r.is_ok()) { fmt::print(stderr, "{}\n", hs_r.status().to_string()); return 1; }
    const HsPeer& hs = *hs_r;
    const PrefilterMatcher& pf = *app.prefilter();
    const auto& st = app.dfa().stats();
    fmt::print("{}: {} patterns, {} states ({} with outputs), {} classes, table {:.1f} MB (build {:.2f} s), native "
               "lanes {}; hyperscan db {:.1f} MB\n",
               set_name, npat, st.states, st.output_states, st.classes, st.table_bytes / 1048576.0, st.build_s,
               app.config().native_lanes, hs.database_bytes() / 1048576.0);

    std::vector<uint8_t> stream;
    std::vector<Workload> wls;
    wls.push_back(capture_workload(app, stream, distinct));
    // Synthetic payloads are cut from the whole capture payload stream.
    if (stream.size() < 30'000'000) {
      std::vector<uint8_t> all;
      capture_workload(app, all, 1u << 30);
      stream.swap(all);
    }
    wls.push_back(synthetic_workload("64", app, stream, {64}, distinct));
    wls.push_back(synthetic_workload("1514", app, stream, {1514}, distinct));
    wls.push_back(synthetic_workload("mix", app, stream, {64, 1514, 1514, 1514}, distinct));
    for (auto& w : wls) repeat_to(w, max_batch, app.result_bytes());
    for (auto& w : wls) {
      if (!only_workloads.empty() && std::find(only_workloads.begin(), only_workloads.end(), w.name) == only_workloads.end())
        continue;
      for (uint32_t b : batches) {
        const uint32_t rb = app.result_bytes();
        Cell hsc = measure(w, rb, b, runs, distinct, [&](const kernels::BatchView& v) {
          auto* out = reinterpret_cast<uint32_t*>(v.out);
          for (uint32_t i = 0; i < v.n; ++i) out[size_t{i} * (rb / 4)] = hs.count(v.pkts + v.desc[i].off, v.desc[i].len);
        });
        // Both native variants, whatever the app chose (run_native uses config().native_lanes).
        Cell ac1 = measure(w, rb, b, runs, distinct, [&](const kernels::BatchView& v) {
          run_native_batch(app.dfa(), app.config().max_ids, v, 1);
        });
        Cell ac4 = measure(w, rb, b, runs, distinct, [&](const kernels::BatchView& v) {
          run_native_batch(app.dfa(), app.config().max_ids, v, 4);
        });
        Cell pfc = measure(w, rb, b, runs, distinct, [&](const kernels::BatchView& v) {
          run_native_batch(pf, app.config().max_ids, v);
        });
        const Cell& ac = app.config().native_lanes == 1 ? ac1 : ac4;
        std::vector<std::pair<std::string, Cell>> cells = {
            {"native-ac-1lane", ac1}, {"native-ac-4lane", ac4}, {"native-prefilter", pfc}, {"hyperscan", hsc}};
        for (const Cell* c : {&ac, static_cast<const Cell*>(&pfc)}) {
          if (c->matches != hsc.matches)
            fmt::print(stderr, "MISMATCH {} {} batch {}: native {} hyperscan {}\n", set_name, w.name, b, c->matches, hsc.matches);
        }
        double hs_med = median(hsc.gbps), hs_cpu_med = median(hsc.cpu_gbps);
        double density = ac.payload_bytes ? double(ac.matches) / double(ac.payload_bytes) : 0.0;
        for (auto& [eng, c] : cells) {
          Summary g = summarize(c.gbps);
          Summary gc = summarize(c.cpu_gbps);
          double ratio = hs_med > 0 ? g.median / hs_med : 0;
          double cpu_ratio = hs_cpu_med > 0 ? gc.median / hs_cpu_med : 0;
          csv << fmt::format("{},{},{},{},{},{:.4f},{:.4f},{:.4f},{:.4f},{:.2f},{:.2f},{:.3f},{:.3f},{:.4f},{:.4f},{:.3f}\n",
                             set_name, npat, w.name, b, eng, g.median, g.spread, median(c.mpps), median(c.payload_gbps),
                             median(c.batch_us), percentile(c.batch_us, 99), density, ratio, gc.median, gc.spread,
                             cpu_ratio);
          fmt::print("{:7} {:7} batch {:6} {:15} wall {:7.3f} Gbit/s (spread {:5.1f}%) x{:.2f} | cpu {:7.3f} Gbit/s "
                     "(spread {:5.1f}%) x{:.2f} | {:7.3f} Mpps batch {:9.1f} us p99 {:9.1f} us\n",
                     set_name, w.name, b, eng, g.median, g.spread * 100, ratio, gc.median, gc.spread * 100, cpu_ratio,
                     median(c.mpps), median(c.batch_us), percentile(c.batch_us, 99));
        }
        std::fflush(stdout);
      }
    }
  }
  fmt::print("CSV: {}\n", out_path);
  return 0;
}
