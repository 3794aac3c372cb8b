// Paper-reproduction simulator for the token-bucket shaper (docs/shaper.md), after Kim et al.,
// ACM TODAES 22(4) 2017, §4-5. Drives the library's EventShaper / PeriodicShaper (one instance
// per simulated core) with synthetic traffic in simulated time.
//
//   shaper_sim scale        §5.1: 1e3..1e6 queues sharing 100 Gbit/s, IMIX, exponential gaps,
//                           100 cores: memory touches event-driven vs periodic (100 us, 1 ms,
//                           10 ms), reduction factor, heap size per core, reschedules/s.
//   shaper_sim model        §3.2 eq. (8)-(13) against the simulation (IMIX, constant gaps).
//   shaper_sim overload     §5.2.2: 10 s normal / 10 s at overload 3.85, adaptive alpha with
//                           delta_th 2, 3, 4 (and a fixed alpha as the peer).
//   shaper_sim conformance  saturated queues: 1-second output rate vs the committed rate, and
//                           the largest burst vs the configured burst.
//   shaper_sim cost         host ns per packet, event-driven vs periodic (same input).
//   shaper_sim all          everything above.
//
// Cores are independent (a queue lives on one core's heap), so --scale < 1 simulates that
// fraction of the cores exactly and extrapolates the totals; per-core figures are unaffected.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "scheduler/shaper/shaper.hpp"

using namespace hpr::shaper;

namespace {

constexpr double kLinkBytesPerS = 100e9 / 8;  // 100 Gbit/s
constexpr uint64_t kSec = 1'000'000'000ull;

// Table I of the paper (Agilent IMIX): packet size, share in percent. Mean 514.9 B.
constexpr std::array<std::pair<uint32_t, double>, 11> kImix = {{{28, 1.2},
                                                                 {40, 35.5},
                                                                 {44, 2.0},
                                                                 {48, 2.0},
                                                                 {52, 3.5},
                                                                 {552, 0.8},
                                                                 {576, 11.5},
                                                                 {628, 1.0},
                                                                 {770, 29.5},
                                                                 {1420, 3.0},
                                                                 {1500, 10.0}}};

double imix_mean() {
  double s = 0;
  for (auto& [b, p] : kImix) s += b * p / 100.0;
  return s;
}

struct Imix {
  std::discrete_distribution<int> d;
  Imix() {
    std::vector<double> w;
    w.reserve(kImix.size());
    for (auto& kv : kImix) w.push_back(kv.second);
    d = std::discrete_distribution<int>(w.begin(), w.end());
  }
  uint32_t operator()(std::mt19937_64& rng) { return kImix[static_cast<size_t>(d(rng))].first; }
};

struct Options {
  std::string out_dir = "out/shaper";
  double scale = 1.0;  // fraction of cores simulated
  double seconds = 10;
  uint32_t cores = 100;
  uint32_t alpha = 3000;
  uint32_t burst = 6000;
  uint16_t queue_limit = 1;
  uint64_t seed = 1;
  double sampling_period_s = 2.0;  // adaptive alpha sampling period (overload)
  std::vector<uint64_t> queues = {1000, 10000, 100000, 1000000};
};

std::ofstream open_csv(const Options& o, const std::string& name) {
  std::filesystem::create_directories(o.out_dir);
  std::ofstream f(o.out_dir + "/" + name);
  if (!f) throw std::runtime_error("cannot write " + o.out_dir + "/" + name);
  return f;
}

uint32_t simulated_cores(const Options& o) {
  return std::max<uint32_t>(1, static_cast<uint32_t>(std::lround(o.cores * o.scale)));
}

// Time-weighted heap size of one shaper.
struct HeapMeter {
  uint64_t last_ns = 0;
  long double area = 0;
  uint64_t max = 0;
  void at(uint64_t now, size_t size) {
    area += static_cast<long double>(size) * static_cast<long double>(now - last_ns);
    last_ns = now;
    max = std::max<uint64_t>(max, size);
  }
  double mean(uint64_t horizon_ns) const { return static_cast<double>(area / horizon_ns); }
};

EventShaper make_event(uint32_t queues, double rate, const Options& o, const AdaptiveAlphaConfig& a = {}) {
  ShaperConfig c;
  c.num_queues = queues;
  c.pool_slots = queues * std::max<uint32_t>(1, o.queue_limit);
  c.queue_limit_pkts = o.queue_limit;
  c.max_packet_bytes = 1500;
  c.adaptive = a;
  auto s = EventShaper::create(c);
  if (!s) throw std::runtime_error(s.status().to_string());
  auto p = s->add_profile({static_cast<uint64_t>(std::llround(rate)), o.burst, o.alpha});
  if (!p) throw std::runtime_error(p.status().to_string());
  auto st = s->configure_all(*p, 0);
  if (!st) throw std::runtime_error(st.to_string());
  return std::move(s.value());
}

// One core: m queues, Poisson (exponential gaps) or constant-gap arrivals with random phase.
struct CoreResult {
  uint64_t packets = 0, sent = 0, drops = 0, reschedules = 0, wakeups = 0;
  double heap_mean = 0;
  uint64_t heap_max = 0;
  std::array<uint64_t, CountingEventHeap::kLevels> touches{};
  uint64_t touches_all = 0, beyond_2k = 0, beyond_4k = 0, beyond_8k = 0;
};

CoreResult run_core(uint32_t m, double rate, double overload, bool exponential, const Options& o, uint64_t seed) {
  EventShaper s = make_event(m, rate, o);
  std::mt19937_64 rng(seed);
  Imix imix;
  const double mean_size = imix_mean();
  const double gap_s = mean_size / (overload * rate);  // per-queue mean inter-packet delay, eq. (16)
  const uint64_t horizon = static_cast<uint64_t>(o.seconds * 1e9);
  std::array<uint64_t, 256> out{};
  HeapMeter hm;
  CoreResult r;
  auto step = [&](uint64_t t, uint32_t q) {
    s.poll(t, out);
    hm.at(t, s.heap().size());
    Verdict v = s.enqueue(q, r.packets, imix(rng), t);
    ++r.packets;
    if (v == Verdict::kDropQueueFull) ++r.drops;
  };
  if (exponential) {
    // The superposition of m Poisson streams: one stream at m times the rate, uniform queue.
    std::exponential_distribution<double> gap(m / gap_s);
    std::uniform_int_distribution<uint32_t> pick(0, m - 1);
    double t = 0;
    for (;;) {
      t += gap(rng);
      uint64_t tn = static_cast<uint64_t>(t * 1e9);
      if (tn >= horizon) break;
      step(tn, pick(rng));
    }
  } else {
    // Constant gaps: queue q sends at phase_q + k * gap; the order within a period never changes.
    const uint64_t gap_ns = static_cast<uint64_t>(gap_s * 1e9);
    std::uniform_int_distribution<uint64_t> ph(0, gap_ns - 1);
    std::vector<std::pair<uint64_t, uint32_t>> phase(m);
    for (uint32_t q = 0; q < m; ++q) phase[q] = {ph(rng), q};
    std::sort(phase.begin(), phase.end());
    for (uint64_t base = 0; base < horizon; base += gap_ns)
      for (auto& [p, q] : phase) {
        if (base + p >= horizon) break;
        step(base + p, q);
      }
  }
  s.poll(horizon, out);
  hm.at(horizon, s.heap().size());
  auto st = s.stats();
  r.sent = st.sent_pkts;
  r.reschedules = st.reschedules;
  r.wakeups = st.wakeups;
  r.heap_mean = hm.mean(horizon);
  r.heap_max = st.heap_high_water;
  r.touches = s.heap().touches_by_level();
  r.touches_all = s.heap().touches_total();
  r.beyond_2k = s.heap().touches_beyond(2048);
  r.beyond_4k = s.heap().touches_beyond(4096);
  r.beyond_8k = s.heap().touches_beyond(8192);
  return r;
}

struct Aggregate {
  double heap_mean = 0;  // mean over cores of the time-averaged heap size
  uint64_t heap_max = 0;
  double reschedules = 0, wakeups = 0, touches_all = 0, beyond_2k = 0, beyond_4k = 0, beyond_8k = 0, packets = 0,
         drops = 0;
};

Aggregate run_cores(uint64_t total_queues, double overload, bool exponential, const Options& o) {
  const uint32_t sim = simulated_cores(o);
  const double rate = kLinkBytesPerS / static_cast<double>(total_queues);
  QueuePartition part{o.cores};
  Aggregate a;
  for (uint32_t c = 0; c < sim; ++c) {
    uint32_t m = part.local_count(c, total_queues);
    CoreResult r = run_core(m, rate, overload, exponential, o, o.seed * 1000003 + c);
    a.heap_mean += r.heap_mean / sim;
    a.heap_max = std::max(a.heap_max, r.heap_max);
    a.reschedules += r.reschedules;
    a.wakeups += r.wakeups;
    a.touches_all += r.touches_all;
    a.beyond_2k += r.beyond_2k;
    a.beyond_4k += r.beyond_4k;
    a.beyond_8k += r.beyond_8k;
    a.packets += r.packets;
    a.drops += r.drops;
  }
  const double k = static_cast<double>(o.cores) / sim;  // extrapolate totals to all cores
  for (double* v : {&a.reschedules, &a.wakeups, &a.touches_all, &a.beyond_2k, &a.beyond_4k, &a.beyond_8k,
                    &a.packets, &a.drops})
    *v *= k;
  return a;
}

void run_scale(const Options& o) {
  auto f = open_csv(o, "scale.csv");
  f << "queues,cores,cores_simulated,seconds,alpha,burst,packets,reschedules,reschedules_per_s,heap_avg_per_core,"
       "heap_max_per_core,heap_touches,heap_touches_beyond_2k,heap_touches_beyond_4k,heap_touches_beyond_8k,"
       "wake_rmw,event_touches,periodic_100us,periodic_1ms,periodic_10ms,reduction_100us,reduction_1ms,"
       "reduction_10ms,reduction_heap8k_100us,reduction_heap8k_10ms\n";
  fmt::print("== §5.1 scale: {} s, {} cores ({} simulated), alpha {} B, burst {} B, IMIX, exponential gaps\n",
             o.seconds, o.cores, simulated_cores(o), o.alpha, o.burst);
  fmt::print("{:>9} {:>12} {:>10} {:>9} {:>9} {:>12} {:>12} {:>11} {:>11} {:>11}\n", "queues", "resched", "resch/s",
             "heap_avg", "heap_max", "event_touch", "beyond_8k", "red_100us", "red_1ms", "red_10ms");
  for (uint64_t n : o.queues) {
    auto t0 = std::chrono::steady_clock::now();
    Aggregate a = run_cores(n, 1.0, true, o);
    // Event-driven memory touches: every heap node read/write (no cache assumed) plus the
    // read-modify-write that re-enables a queue. Periodic: one RMW (2 touches) per queue per fill.
    double wake_rmw = 2 * a.wakeups;
    double event = a.touches_all + wake_rmw;
    auto periodic = [&](double period_s) { return 2.0 * static_cast<double>(n) * (o.seconds / period_s); };
    double p100 = periodic(100e-6), p1 = periodic(1e-3), p10 = periodic(10e-3);
    f << fmt::format("{},{},{},{},{},{},{:.0f},{:.0f},{:.1f},{:.2f},{},{:.0f},{:.0f},{:.0f},{:.0f},{:.0f},{:.0f},{:.0f},{:.0f},"
                     "{:.0f},{:.2f},{:.2f},{:.2f},{:.2f},{:.2f}\n",
                     n, o.cores, simulated_cores(o), o.seconds, o.alpha, o.burst, a.packets, a.reschedules,
                     a.reschedules / o.seconds, a.heap_mean, a.heap_max, a.touches_all, a.beyond_2k, a.beyond_4k,
                     a.beyond_8k, wake_rmw, event, p100, p1, p10, p100 / event, p1 / event, p10 / event,
                     p100 / std::max(1.0, a.beyond_8k), p10 / std::max(1.0, a.beyond_8k));
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    fmt::print("{:>9} {:>12.0f} {:>10.0f} {:>9.1f} {:>9} {:>12.3g} {:>12.3g} {:>11.1f} {:>11.1f} {:>11.1f}  ({:.1f} s)\n", n,
               a.reschedules, a.reschedules / o.seconds, a.heap_mean, a.heap_max, event, a.beyond_8k, p100 / event,
               p1 / event, p10 / event, secs);
  }
}

// §3.2: P(N = n) for a queue that restarts at alpha, gains fill = rate * T_int per arrival, loses
// an IMIX packet per arrival, capped at the burst; N = the arrival that makes the bucket negative.
// Computed by propagating the bucket's distribution on a 1-byte grid (fractional fill split
// between the two neighbouring cells, so the mean is exact).
struct ModelOut {
  double e_r = 0, heap_mean = 0, heap_sigma = 0, resched_per_queue_s = 0;  // eq. (8)-(13) as printed
  // Renewal-reward variant (ratio of means instead of the mean of ratios in eq. 11), with the
  // unschedulable period (alpha - TB_N) / BW including the overshoot below zero.
  double renewal_heap_mean = 0, renewal_resched_per_queue_s = 0;
};

ModelOut model(double overload, double rate, uint32_t m, const Options& o) {
  const double mean = imix_mean();
  const double t_int = mean / (overload * rate);
  const double fill = rate * t_int;
  const int burst = static_cast<int>(o.burst);
  std::vector<double> cur(static_cast<size_t>(burst) + 1, 0.0), nxt(cur.size());
  cur[o.alpha] = 1.0;
  std::vector<double> wsz;
  wsz.reserve(kImix.size());
  for (auto& kv : kImix) wsz.push_back(kv.second / 100.0);
  const int fl = static_cast<int>(std::floor(fill));
  const double fr = fill - fl;
  double alive = 1.0, e_r = 0, e_m = 0, e_n = 0, e_over = 0;
  const double unsched = o.alpha / rate;  // alpha / BW: the paper's unschedulable period
  for (int n = 1; n < 200000 && alive > 1e-12; ++n) {
    std::fill(nxt.begin(), nxt.end(), 0.0);
    double absorbed = 0;
    for (int tb = 0; tb <= burst; ++tb) {
      double pm = cur[static_cast<size_t>(tb)];
      if (pm == 0) continue;
      for (int part = 0; part < 2; ++part) {
        double w = part == 0 ? 1 - fr : fr;
        if (w == 0) continue;
        int after_fill = std::min(burst, tb + fl + part);
        for (size_t k = 0; k < kImix.size(); ++k) {
          int v = after_fill - static_cast<int>(kImix[k].first);
          double q = pm * w * wsz[k];
          if (v < 0) {
            absorbed += q;
            e_over += q * -v;
          } else
            nxt[static_cast<size_t>(v)] += q;
        }
      }
    }
    std::swap(cur, nxt);
    alive -= absorbed;
    double sched = n * t_int;
    e_r += absorbed * sched / (sched + unsched);  // eq. (9), (11)
    e_m += absorbed / (sched + unsched);          // eq. (8)
    e_n += absorbed * n;
  }
  ModelOut r;
  r.e_r = e_r;
  r.heap_mean = m * (1 - e_r);                    // eq. (11), (13): sum of mu_i
  r.heap_sigma = std::sqrt(m * e_r * (1 - e_r));  // eq. (12), (13)
  r.resched_per_queue_s = e_m;
  const double u = (o.alpha + e_over) / rate;  // mean unschedulable period
  const double cycle = e_n * t_int + u;
  r.renewal_heap_mean = m * u / cycle;
  r.renewal_resched_per_queue_s = 1 / cycle;
  return r;
}

void run_model(const Options& o) {
  auto f = open_csv(o, "model.csv");
  f << "queues,cores,overload,alpha,burst,seconds,sim_heap_avg,model_heap_avg,model_heap_sigma,heap_error_pct,"
       "sim_reschedules_per_s,model_reschedules_per_s,resched_error_pct,renewal_heap_avg,renewal_heap_error_pct,"
       "renewal_reschedules_per_s,renewal_resched_error_pct\n";
  const uint64_t n = 1'000'000;
  const double rate = kLinkBytesPerS / n;
  const uint32_t m = static_cast<uint32_t>(n / o.cores);
  fmt::print("== §3.2 model vs simulation: {} queues, {} cores ({} simulated), IMIX, constant gaps, {} s\n", n,
             o.cores, simulated_cores(o), o.seconds);
  fmt::print("{:>9} {:>10} {:>10} {:>8} {:>10} {:>8} {:>12} {:>12} {:>8} {:>12} {:>8}\n", "overload", "sim_heap",
             "eq.11-13", "err%", "renewal", "err%", "sim_resch/s", "eq.8", "err%", "renewal", "err%");
  double err_sum = 0, err2_sum = 0;
  int cnt = 0;
  for (double ov : {5.15, 2.57, 1.72, 1.29, 1.1}) {
    Aggregate a = run_cores(n, ov, false, o);
    ModelOut mo = model(ov, rate, m, o);
    auto pct = [](double sim, double mod) { return 100 * std::abs(sim - mod) / sim; };
    double sim_rs = a.reschedules / o.seconds, mod_rs = mo.resched_per_queue_s * n,
           ren_rs = mo.renewal_resched_per_queue_s * n;
    double e = pct(a.heap_mean, mo.heap_mean), e2 = pct(a.heap_mean, mo.renewal_heap_mean);
    err_sum += e;
    err2_sum += e2;
    ++cnt;
    f << fmt::format("{},{},{},{},{},{},{:.2f},{:.2f},{:.2f},{:.3f},{:.1f},{:.1f},{:.3f},{:.2f},{:.3f},{:.1f},{:.3f}\n", n,
                     o.cores, ov, o.alpha, o.burst, o.seconds, a.heap_mean, mo.heap_mean, mo.heap_sigma, e, sim_rs,
                     mod_rs, pct(sim_rs, mod_rs), mo.renewal_heap_mean, e2, ren_rs, pct(sim_rs, ren_rs));
    fmt::print("{:>9} {:>10.1f} {:>10.1f} {:>8.2f} {:>10.1f} {:>8.2f} {:>12.0f} {:>12.0f} {:>8.2f} {:>12.0f} {:>8.2f}\n",
               ov, a.heap_mean, mo.heap_mean, e, mo.renewal_heap_mean, e2, sim_rs, mod_rs, pct(sim_rs, mod_rs), ren_rs,
               pct(sim_rs, ren_rs));
  }
  fmt::print("mean heap-size error: eq. (11)-(13) {:.2f}%, renewal variant {:.2f}% (paper: 2.73%)\n", err_sum / cnt,
             err2_sum / cnt);
}

// §5.2.2: one core's queues, 10 s at overload 1 then 10 s at 3.85, repeated; exponential gaps.
void run_overload(const Options& o) {
  auto f = open_csv(o, "overload.csv");
  f << "delta_th,second,overload,reschedules_per_queue_per_s,reschedules_per_queue_per_period,heap_avg,alpha_mean\n";
  const uint64_t n = 1'000'000;
  const double rate = kLinkBytesPerS / n;
  const uint32_t m = static_cast<uint32_t>(n / o.cores);
  const double total = std::max(40.0, o.seconds);
  fmt::print(
      "== §5.2.2 periodic overload: {} queues on one core, 10 s x1 / 10 s x3.85, {} s, gamma 2, sampling period {} s\n",
      m, total, o.sampling_period_s);
  fmt::print("{:>8} {:>22} {:>22} {:>12}\n", "delta_th", "resch/queue/period norm", "resch/queue/period over",
             "heap_avg_ov");
  for (int dth : {0, 2, 3, 4}) {  // 0 = fixed alpha (adaptive off), the peer
    AdaptiveAlphaConfig a;
    a.enabled = dth != 0;
    a.gamma = 2.0;
    a.delta_th = static_cast<uint32_t>(dth);
    a.period_ns = static_cast<uint64_t>(o.sampling_period_s * 1e9);
    EventShaper s = make_event(m, rate, o, a);
    std::mt19937_64 rng(o.seed + static_cast<uint64_t>(dth));
    Imix imix;
    std::uniform_int_distribution<uint32_t> pick(0, m - 1);
    std::array<uint64_t, 256> out{};
    double t = 0;
    uint64_t last_resch = 0;
    double sum_normal = 0, sum_over = 0, heap_over = 0;
    int n_normal = 0, n_over = 0;
    HeapMeter hm;
    for (int sec = 0; sec < static_cast<int>(total); ++sec) {
      double ov = (sec / 10) % 2 == 0 ? 1.0 : 3.85;
      std::exponential_distribution<double> gap(m * ov * rate / imix_mean());
      const double end = sec + 1.0;
      hm = HeapMeter{static_cast<uint64_t>(sec * 1e9)};
      for (;;) {
        double nt = t + gap(rng);
        if (nt >= end) break;  // memoryless: restart the gap at the second boundary
        t = nt;
        uint64_t tn = static_cast<uint64_t>(t * 1e9);
        s.poll(tn, out);
        hm.at(tn, s.heap().size());
        (void)s.enqueue(pick(rng), 0, imix(rng), tn);
      }
      t = end;
      uint64_t tn = static_cast<uint64_t>(end * 1e9);
      s.poll(tn, out);
      hm.at(tn, s.heap().size());
      uint64_t r = s.stats().reschedules;
      double per_queue = static_cast<double>(r - last_resch) / m;
      last_resch = r;
      double alpha_mean = 0;
      for (uint32_t q = 0; q < m; ++q) alpha_mean += s.alpha_bytes(q);
      alpha_mean /= m;
      f << fmt::format("{},{},{},{:.4f},{:.4f},{:.1f},{:.1f}\n", dth, sec, ov, per_queue, per_queue * o.sampling_period_s,
                       static_cast<double>(hm.area / 1e9L), alpha_mean);
      if (sec % 10 >= 2) {  // skip the transition seconds
        if (ov > 1) {
          sum_over += per_queue;
          heap_over += static_cast<double>(hm.area / 1e9L);
          ++n_over;
        } else {
          sum_normal += per_queue;
          ++n_normal;
        }
      }
    }
    fmt::print("{:>8} {:>22.3f} {:>22.3f} {:>12.1f}\n", dth == 0 ? std::string("fixed") : std::to_string(dth),
               sum_normal / std::max(1, n_normal) * o.sampling_period_s,
               sum_over / std::max(1, n_over) * o.sampling_period_s, heap_over / std::max(1, n_over));
  }
}

// Saturated single queues: 1-s windows within 1% of the rate, largest burst <= configured burst.
template <typename S>
void conformance_one(std::ofstream& f, const char* name, S& s, uint64_t rate, uint32_t burst, double seconds,
                     uint64_t seed, uint64_t tick_ns) {
  std::mt19937_64 rng(seed);
  Imix imix;
  std::exponential_distribution<double> gap(2.0 * rate / imix_mean());  // offered at 2x the rate
  const uint64_t horizon = static_cast<uint64_t>(seconds * 1e9);
  std::vector<uint32_t> size_of;
  std::vector<std::pair<uint64_t, uint32_t>> dep;  // (time, bytes)
  std::array<uint64_t, 512> out{};
  double t = 0;
  uint64_t next_arrival = 0, tick = tick_ns;
  auto drain = [&](uint64_t now) {
    for (;;) {
      size_t k = s.poll(now, out);
      for (size_t i = 0; i < k; ++i) dep.emplace_back(now, size_of[out[i]]);
      if (k < out.size()) break;
    }
  };
  t += gap(rng);
  next_arrival = static_cast<uint64_t>(t * 1e9);
  for (;;) {
    uint64_t now = std::min(next_arrival, s.next_event_ns());
    if (tick_ns) now = std::min(now, tick);
    if (now >= horizon) break;
    if (tick_ns && tick == now) tick += tick_ns;
    drain(now);
    while (next_arrival == now) {
      uint32_t b = imix(rng);
      size_of.push_back(b);
      if (s.enqueue(0, size_of.size() - 1, b, now) == Verdict::kSend) dep.emplace_back(now, b);
      t += gap(rng);
      next_arrival = static_cast<uint64_t>(t * 1e9);
    }
    drain(now);
  }
  // 1-second windows (the first holds the initial full bucket, reported apart).
  std::vector<double> win(static_cast<size_t>(seconds), 0.0);
  for (auto& [tm, b] : dep)
    if (tm / kSec < win.size()) win[tm / kSec] += b;
  double worst = 0;
  for (size_t w = 1; w < win.size(); ++w) worst = std::max(worst, std::abs(win[w] - rate) / rate);
  // Largest burst: max over intervals of bytes - rate * length (exact, O(n)).
  __int128 best = 0, sum = 0, minp = std::numeric_limits<__int128>::max();
  for (auto& [tm, b] : dep) {
    __int128 v = sum * 1'000'000'000 - static_cast<__int128>(tm) * rate;
    minp = std::min(minp, v);
    sum += b;
    best = std::max(best, sum * 1'000'000'000 - static_cast<__int128>(tm) * rate - minp);
  }
  double max_burst = static_cast<double>(best) / 1e9;
  f << fmt::format("{},{},{},{},{:.4f},{:.1f},{:.2f},{}\n", name, rate, burst, seconds, 100 * worst,
                   win.empty() ? 0.0 : win[0], max_burst, max_burst <= burst + 1e-9 ? "yes" : "NO");
  fmt::print("{:>9} {:>12} {:>8} {:>14.4f} {:>12.1f} {:>10}\n", name, rate, burst, 100 * worst, max_burst,
             max_burst <= burst + 1e-9 ? "yes" : "NO");
}

void run_conformance(const Options& o) {
  auto f = open_csv(o, "conformance.csv");
  f << "shaper,rate_bytes_per_s,burst_bytes,seconds,worst_1s_window_error_pct,first_window_bytes,max_burst_bytes,"
       "within_burst\n";
  fmt::print("== conformance: one saturated queue (offered 2x), IMIX, {} s, alpha {} B\n", o.seconds, o.alpha);
  fmt::print("{:>9} {:>12} {:>8} {:>14} {:>12} {:>10}\n", "shaper", "rate_B/s", "burst", "worst_win_err%",
             "max_burst", "<=burst");
  for (uint64_t rate : {12'500ull, 1'250'000ull, 125'000'000ull}) {
    const uint32_t burst = 15'000;
    ShaperConfig c;
    c.num_queues = 1;
    c.pool_slots = 4096;
    c.queue_limit_pkts = 4095;
    c.max_packet_bytes = 1500;
    c.refill_period_ns = 100'000;  // 100 us: rate * period must fit in the burst
    auto ev = EventShaper::create(c);
    auto pe = PeriodicShaper::create(c);
    auto p1 = ev->add_profile({rate, burst, o.alpha});
    auto p2 = pe->add_profile({rate, burst, o.alpha});
    if (!p1 || !p2) throw std::runtime_error(p1 ? p2.status().to_string() : p1.status().to_string());
    (void)ev->configure_queue(0, *p1, 0);
    (void)pe->configure_queue(0, *p2, 0);
    conformance_one(f, "event", *ev, rate, burst, o.seconds, o.seed + rate, 0);
    conformance_one(f, "periodic", *pe, rate, burst, o.seconds, o.seed + rate, c.refill_period_ns);
  }
}

// Host cost of the library itself: ns per packet (poll + enqueue) for one core's 10,000 queues at
// the 1 M-queue rates (12.5 kB/s each, IMIX, exponential gaps, overload 1, queue limit 1), for the
// event-driven shaper and the periodic baseline at 100 us / 1 ms / 10 ms. Arrivals are generated
// beforehand; warm-up run, then 5 timed runs; median and spread; ratio periodic / event.
void run_cost(const Options& o) {
  auto f = open_csv(o, "cost.csv");
  f << "shaper,refill_period_ns,queues,packets,ns_per_packet_median,spread,bucket_updates,ratio_vs_event\n";
  const uint32_t m = 10'000;
  const double rate = kLinkBytesPerS / 1e6;
  const double secs = std::min(o.seconds, 10.0);
  struct Arr {
    uint64_t t;
    uint32_t q, bytes;
  };
  std::vector<Arr> arr;
  {
    std::mt19937_64 rng(o.seed);
    Imix imix;
    std::exponential_distribution<double> gap(m * rate / imix_mean());
    std::uniform_int_distribution<uint32_t> pick(0, m - 1);
    for (double t = gap(rng); t < secs; t += gap(rng)) arr.push_back({static_cast<uint64_t>(t * 1e9), pick(rng), imix(rng)});
  }
  fmt::print("== host cost: {} queues on one core, {} packets over {} s, poll + enqueue per packet\n", m, arr.size(), secs);
  fmt::print("{:>10} {:>12} {:>14} {:>8} {:>14} {:>10}\n", "shaper", "period", "ns/packet", "spread", "bucket_upd",
             "vs event");
  double event_ns = 0;
  auto time_one = [&](auto& shaper) {
    std::array<uint64_t, 256> out{};
    auto t0 = std::chrono::steady_clock::now();
    for (const Arr& a : arr) {
      shaper.poll(a.t, out);
      (void)shaper.enqueue(a.q, 0, a.bytes, a.t);
    }
    return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() / arr.size();
  };
  auto make_cfg = [&](uint64_t period) {
    ShaperConfig c;
    c.num_queues = m;
    c.pool_slots = m;
    c.queue_limit_pkts = 1;
    c.max_packet_bytes = 1500;
    c.refill_period_ns = period;
    return c;
  };
  for (uint64_t period : {0ull, 100'000ull, 1'000'000ull, 10'000'000ull}) {
    std::vector<double> runs;
    uint64_t updates = 0;
    for (int r = 0; r < 6; ++r) {
      double ns = 0;
      if (period == 0) {
        auto s = EventShaper::create(make_cfg(1'000'000));
        auto p = s->add_profile({static_cast<uint64_t>(rate), o.burst, o.alpha});
        (void)s->configure_all(*p, 0);
        ns = time_one(*s);
        updates = s->stats().bucket_updates;
      } else {
        auto s = PeriodicShaper::create(make_cfg(period));
        auto p = s->add_profile({static_cast<uint64_t>(rate), o.burst, o.alpha});
        if (!p) throw std::runtime_error(p.status().to_string());
        (void)s->configure_all(*p, 0);
        ns = time_one(*s);
        updates = s->stats().bucket_updates;
      }
      if (r > 0) runs.push_back(ns);  // run 0 is the warm-up
    }
    std::sort(runs.begin(), runs.end());
    double med = runs[runs.size() / 2];
    double spread = (runs.back() - runs.front()) / med;
    if (period == 0) event_ns = med;
    const char* name = period == 0 ? "event" : "periodic";
    f << fmt::format("{},{},{},{},{:.2f},{:.3f},{},{:.2f}\n", name, period, m, arr.size(), med, spread, updates,
                     med / event_ns);
    fmt::print("{:>10} {:>12} {:>14.2f} {:>8.3f} {:>14} {:>10.2f}\n", name, period == 0 ? std::string("-") : fmt::format("{} us", period / 1000), med,
               spread, updates, med / event_ns);
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Token-bucket shaper simulator (Kim et al. 2017, §4-5)"};
  Options o;
  std::string what = "all";
  app.add_option("what", what, "scale | model | overload | conformance | cost | all")
      ->check(CLI::IsMember({"scale", "model", "overload", "conformance", "cost", "all"}));
  app.add_option("--out", o.out_dir, "CSV output folder");
  app.add_option("--scale", o.scale, "fraction of the cores to simulate (totals are extrapolated)")
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--seconds", o.seconds, "simulated seconds (overload: at least 40)");
  app.add_option("--cores", o.cores, "cores (heaps)");
  app.add_option("--alpha", o.alpha, "reschedule threshold alpha in bytes");
  app.add_option("--burst", o.burst, "bucket size in bytes");
  app.add_option("--queue-limit", o.queue_limit, "packets per queue (1 = the paper's regime)");
  app.add_option("--queues", o.queues, "queue counts for `scale`");
  app.add_option("--seed", o.seed, "random seed");
  app.add_option("--sampling-period", o.sampling_period_s, "adaptive alpha sampling period in seconds (overload)");
  CLI11_PARSE(app, argc, argv);
  try {
    auto t0 = std::chrono::steady_clock::now();
    if (what == "scale" || what == "all") run_scale(o);
    if (what == "model" || what == "all") run_model(o);
    if (what == "overload" || what == "all") run_overload(o);
    if (what == "conformance" || what == "all") run_conformance(o);
    if (what == "cost" || what == "all") run_cost(o);
    fmt::print("done in {:.1f} s; CSV in {}\n",
               std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), o.out_dir);
  } catch (const std::exception& e) {
    fmt::print(stderr, "shaper_sim: {}\n", e.what());
    return 1;
  }
  return 0;
}
