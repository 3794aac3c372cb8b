// IPv6 LPM benchmark (issue 18): hpr Lpm6 (kernels/ipv4/lpm6.hpp) beside DPDK rte_lpm6
// (rte_lpm6_lookup_bulk_func) on the same SYNTHETIC IPv6 table (bench/ipv4/synth_routes6.hpp: the shared
// RouteViews table has no IPv6 prefix) and the same addresses: random addresses inside the table's
// prefixes, and every IPv6 address of the real captures (repeated to the same count). Next hops are
// cross-checked equal before timing. Interleaved rounds (each implementation once per round), thread CPU
// time, median and spread ((p90-p10)/median) per implementation, ratio per round (median, min, max).
// CSV: --out/lpm6.csv. --table-out writes the synthetic table as pyasn text. --steps N: instead of timing, the
// instructions of N lookups per implementation and set, counted by single-stepping (lookup_steps.hpp).
// Then the ipv4 app's native IPv6 path (run_native on gathered batches of 62-byte IPv6 UDP frames to
// addresses inside the table; hop limit 255, fewer than 250 runs): Mpps per core, --out/forward6.csv.
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_lpm6.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>

#include "bench/ipv4/capture_addrs6.hpp"
#include "bench/ipv4/lookup_steps.hpp"
#include "bench/ipv4/synth_routes6.hpp"
#include "hpr/data_dir.hpp"
#include "hpr/stats.hpp"
#include "kernels/ipv4/ipv4_app.hpp"
#include "kernels/ipv4/lpm6.hpp"
#include "kernels/runner.hpp"
#include "runtime/parser.hpp"
#include "runtime/pcap_file.hpp"

using namespace hpr;
using namespace hpr::kernels::ipv4;

namespace {

uint64_t cpu_ns() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(ts.tv_nsec);
}

volatile uint32_t g_sink;

}  // namespace

int main(int argc, char** argv) {
  CLI::App cli{"hpr IPv6 LPM (SYNTHETIC table) vs DPDK rte_lpm6"};
  std::string out_dir = "out/ipv6";
  std::string table_out;
  int runs = 9;
  uint32_t prefixes = 150'000;
  uint32_t num_addrs = 2'000'000;
  uint32_t seed = 18;
  cli.add_option("--out", out_dir, "CSV output folder");
  cli.add_option("--runs", runs, "timed interleaved rounds")->check(CLI::Range(1, 1000));
  cli.add_option("--prefixes", prefixes, "synthetic IPv6 prefixes (plus routes covering the captures)");
  cli.add_option("--addresses", num_addrs, "addresses per set");
  cli.add_option("--seed", seed, "seed of the synthetic table");
  cli.add_option("--table-out", table_out, "write the synthetic table (pyasn text) here");
  uint32_t steps = 0;
  cli.add_option("--steps", steps, "instead of timing: count the instructions of this many lookups per "
                                   "implementation and address set by single-stepping (about 20 us an instruction; "
                                   "no forwarding part); lpm6_steps.csv");
  CLI11_PARSE(cli, argc, argv);
  std::filesystem::create_directories(out_dir);

  const char* eal_argv[] = {"ipv6_bench", "--no-huge", "--no-shconf", "--no-pci", "-m", "1024", "--log-level=error"};
  if (rte_eal_init(7, const_cast<char**>(eal_argv)) < 0) {
    fmt::print(stderr, "rte_eal_init failed: {}\n", rte_strerror(rte_errno));
    return 1;
  }
  std::vector<Ipv6Addr> cap = synth6::capture_addresses6();
  const auto table = synth6::synthetic_routes6(prefixes, seed, cap);
  if (!table_out.empty()) std::ofstream(table_out) << synth6::to_ipasn_text(table, seed);
  const auto routes = synth6::to_routes6(table, 16);
  auto lpm = Lpm6::build(routes);
  if (!lpm) {
    fmt::print(stderr, "{}\n", lpm.status().to_string());
    return 1;
  }
  rte_lpm6_config cfg{};
  cfg.max_rules = static_cast<uint32_t>(routes.size());
  cfg.number_tbl8s = lpm->num_groups() + 4096;
  rte_lpm6* peer = rte_lpm6_create("ipv6_bench", 0, &cfg);
  if (peer == nullptr) {
    fmt::print(stderr, "rte_lpm6_create failed: {}\n", rte_strerror(rte_errno));
    return 1;
  }
  for (const Route6& r : routes) {
    if (rte_lpm6_add(peer, r.prefix.data(), r.len, r.next_hop) != 0) {
      fmt::print(stderr, "rte_lpm6_add {}/{} failed\n", format_ipv6(r.prefix), r.len);
      return 1;
    }
  }
  fmt::print("SYNTHETIC IPv6 table (seed {}): {} prefixes ({} of them covering capture addresses), {} groups, "
             "hpr {} MiB\n",
             seed, routes.size(), routes.size() - prefixes, lpm->num_groups(),
             (lpm->tbl24_bytes() + lpm->tbl8_bytes()) >> 20);

  {
    size_t first = 0;  // capture addresses whose first-level entry is final (one load)
    for (const auto& a : cap)
      first += (static_cast<const uint32_t*>(lpm->tbl24())[(a[0] << 16) | (a[1] << 8) | a[2]] & Lpm6::kExt) == 0;
    fmt::print("capture addresses final at the first level: {} of {}\n", first, cap.size());
  }
  std::vector<Ipv6Addr> random = synth6::addresses_in(table, num_addrs, seed + 1);
  const size_t cap_unique = cap.size();
  for (size_t i = 0; cap.size() < num_addrs && cap_unique > 0; ++i) cap.push_back(cap[i % cap_unique]);
  cap.resize(std::min<size_t>(cap.size(), num_addrs));
  fmt::print("addresses: {} random inside the table's prefixes, {} from captures ({} src+dst)\n", random.size(),
             cap.size(), cap_unique);

  std::ofstream csv, scsv;
  if (steps > 0) {
    scsv.open(out_dir + "/lpm6_steps.csv");
    scsv << "addresses,impl,lookups,instructions,per_lookup\n";  // lookup_steps.hpp
  } else {
    csv.open(out_dir + "/lpm6.csv");
    csv << "table,addresses,count,impl,median_mlookups,p1,p99,spread,ratio_median,ratio_min,ratio_max\n";
  }
  constexpr uint32_t kBurst = 64;
  for (auto& [set_name, addrs] : std::vector<std::pair<std::string, std::vector<Ipv6Addr>*>>{{"random", &random},
                                                                                               {"captures", &cap}}) {
    const size_t n = addrs->size() / kBurst * kBurst;
    auto* ips = reinterpret_cast<uint8_t(*)[16]>(addrs->data());
    std::vector<uint32_t> ours(n);
    std::vector<int32_t> theirs(n);
    lpm->lookup_bulk(ips, ours.data(), static_cast<uint32_t>(n));
    rte_lpm6_lookup_bulk_func(peer, ips, theirs.data(), static_cast<unsigned>(n));
    size_t mism = 0;
    for (size_t i = 0; i < n; ++i) mism += (theirs[i] < 0 ? kNoNextHop : static_cast<uint32_t>(theirs[i])) != ours[i];
    if (mism != 0) {
      fmt::print(stderr, "ERROR: {} addresses of {} differ from rte_lpm6\n", mism, set_name);
      return 1;
    }
    const std::vector<bench::LookupImpl> impls = {
        {"rte_lpm6_lookup_bulk_func", [&](size_t m) {
           for (size_t i = 0; i < m; i += kBurst) rte_lpm6_lookup_bulk_func(peer, ips + i, theirs.data() + i, kBurst);
           g_sink = static_cast<uint32_t>(theirs[m - 1]);
         }},
        {"hpr_lpm6_bulk", [&](size_t m) {
           for (size_t i = 0; i < m; i += kBurst) lpm->lookup_bulk(ips + i, ours.data() + i, kBurst);
           g_sink = ours[m - 1];
         }},
    };
    if (steps > 0) {  // instructions per lookup instead of the timed rounds
      if (!bench::count_lookup_steps(impls, set_name, std::min(n, size_t{steps} / kBurst * kBurst), scsv)) return 1;
      continue;
    }
    for (const auto& im : impls) im.fn(n);  // warm-up
    std::vector<std::vector<double>> rate(impls.size()), ratio(impls.size());
    for (int r = 0; r < runs; ++r) {
      for (size_t k = 0; k < impls.size(); ++k) {
        const size_t kk = (k + static_cast<size_t>(r)) % impls.size();  // alternate who goes first
        const uint64_t t0 = cpu_ns();
        impls[kk].fn(n);
        const uint64_t t1 = cpu_ns();
        rate[kk].push_back(static_cast<double>(n) / static_cast<double>(t1 - t0) * 1e3);
      }
      for (size_t k = 0; k < impls.size(); ++k) ratio[k].push_back(rate[k].back() / rate[0].back());
    }
    for (size_t k = 0; k < impls.size(); ++k) {
      const auto s = summarize(rate[k]);
      const double rmed = median(ratio[k]);
      const auto [rmin, rmax] = std::minmax_element(ratio[k].begin(), ratio[k].end());
      fmt::print("lpm6 synthetic {:8} {:26} {:7.1f} Mlookups/s (p1 {:.1f} p99 {:.1f} spread {:.3f})  x{:.2f} "
                 "(min {:.2f} max {:.2f}) vs rte_lpm6, {} rounds\n",
                 set_name, impls[k].name, s.median, s.p1, s.p99, s.spread, rmed, *rmin, *rmax, runs);
      csv << fmt::format("synthetic,{},{},{},{:.2f},{:.2f},{:.2f},{:.4f},{:.3f},{:.3f},{:.3f}\n", set_name, n,
                         impls[k].name, s.median, s.p1, s.p99, s.spread, rmed, *rmin, *rmax);
    }
  }
  if (steps > 0) return 0;
  // ---- native IPv6 forwarding (ipv4 app, IPv6 path) ----
  const std::vector<Route> one_v4 = {{0, 0, 0}};
  auto app = Ipv4App::create(one_v4, {.num_ports = 16}, routes);
  if (!app) {
    fmt::print(stderr, "{}\n", app.status().to_string());
    return 1;
  }
  const uint32_t packets = 1u << 18;
  std::vector<std::vector<uint8_t>> frames(packets);
  std::vector<Packet> pkts(packets);
  for (uint32_t i = 0; i < packets; ++i) {
    auto& f = frames[i];
    f.assign(62, 0);
    f[12] = 0x86;
    f[13] = 0xdd;
    uint8_t* h = f.data() + 14;
    h[0] = 0x60;
    h[5] = 8;  // payload length: a UDP header; 14 + 40 + 8 = 62 bytes (the smallest UDP/IPv6 frame)
    h[6] = 17;
    h[7] = 255;
    std::memcpy(h + 24, random[i % random.size()].data(), 16);
    h[44] = 0;
    h[45] = 8;  // UDP length
    pkts[i].data = f.data();
    pkts[i].len = 62;
    parse(pkts[i], {.verify_ipv4_checksum = false});
  }
  std::ofstream fcsv(out_dir + "/forward6.csv");
  fcsv << "path,batch,median_mpps,p1,p99,spread\n";
  for (uint32_t batch : {256u, 4096u}) {
    std::vector<kernels::HostBatch> batches;
    for (uint32_t b = 0; b < packets / batch; ++b)
      batches.push_back(kernels::gather(**app, std::span<const Packet>(pkts.data() + size_t{b} * batch, batch)));
    std::vector<double> rates;
    for (int r = 0; r <= std::min(runs, 100); ++r) {  // the first is the warm-up
      const uint64_t t0 = cpu_ns();
      for (auto& hb : batches) (*app)->run_native(hb.view());
      const uint64_t t1 = cpu_ns();
      if (r > 0) rates.push_back(static_cast<double>(packets) / static_cast<double>(t1 - t0) * 1e3);
    }
    const uint64_t fwd = (*app)->count_events({}, batches[0].view());
    if (fwd != batch) fmt::print(stderr, "WARNING: {} of {} packets forwarded (l3 {}, desc len {})\n", fwd, batch,
                                 static_cast<int>(pkts[0].l3), batches[0].desc[0].len);
    const auto st = summarize(rates);
    fmt::print("fwd6 run_native (IPv6, synthetic table) batch {:5} {:6.2f} Mpps (p1 {:.2f} p99 {:.2f} spread {:.3f}), "
               "{} runs\n",
               batch, st.median, st.p1, st.p99, st.spread, rates.size());
    fcsv << fmt::format("run_native_ipv6,{},{:.3f},{:.3f},{:.3f},{:.4f}\n", batch, st.median, st.p1, st.p99, st.spread);
  }
  rte_lpm6_free(peer);
  rte_eal_cleanup();
  return 0;
}
