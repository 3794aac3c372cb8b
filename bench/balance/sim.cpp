// balance_sim: discrete-event simulator that drives the real hpr::balance objects with simulated
// lanes and reproduces three papers (see docs/balance.md):
//   laps     LAPS §IV/§V: 16 cores, 32-descriptor queues, 4 services (eq. 2-4 times), cold cache
//            10 us, migration 0.8 us, Holt-Winters rates (eq. 1, Table IV sets 1 and 2); FCFS, AFS,
//            LAPS (+ the no-reorder rule), throughput sweep (Fig. 12), AFD accuracy (Fig. 13).
//   lap      LAP §4: 16 processors, 3 / 30 applications, Table 2 costs, selection buffer 1..512,
//            workload change at packet 10,000; FCFS, LA, LAP, T-Opt.
//   subflow  Subflow §4: 4 workers, bursts of 32, skewed real traffic, RR / CRC32 / HRW / Subflow:
//            zero-loss throughput, one- and two-cores-overloaded loss curves.
//   cost     scheduling cost per packet of every balancer (ns, median of 7 runs, spread).
// Usage: balance_sim [--out DIR] [--data DIR] [--quick] [--only laps|lap|subflow|cost]
#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <deque>
#include <filesystem>
#include <functional>
#include <map>
#include <queue>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "bench/balance/trace.hpp"
#include "hpr/data_dir.hpp"
#include "hpr/stats.hpp"
#include "scheduler/balance/afd.hpp"
#include "scheduler/balance/balancer.hpp"
#include "scheduler/balance/hash.hpp"
#include "scheduler/balance/selection.hpp"

using namespace hpr::balance;
using namespace hpr::balance::sim;

namespace {

struct Args {
  std::string out = "out/balance";
  std::string data;
  bool quick = false;
  std::string only;
};

FILE* open_csv(const Args& a, const std::string& name, const char* header) {
  std::filesystem::create_directories(a.out);
  FILE* f = std::fopen((a.out + "/" + name).c_str(), "w");
  if (!f) {
    std::fprintf(stderr, "cannot write %s/%s\n", a.out.c_str(), name.c_str());
    std::exit(1);
  }
  std::fprintf(f, "%s\n", header);
  return f;
}

PacketMeta meta_of(const TracePacket& p, uint32_t flow, uint8_t svc) {
  PacketMeta m;
  m.tuple = p.tuple;
  m.flow_hash = p.hash;  // hpr::Packet::hash
  m.flow_id = flow;
  m.bytes = p.bytes;
  m.service = svc;
  m.app = svc;
  return m;
}

// ---------------------------------------------------------------------------------------------
// Push-model lane engine: FIFO queues of `cap` packets, one server per lane, service time from a
// callback evaluated when a packet starts; egress checks per-flow order.
struct SimPkt {
  uint32_t flow;
  uint32_t seq;
  uint16_t bytes;
  uint8_t svc;
};

struct Engine {
  using ServiceFn = std::function<uint64_t(const SimPkt&, uint32_t lane)>;
  Engine(uint32_t n, uint32_t cap, uint32_t flow_slots, ServiceFn fn)
      : q(n),
        finish(n, 0),
        lanes(n),
        pending(flow_slots, 0),
        next_seq(flow_slots, 0),
        max_done(flow_slots, 0),
        svc(std::move(fn)),
        cap_(cap) {
    for (auto& l : lanes) l.capacity = cap;
  }
  LaneTable table(uint64_t now) { return LaneTable{lanes, pending, now}; }

  void enqueue(uint32_t c, const PacketMeta& m, uint64_t now) {
    ++offered;
    SimPkt p{m.flow_id, ++next_seq[m.flow_id], m.bytes, m.service};
    if (q[c].size() >= cap_) {  // the balancer booked it: undo
      --lanes[c].queued;
      --pending[m.flow_id];
      ++drops;
      return;
    }
    q[c].push_back(p);
    if (q[c].size() == 1) finish[c] = now + svc(p, c);
  }
  void advance(uint64_t t) {
    for (uint32_t c = 0; c < q.size(); ++c) {
      while (!q[c].empty() && finish[c] <= t) {
        const SimPkt& p = q[c].front();
        if (p.seq < max_done[p.flow])
          ++ooo;
        else
          max_done[p.flow] = p.seq;
        ++done;
        bytes_done += p.bytes;
        --lanes[c].queued;
        --pending[p.flow];
        q[c].pop_front();
        if (!q[c].empty()) finish[c] += svc(q[c].front(), c);
      }
    }
  }
  std::vector<std::deque<SimPkt>> q;
  std::vector<uint64_t> finish;
  std::vector<LaneState> lanes;
  std::vector<uint32_t> pending, next_seq, max_done;
  ServiceFn svc;
  uint64_t offered = 0, done = 0, drops = 0, ooo = 0, bytes_done = 0;

 private:
  uint32_t cap_;
};

// ---------------------------------------------------------------------------------------------
// LAPS set-up
struct Hw {
  double a, b, C, m, sigma;
};
const std::array<std::array<Hw, 4>, 2> kTableIV = {{
    {{{1, 0.03, 0.3, 40, 0.1},
      {1.8, -0.025, 0.1, 25, 0.05},
      {0.5, 0.01, 0.07, 60, 0.25},
      {0.3, 0.005, 0.09, 600, 0.3}}},
    {{{1.5, 0.002, 0.3, 100, 0.3},
      {1.3, -0.02, 0.15, 25, 0.05},
      {1, 0.004, 0.25, 30, 0.25},
      {0.7, 0.01, 0.18, 200, 0.3}}},
}};

// eq. 2-4: processing time of service s (path s+1) in ns
uint64_t tproc_ns(uint8_t s, uint16_t bytes) {
  switch (s) {
    case 0:
      return static_cast<uint64_t>(3700 + bytes / 64.0 * 230);
    case 1:
      return 500;
    case 2:
      return 3530;
    default:
      return static_cast<uint64_t>(5800 + bytes / 64.0 * 210);
  }
}

struct LapsRun {
  std::string policy;
  int set = 0;  // 1, 2; 0 = constant rate (sweep)
  bool rule = false;
  double offered_mpps = 0, thr_mpps = 0, drop_frac = 0, ooo_frac = 0, cold_frac = 0;
  uint64_t drops = 0, ooo = 0, migrations = 0, flow_moves = 0, would_reorder = 0, blocked = 0, reallocs = 0;
};

struct LapsSetup {
  std::array<Trace, 4> traces;
  std::array<uint32_t, 4> flow_base{};
  uint32_t flow_slots = 1u << 17;
};

LapsRun run_laps(const LapsSetup& su, const std::string& policy, int set, double const_mpps, bool rule, bool penalties,
                 uint64_t sim_ns, double time_scale, uint32_t seed) {
  const uint32_t kCores = 16, kQueue = 32;
  std::vector<uint8_t> last_svc(kCores, 0xff);
  std::vector<uint32_t> flow_core(su.flow_slots, 0xffffffffu);
  uint64_t cold = 0, started = 0, moves = 0;
  Engine eng(kCores, kQueue, su.flow_slots, [&](const SimPkt& p, uint32_t c) {
    uint64_t t = tproc_ns(p.svc, p.bytes);
    ++started;
    if (last_svc[c] != p.svc) {
      ++cold;
      if (penalties) t += 10'000;  // cold instruction cache (§IV-C-3)
      last_svc[c] = p.svc;
    }
    if (flow_core[p.flow] != 0xffffffffu && flow_core[p.flow] != c) {
      ++moves;
      if (penalties) t += 800;  // flow migration: four cache misses
    }
    flow_core[p.flow] = c;
    return t;
  });
  BalancerConfig cfg;
  cfg.lanes = kCores;
  cfg.services = 4;
  cfg.flow_slots = su.flow_slots;
  cfg.no_reorder = rule;
  cfg.imbalance_queue = 24;
  cfg.burst_max = 256;
  auto bal = std::move(make_balancer(policy, cfg)).value();

  std::mt19937_64 rng(seed);
  std::normal_distribution<double> noise(0, 1);
  std::array<double, 4> rate{}, next_arr{};
  std::array<size_t, 4> pos{};
  std::array<double, 4> n_now{};
  auto update_rates = [&](uint64_t t_ns) {
    double tm = static_cast<double>(t_ns) * 1e-9 * time_scale;
    for (int s = 0; s < 4; ++s) {
      if (set == 0) {
        rate[s] = const_mpps / 4;
      } else {
        const Hw& h = kTableIV[set - 1][s];
        rate[s] = std::max(0.02, h.a + h.b * tm + h.C * std::sin(2 * M_PI * std::fmod(tm, h.m) / h.m) + n_now[s]);
      }
    }
  };
  update_rates(0);
  std::exponential_distribution<double> expo(1.0);
  for (int s = 0; s < 4; ++s) next_arr[s] = expo(rng) * 1e3 / rate[s];
  std::vector<PacketMeta> burst;
  std::vector<uint16_t> out(256);
  double offered_sum = 0;
  uint64_t samples = 0;
  const uint64_t kStep = 1000;  // dispatcher polls every 1 us
  for (uint64_t t = kStep; t <= sim_ns; t += kStep) {
    if (t % 1'000'000 == 0) {  // noise re-drawn every simulated ms
      for (int s = 0; s < 4; ++s) n_now[s] = set ? kTableIV[set - 1][s].sigma * noise(rng) : 0;
      update_rates(t);
      for (int s = 0; s < 4; ++s) offered_sum += rate[s];
      ++samples;
    }
    eng.advance(t);
    burst.clear();
    for (int s = 0; s < 4; ++s) {
      while (next_arr[s] < static_cast<double>(t) && burst.size() < 256) {
        const auto& tp = su.traces[s].packets[pos[s]++ % su.traces[s].packets.size()];
        burst.push_back(meta_of(tp, su.flow_base[s] + tp.flow, static_cast<uint8_t>(s)));
        next_arr[s] += expo(rng) * 1e3 / rate[s];
      }
    }
    if (burst.empty()) {
      auto tab = eng.table(t);
      bal->assign({}, tab, {});
      continue;
    }
    auto tab = eng.table(t);
    bal->assign(burst, tab, out);
    for (size_t i = 0; i < burst.size(); ++i) eng.enqueue(out[i], burst[i], t);
  }
  LapsRun r;
  r.policy = penalties ? policy : "ideal";
  r.set = set;
  r.rule = rule;
  double secs = static_cast<double>(sim_ns) * 1e-9;
  r.offered_mpps = static_cast<double>(eng.offered) / secs / 1e6;
  r.thr_mpps = static_cast<double>(eng.done) / secs / 1e6;
  r.drops = eng.drops;
  r.drop_frac = eng.offered ? static_cast<double>(eng.drops) / eng.offered : 0;
  r.ooo = eng.ooo;
  r.ooo_frac = eng.done ? static_cast<double>(eng.ooo) / eng.done : 0;
  r.cold_frac = started ? static_cast<double>(cold) / started : 0;
  r.migrations = bal->stats().migrations;
  r.flow_moves = moves;
  r.would_reorder = bal->stats().would_reorder;
  r.blocked = bal->stats().blocked_moves;
  r.reallocs = bal->stats().core_reallocations;
  (void)offered_sum;
  (void)samples;
  return r;
}

struct Repro {
  std::string claim, paper, ours, note;
};
std::vector<Repro> g_repro;

void laps_setup(const Args& a, const std::string& pcap_dir) {
  LapsSetup su;
  uint32_t copies = a.quick ? 4 : 12;
  uint32_t base = 0;
  for (uint32_t s = 0; s < 4; ++s) {
    Trace g = load_pcap_dir(pcap_dir, s, 4);
    if (g.packets.empty()) g = synthetic_zipf(30000, 2000, 1.1, 100 + s);
    su.traces[s] = replay(g, copies);
    su.flow_base[s] = base;
    base += su.traces[s].flows;
    double avg = 0;
    for (auto& p : su.traces[s].packets) avg += p.bytes;
    std::printf("laps: service %u trace %s: %zu packets, %u flows, mean %.0f B\n", s, su.traces[s].source.c_str(),
                su.traces[s].packets.size(), su.traces[s].flows, avg / su.traces[s].packets.size());
  }
  while (su.flow_slots < base) su.flow_slots <<= 1;
  const uint64_t sim_ns = a.quick ? 50'000'000 : 200'000'000;
  const double time_scale = 10.0 / (static_cast<double>(sim_ns) * 1e-9);  // simulate model seconds 0..10
  FILE* f = open_csv(a, "laps_scenarios.csv",
                     "policy,set,no_reorder,offered_mpps,throughput_mpps,drops,drop_frac,out_of_order,ooo_frac,"
                     "cold_frac,migrations,flow_moves,would_reorder,blocked_moves,core_reallocations");
  std::map<std::string, LapsRun> res;
  for (int set : {1, 2})
    for (auto pol : {"fcfs", "afs", "laps"})
      for (bool rule : {false, true}) {
        auto r = run_laps(su, pol, set, 0, rule, true, sim_ns, time_scale, 42);
        std::fprintf(f, "%s,%d,%d,%.4f,%.4f,%lu,%.5f,%lu,%.5f,%.4f,%lu,%lu,%lu,%lu,%lu\n", pol, set, rule,
                     r.offered_mpps, r.thr_mpps, r.drops, r.drop_frac, r.ooo, r.ooo_frac, r.cold_frac, r.migrations,
                     r.flow_moves, r.would_reorder, r.blocked, r.reallocs);
        std::printf(
            "laps set %d %-5s rule=%d offered %.2f thr %.2f Mpps drops %.4f ooo %.5f cold %.3f migr %lu moves %lu\n",
            set, pol, rule, r.offered_mpps, r.thr_mpps, r.drop_frac, r.ooo_frac, r.cold_frac, r.migrations,
            r.flow_moves);
        res[std::string(pol) + std::to_string(set) + (rule ? "r" : "")] = r;
      }
  std::fclose(f);
  auto pct = [](double x, double y) { return y > 0 ? (x / y - 1) * 100 : 0.0; };
  for (int set : {1, 2}) {
    auto& L = res["laps" + std::to_string(set)];
    auto& A = res["afs" + std::to_string(set)];
    auto& F = res["fcfs" + std::to_string(set)];
    char buf[256];
    std::snprintf(buf, sizeof buf, "%+.0f%% vs AFS, %+.0f%% vs FCFS (%lu / %lu / %lu)", pct(L.drops, A.drops),
                  pct(L.drops, F.drops), L.drops, A.drops, F.drops);
    g_repro.push_back({"LAPS drops, Table IV set " + std::to_string(set), "-60% vs AFS", buf, ""});
    std::snprintf(buf, sizeof buf, "%+.0f%% vs AFS (%lu vs %lu); with no-reorder rule: %lu", pct(L.ooo, A.ooo), L.ooo,
                  A.ooo, res["laps" + std::to_string(set) + "r"].ooo);
    g_repro.push_back({"LAPS out-of-order, set " + std::to_string(set), "-80% vs AFS", buf, ""});
    std::snprintf(buf, sizeof buf, "LAPS %.2f, AFS %.2f, FCFS %.2f", L.cold_frac, A.cold_frac, F.cold_frac);
    g_repro.push_back({"cold-cache fraction, set " + std::to_string(set), "FCFS/AFS ~0.6, LAPS low", buf, ""});
  }

  // Fig. 12: throughput vs offered load, equal split, constant rates
  FILE* g = open_csv(a, "laps_sweep.csv", "policy,offered_mpps,throughput_mpps,drop_frac,cold_frac,ooo_frac");
  std::map<std::string, double> best;
  const uint64_t sweep_ns = a.quick ? 10'000'000 : 30'000'000;
  for (double rate : {1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 10.0}) {
    for (auto pol : {"fcfs", "afs", "laps", "ideal"}) {
      bool ideal = std::string(pol) == "ideal";
      auto r = run_laps(su, ideal ? "fcfs" : pol, 0, rate, false, !ideal, sweep_ns, 1.0, 7);
      std::fprintf(g, "%s,%.3f,%.4f,%.5f,%.4f,%.5f\n", pol, r.offered_mpps, r.thr_mpps, r.drop_frac, r.cold_frac,
                   r.ooo_frac);
      best[pol] = std::max(best[pol], r.thr_mpps);
    }
  }
  std::fclose(g);
  char buf[256];
  std::snprintf(buf, sizeof buf, "max %.2f Mpps: %+.0f%% vs AFS (%.2f), x%.2f FCFS (%.2f); ideal %.2f", best["laps"],
                (best["laps"] / best["afs"] - 1) * 100, best["afs"], best["laps"] / best["fcfs"], best["fcfs"],
                best["ideal"]);
  g_repro.push_back({"LAPS throughput (Fig. 12)", "+56% vs AFS, ~2x FCFS", buf, ""});
  std::printf("laps sweep: %s\n", buf);

  // Fig. 13: AFD false-positive ratio vs annex size and sampling, against the offline top-16.
  FILE* h = open_csv(a, "afd.csv", "trace,annex_entries,sample_every,top16_found,false_positive_ratio");
  std::vector<std::pair<std::string, Trace>> afd_traces;
  afd_traces.push_back({"ndpi-all", load_pcap_dir(pcap_dir, 0, 1)});
  for (uint32_t s = 0; s < 2; ++s)
    afd_traces.push_back({"ndpi-group" + std::to_string(s), load_pcap_dir(pcap_dir, s, 4)});
  afd_traces.push_back({"zipf-1.0-20k", synthetic_zipf(300000, 20000, 1.0, 5)});
  afd_traces.push_back({"zipf-0.9-200k", synthetic_zipf(a.quick ? 300000 : 1000000, 200000, 0.9, 6)});
  for (auto& [name, tr] : afd_traces) {
    if (tr.packets.empty()) continue;
    std::vector<uint64_t> cnt(tr.flows, 0);
    for (auto& p : tr.packets) ++cnt[p.flow];
    std::vector<uint32_t> ids(tr.flows);
    for (uint32_t i = 0; i < tr.flows; ++i) ids[i] = i;
    std::partial_sort(ids.begin(), ids.begin() + std::min<size_t>(16, ids.size()), ids.end(),
                      [&](uint32_t x, uint32_t y) { return cnt[x] > cnt[y]; });
    std::vector<uint8_t> top(tr.flows, 0);
    for (size_t i = 0; i < std::min<size_t>(16, ids.size()); ++i) top[ids[i]] = 1;
    for (uint32_t annex : {32u, 64u, 128u, 256u, 512u, 1024u, 2048u})
      for (uint32_t samp : {1u, 10u, 100u, 1000u}) {
        if (samp > 1 && annex != 512) continue;
        auto afd = std::move(AggressiveFlowDetector::create(AfdConfig{16, annex, 4, samp, 0})).value();
        for (auto& p : tr.packets) afd.observe(p.flow);
        auto got = afd.aggressive_flows();
        uint32_t found = 0;
        for (auto k : got) found += top[k];
        double fpr = 1.0 - found / 16.0;
        std::fprintf(h, "%s,%u,%u,%u,%.4f\n", name.c_str(), annex, samp, found, fpr);
        if (annex == 512 && samp == 1) {
          char b2[128];
          std::snprintf(b2, sizeof b2, "%u of 16 (%s, %zu pkts, %u flows)", found, name.c_str(), tr.packets.size(),
                        tr.flows);
          g_repro.push_back({"AFD top-16, 512-entry annex", "16/16 Auckland, 13-14/16 CAIDA", b2, ""});
        }
      }
  }
  std::fclose(h);
}

// ---------------------------------------------------------------------------------------------
// LAP set-up (pull model with a selection buffer)
struct AppCost {
  double cp, cb, tcc;  // Table 2 (time units as printed: us/pkt, us/byte, us/pkt)
};
const std::array<AppCost, 3> kTable2 = {{{320, 1.3, 170}, {970, 7.6, 950}, {320, 9.2, 175}}};

struct LapResult {
  double throughput = 0;  // bytes per time unit
  double cold = 0;
  double delay_var = 0;
};

// Packets: (app, bytes). policy: fcfs, la, lap, topt (= LA with the whole trace as its buffer).
LapResult run_lap(const std::vector<std::pair<uint8_t, uint16_t>>& pk, uint32_t apps, uint32_t procs, uint32_t buffer,
                  const std::string& policy, FILE* dyn = nullptr) {
  bool topt = policy == "topt";
  SelectionConfig cfg{topt ? static_cast<uint32_t>(pk.size()) : buffer, apps, procs};
  auto s = std::move(SelectionScheduler::create(topt ? "la" : policy, cfg)).value();
  auto te = [&](uint32_t i) {
    const auto& c = kTable2[pk[i].first % 3];
    return c.cp + c.cb * pk[i].second;  // Table 2: us per packet + us per byte
  };
  size_t next = 0;
  auto refill = [&]() {
    while (next < pk.size() && !s.full()) {
      s.push(static_cast<uint32_t>(next), pk[next].first,
             static_cast<uint64_t>(te(static_cast<uint32_t>(next)) * 1000));
      ++next;
    }
  };
  refill();
  // event queue of processor free times
  using Ev = std::pair<double, uint32_t>;
  std::priority_queue<Ev, std::vector<Ev>, std::greater<Ev>> ev;
  for (uint32_t u = 0; u < procs; ++u) ev.push({0.0, u});
  uint64_t order = 0, cold = 0;
  double sq = 0, bytes = 0, t_first = -1, t_last = 0;
  while (!ev.empty()) {
    auto [t, u] = ev.top();
    ev.pop();
    auto p = s.pick(u);
    if (!p) continue;
    refill();
    const auto& c = kTable2[pk[p->id].first % 3];
    double dt = te(p->id) + (p->cold ? c.tcc : 0);
    cold += p->cold;
    double d = static_cast<double>(p->id) - static_cast<double>(order++);
    sq += d * d;
    bytes += pk[p->id].second;
    if (t_first < 0) t_first = t;
    t_last = t;
    ev.push({t + dt, u});
    if (dyn && order >= 8000 && order <= 12000 && order % 20 == 0) {
      std::fprintf(dyn, "%s,%lu", policy.c_str(), order);
      for (uint8_t a = 0; a < 3; ++a) std::fprintf(dyn, ",%.0f", s.w(a) * procs);
      std::fprintf(dyn, "\n");
    }
  }
  LapResult r;
  r.throughput = bytes / (t_last - t_first);
  r.cold = static_cast<double>(cold) / pk.size();
  r.delay_var = std::sqrt(sq / pk.size());
  return r;
}

std::vector<std::pair<uint8_t, uint16_t>> lap_trace(const Trace& sizes, uint32_t apps, uint32_t n, bool change,
                                                    uint32_t seed) {
  // Application draw: before packet 10,000 every application needs the same processing (3 apps) or
  // the same bandwidth (30 apps, replicas of the 3); after it (change) app 0 needs 80%, 1 and 2 10%.
  std::mt19937 rng(seed);
  double mean_b = 0;
  for (auto& p : sizes.packets) mean_b += p.bytes;
  mean_b /= sizes.packets.size();
  std::vector<double> mean_te(apps);
  for (uint32_t a = 0; a < apps; ++a) mean_te[a] = kTable2[a % 3].cp + kTable2[a % 3].cb * mean_b;
  auto draw = [&](const std::vector<double>& w) {
    std::discrete_distribution<int> d(w.begin(), w.end());
    return static_cast<uint8_t>(d(rng));
  };
  std::vector<double> w_eq(apps), w_chg(apps);
  for (uint32_t a = 0; a < apps; ++a) {
    w_eq[a] = apps == 3 ? 1.0 / mean_te[a] : 1.0;
    w_chg[a] = (a == 0 ? 0.8 : 0.1) / mean_te[a];
  }
  std::discrete_distribution<int> deq(w_eq.begin(), w_eq.end()), dchg(w_chg.begin(), w_chg.end());
  std::vector<std::pair<uint8_t, uint16_t>> pk(n);
  for (uint32_t i = 0; i < n; ++i) {
    uint8_t a = static_cast<uint8_t>((change && i >= 10000) ? dchg(rng) : deq(rng));
    pk[i] = {a, sizes.packets[i % sizes.packets.size()].bytes};
  }
  (void)draw;
  return pk;
}

void lap_setup(const Args& a, const std::string& pcap_dir) {
  Trace sizes = load_pcap_dir(pcap_dir, 0, 1);
  if (sizes.packets.empty()) sizes = synthetic_zipf(20000, 1000, 1.0, 9);
  const uint32_t n = a.quick ? 30000 : 100000;
  FILE* dyn = open_csv(a, "lap_dynamics.csv", "policy,packet,warm_app0,warm_app1,warm_app2");
  auto pk3c = lap_trace(sizes, 3, n, true, 1);
  for (auto pol : {"fcfs", "la", "lap"}) run_lap(pk3c, 3, 16, 64, pol, dyn);
  std::fclose(dyn);
  FILE* f = open_csv(a, "lap_buffer.csv", "apps,processors,buffer,policy,throughput,cold_frac,delay_variation");
  std::map<std::string, LapResult> at;
  for (uint32_t apps : {3u, 30u}) {
    auto pk = lap_trace(sizes, apps, n, false, 2);
    for (uint32_t procs : {16u, 64u}) {
      auto topt = run_lap(pk, apps, procs, 1, "topt");
      for (uint32_t b : {1u, 2u, 4u, 8u, 16u, 32u, 64u, 128u, 256u, 512u}) {
        for (auto pol : {"fcfs", "la", "lap"}) {
          auto r = run_lap(pk, apps, procs, b, pol);
          std::fprintf(f, "%u,%u,%u,%s,%.6f,%.4f,%.2f\n", apps, procs, b, pol, r.throughput, r.cold, r.delay_var);
          at[std::to_string(apps) + "/" + std::to_string(procs) + "/" + std::to_string(b) + pol] = r;
        }
        std::fprintf(f, "%u,%u,%u,topt,%.6f,%.4f,%.2f\n", apps, procs, b, topt.throughput, topt.cold, topt.delay_var);
        at[std::to_string(apps) + "/" + std::to_string(procs) + "/" + std::to_string(b) + "topt"] = topt;
      }
    }
  }
  std::fclose(f);
  char buf[256];
  auto g = [&](const char* k) { return at[k]; };
  std::snprintf(buf, sizeof buf,
                "FCFS cold %.2f; LA/LAP/T-Opt throughput at b=16: %.2f/%.2f/%.2f, b=64: %.2f/%.2f, FCFS %.2f (x T-Opt)",
                g("30/16/16fcfs").cold, g("30/16/16la").throughput / g("30/16/16topt").throughput,
                g("30/16/16lap").throughput / g("30/16/16topt").throughput, 1.0,
                g("30/16/64la").throughput / g("30/16/64topt").throughput,
                g("30/16/64lap").throughput / g("30/16/64topt").throughput,
                g("30/16/16fcfs").throughput / g("30/16/16topt").throughput);
  g_repro.push_back({"LAP/LA vs FCFS, 30 apps, 16 procs", "FCFS ~96% cold; LA/LAP near T-Opt at 16-64", buf, ""});
  std::snprintf(buf, sizeof buf, "b=32: LA %.1f, LAP %.1f; b=512: LA %.1f, LAP %.1f", g("3/64/32la").delay_var,
                g("3/64/32lap").delay_var, g("3/64/512la").delay_var, g("3/64/512lap").delay_var);
  g_repro.push_back({"delay variation, 3 apps, 64 procs", "b=32: LA 20, LAP 8; LAP << LA at large b", buf, ""});
  std::printf("lap: %s\n", buf);
}

// ---------------------------------------------------------------------------------------------
// Subflow set-up: 4 workers, bursts of 32, per-worker flow-state cache (the locality RR loses).
struct SubflowRun {
  double loss = 0;
  uint64_t ooo = 0, adjustments = 0, blocked = 0, would_reorder = 0;
};

SubflowRun run_subflow(const std::vector<PacketMeta>& trace, uint32_t flow_slots, const std::string& pol, double mpps,
                       bool rule, size_t n) {
  const uint32_t kWorkers = 4, kRing = 1024, kBurst = 32, kCache = 4096;
  const uint64_t kBase = 100, kMiss = 300;  // ns: warm flow state vs a flow-state cache miss
  // Flow state (per-flow counters, parser state) is warm only in the cache of the worker that
  // touched the flow last: a flow processed on another worker since then, or evicted from this
  // worker's direct-mapped flow-state cache, costs a miss.
  std::vector<std::vector<uint32_t>> cache(kWorkers, std::vector<uint32_t>(kCache, 0xffffffffu));
  std::vector<uint8_t> last_worker(flow_slots, 0xff);
  Engine eng(kWorkers, kRing, flow_slots, [&](const SimPkt& p, uint32_t c) {
    uint32_t& e = cache[c][mix32(p.flow) % kCache];
    uint64_t t = kBase;
    if (e != p.flow || last_worker[p.flow] != c) {
      t += kMiss;
      e = p.flow;
      last_worker[p.flow] = static_cast<uint8_t>(c);
    }
    return t;
  });
  BalancerConfig cfg;
  cfg.lanes = kWorkers;
  cfg.burst_max = kBurst;
  cfg.flow_slots = flow_slots;
  cfg.no_reorder = rule;
  cfg.map_table_size = 256;
  auto bal = std::move(make_balancer(pol, cfg)).value();
  const double gap_ns = kBurst * 1e3 / mpps;
  std::vector<uint16_t> out(kBurst);
  double t = 0;
  for (size_t i = 0; i + kBurst <= n; i += kBurst) {
    t += gap_ns;
    auto now = static_cast<uint64_t>(t);
    eng.advance(now);
    std::span<const PacketMeta> b(&trace[i % (trace.size() - kBurst)], kBurst);
    auto tab = eng.table(now);
    bal->assign(b, tab, out);
    for (uint32_t k = 0; k < kBurst; ++k) eng.enqueue(out[k], b[k], now);
  }
  SubflowRun r;
  r.loss = static_cast<double>(eng.drops) / eng.offered;
  r.ooo = eng.ooo;
  r.adjustments = bal->stats().adjustments;
  r.blocked = bal->stats().blocked_moves;
  r.would_reorder = bal->stats().would_reorder;
  return r;
}

void subflow_setup(const Args& a, const std::string& pcap_dir) {
  Trace base = load_pcap_dir(pcap_dir, 0, 1);
  if (base.packets.empty()) base = synthetic_zipf(100000, 6000, 1.1, 3);
  Trace tr = replay(base, 4);
  Trace seq = replay(base, 4, false);
  uint32_t slots = 1;
  while (slots < std::max(tr.flows, seq.flows)) slots <<= 1;
  std::vector<PacketMeta> all, concat;
  for (auto& p : tr.packets) all.push_back(meta_of(p, p.flow, 0));
  for (auto& p : seq.packets) concat.push_back(meta_of(p, p.flow, 0));
  // one / two cores overloaded: flows whose HRW lane and CRC32 map lane are both in {0} / {0,1}
  BalancerConfig c4;
  c4.lanes = 4;
  c4.map_table_size = 256;
  auto hrw_lane = [&](const PacketMeta& m) {
    uint32_t best = 0, bw = 0;
    for (uint32_t j = 0; j < 4; ++j)
      if (hrw_weight(j, m.flow_hash) > bw) bw = hrw_weight(j, m.flow_hash), best = j;
    return best;
  };
  auto crc_lane = [&](const PacketMeta& m) { return (crc32(m.tuple) % 256) % 4; };
  std::vector<PacketMeta> one, two;
  for (auto& m : all) {
    uint32_t h = hrw_lane(m), c = crc_lane(m);
    if (h == 0 && c == 0) one.push_back(m);
    if (h <= 1 && c <= 1) two.push_back(m);
  }
  const size_t n = a.quick ? 200000 : 600000;
  FILE* f =
      open_csv(a, "subflow.csv",
               "traffic,policy,no_reorder,offered_mpps,loss,out_of_order,adjustments,blocked_moves,would_reorder");
  FILE* z = open_csv(a, "subflow_zero_loss.csv", "traffic,policy,no_reorder,zero_loss_mpps");
  std::map<std::string, double> zl;
  for (auto& [name, tr2] : std::vector<std::pair<std::string, std::vector<PacketMeta>*>>{
           {"mixed", &all}, {"skewed", &concat}, {"one-core", &one}, {"two-core", &two}}) {
    for (auto pol : {"rr", "crc32", "hrw", "subflow"})
      for (bool rule : {false, true}) {
        // crc32/hrw never move a flow while its lanes stay up: the rule changes nothing for them
        if (rule && std::string(pol) != "subflow" && std::string(pol) != "rr") continue;
        for (double mpps : {1.0, 2.0, 4.0, 6.0, 8.0, 10.0, 12.0, 16.0, 20.0, 24.0, 30.0}) {
          auto r = run_subflow(*tr2, slots, pol, mpps, rule, n);
          std::fprintf(f, "%s,%s,%d,%.2f,%.6f,%lu,%lu,%lu,%lu\n", name.c_str(), pol, rule, mpps, r.loss, r.ooo,
                       r.adjustments, r.blocked, r.would_reorder);
        }
        // zero-loss throughput: bisection on the offered rate
        double lo = 0.1, hi = 40;
        for (int it = 0; it < (a.quick ? 8 : 12); ++it) {
          double mid = std::sqrt(lo * hi);
          if (run_subflow(*tr2, slots, pol, mid, rule, n).loss == 0)
            lo = mid;
          else
            hi = mid;
        }
        std::fprintf(z, "%s,%s,%d,%.3f\n", name.c_str(), pol, rule, lo);
        zl[name + pol + (rule ? "r" : "")] = lo;
        std::printf("subflow %-8s %-7s rule=%d zero-loss %.2f Mpps\n", name.c_str(), pol, rule, lo);
      }
  }
  std::fclose(f);
  std::fclose(z);
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "skewed: %+.0f%% vs HRW, %+.0f%% vs CRC32, x%.2f RR (%.2f/%.2f/%.2f/%.2f Mpps); rule on: %.2f",
                (zl["skewedsubflow"] / zl["skewedhrw"] - 1) * 100, (zl["skewedsubflow"] / zl["skewedcrc32"] - 1) * 100,
                zl["skewedsubflow"] / zl["skewedrr"], zl["skewedsubflow"], zl["skewedhrw"], zl["skewedcrc32"],
                zl["skewedrr"], zl["skewedsubflowr"]);
  g_repro.push_back({"Subflow zero-loss throughput", "+77% HRW, +64% CRC32, 4.75x RR", buf, ""});
  std::snprintf(buf, sizeof buf,
                "mixed: %+.0f%% vs HRW, %+.0f%% vs CRC32, x%.2f RR (%.2f/%.2f/%.2f/%.2f Mpps); rule on: %.2f",
                (zl["mixedsubflow"] / zl["mixedhrw"] - 1) * 100, (zl["mixedsubflow"] / zl["mixedcrc32"] - 1) * 100,
                zl["mixedsubflow"] / zl["mixedrr"], zl["mixedsubflow"], zl["mixedhrw"], zl["mixedcrc32"], zl["mixedrr"],
                zl["mixedsubflowr"]);
  g_repro.push_back({"Subflow zero-loss, interleaved replays", "(same claim)", buf, ""});
  std::snprintf(buf, sizeof buf, "one-core: subflow %.2f vs HRW %.2f / CRC32 %.2f Mpps; two-core: %.2f vs %.2f / %.2f",
                zl["one-coresubflow"], zl["one-corehrw"], zl["one-corecrc32"], zl["two-coresubflow"], zl["two-corehrw"],
                zl["two-corecrc32"]);
  g_repro.push_back({"Subflow, 1/2 cores overloaded", "0 loss to 2400 Mbps; HRW/CRC32 lose at 300 Mbps", buf, ""});
}

// ---------------------------------------------------------------------------------------------
// Thread CPU time: the build machine is shared, wall-clock would count other people's builds.
uint64_t cpu_now() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}

void cost_setup(const Args& a, const std::string& pcap_dir) {
  Trace base = load_pcap_dir(pcap_dir, 0, 1);
  if (base.packets.empty()) base = synthetic_zipf(100000, 6000, 1.1, 3);
  Trace tr = replay(base, a.quick ? 4 : 10);
  std::vector<PacketMeta> pk;
  for (auto& p : tr.packets) pk.push_back(meta_of(p, p.flow, static_cast<uint8_t>(p.flow % 4)));
  uint32_t slots = 1;
  while (slots < tr.flows) slots <<= 1;
  FILE* f = open_csv(a, "cost.csv", "policy,lanes,flow_cache,ns_per_packet_median,spread,p1,p99,runs");
  std::map<std::string, double> med;
  std::vector<std::string> names(balancer_names().begin(), balancer_names().end());
  names.push_back("laps/s16");  // LAPS with AFD sampling 1 in 16 (paper §V-C: accuracy kept)
  for (bool fc : {true, false})
    for (uint32_t lanes : {4u, 16u}) {
      for (const auto& variant : names) {
        std::string name = variant.substr(0, variant.find('/'));
        BalancerConfig cfg;
        cfg.afd_sample_every = variant == "laps/s16" ? 16 : 1;
        cfg.flow_cache = fc;
        cfg.lanes = lanes;
        cfg.flow_slots = slots;
        cfg.burst_max = 32;
        cfg.services = 4;
        cfg.map_table_size = 256;
        auto bal = std::move(make_balancer(name, cfg)).value();
        std::vector<LaneState> ls(lanes);
        for (auto& l : ls) l.capacity = 1024;
        std::vector<uint32_t> pending(slots, 0);
        std::vector<uint16_t> out(32);
        std::vector<double> runs;
        // Each run: the whole trace in bursts of 32 through assign(), then the lanes drain (the
        // dispatcher's completion bookkeeping). The same loop with a fixed lane array instead of
        // assign() is timed right after and subtracted: the figure is assign() alone.
        std::vector<uint16_t> fixed(pk.size());
        for (size_t i = 0; i < pk.size(); ++i) fixed[i] = static_cast<uint16_t>(pk[i].flow_id % lanes);
        for (int run = 0; run < 8; ++run) {  // run 0 is the warm-up
          const size_t nb = pk.size() / 32 * 32;
          uint64_t t0 = cpu_now();
          for (size_t i = 0; i < nb; i += 32) {
            std::span<const PacketMeta> b(&pk[i], 32);
            LaneTable t{ls, pending, i * 100};
            bal->assign(b, t, out);
            for (int k = 0; k < 32; ++k) {
              --ls[out[k]].queued;
              --pending[b[k].flow_id];
            }
          }
          uint64_t t1 = cpu_now();
          for (size_t i = 0; i < nb; i += 32) {
            std::span<const PacketMeta> b(&pk[i], 32);
            for (int k = 0; k < 32; ++k) {
              ++ls[fixed[i + k]].queued;
              ++pending[b[k].flow_id];
            }
            for (int k = 0; k < 32; ++k) {
              --ls[fixed[i + k]].queued;
              --pending[b[k].flow_id];
            }
          }
          uint64_t t2 = cpu_now();
          double per = (static_cast<double>(t1 - t0) - static_cast<double>(t2 - t1)) / static_cast<double>(nb);
          if (run) runs.push_back(per);
        }
        auto s = hpr::summarize(runs);
        std::fprintf(f, "%s,%u,%d,%.2f,%.3f,%.2f,%.2f,%zu\n", variant.c_str(), lanes, fc, s.median, s.spread, s.p1,
                     s.p99, runs.size());
        std::printf("cost %-8s lanes=%2u cache=%d %6.2f ns/pkt (spread %.2f)\n", variant.c_str(), lanes, fc, s.median,
                    s.spread);
        med[variant + std::to_string(lanes) + (fc ? "" : "nc")] = s.median;
      }
    }
  std::fclose(f);
  char buf[256];
  std::snprintf(
      buf, sizeof buf,
      "4 lanes: RR %.1f, CRC32 %.1f, HRW %.1f, Subflow %.1f ns (x%.2f HRW), LAPS %.1f (AFD 1/16: %.1f); no flow "
      "cache: CRC32 %.1f, HRW %.1f, Subflow %.1f, LAPS %.1f",
      med["rr4"], med["crc324"], med["hrw4"], med["subflow4"], med["subflow4"] / med["hrw4"], med["laps4"],
      med["laps/s164"], med["crc324nc"], med["hrw4nc"], med["subflow4nc"], med["laps4nc"]);
  g_repro.push_back(
      {"cost per packet", "RR 23.3, CRC32 28.4, HRW 24.4, Subflow 31.4 ns (x1.29); goal <15 ns", buf, ""});
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    std::string s = argv[i];
    if (s == "--out" && i + 1 < argc)
      a.out = argv[++i];
    else if (s == "--data" && i + 1 < argc)
      a.data = argv[++i];
    else if (s == "--quick")
      a.quick = true;
    else if (s == "--only" && i + 1 < argc)
      a.only = argv[++i];
    else {
      std::fprintf(stderr, "usage: balance_sim [--out DIR] [--data DIR] [--quick] [--only laps|lap|subflow|cost]\n");
      return 2;
    }
  }
  std::string pcap_dir = (a.data.empty() ? hpr::data_dir() : a.data) + "/pcap/ndpi";
  auto want = [&](const char* k) { return a.only.empty() || a.only == k; };
  if (want("cost")) cost_setup(a, pcap_dir);
  if (want("lap")) lap_setup(a, pcap_dir);
  if (want("subflow")) subflow_setup(a, pcap_dir);
  if (want("laps")) laps_setup(a, pcap_dir);
  FILE* f = open_csv(a, a.only.empty() ? "repro.csv" : "repro_" + a.only + ".csv", "claim,paper,ours");
  std::printf("\n%-40s | %-45s | %s\n", "claim", "paper", "ours");
  for (auto& r : g_repro) {
    std::fprintf(f, "\"%s\",\"%s\",\"%s\"\n", r.claim.c_str(), r.paper.c_str(), r.ours.c_str());
    std::printf("%-40s | %-45s | %s\n", r.claim.c_str(), r.paper.c_str(), r.ours.c_str());
  }
  std::fclose(f);
  return 0;
}
