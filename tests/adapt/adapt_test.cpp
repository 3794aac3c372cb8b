// hpr profile, the adaptive scheduler on the live pipeline, and run power (pipeline/profile.hpp,
// adaptive_control.hpp, power.hpp). No timing thresholds: only books, orders, files and names.
#include <fmt/format.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <random>

#include "hpr/clock.hpp"
#include "pipeline/adaptive_control.hpp"
#include "pipeline/learn_control.hpp"
#include "pipeline/power.hpp"
#include "pipeline/profile.hpp"
#include "pipeline/run_config.hpp"

using namespace hpr;
namespace fs = std::filesystem;

namespace {

const bool kPoclEnv = setenv("POCL_DEVICES", "pthread basic", 0) == 0;

std::string tmp(const std::string& name) {
  static const unsigned r = std::random_device{}();
  return (fs::temp_directory_path() / fmt::format("hpr_adapt_{}_{}", r, name)).string();
}

// A powercap tree with one RAPL package zone whose counter reads 1 J (what RunPower's RAPL meter needs).
fs::path fake_powercap(const std::string& name) {
  fs::path root = tmp(name);
  fs::create_directories(root / "intel-rapl:0");
  std::ofstream(root / "intel-rapl:0" / "name") << "package-0\n";
  std::ofstream(root / "intel-rapl:0" / "energy_uj") << "1000000\n";
  std::ofstream(root / "intel-rapl:0" / "max_energy_range_uj") << "262143328850\n";
  return root;
}

std::string small_routes() {
  std::string p = tmp("routes.txt");
  std::ofstream(p) << "0.0.0.0/0 1\n10.0.0.0/8 2\n192.168.0.0/16 3\n";
  return p;
}

RunConfig base(uint32_t native, bool devices) {
  RunConfig c;
  c.app = "ipv4";
  c.app_opts.routes = small_routes();
  c.devices = devices ? std::vector<std::string>{"all"} : std::vector<std::string>{"none"};
  c.native_lanes = native;
  c.batch = 64;
  c.batch_timeout_us = 200;
  c.flow_capacity = 1 << 16;
  c.input.gen_flows = 2000;
  c.input.gen_zipf = 0;
  c.input.gen_sizes = "fixed:200";
  c.status_interval_s = 0;
  return c;
}

sched::Configuration point(int dev, uint32_t batch, double thr_bps, double power_w) {
  sched::Configuration c;
  c.device_mask = 1U << dev;
  c.batch[dev] = batch;
  c.split[dev] = 1;
  c.throughput_bps = thr_bps;
  c.latency_ns = 1e5;
  c.latency_p99_ns = 2e5;
  c.power_w = power_w;
  c.power_source = sched::PowerSource::kModel;
  return c;
}

}  // namespace

TEST_CASE("profile grid: singles first, every combination, batches and splits") {
  ProfileOptions o;
  o.min_batch = 64;
  o.max_batch = 256;
  o.split_steps = 2;
  auto g = profile_grid(3, o);
  REQUIRE(g.is_ok());
  // 3 singles × 3 batches + 3 pairs × 3 batches × 1 split + 1 triple × 3 batches × 1 (equal) split
  CHECK(g->size() == 9 + 9 + 3);
  CHECK((*g)[0].device_mask == 1);
  CHECK((*g)[0].batch[0] == 64);
  CHECK((*g)[2].batch[0] == 256);
  CHECK((*g)[9].device_count() == 2);
  CHECK((*g)[9].split[0] == Approx(0.5));
  for (const auto& c : *g) CHECK(sched::validate(c).is_ok());
  o.split_steps = 4;
  auto g4 = profile_grid(2, o);
  REQUIRE(g4.is_ok());
  CHECK(g4->size() == 6 + 3 * 3);  // pair splits 1/4, 2/4, 3/4
  // Blocks of neighbours: the batch sizes of one device set and split are consecutive.
  auto blocks = profile_blocks(*g4);
  REQUIRE(blocks.size() == 2 + 3);
  for (auto [first, last] : blocks) {
    CHECK(last - first == 3);
    CHECK((*g4)[first].batch[__builtin_ctz((*g4)[first].device_mask)] == 64);
    CHECK((*g4)[last - 1].batch[__builtin_ctz((*g4)[first].device_mask)] == 256);
    for (size_t i = first + 1; i < last; ++i) {
      CHECK((*g4)[i].device_mask == (*g4)[first].device_mask);
      CHECK((*g4)[i].split == (*g4)[first].split);
    }
  }
  CHECK((*g4)[6].split[0] == Approx(0.25));
  CHECK((*g4)[8].batch[0] == 256);
  CHECK((*g4)[9].split[0] == Approx(0.5));
  o.min_batch = 100;
  CHECK(profile_grid(2, o).status().code() == Code::kInvalidArgument);
  o.min_batch = 512;
  CHECK(profile_grid(2, o).status().code() == Code::kInvalidArgument);
}

TEST_CASE("profile on a tiny grid writes a table that loads back") {
  ProfileOptions o;
  o.run = base(1, true);  // two PoCL devices + one native lane
  o.min_batch = 64;
  o.max_batch = 64;
  o.split_steps = 2;
  o.max_set_size = 2;
  o.quantum_ms = 20;
  o.power.rapl_root = tmp("no-powercap");
  o.out_path = tmp("table.json");
  size_t progress_calls = 0;
  auto r = run_profile(o, {}, [&](const ProfileProgress& p) {
    ++progress_calls;
    CHECK(p.done <= p.planned);
  });
  REQUIRE(r.is_ok());
  CHECK(r->planned == 3 + 3);
  CHECK(r->measured == r->planned);
  CHECK(r->complete);
  CHECK(r->power_source == "model");
  CHECK(progress_calls == r->samples);  // one call per sample
  CHECK(r->samples >= 3 * r->measured);
  auto devs = discover_devices();
  REQUIRE(devs.is_ok());
  auto fp = machine_fingerprint(*devs, 1, "ipv4", traffic_description(o.run.input));
  auto t = prof::load_table(o.out_path, fp);
  REQUIRE(t.is_ok());
  CHECK(t->complete);
  CHECK(t->points.size() == r->measured);
  CHECK(t->fingerprint.devices.size() == 3);
  CHECK(t->fingerprint.devices[2].name == "native0");
  for (const auto& p : t->points) {
    CHECK(p.power_source == sched::PowerSource::kModel);
    CHECK(p.power_w > 0);
  }
  fs::remove(o.out_path);
}

namespace {

// A profile stopped early: the file on disk says "complete": false and holds exactly the points measured,
// the first ones of the planned grid, in order, each with its measurements.
void check_kept_table(const ProfileOptions& o, const ProfileResult& r) {
  CHECK_FALSE(r.complete);
  CHECK(r.measured < r.planned);
  auto fp = machine_fingerprint({}, o.run.native_lanes, o.run.app, traffic_description(o.run.input));
  auto t = prof::load_table(o.out_path, fp);
  REQUIRE(t.is_ok());
  CHECK_FALSE(t->complete);
  REQUIRE(t->points.size() == r.measured);
  auto grid = profile_grid(o.run.native_lanes, o);
  REQUIRE(grid.is_ok());
  CHECK(grid->size() == r.planned);
  for (size_t i = 0; i < t->points.size(); ++i) {
    const auto& pt = t->points[i];
    CHECK(pt.device_mask == (*grid)[i].device_mask);
    CHECK(pt.batch == (*grid)[i].batch);
    CHECK(pt.split == (*grid)[i].split);
    CHECK(pt.throughput_bps > 0);
    CHECK(pt.power_source == sched::PowerSource::kModel);
  }
}

ProfileOptions small_profile(const std::string& name) {
  ProfileOptions o;
  o.run = base(2, false);  // two native lanes: 2 singles x 2 batches + 1 pair x 2 batches x 1 split = 6 points
  o.min_batch = 64;
  o.max_batch = 128;
  o.split_steps = 2;
  o.power.rapl_root = tmp("no-powercap");
  o.out_path = tmp(name);
  return o;
}

}  // namespace

TEST_CASE("profile with a time budget stops early and keeps what was measured, incomplete") {
  ProfileOptions o = small_profile("budget.json");
  // Every point takes at least two quanta (settle >= 1, measure >= 1): 6 points need >= 1.2 s of measuring,
  // so a 0.5 s budget cannot complete the grid, whatever the machine's speed (0 to 2 points fit).
  o.quantum_ms = 100;
  o.budget_s = 0.5;
  auto r = run_profile(o);
  REQUIRE(r.is_ok());
  CHECK(r->budget_hit);
  CHECK(r->planned == 6);
  check_kept_table(o, *r);
  fs::remove(o.out_path);
}

namespace {
std::atomic<Pipeline*> g_profile_pipeline{nullptr};
void on_sigint(int) {  // what `hpr profile` installs for SIGINT / SIGTERM (cli/profile_cmd.cpp)
  if (Pipeline* p = g_profile_pipeline.load()) p->request_stop();
}
}  // namespace

TEST_CASE("profile on two lanes: every point sampled min_samples..max_samples times, interleaved, with spreads") {
  ProfileOptions o = small_profile("repeats.json");
  o.max_set_size = 1;  // two blocks: lane 0 at batches 64 and 128, lane 1 at 64 and 128
  o.quantum_ms = 20;
  o.sampling = {.min_samples = 3, .max_samples = 5, .spread_delta = 0.05};
  std::vector<size_t> order;  // the point of each sample, from the progress callback
  auto r = run_profile(o, {}, [&](const ProfileProgress& p) {
    order.push_back(static_cast<size_t>(p.last->batch[p.last->uses(0) ? 0 : 1] == 128) +
                    (p.last->uses(0) ? 0 : 2));
    CHECK(p.samples == order.size());
    CHECK(p.samples <= p.samples_planned);
  });
  REQUIRE(r.is_ok());
  CHECK(r->complete);
  REQUIRE(r->measured == 4);
  CHECK(r->samples == order.size());
  auto t = prof::load_table(o.out_path, machine_fingerprint({}, 2, "ipv4", traffic_description(o.run.input)));
  REQUIRE(t.is_ok());
  CHECK(t->version == prof::kTableFormatVersion);
  REQUIRE(t->points.size() == 4);
  size_t total = 0;
  for (const auto& pt : t->points) {
    INFO(pt.describe() << " samples " << pt.samples);
    CHECK(pt.samples >= o.sampling.min_samples);
    CHECK(pt.samples <= o.sampling.max_samples);
    // Fewer than the most only when the spreads came within δ.
    if (pt.samples < o.sampling.max_samples) CHECK(within_spread(pt, o.sampling.spread_delta));
    CHECK(pt.throughput_bps > 0);
    CHECK(pt.throughput_spread_bps > 0);  // the median's interval over 3+ measured rates
    CHECK(pt.latency_spread_ns >= 0);
    CHECK(pt.latency_p99_spread_ns >= 0);
    CHECK(pt.power_spread_w >= 0);
    CHECK(pt.traffic == traffic_description(o.run.input));
    total += pt.samples;
  }
  CHECK(total == r->samples);
  // One block after the other; within a block the points take turns (round-robin), so both get as many samples.
  CHECK(t->points[0].samples == t->points[1].samples);
  CHECK(t->points[2].samples == t->points[3].samples);
  size_t first_block = 2 * t->points[0].samples;
  REQUIRE(order.size() == total);
  for (size_t i = 0; i < order.size(); ++i) CHECK(order[i] == (i < first_block ? 0 : 2) + i % 2);
  CHECK(r->samples_max == std::max(t->points[0].samples, t->points[2].samples));
  fs::remove(o.out_path);
}

TEST_CASE("profile --interleave grid: each round visits every point of the grid, in grid order") {
  ProfileOptions o = small_profile("grid.json");
  o.max_set_size = 1;  // lane 0 at batches 64 and 128, lane 1 at 64 and 128: two blocks, one round over all four
  o.quantum_ms = 20;
  o.sampling = {.min_samples = 3, .max_samples = 4, .spread_delta = 0.05};
  o.interleave_grid = true;
  std::vector<size_t> order;
  auto r = run_profile(o, {}, [&](const ProfileProgress& p) {
    order.push_back(static_cast<size_t>(p.last->batch[p.last->uses(0) ? 0 : 1] == 128) + (p.last->uses(0) ? 0 : 2));
  });
  REQUIRE(r.is_ok());
  CHECK(r->complete);
  REQUIRE(r->measured == 4);
  auto t = prof::load_table(o.out_path, machine_fingerprint({}, 2, "ipv4", traffic_description(o.run.input)));
  REQUIRE(t.is_ok());
  REQUIRE(t->points.size() == 4);
  for (const auto& pt : t->points) {
    CHECK(pt.samples == t->points[0].samples);  // every point in every round
    CHECK(pt.samples >= o.sampling.min_samples);
  }
  REQUIRE(order.size() == 4 * t->points[0].samples);
  for (size_t i = 0; i < order.size(); ++i) CHECK(order[i] == i % 4);  // 0 1 2 3 0 1 2 3 …: both lanes in each round
  fs::remove(o.out_path);
}

TEST_CASE("profile interrupted by SIGINT after two points keeps exactly those two, incomplete") {
  ProfileOptions o = small_profile("interrupted.json");
  o.quantum_ms = 20;
  auto old = std::signal(SIGINT, on_sigint);
  auto r = run_profile(
      o, [](Pipeline* p) { g_profile_pipeline = p; },
      [](const ProfileProgress& p) {
        if (p.done == 2) std::raise(SIGINT);  // the first block (lane 0 at batches 64 and 128) is done
      });
  std::signal(SIGINT, old);
  REQUIRE(r.is_ok());
  CHECK_FALSE(r->budget_hit);
  CHECK(r->measured == 2);  // no sample is measured after the stop request
  check_kept_table(o, *r);
  fs::remove(o.out_path);
}

TEST_CASE("a table for another app or lanes is refused with a clear message; another traffic is not") {
  RunConfig c = base(2, false);
  c.input.gen_rate_pps = 1000;
  c.input.gen_packets = 100;
  auto ctx = prepare_run(c);
  REQUIRE(ctx.is_ok());
  auto here = machine_fingerprint({}, 2, "ipv4", traffic_description(c.input));
  AdaptiveOptions ao;
  // Another app: refused, naming the field and the override.
  std::string path = tmp("mismatch.json");
  auto w = prof::TableWriter::create(path, machine_fingerprint({}, 2, "md5", traffic_description(c.input)));
  REQUIRE(w.is_ok());
  REQUIRE(w->append(point(0, 64, 1e9, 10)).is_ok());
  REQUIRE(w->finish().is_ok());
  ao.table_path = path;
  auto refused = AdaptiveControl::create(ao, here, *(*ctx)->pipeline, nullptr);
  REQUIRE(!refused.is_ok());
  CHECK(refused.status().code() == Code::kInvalidArgument);
  INFO(refused.status().message());
  CHECK(refused.status().message().find("app: table has 'md5', this machine has 'ipv4'") != std::string::npos);
  CHECK(refused.status().message().find("allow-table-mismatch") != std::string::npos);
  ao.allow_mismatch = true;
  CHECK(AdaptiveControl::create(ao, here, *(*ctx)->pipeline, nullptr).is_ok());
  ao.allow_mismatch = false;
  // Another traffic: loaded without the override; the table has no point for this traffic, so all are used.
  std::string path2 = tmp("other_traffic.json");
  auto elsewhere = machine_fingerprint({}, 2, "ipv4", "generator sizes=imix flows=1 zipf=0 seed=9");
  auto w2 = prof::TableWriter::create(path2, elsewhere);
  REQUIRE(w2.is_ok());
  REQUIRE(w2->append(point(0, 64, 1e9, 10)).is_ok());
  REQUIRE(w2->finish().is_ok());
  ao.table_path = path2;
  auto other = AdaptiveControl::create(ao, here, *(*ctx)->pipeline, nullptr);
  INFO((other.is_ok() ? std::string() : other.status().message()));
  REQUIRE(other.is_ok());
  CHECK((*other)->table().points.size() == 1);
  fs::remove(path2);
  // A table naming a lane this run does not have.
  std::string path3 = tmp("lanes.json");
  auto w3 = prof::TableWriter::create(path3, here);
  REQUIRE(w3.is_ok());
  REQUIRE(w3->append(point(5, 64, 1e9, 10)).is_ok());
  REQUIRE(w3->finish().is_ok());
  ao.table_path = path3;
  auto bad = AdaptiveControl::create(ao, here, *(*ctx)->pipeline, nullptr);
  REQUIRE(!bad.is_ok());
  CHECK(bad.status().message().find("lanes") != std::string::npos);
  fs::remove(path);
  fs::remove(path3);
}

TEST_CASE("adaptive run switches lanes on a rate step with zero reorders and balanced books; power source named") {
  // Two native lanes; a hand-made table: lane 0 is cheap and slow, lane 1 fast and dear. Energy policy: the low
  // rate runs on lane 0, the high one needs lane 1.
  RunConfig c = base(2, false);
  c.input.gen_packets = 0;
  c.input.gen_rate_steps = "0.6:2000,1.2:40000";  // 200-byte frames: 3.2 Mbit/s, then 64 Mbit/s
  c.status_interval_s = 0.04;
  auto ctx = prepare_run(c);
  REQUIRE(ctx.is_ok());
  Pipeline& p = *(*ctx)->pipeline;
  auto fp = machine_fingerprint({}, 2, "ipv4", traffic_description(c.input));
  std::string path = tmp("hand.json");
  auto w = prof::TableWriter::create(path, fp);
  REQUIRE(w.is_ok());
  REQUIRE(w->append(point(0, 64, 20e6, 5)).is_ok());   // sustains 20 Mbit/s at 5 W
  REQUIRE(w->append(point(1, 64, 10e9, 50)).is_ok());  // sustains 10 Gbit/s at 50 W
  REQUIRE(w->finish().is_ok());
  auto power = RunPower::create({.rapl_root = tmp("no-powercap")}, power_lanes({}, 2), monotonic_ns());
  CHECK(power->source() == "model");
  AdaptiveOptions ao;
  ao.table_path = path;
  ao.params.policy = sched::Policy::kEnergyCritical;
  ao.csv_path = tmp("adapt.csv");
  ao.learn = false;  // the hand-made table stays as written (native lanes are far faster than it says)
  auto ac = AdaptiveControl::create(ao, fp, p, power.get());
  REQUIRE(ac.is_ok());
  AdaptiveControl& ctl = **ac;
  Summary prev;
  p.on_status([&](const Summary& snap, double) {
    Summary s = snap;
    IntervalStats st = interval_stats(prev, s);
    prev = s;
    PowerSample ps = power->sample(st.lane_util, monotonic_ns());
    ctl.on_quantum(s, ps, monotonic_ns());
  });
  Summary s = p.run();
  PowerSample ps = power->sample({}, monotonic_ns());
  s.power_w = ps.watts;
  s.energy_j = ps.energy_j;
  s.power_source = ps.source;
  INFO(ctl.report());
  for (const auto& l : ctl.log()) INFO(l);
  CHECK(s.reorders == 0);
  CHECK(s.unaccounted == 0);
  CHECK(s.rx_packets == s.tx_packets + s.dropped);
  CHECK(s.rx_packets > 0);
  CHECK(ctl.decisions() > 3);
  CHECK(ctl.scheduler().device_switches() >= 1);
  bool on0 = false, to1 = false;
  for (const auto& l : ctl.log()) {
    if (l.find("-> dev{0}") != std::string::npos) on0 = true;
    if (l.find("-> dev{1}") != std::string::npos) to1 = true;
  }
  CHECK(on0);
  CHECK(to1);
  CHECK(s.lanes[0].packets > 0);
  CHECK(s.lanes[1].packets > 0);
  CHECK(!ctl.rate_steps().empty());
  // Power in the summary, with its source.
  CHECK(s.power_source == "model");
  CHECK(s.energy_j > 0);
  CHECK(s.to_json().find("\"source\": \"model\"") != std::string::npos);
  CHECK(s.to_text().find("source: model") != std::string::npos);
  REQUIRE(ctl.finish().is_ok());  // the CSV is renamed into place at the end of the run
  std::ifstream csv(ao.csv_path);
  std::string header;
  std::getline(csv, header);
  CHECK(header.rfind("t_s,offered_bps,achieved_bps", 0) == 0);
  fs::remove(path);
  fs::remove(ao.csv_path);
}

TEST_CASE("run power: RAPL package for CPU lanes on a fake powercap tree, model for the rest, mixed source named") {
  fs::path root = fake_powercap("powercap");
  std::vector<PowerLane> lanes = {{"cl0:gpu", "igpu", "Intel"}, {"native0", "cpu", "host"}};
  auto rp = RunPower::create({.rapl_root = root.string(), .use_nvml = false}, lanes, 1'000'000'000);
  CHECK(rp->source() == "mixed: rapl+model");
  CHECK(rp->meter_names().size() == 2);
  std::ofstream(root / "intel-rapl:0" / "energy_uj") << "3000000\n";  // +2 J
  PowerSample s = rp->sample({1.0, 0.0}, 2'000'000'000);              // 1 s later
  // 2 J from RAPL + igpu model at utilisation 1 for 1 s (idle 2 W + dynamic 12 W).
  CHECK(s.energy_j == Approx(2 + 14).epsilon(1e-6));
  CHECK(s.watts == Approx(16).epsilon(1e-6));
  CHECK(s.source == "mixed: rapl+model");
  // Only CPU lanes: RAPL alone.
  auto cpu = RunPower::create({.rapl_root = root.string()}, {{"native0", "cpu", "host"}}, 0);
  CHECK(cpu->source() == "rapl");
  // No powercap: the model (on a 1-core host: the lane keeps the whole package busy), with the reason kept.
  auto none = RunPower::create({.rapl_root = (root / "absent").string(), .host_cores = 1},
                               {{"native0", "cpu", "host"}}, 0);
  CHECK(none->source() == "model");
  CHECK(!none->notes().empty());
  CHECK(none->sample({0.5}, 1'000'000'000).watts == Approx(6 + 52 * 0.5));
  fs::remove_all(root);
}

TEST_CASE(
    "a power meter that stops: named in the samples; the energy policy gives way to throughput until it answers") {
  fs::path root = fake_powercap("powercap-silent");
  auto rp = RunPower::create({.rapl_root = root.string()}, {{"native0", "cpu", "host"}}, 0);
  REQUIRE(rp->source() == "rapl");
  auto energy = [&](const char* text) { std::ofstream(root / "intel-rapl:0" / "energy_uj") << text; };
  energy("2000000\n");
  PowerSample ok = rp->sample({1.0}, 1'000'000'000);
  CHECK(ok.silent.empty());
  CHECK(ok.watts == Approx(1));
  energy("not a number\n");  // the counter stops answering (same file, as a driver that fails would leave it)
  PowerSample silent = rp->sample({1.0}, 2'000'000'000);
  REQUIRE(silent.silent.size() == 1);
  CHECK(silent.silent[0].find("package-0") != std::string::npos);
  CHECK(silent.watts == 0);  // nothing read: no share of the meter in this sample

  PowerFallback fb;
  using sched::Policy;
  // Under the throughput or latency policies a silent meter changes nothing.
  CHECK_FALSE(fb.next(silent, Policy::kThroughputCritical));
  CHECK_FALSE(fb.next(silent, Policy::kLatencyCritical));
  // Under the energy policy: throughput, said once, for as long as the meter is silent.
  auto c = fb.next(silent, Policy::kEnergyCritical);
  REQUIRE(c);
  CHECK(c->policy == Policy::kThroughputCritical);
  CHECK(c->why.find("package-0 stopped answering: policy energy -> throughput") != std::string::npos);
  CHECK(fb.active());
  CHECK_FALSE(fb.next(silent, Policy::kThroughputCritical));
  // It answers again: the first good reading carries the whole silence's energy, so one more sample before energy.
  energy("5000000\n");
  PowerSample back = rp->sample({1.0}, 3'000'000'000);
  CHECK(back.silent.empty());
  CHECK(back.energy_j == Approx(4));  // nothing lost: 1 J, then 3 J in the reading after the silence
  CHECK_FALSE(fb.next(back, Policy::kThroughputCritical));
  auto again = fb.next(ok, Policy::kThroughputCritical);
  REQUIRE(again);
  CHECK(again->policy == Policy::kEnergyCritical);
  CHECK(again->why.find("answer again: policy throughput -> energy") != std::string::npos);
  CHECK_FALSE(fb.active());
  // A policy chosen during the silence (hpr ctl set policy) is kept: nothing to go back to.
  REQUIRE(fb.next(silent, Policy::kEnergyCritical));
  fb.forget();
  CHECK_FALSE(fb.next(ok, Policy::kLatencyCritical));
  CHECK_FALSE(fb.next(ok, Policy::kLatencyCritical));
  fs::remove_all(root);
}

TEST_CASE("rate steps parse and refuse bad items") {
  auto s = parse_rate_steps("0.5:1000,2:30000");
  REQUIRE(s.is_ok());
  REQUIRE(s->size() == 2);
  CHECK((*s)[0].duration_ns == 500'000'000);
  CHECK((*s)[1].rate == 30000);
  CHECK(parse_rate_steps("1:").status().code() == Code::kInvalidArgument);
  CHECK(parse_rate_steps("0:100").status().code() == Code::kInvalidArgument);
  CHECK(parse_rate_steps("1:100x").status().code() == Code::kInvalidArgument);
}

TEST_CASE("traffic steps parse and refuse bad items, naming the setting") {
  auto s = parse_traffic_steps("5:imix,2.5:fixed:1500@0.3,1:uniform:60-300", 0.1);
  REQUIRE(s.is_ok());
  REQUIRE(s->size() == 3);
  CHECK((*s)[0].size_mode == SizeMode::kImix);
  CHECK((*s)[0].match_rate == 0.1);  // without @: input.match_rate
  CHECK((*s)[1].duration_ns == 2'500'000'000);
  CHECK((*s)[1].size_mode == SizeMode::kFixed);
  CHECK((*s)[1].size_bytes == 1500);
  CHECK((*s)[1].match_rate == 0.3);
  CHECK((*s)[2].size_min_bytes == 60);
  CHECK((*s)[2].size_max_bytes == 300);
  for (const char* bad : {"", "5", "5:", "0:imix", "x:imix", "5:jumbo", "5:imix@", "5:imix@2", "5:fixed:1500@0.3x",
                          "5:fixed:", "5:uniform:60"}) {
    INFO(bad);
    auto r = parse_traffic_steps(bad, 0);
    REQUIRE_FALSE(r.is_ok());
    CHECK_THAT(r.status().message(), Catch::Contains("input.traffic_steps"));
  }
}

TEST_CASE("set_policy (hpr ctl set policy): the adaptive and learning schedulers take a new goal; no target refused") {
  RunConfig c = base(2, false);
  c.input.gen_packets = 100;
  auto ctx = prepare_run(c);
  REQUIRE(ctx.is_ok());
  Pipeline& p = *(*ctx)->pipeline;
  SECTION("adaptive: made again over the same table") {
    auto fp = machine_fingerprint({}, 2, "ipv4", traffic_description(c.input));
    std::string path = tmp("goal.json");
    auto w = prof::TableWriter::create(path, fp);
    REQUIRE(w.is_ok());
    REQUIRE(w->append(point(0, 64, 20e6, 5)).is_ok());
    REQUIRE(w->append(point(1, 64, 10e9, 50)).is_ok());
    REQUIRE(w->finish().is_ok());
    AdaptiveOptions ao;
    ao.table_path = path;
    ao.params.policy = sched::Policy::kEnergyCritical;
    auto ac = AdaptiveControl::create(ao, fp, p, nullptr);
    REQUIRE(ac.is_ok());
    REQUIRE((*ac)->set_policy(sched::Policy::kThroughputCritical, 0).is_ok());
    CHECK((*ac)->scheduler().params().policy == sched::Policy::kThroughputCritical);
    CHECK((*ac)->scheduler().params().min_batch == 64);  // the table's batch range, as at the start
    CHECK_THAT((*ac)->report(), Catch::Contains("policy throughput"));
    CHECK_THAT((*ac)->log().back(), Catch::Contains("policy energy -> throughput (hpr ctl set policy)"));
    auto no_target = (*ac)->set_policy(sched::Policy::kLatencyTarget, 0);
    CHECK(!no_target.is_ok());
    CHECK((*ac)->scheduler().params().policy == sched::Policy::kThroughputCritical);  // unchanged
    REQUIRE((*ac)->set_policy(sched::Policy::kLatencyTarget, 5e4).is_ok());
    CHECK((*ac)->scheduler().params().latency_target_ns == 5e4);
    fs::remove(path);
  }
  SECTION("learning: the search starts over from the setup found so far") {
    LearnOptions lo;
    lo.batch_max = {0, 0};
    lo.batch = 64;
    lo.params.min_batch = 16;
    auto lc = LearnControl::create(lo, p);
    REQUIRE(lc.is_ok());
    const sched::Setup before = (*lc)->balancer().incumbent();
    REQUIRE((*lc)->set_policy(sched::Policy::kEnergyCritical, 0).is_ok());
    CHECK((*lc)->balancer().incumbent() == before);
    CHECK_THAT((*lc)->report(), Catch::Contains("policy energy") && Catch::Contains("hpr ctl set policy"));
    CHECK(!(*lc)->set_policy(sched::Policy::kLatencyTarget, 0).is_ok());
    CHECK_THAT((*lc)->report(), Catch::Contains("learning    policy energy"));
  }
}

TEST_CASE("learning with services: the setup's placement goes to the pipeline; a service the user placed stays") {
  RunConfig c = base(2, false);
  c.input.gen_packets = 2000;
  kernels::AppOptions::ServiceSpec tcp{"tcp", "md5", {}}, udp{"udp", "ipv4", {}}, rest{"rest", "ipv4", {}};
  tcp.match.proto = 6;
  udp.match.proto = 17;
  c.app_opts.services = {tcp, udp, rest};
  c.service_lanes = {{}, {"native1"}, {}};
  auto ctx = prepare_run(c);
  REQUIRE(ctx.is_ok());
  Pipeline& p = *(*ctx)->pipeline;
  LearnOptions lo;
  lo.batch_max = {0, 0};
  lo.batch = 64;
  lo.params.min_batch = 16;
  // A saved setup (as a policy change hands over the setup found so far): every flow on native0 by the shares, tcp
  // placed on native1, and udp on native0 (not placeable: the user put it on native1).
  lo.start = sched::Setup{{1, 0}, {64, 64}, {1, 0, -1}};
  auto lc = LearnControl::create(lo, p);
  REQUIRE(lc.is_ok());
  CHECK((*lc)->balancer().incumbent().place == std::vector<int16_t>{1, -1, -1});
  CHECK_THAT((*lc)->balancer().incumbent().describe(), Catch::EndsWith(" p 1/-/-"));
  Summary s = p.run();
  REQUIRE(s.services.size() == 3);
  INFO(s.to_text());
  const uint64_t tcp_in = s.chain_events[0].in, udp_in = s.chain_events[1].in, rest_in = s.chain_events[2].in;
  CHECK(tcp_in > 0);
  CHECK(udp_in > 0);
  CHECK(s.services[0].lanes == std::vector<std::string>{s.lanes[1].name});
  CHECK(s.services[1].lanes == std::vector<std::string>{s.lanes[1].name});
  CHECK(s.services[2].lanes.empty());
  CHECK(s.lanes[1].packets == tcp_in + udp_in);
  CHECK(s.lanes[0].packets == rest_in);
  CHECK_THAT((*lc)->report(), Catch::Contains("services placed: tcp on " + s.lanes[1].name + "; udp on "));
}
