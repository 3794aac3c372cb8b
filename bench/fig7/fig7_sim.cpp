// Replays the Fig. 7 scenario of hetero-opencl-adaptive-scheduler §5 on the model devices (i7 CPU, HD Graphics
// 4000, GTX 480 calibrated from the paper's text; scheduler/model/): the offered rate ramps from 1 to 40 Gbit/s in
// steps (then back down), DPI's match rate changes (the paper's H and L), energy-critical policy. A fluid
// simulation in 1 ms ticks: one ingress queue (size --queue-mb), the running configuration serves at its model
// capacity, a device-set switch first drains the old lanes' in-flight batches (no flow moves while it has packets
// in flight: reorders stay 0), the scheduler runs every --quantum-ms on what was measured over the quantum.
// Every power figure is source "model". Writes fig7_timeline.csv, fig7_events.csv, fig7_summary.csv.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "hpr/stats.hpp"
#include "scheduler/adaptive/adaptive_scheduler.hpp"
#include "scheduler/model/model_device.hpp"

using namespace hpr::sched;
using namespace hpr::sched::model;

namespace {

constexpr double G = 1e9;

struct Segment {
  double rate_gbps;
  double match_rate;
  const char* label;
};

// The same rate profile for every app (§5: "the input traffic has the same profile for all applications").
// DPI additionally switches to match-heavy traffic at H (15 Gbit/s) and L (35 Gbit/s) as in Fig. 7(c).
std::vector<Segment> scenario(App app) {
  bool dpi = app == App::kDpi;
  return {{1, 0, ""},        {2, 0, ""},         {4, 0, ""},
          {8, 0, ""},        {12, 0, ""},        {15, dpi ? 1.0 : 0, dpi ? "H" : ""},
          {20, dpi ? 1.0 : 0, ""}, {25, 0, dpi ? "J" : ""}, {30, 0, ""},
          {35, dpi ? 1.0 : 0, dpi ? "L" : ""}, {40, dpi ? 1.0 : 0, ""}, {40, 0, dpi ? "N" : ""},
          {10, 0, ""},       {1, 0, ""}};
}

const char* device_names(uint32_t mask) {
  static const char* names[] = {"none",     "CPU",          "iGPU",         "CPU+iGPU",
                                "GTX",      "CPU+GTX",      "iGPU+GTX",     "CPU+iGPU+GTX"};
  return names[mask & 7];
}

// "All three devices, always": each member's best batch halved together (as profiled) — the smallest such
// setting whose capacity carries the rate, else the fastest one. With best_batch (--peer best-batch) always
// each member's best batch, whatever the rate (a peer that does not tune its batch).
Configuration all_three(const ModelPlatform& p, double rate_bps, const TrafficFeatures& f, bool best_batch) {
  Configuration fastest, pick;
  double top = -1;
  bool found = false;
  for (int k = best_batch ? 0 : 10; k >= 0; --k) {
    std::array<uint32_t, kMaxDevices> b{};
    for (size_t d = 0; d < 3; ++d) b[d] = std::max<uint32_t>(64, p.best_batch(d, f) >> k);
    Configuration c = p.balanced(0b111, b, f);
    double cap = p.evaluate(c, rate_bps, f).capacity_bps;
    if (cap > top) {
      top = cap;
      fastest = c;
    }
    if (!found && cap >= rate_bps) {
      pick = c;
      found = true;
    }
  }
  return found ? pick : fastest;
}

struct Summary {
  std::string app;
  double energy_j = 0, energy_all_j = 0;
  double offered_bits = 0, achieved_bits = 0;
  std::vector<double> adapt_ms;
  double lost_packets = 0;           // while adapting: some configuration could carry the rate
  double lost_overload_packets = 0;  // no configuration can carry the rate (the paper's I–J, L–M, S–T)
  double max_queue_mb = 0;
  uint64_t reorders = 0;
  uint64_t switches = 0;
  uint64_t table_updates = 0;
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App cli{"Fig. 7 replay on model devices (hetero-opencl-adaptive-scheduler §5)"};
  std::string out_dir = "out/fig7";
  double segment_s = 1.5, quantum_ms = 20, queue_mb = 500, lambda = 1.10;
  std::string peer = "smallest-batch";
  cli.add_option("--out", out_dir, "output folder for the CSV files");
  cli.add_option("--segment-s", segment_s, "seconds per rate step");
  cli.add_option("--quantum-ms", quantum_ms, "control quantum (paper: 40 ms or two samples)");
  cli.add_option("--queue-mb", queue_mb, "ingress queue size (paper: 500 MB was enough)");
  cli.add_option("--lambda", lambda, "switch only when better by this factor");
  cli.add_option("--peer", peer,
                 "all three devices all the time at: smallest-batch (the smallest profiled batches that carry the "
                 "rate) | best-batch (each device's best batch at every rate)")
      ->check(CLI::IsMember({"smallest-batch", "best-batch"}))
      ->capture_default_str();
  CLI11_PARSE(cli, argc, argv);
  const bool peer_best_batch = peer == "best-batch";
  std::filesystem::create_directories(out_dir);
  std::ofstream tl(out_dir + "/fig7_timeline.csv"), ev(out_dir + "/fig7_events.csv"),
      sm(out_dir + "/fig7_summary.csv");
  tl << "app,t_s,offered_gbps,achieved_gbps,power_w,power_source,all_three_power_w,devices,device_mask,batch,"
        "latency_us,queue_mb,lost_packets,match_rate\n";
  ev << "app,t_s,label,offered_gbps,match_rate,adapt_ms,devices_after\n";
  sm << "app,energy_j,all_three_energy_j,saving_ratio,paper_ratio,offered_gbit,achieved_gbit,adapt_ms_median,"
        "adapt_ms_max,lost_packets_adapting,lost_packets_overload,queue_mb,max_queue_mb,reorders,device_switches,"
        "table_updates,power_source\n";

  const double tick_s = 1e-3;
  const auto ticks_per_quantum = static_cast<int>(std::lround(quantum_ms / 1e3 / tick_s));
  const double queue_bits_cap = queue_mb * 8e6;
  std::vector<Summary> all;

  for (App app : {App::kIpv4, App::kMd5, App::kDpi, App::kAes}) {
    ModelPlatform p = ModelPlatform::paper(app);
    TrafficFeatures low{}, high{};
    high.match_rate = 1.0;
    ConfigStore s_low, s_high;
    for (const auto& c : p.profile(low)) (void)s_low.insert(c);
    for (const auto& c : p.profile(high)) (void)s_high.insert(c);
    std::vector<ConfigStore*> stores{&s_low};
    if (app == App::kDpi) stores.push_back(&s_high);
    AdaptiveParams params;
    params.lambda = lambda;
    auto sched = AdaptiveScheduler::create(params, stores);
    if (!sched) {
      fmt::print(stderr, "{}\n", sched.status().to_string());
      return 1;
    }
    const double pkt_bits = low.mean_packet_bytes * 8;
    Summary S;
    S.app = app_name(app);

    Configuration running;           // what the lanes run now
    Configuration draining;          // the previous configuration while its in-flight batches finish
    double drain_left_s = 0;
    uint64_t applied_epoch = 0;
    double queue_bits = 0;
    // per-quantum accumulators
    double q_offered = 0, q_achieved = 0, q_energy = 0, q_lat = 0, q_proc_lat = 0, q_lost = 0;
    int q_ticks = 0;
    bool quantum_clean = false;
    double t = 0;
    // adaptation tracking
    double event_t = -1;
    std::string event_label;
    double event_rate = 0, event_match = 0;
    bool event_open = false;
    double event_adapt_ms = 0;
    uint64_t last_mask_change_epoch = 0;
    (void)last_mask_change_epoch;

    Measurement m;
    auto segs = scenario(app);
    for (const auto& seg : segs) {
      TrafficFeatures f = seg.match_rate > 0.5 ? high : low;
      double rate = seg.rate_gbps * G;
      event_t = t;
      event_open = true;
      event_label = seg.label;
      event_rate = seg.rate_gbps;
      event_match = seg.match_rate;
      int seg_ticks = static_cast<int>(std::lround(segment_s / tick_s));
      double seg_best_bps = 0;
      for (const auto& c : p.profile(f)) seg_best_bps = std::max(seg_best_bps, c.throughput_bps);
      for (int k = 0; k < seg_ticks; ++k, t += tick_s) {
        // Control: at every quantum boundary the scheduler sees the last quantum's measurement.
        if (q_ticks == ticks_per_quantum || (t == 0 && k == 0)) {
          if (q_ticks > 0) {
            double qs = q_ticks * tick_s;
            m.now_ns = static_cast<uint64_t>(t * 1e9);
            m.offered_bps = q_offered / qs;
            m.achieved_bps = q_achieved / qs;
            m.capacity_bps = p.evaluate(running, rate, f).capacity_bps;
            m.latency_ns = q_proc_lat / q_ticks;  // batch processing latency, as the lanes measure it
            m.latency_p99_ns = m.latency_ns * 1.2;
            m.power_w = q_energy / qs;
            m.power_source = PowerSource::kModel;
            m.traffic_class = (app == App::kDpi && f.match_rate > 0.5) ? 1 : 0;
            // A quantum measures a configuration only when that configuration ran through all of it.
            m.epoch = quantum_clean ? applied_epoch : ~0ULL;
          } else {
            m.offered_bps = rate;
            m.now_ns = 0;
          }
          const Decision& d = sched->step(m);
          bool switched_now = d.epoch != applied_epoch;
          if (std::getenv("HPR_FIG7_DEBUG") != nullptr && std::string(std::getenv("HPR_FIG7_DEBUG")) == app_name(app)) {
            const ConfigStore& st = *stores[m.traffic_class < stores.size() ? m.traffic_class : 0];
            fmt::print("t={:.3f} R={:.1f} cap={:.2f} ach={:.2f} P={:.1f} ep={}/{} -> {} {} cfg={} {}\n", t,
                       m.offered_bps / G, m.capacity_bps / G, m.achieved_bps / G, m.power_w, m.epoch, d.epoch,
                       reason_name(d.reason), sched->running().describe(), d.config,
                       d.config != kNoConfig ? fmt::format("thr={:.2f} P={:.1f}", st.get(d.config).throughput_bps / G,
                                                           st.get(d.config).power_w)
                                             : "");
            ConfigId cand = st.best({Policy::kEnergyCritical, m.offered_bps * 1.05});
            fmt::print("   cand {} {} thr={:.2f} P={:.1f}\n", cand, st.get(cand).describe(), st.get(cand).throughput_bps / G,
                       st.get(cand).power_w);
          }
          if (d.epoch != applied_epoch) {
            Configuration next = sched->running();
            if (next.device_mask != running.device_mask && running.device_mask != 0) {
              // Flows move only once their in-flight packets are done: the old lanes finish their batches.
              draining = running;
              drain_left_s = p.evaluate(running, rate, f).latency_ns / 1e9;
            }
            running = next;
            applied_epoch = d.epoch;
          }
          // Row for the quantum just measured.
          if (q_ticks > 0) {
            double qs = q_ticks * tick_s;
            Configuration base = all_three(p, rate, f, peer_best_batch);
            double all_w = p.evaluate(base, rate, f).power_w;
            uint32_t lead = 0;
            for (int dv = 0; dv < 3; ++dv) lead = std::max(lead, running.batch[dv]);
            tl << fmt::format("{},{:.3f},{:.3f},{:.3f},{:.2f},model,{:.2f},{},{},{},{:.1f},{:.3f},{:.0f},{:.2f}\n",
                              S.app, t, q_offered / qs / G, q_achieved / qs / G, q_energy / qs, all_w,
                              device_names(running.device_mask), running.device_mask, lead, q_lat / q_ticks / 1e3,
                              queue_bits / 8e6, q_lost, f.match_rate);
            // Adaptation: the event is closed at the end of the first quantum that carried what can be carried.
            if (event_open) {
              double target = std::min(rate, seg_best_bps);
              if (q_achieved / qs >= (1 - params.delta) * target && drain_left_s <= 0) {
                event_adapt_ms = (t - event_t) * 1e3;
                S.adapt_ms.push_back(event_adapt_ms);
                event_open = false;
              }
            }
          }
          q_offered = q_achieved = q_energy = q_lat = q_proc_lat = q_lost = 0;
          quantum_clean = drain_left_s <= 0 && !switched_now;
          q_ticks = 0;
        }
        // Data path, one tick.
        const Configuration& serving = drain_left_s > 0 ? draining : running;
        ModelOutcome cap = p.evaluate(serving, rate, f);
        double arrive = rate * tick_s;
        queue_bits += arrive;
        double served = std::min(queue_bits, cap.capacity_bps * tick_s);
        queue_bits -= served;
        double lost = 0;
        if (queue_bits > queue_bits_cap) {
          lost = queue_bits - queue_bits_cap;
          queue_bits = queue_bits_cap;
        }
        ModelOutcome o = p.evaluate(serving, served / tick_s, f);
        uint32_t lead = 0;
        for (int dv = 0; dv < 3; ++dv) lead = std::max(lead, serving.batch[dv]);
        // latency = filling a batch at the offered rate + processing it + waiting behind the backlog
        double fill_ns = lead * pkt_bits / std::max(rate, 1.0) * 1e9;
        double wait_ns = cap.capacity_bps > 0 ? queue_bits / cap.capacity_bps * 1e9 : 0;
        q_lat += o.latency_ns + fill_ns + wait_ns;
        q_proc_lat += o.latency_ns;
        q_offered += arrive;
        q_achieved += served;
        q_energy += o.power_w * tick_s;
        q_lost += lost / pkt_bits;
        ++q_ticks;
        S.energy_j += o.power_w * tick_s;
        S.energy_all_j += p.evaluate(all_three(p, rate, f, peer_best_batch), rate, f).power_w * tick_s;
        S.offered_bits += arrive;
        S.achieved_bits += served;
        if (rate <= seg_best_bps) S.lost_packets += lost / pkt_bits;
        else S.lost_overload_packets += lost / pkt_bits;
        S.max_queue_mb = std::max(S.max_queue_mb, queue_bits / 8e6);
        if (drain_left_s > 0) drain_left_s -= tick_s;
      }
      // adapt_ms "nan": never carried the target within the step
      ev << fmt::format("{},{:.3f},{},{},{},{},{}\n", S.app, event_t, event_label, event_rate, event_match,
                        event_open ? std::string("nan") : fmt::format("{:.1f}", event_adapt_ms),
                        device_names(running.device_mask));
    }
    S.switches = sched->device_switches();
    S.table_updates = sched->table_updates();
    all.push_back(S);
  }

  const char* paper_ratio[] = {"3.5", "", "", "1.3"};  // §5: 3.5x IPv4, 30 % AES; MD5 and DPI in between
  fmt::print("{:<5} {:>10} {:>12} {:>7} {:>6} {:>9} {:>9} {:>9} {:>11} {:>9} {:>8} {:>8}\n", "app", "energy_J",
             "all3_J", "ratio", "paper", "adapt_med", "adapt_max", "lost_adpt", "lost_overld", "maxq_MB", "reorder",
             "switches");
  for (size_t i = 0; i < all.size(); ++i) {
    const auto& S = all[i];
    double ratio = S.energy_all_j / S.energy_j;
    auto st = hpr::summarize(S.adapt_ms);
    const char* pr = S.app == "ipv4" ? paper_ratio[0] : (S.app == "aes" ? paper_ratio[3] : "");
    sm << fmt::format("{},{:.1f},{:.1f},{:.3f},{},{:.1f},{:.1f},{:.1f},{:.1f},{:.0f},{:.0f},{},{:.1f},{},{},{},model\n",
                      S.app, S.energy_j, S.energy_all_j, ratio, pr, S.offered_bits / 1e9, S.achieved_bits / 1e9,
                      st.median, st.max, S.lost_packets, S.lost_overload_packets, queue_mb, S.max_queue_mb, S.reorders,
                      S.switches, S.table_updates);
    fmt::print("{:<5} {:>10.1f} {:>12.1f} {:>7.2f} {:>6} {:>9.0f} {:>9.0f} {:>9.0f} {:>11.0f} {:>9.1f} {:>8} {:>8}\n",
               S.app, S.energy_j, S.energy_all_j, ratio, pr, st.median, st.max, S.lost_packets,
               S.lost_overload_packets, S.max_queue_mb, S.reorders, S.switches);
  }
  fmt::print("adaptation in ms (quantum {} ms, queue {} MB); power source: model (no sensor); CSV in {}\n", quantum_ms,
             queue_mb, out_dir);
  return 0;
}
