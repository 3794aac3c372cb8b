// dpi_bench --series / --callgrind (see dpi_series.hpp).
#include "bench/dpi/dpi_series.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>

#include "bench/dpi/dpi_workload.hpp"
#include "hpr/clock.hpp"
#include "hpr/stats.hpp"
#include "hpr/step_count.hpp"
#include "kernels/dpi/hs_peer.hpp"
#include "kernels/dpi/hot_order.hpp"

namespace hpr::dpi::bench {
namespace {

using ScanFn = std::function<void(const kernels::BatchView&)>;

struct Engine {
  std::string name;
  ScanFn run;
  std::vector<double> cpu_gbps, ratio;
};

struct Pass {
  double cpu_s = 0, wall_s = 0;
  uint64_t matches = 0, bytes = 0;
};

Pass one_pass(Workload& w, uint32_t k, uint32_t batch, const ScanFn& fn) {
  Pass p;
  const auto n = static_cast<uint32_t>(w.pool.desc.size());
  const uint64_t t0 = monotonic_ns(), c0 = thread_cpu_ns();
  for (uint32_t s = 0; s < n; s += batch) {
    kernels::BatchView v{w.pool.desc.data() + s, std::min(batch, n - s), w.pool.pkts.data(),
                         w.pool.out.data() + size_t{s} * (k + 1) * 4};
    fn(v);
  }
  p.cpu_s = (thread_cpu_ns() - c0) / 1e9;
  p.wall_s = (monotonic_ns() - t0) / 1e9;
  const auto* out = reinterpret_cast<const uint32_t*>(w.pool.out.data());
  for (uint32_t i = 0; i < n; ++i) {
    p.matches += out[size_t{i} * (k + 1)];
    p.bytes += w.pool.desc[i].len;
  }
  return p;
}

std::vector<SimdPath> simd_paths() {
  std::vector<SimdPath> v;
  for (SimdPath p : {SimdPath::kAvx512, SimdPath::kAvx2, SimdPath::kScalar})
    if (resolve_simd(p) == p) v.push_back(p);
  return v;
}

// A DpiApp only for slicing packets into the kernel layout (one pattern: no big automaton).
std::unique_ptr<DpiApp> slicer() {
  PatternSet one;
  one.patterns.push_back({"x", false, 0});
  auto r = DpiApp::create(std::move(one), {.native_engine = DpiConfig::Engine::kAutomaton});
  return std::move(*r);
}

}  // namespace

int run_series(const std::string& rules, int rounds, uint32_t batch, uint32_t payloads, const std::string& csv_path) {
  auto full = load_rule_dir(rules);
  if (!full.is_ok()) {
    fmt::print(stderr, "{}\n", full.status().to_string());
    return 1;
  }
  std::filesystem::create_directories(std::filesystem::path(csv_path).parent_path());
  std::ofstream csv(csv_path);
  csv << "set,engine,simd,rounds,payload_bytes,matches,cpu_gbps_median,ratio_median,ratio_min,ratio_max\n";
  std::vector<uint8_t> stream;
  Workload w = capture_workload(*slicer(), stream, payloads == 0 ? size_t{1} << 30 : payloads);
  // The *-hot engines: automata in visit order (AcOrder), trained on the second half of the capture
  // payloads (file order). Disjoint from the first `payloads` when that is at most half of them.
  auto all = load_payloads(data_path("pcap/ndpi"), "capture directory");
  if (!all.is_ok()) {
    fmt::print(stderr, "{}\n", all.status().to_string());
    return 1;
  }
  const AcOrder hot_order{payload_spans(*all, all->size() / 2), 1};
  fmt::print("hot order: trained on payloads {}..{} of {} (measured: the first {})\n", all->size() / 2, all->size(),
             all->size(), w.pool.desc.size());
  bool mismatch = false;
  for (int set_i = 0; set_i < 2; ++set_i) {
    PatternSet ps = set_i == 0 ? *full : filter_min_length(*full, 4);
    const std::string set_name = set_i == 0 ? "et-full" : "et-ge4";
    auto app = DpiApp::create(ps, {.native_engine = DpiConfig::Engine::kAutomaton});
    auto pf = PrefilterMatcher::build(ps.patterns);
    auto hs = HsPeer::compile(ps.patterns);
    auto hot = AcDfa::build(ps.patterns, hot_order);
    auto pf_hot = PrefilterMatcher::build(ps.patterns, SimdPath::kAuto, 2ull << 30, hot_order);
    for (const Status& s : {app.status(), pf.status(), hs.status(), hot.status(), pf_hot.status()}) {
      if (!s.is_ok()) {
        fmt::print(stderr, "{}\n", s.to_string());
        return 1;
      }
    }
    const uint32_t k = (*app)->config().max_ids;
    w.pool.out.assign(w.pool.desc.size() * (k + 1) * 4, 0);
    const auto& pst = (*pf)->stats();
    fmt::print("{}: {} patterns ({} short, {} long), {} fingerprints in 2^{} bits, prefilter tables {:.1f} MB, "
               "automaton {:.1f} MB, hyperscan {:.1f} MB; {} payloads\n",
               set_name, ps.patterns.size(), pst.short_patterns, pst.long_patterns, pst.fingerprints, pst.hash_bits,
               pst.table_bytes / 1048576.0, (*app)->dfa().stats().table_bytes / 1048576.0,
               hs->database_bytes() / 1048576.0, w.pool.desc.size());
    for (const AcDfa* d : {static_cast<const AcDfa*>(&*hot), (*pf_hot)->long_automaton()}) {
      const AcStats& st = d->stats();
      fmt::print("{}: hot order of the {} automaton: {} states, {:.1f} MB trained; visits on the first 1 MB of rows: "
                 "BFS {:.1f}%, hot {:.1f}%; built in {:.2f} s\n",
                 set_name, d == &*hot ? "whole-set" : "prefilter's", st.states, st.train_bytes / 1048576.0,
                 100 * st.visit_share_1mb_bfs, 100 * st.visit_share_1mb, st.build_s);
    }
    std::vector<Engine> eng;
    eng.push_back({"hyperscan", [&](const kernels::BatchView& v) {
                     auto* out = reinterpret_cast<uint32_t*>(v.out);
                     for (uint32_t i = 0; i < v.n; ++i) out[size_t{i} * (k + 1)] = hs->count(v.slice(i), v.desc[i].len);
                   }});
    // Each BFS / hot pair side by side: with the order reversed every other round (below), each of
    // the two runs after the other in half the rounds, after the neighbouring engine in the rest.
    eng.push_back({"automaton-4lane", [&](const kernels::BatchView& v) { run_native_batch((*app)->dfa(), k, v, 4); }});
    eng.push_back({"automaton-4lane-hot", [&](const kernels::BatchView& v) { run_native_batch(*hot, k, v, 4); }});
    eng.push_back({"automaton-1lane", [&](const kernels::BatchView& v) { run_native_batch((*app)->dfa(), k, v, 1); }});
    eng.push_back({"automaton-1lane-hot", [&](const kernels::BatchView& v) { run_native_batch(*hot, k, v, 1); }});
    std::vector<SimdPath> paths = simd_paths();
    std::stable_partition(paths.begin(), paths.end(), [&](SimdPath sp) { return sp == (*pf_hot)->simd(); });
    for (SimdPath sp : paths) {
      eng.push_back({fmt::format("prefilter-{}", simd_name(sp)), [&, sp](const kernels::BatchView& v) {
                       (*pf)->set_simd(sp);
                       run_native_batch(**pf, k, v);
                     }});
      if (sp != (*pf_hot)->simd()) continue;
      eng.push_back({fmt::format("prefilter-{}-hot", simd_name(sp)),
                     [&](const kernels::BatchView& v) { run_native_batch(**pf_hot, k, v); }});
    }
    for (auto& e : eng) one_pass(w, k, batch, e.run);  // warm-up
    uint64_t hs_matches = 0;
    for (int r = 0; r < rounds; ++r) {
      std::vector<double> gbps(eng.size());
      std::vector<uint64_t> totals(eng.size());
      for (size_t j = 0; j < eng.size(); ++j) {
        // Rotated, and reversed every other round: an engine does not always run after the same one
        // (whose tables decide what is still in the caches).
        const size_t e = ((r % 2 == 0 ? j : eng.size() - 1 - j) + static_cast<size_t>(r)) % eng.size();
        Pass p = one_pass(w, k, batch, eng[e].run);
        gbps[e] = p.bytes * 8 / p.cpu_s / 1e9;
        totals[e] = p.matches;
        eng[e].cpu_gbps.push_back(gbps[e]);
      }
      hs_matches = totals[0];
      for (size_t x = 1; x < eng.size(); ++x) {
        if (totals[x] != hs_matches) {
          fmt::print(stderr, "MISMATCH {} {}: {} matches, hyperscan {}\n", set_name, eng[x].name, totals[x], hs_matches);
          mismatch = true;
        }
      }
      for (size_t e = 0; e < eng.size(); ++e) eng[e].ratio.push_back(gbps[e] / gbps[0]);
      fmt::print("{} round {}:", set_name, r + 1);
      for (size_t e = 0; e < eng.size(); ++e) fmt::print(" {} {:.3f}", eng[e].name, gbps[e]);
      fmt::print(" Gbit/s (payload, CPU time); hyperscan matches {}\n", hs_matches);
    }
    uint64_t bytes = 0;
    for (auto& d : w.pool.desc) bytes += d.len;
    for (auto& e : eng) {
      const Summary g = summarize(e.cpu_gbps), q = summarize(e.ratio);
      fmt::print("{:7} {:18} {:7.3f} Gbit/s  x{:.2f} of hyperscan (min {:.2f}, max {:.2f}, {} rounds)\n", set_name, e.name,
                 g.median, q.median, q.min, q.max, rounds);
      csv << fmt::format("{},{},{},{},{},{},{:.4f},{:.3f},{:.3f},{:.3f}\n", set_name, e.name,
                         simd_name(resolve_simd(SimdPath::kAuto)), rounds, bytes, hs_matches, g.median, q.median, q.min, q.max);
    }
    std::fflush(stdout);
  }
  fmt::print("CSV: {}\n", csv_path);
  return mismatch ? 2 : 0;
}

}  // namespace hpr::dpi::bench

// Outside any namespace and not inlined: callgrind toggles collection on this symbol.
extern "C" __attribute__((noinline)) void dpi_bench_scan_pass(const std::function<void(const hpr::kernels::BatchView&)>* fn,
                                                              const hpr::kernels::BatchView* v) {
  (*fn)(*v);
}

namespace hpr::dpi::bench {

int run_callgrind(const std::string& rules, const std::string& engine, const std::string& set, uint32_t sample,
                  bool steps) {
  auto full = load_rule_dir(rules);
  if (!full.is_ok()) {
    fmt::print(stderr, "{}\n", full.status().to_string());
    return 1;
  }
  PatternSet ps = set == "et-ge4" ? filter_min_length(*full, 4) : *full;
  std::vector<uint8_t> stream;
  Workload w = capture_workload(*slicer(), stream, sample);
  const uint32_t k = 8;
  w.pool.out.assign(w.pool.desc.size() * (k + 1) * 4, 0);
  kernels::BatchView v{w.pool.desc.data(), static_cast<uint32_t>(w.pool.desc.size()), w.pool.pkts.data(), w.pool.out.data()};
  ScanFn fn;
  std::unique_ptr<AcDfa> dfa;
  std::unique_ptr<PrefilterMatcher> pf;
  std::optional<HsPeer> hs;
  if (engine == "hyperscan") {
    auto r = HsPeer::compile(ps.patterns);
    if (!r.is_ok()) return fmt::print(stderr, "{}\n", r.status().to_string()), 1;
    hs.emplace(std::move(*r));
    fn = [&](const kernels::BatchView& b) {
      auto* out = reinterpret_cast<uint32_t*>(b.out);
      for (uint32_t i = 0; i < b.n; ++i) out[size_t{i} * (k + 1)] = hs->count(b.slice(i), b.desc[i].len);
    };
  } else if (engine.starts_with("automaton")) {
    auto r = AcDfa::build(ps.patterns);
    if (!r.is_ok()) return fmt::print(stderr, "{}\n", r.status().to_string()), 1;
    dfa = std::make_unique<AcDfa>(std::move(*r));
    const uint32_t lanes = engine == "automaton-1lane" ? 1 : 4;
    fn = [&, lanes](const kernels::BatchView& b) { run_native_batch(*dfa, k, b, lanes); };
  } else if (engine.starts_with("prefilter")) {
    SimdPath sp = engine.find("scalar") != std::string::npos   ? SimdPath::kScalar
                  : engine.find("avx512") != std::string::npos ? SimdPath::kAvx512
                  : engine.find("avx2") != std::string::npos   ? SimdPath::kAvx2
                                                               : SimdPath::kAuto;
    auto r = PrefilterMatcher::build(ps.patterns, sp);
    if (!r.is_ok()) return fmt::print(stderr, "{}\n", r.status().to_string()), 1;
    pf = std::move(*r);
    fn = [&](const kernels::BatchView& b) { run_native_batch(*pf, k, b); };
  } else {
    fmt::print(stderr, "--callgrind: unknown engine '{}' (hyperscan, automaton-4lane, automaton-1lane, "
                       "prefilter[-avx512|-avx2|-scalar])\n", engine);
    return 1;
  }
  uint64_t instructions = 0;
  dpi_bench_scan_pass(&fn, &v);  // the pass callgrind counts; under `steps`, the warm-up
  if (steps) {
    auto n = count_steps([&] { dpi_bench_scan_pass(&fn, &v); });
    if (!n) return fmt::print(stderr, "--steps: {}\n", n.status().to_string()), 1;
    instructions = *n;
  }
  uint64_t bytes = 0, matches = 0;
  for (uint32_t i = 0; i < v.n; ++i) {
    bytes += v.desc[i].len;
    matches += reinterpret_cast<const uint32_t*>(v.out)[size_t{i} * (k + 1)];
  }
  fmt::print("{} {} {} {}: {} payloads, {} payload bytes, {} matches", steps ? "steps" : "callgrind", engine, set,
             pf ? simd_name(pf->simd()) : "-", v.n, bytes, matches);
  if (steps)
    fmt::print(", {} instructions, {:.2f} per byte", instructions,
               static_cast<double>(instructions) / static_cast<double>(bytes ? bytes : 1));
  fmt::print("\n");
  return 0;
}

}  // namespace hpr::dpi::bench
