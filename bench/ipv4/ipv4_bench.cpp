// IPv4 benchmarks (issue 3, "Benchmark"):
//  1. LPM lookups/s of our DIR-24-8 (16-bit and 32-bit entries, bulk lookup) beside DPDK
//     rte_lpm (rte_lpm_lookup_bulk and rte_lpm_lookupx4) on the same full RouteViews table and the
//     same addresses: uniform random, and every IPv4 address of the captures (real locality).
//     Results are cross-checked (same next hop for every address) before timing.
//  2. Native forwarding (Ipv4App::run_native on the device batch layout) in Mpps for batch sizes
//     64..65,536, 64-byte frames to routed addresses: the app step alone, and the whole host path
//     (gather + run_native + scatter_back + finish).
// Warm-up, then --runs repetitions (LPM: interleaved rounds, ratio to rte_lpm_lookup_bulk per round, its median
// and min-max); median and spread ((p90-p10)/median). CSV to --out (default out/ipv4/): lpm.csv, lpm_rounds.csv,
// forward.csv. Times are thread CPU time (see cpu_ns). Plot: bench/ipv4/plot_ipv4.py out/ipv4.
// --steps N: instead, the instructions of N lookups per implementation and address set, counted by single-stepping
// (lpm_steps.csv), so the comparison has a figure that the machine's noise does not move.
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_lpm.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <random>
#include <ctime>

#include "bench/ipv4/lookup_steps.hpp"
#include "hpr/clock.hpp"
#include "hpr/data_dir.hpp"
#include "hpr/stats.hpp"
#include "kernels/ipv4/ipv4_app.hpp"
#include "kernels/ipv4/ipv4_hdr.hpp"
#include "kernels/runner.hpp"
#include "runtime/parser.hpp"
#include "runtime/pcap_file.hpp"

using namespace hpr;
using namespace hpr::kernels::ipv4;

namespace {

std::vector<uint32_t> capture_addresses() {
  std::vector<uint32_t> out;
  for (const auto& path : hpr::list_captures(hpr::data_path("pcap/ndpi"))) {
    auto c = hpr::load_capture(path);
    if (!c) continue;
    for (auto& f : c->frames) {
      hpr::Packet p;
      p.data = f.data();
      p.len = static_cast<uint16_t>(f.size());
      hpr::parse(p, {.verify_ipv4_checksum = false});
      if (p.l3 != hpr::L3::kIPv4 || p.l3_off == hpr::kNoOffset || p.l3_off + 20u > p.len) continue;
      const uint8_t* h = p.data + p.l3_off;
      for (int o : {12, 16}) out.push_back(uint32_t{h[o]} << 24 | uint32_t{h[o + 1]} << 16 | uint32_t{h[o + 2]} << 8 | h[o + 3]);
    }
  }
  return out;
}

volatile uint32_t g_sink;

// Thread CPU time, not wall time: the 2-core machine is shared by several builds at once, and being
// descheduled would otherwise dominate the spread. Rates are per second of this thread's CPU time.
uint64_t cpu_ns() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(ts.tv_nsec);
}

template <typename Fn>
hpr::Summary measure(int runs, size_t items, Fn&& fn) {
  fn();  // warm-up (caches, TLB, page faults)
  std::vector<double> rates;
  for (int r = 0; r < runs; ++r) {
    const uint64_t t0 = cpu_ns();
    fn();
    const uint64_t t1 = cpu_ns();
    rates.push_back(static_cast<double>(items) / static_cast<double>(t1 - t0) * 1e3);  // M per s
  }
  return hpr::summarize(rates);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App cli{"hpr ipv4 benchmarks: LPM vs DPDK rte_lpm, native forwarding Mpps"};
  std::string out_dir = "out/ipv4";
  int runs = 7;
  uint32_t num_random = 4'000'000;
  uint32_t packets = 1u << 20;
  uint32_t num_ports = 16;
  cli.add_option("--out", out_dir, "CSV output folder");
  cli.add_option("--runs", runs, "timed repetitions (>= 5)")->check(CLI::Range(1, 1000));
  cli.add_option("--random", num_random, "random addresses for the LPM benchmark");
  cli.add_option("--packets", packets, "packets per forwarding run");
  cli.add_option("--ports", num_ports, "ports (next hop = AS mod ports)");
  uint32_t steps = 0;
  cli.add_option("--steps", steps, "instead of timing LPM: count the instructions of this many lookups per "
                                   "implementation and address set by single-stepping (hpr/step_count.hpp; about "
                                   "20 us an instruction; no forwarding part); lpm_steps.csv");
  bool no_lpm = false, no_forward = false;
  cli.add_flag("--no-lpm", no_lpm, "skip the LPM benchmark");
  cli.add_flag("--no-forward", no_forward, "skip the forwarding benchmark");
  CLI11_PARSE(cli, argc, argv);
  if (steps > 0) no_forward = true;
  std::filesystem::create_directories(out_dir);

  const char* eal_argv[] = {"ipv4_bench", "--no-huge", "--no-shconf", "--no-pci", "-m", "512", "--log-level=error"};
  if (rte_eal_init(7, const_cast<char**>(eal_argv)) < 0) {
    fmt::print(stderr, "rte_eal_init failed: {}\n", rte_strerror(rte_errno));
    return 1;
  }
  const std::string table = hpr::data_path("routes/ipasn_20140513.dat.gz");
  auto loaded = load_ipasn(table, num_ports);
  if (!loaded) {
    fmt::print(stderr, "{}\n", loaded.status().to_string());
    return 1;
  }
  const std::vector<Route>* routes = &loaded->routes;
  auto wide = FlatLpm::build(*routes, LpmWidth::kWide);
  auto narrow = FlatLpm::build(*routes, LpmWidth::kNarrow);
  if (!narrow || !wide) {
    fmt::print(stderr, "LPM build failed\n");
    return 1;
  }
  rte_lpm_config lc{};
  lc.max_rules = static_cast<uint32_t>(routes->size()) + 1024;
  lc.number_tbl8s = narrow->num_groups() + 256;
  rte_lpm* lpm = rte_lpm_create("ipv4_bench", 0, &lc);
  if (lpm == nullptr) {
    fmt::print(stderr, "rte_lpm_create failed: {}\n", rte_strerror(rte_errno));
    return 1;
  }
  for (const auto& r : *routes) {
    if (rte_lpm_add(lpm, r.prefix, r.len, r.next_hop) < 0) {
      fmt::print(stderr, "rte_lpm_add {}/{} failed\n", format_ipv4(r.prefix), r.len);
      return 1;
    }
  }
  fmt::print("table: {} routes, {} tbl8 groups; ours {} MiB (16-bit) / {} MiB (32-bit)\n", routes->size(),
             narrow->num_groups(), (narrow->tbl24_bytes() + narrow->tbl8_bytes()) >> 20,
             (wide->tbl24_bytes() + wide->tbl8_bytes()) >> 20);

  // ---- 1. LPM lookups ----
  std::mt19937 rng(42);
  std::vector<uint32_t> random_addrs(num_random);
  for (auto& a : random_addrs) a = rng();
  // The capture addresses (about 200k) repeated in order up to the size of the random set, so that each
  // timed run is long enough to measure while the working set stays the captures' own.
  std::vector<uint32_t> cap = capture_addresses();
  const size_t cap_unique = cap.size();
  for (size_t i = 0; cap.size() < num_random && cap_unique > 0; ++i) cap.push_back(cap[i % cap_unique]);
  fmt::print("addresses: {} random, {} from captures ({} distinct packets' src+dst)\n", random_addrs.size(), cap.size(), cap_unique);
  std::vector<std::pair<std::string, std::vector<uint32_t>>> sets = {{"random", random_addrs}, {"captures", cap}};

  if (no_lpm) sets.clear();
  std::ofstream scsv;
  if (steps > 0) {
    scsv.open(out_dir + "/lpm_steps.csv");
    scsv << "addresses,impl,lookups,instructions,per_lookup\n";  // lookup_steps.hpp
  }
  std::ofstream lcsv(out_dir + "/lpm.csv", no_lpm || steps ? std::ios::app : std::ios::trunc);
  if (!no_lpm && !steps) lcsv << "addresses,count,impl,median_mlookups,p1,p99,spread,ratio_vs_rte_lpm_bulk,ratio_min,ratio_max,rounds\n";
  std::ofstream rcsv(out_dir + "/lpm_rounds.csv", no_lpm || steps ? std::ios::app : std::ios::trunc);  // every round's rate
  if (!no_lpm && !steps) rcsv << "addresses,round,impl,mlookups\n";
  constexpr uint32_t kBurst = 64;  // rte_lpm_lookup_bulk wants a compile-time n
  for (auto& [set_name, addrs] : sets) {
    const size_t n = addrs.size() / kBurst * kBurst;
    std::vector<uint32_t> hop_ours(n), hop_rte(n);
    // Cross-check: same next hop for every address.
    narrow->lookup_bulk(addrs.data(), hop_ours.data(), static_cast<uint32_t>(n));
    size_t mism = 0;
    for (size_t i = 0; i < n; i += kBurst) rte_lpm_lookup_bulk(lpm, addrs.data() + i, hop_rte.data() + i, kBurst);
    for (size_t i = 0; i < n; ++i) {
      const uint32_t rte = (hop_rte[i] & RTE_LPM_LOOKUP_SUCCESS) ? (hop_rte[i] & 0x00ffffff) : kNoNextHop;
      mism += rte != hop_ours[i];
    }
    if (mism != 0) fmt::print(stderr, "WARNING: {} addresses of {} differ from rte_lpm\n", mism, set_name);

    std::vector<uint32_t> hops(n);
    const std::vector<hpr::bench::LookupImpl> impls = {
        {"rte_lpm_lookup_bulk", [&](size_t m) {
           for (size_t i = 0; i < m; i += kBurst) rte_lpm_lookup_bulk(lpm, addrs.data() + i, hops.data() + i, kBurst);
           g_sink = hops[m - 1];
         }},
        {"rte_lpm_lookupx4", [&](size_t m) {
           for (size_t i = 0; i < m; i += 4) {
             xmm_t ip = _mm_loadu_si128(reinterpret_cast<const __m128i*>(addrs.data() + i));
             rte_lpm_lookupx4(lpm, ip, hops.data() + i, UINT32_MAX);
           }
           g_sink = hops[m - 1];
         }},
        {"hpr_flat16_bulk", [&](size_t m) {
           for (size_t i = 0; i < m; i += kBurst) narrow->lookup_bulk(addrs.data() + i, hops.data() + i, kBurst);
           g_sink = hops[m - 1];
         }},
        {"hpr_flat32_bulk", [&](size_t m) {
           for (size_t i = 0; i < m; i += kBurst) wide->lookup_bulk(addrs.data() + i, hops.data() + i, kBurst);
           g_sink = hops[m - 1];
         }},
    };
    if (steps > 0) {  // instructions per lookup instead of the timed rounds
      if (!hpr::bench::count_lookup_steps(impls, set_name, std::min(n, size_t{steps} / kBurst * kBurst), scsv)) return 1;
      continue;
    }
    // Interleaved rounds (every implementation once per round, in turn, the order rotating by one each round)
    // so that load from other processes on this shared machine hits all of them alike; the ratio to
    // rte_lpm_lookup_bulk is taken per round, then its median and min-max over the rounds.
    for (const auto& im : impls) im.fn(n);  // warm-up
    std::vector<std::vector<double>> rate(impls.size());
    std::vector<std::vector<double>> ratio(impls.size());
    for (int r = 0; r < runs; ++r) {
      for (size_t j = 0; j < impls.size(); ++j) {
        const size_t k = (j + static_cast<size_t>(r)) % impls.size();
        const uint64_t t0 = cpu_ns();
        impls[k].fn(n);
        const uint64_t t1 = cpu_ns();
        rate[k].push_back(static_cast<double>(n) / static_cast<double>(t1 - t0) * 1e3);
        rcsv << fmt::format("{},{},{},{:.2f}\n", set_name, r, impls[k].name, rate[k].back());
      }
      for (size_t k = 0; k < impls.size(); ++k) ratio[k].push_back(rate[k].back() / rate[0].back());
    }
    for (size_t k = 0; k < impls.size(); ++k) {
      const auto s = hpr::summarize(rate[k]);
      const double rt = hpr::median(ratio[k]);
      const auto [rmin, rmax] = std::minmax_element(ratio[k].begin(), ratio[k].end());
      fmt::print("lpm {:8} {:20} {:8.1f} Mlookups/s (p1 {:.1f} p99 {:.1f} spread {:.3f})  x{:.3f} ({:.3f}-{:.3f}) vs "
                 "rte_lpm_lookup_bulk, {} rounds\n",
                 set_name, impls[k].name, s.median, s.p1, s.p99, s.spread, rt, *rmin, *rmax, runs);
      lcsv << fmt::format("{},{},{},{:.2f},{:.2f},{:.2f},{:.4f},{:.3f},{:.3f},{:.3f},{}\n", set_name, n, impls[k].name,
                          s.median, s.p1, s.p99, s.spread, rt, *rmin, *rmax, runs);
    }
  }

  // ---- 2. Native forwarding ----
  auto app = Ipv4App::create(*routes, {.num_ports = num_ports});
  if (!app) {
    fmt::print(stderr, "{}\n", app.status().to_string());
    return 1;
  }
  // 64-byte frames (60 + FCS) to routed destinations (a route's prefix with random host bits), so the
  // forwarding path rather than the drop path is measured.
  std::vector<std::vector<uint8_t>> frames(packets);
  std::vector<hpr::Packet> pkts(packets);
  for (uint32_t i = 0; i < packets; ++i) {
    const Route& r = (*routes)[rng() % routes->size()];
    const uint32_t host_mask = r.len == 0 ? ~0u : r.len >= 32 ? 0u : (1u << (32 - r.len)) - 1;
    const uint32_t dst = r.prefix | (static_cast<uint32_t>(rng()) & host_mask);
    auto& f = frames[i];
    f.assign(60, 0);
    f[12] = 0x08;
    uint8_t* h = f.data() + 14;
    h[0] = 0x45; h[3] = 46; h[8] = 255; h[9] = 17;
    for (int k = 0; k < 4; ++k) { h[12 + k] = static_cast<uint8_t>(rng()); h[16 + k] = static_cast<uint8_t>(dst >> (24 - 8 * k)); }
    const uint16_t cs = ip_checksum(h, 20);
    h[10] = static_cast<uint8_t>(cs >> 8); h[11] = static_cast<uint8_t>(cs);
    pkts[i].data = f.data();
    pkts[i].len = 60;
    hpr::parse(pkts[i], {.verify_ipv4_checksum = false});
  }
  std::ofstream fcsv(out_dir + "/forward.csv", no_forward ? std::ios::app : std::ios::trunc);
  if (!no_forward) fcsv << "path,batch,median_mpps,p1,p99,spread,median_gbps_64B\n";
  for (uint32_t batch = 64; batch <= 65536 && !no_forward; batch *= 2) {
    const uint32_t nb = packets / batch;
    std::vector<hpr::kernels::HostBatch> batches;
    for (uint32_t b = 0; b < nb; ++b) {
      batches.push_back(hpr::kernels::gather(**app, std::span<const hpr::Packet>(pkts.data() + size_t{b} * batch, batch)));
    }
    // TTL starts at 255 and drops by one per run: 250 runs stay on the forwarding path.
    auto step = measure(runs, size_t{nb} * batch, [&] {
      for (auto& hb : batches) (*app)->run_native(hb.view());
    });
    auto full = measure(runs, size_t{nb} * batch, [&] {
      for (uint32_t b = 0; b < nb; ++b) {
        std::span<hpr::Packet> span(pkts.data() + size_t{b} * batch, batch);
        auto& hb = batches[b];
        hpr::kernels::gather_into(**app, span, hb.desc.data(), hb.pkts.data(), hb.pkts.size());
        auto v = hb.view();
        (*app)->run_native(v);
        hpr::kernels::scatter_back(**app, span, v);
        (*app)->finish(span, v);
      }
    });
    for (auto& [name, s] : {std::pair{std::string("run_native"), step}, std::pair{std::string("gather+native+scatter+finish"), full}}) {
      const double gbps = s.median * 1e6 * (64 + 20) * 8 / 1e9;  // 64-byte frames + preamble/IFG on the wire
      fmt::print("fwd {:30} batch {:6} {:7.2f} Mpps (p1 {:.2f} p99 {:.2f} spread {:.3f}) = {:.1f} Gbit/s at 64 B\n", name,
                 batch, s.median, s.p1, s.p99, s.spread, gbps);
      fcsv << fmt::format("{},{},{:.3f},{:.3f},{:.3f},{:.4f},{:.2f}\n", name, batch, s.median, s.p1, s.p99, s.spread, gbps);
    }
  }
  rte_lpm_free(lpm);
  rte_eal_cleanup();
  return 0;
}
