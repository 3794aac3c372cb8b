#include "cli/profile_cmd.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <cmath>
#include <csignal>
#include <thread>

#include "pipeline/adaptive_control.hpp"

namespace hpr::cli {
namespace {

// profile flags
ProfileOptions g_prof;
std::string g_prof_config, g_prof_in, g_prof_devices, g_prof_sizes;
bool g_prof_quiet = false;
std::string g_prof_interleave = "auto";  // --interleave
CLI::App* g_prof_cmd = nullptr;
std::atomic<Pipeline*> g_prof_pipeline{nullptr};
std::atomic<bool> g_prof_stop{false};  // a signal before the pipeline exists (PoCL builds) is kept for it
void on_profile_signal(int) {
  g_prof_stop = true;
  if (Pipeline* p = g_prof_pipeline.load()) p->request_stop();
}

std::string bar(double frac, int width) {
  int n = static_cast<int>(std::lround(frac * width));
  return std::string(static_cast<size_t>(n), '#') + std::string(static_cast<size_t>(width - n), '.');
}

std::string eta_text(double s) {
  if (s >= 3600) return fmt::format("{:.0f}h{:02.0f}m", std::floor(s / 3600), std::fmod(s, 3600) / 60);
  if (s >= 60) return fmt::format("{:.0f}m{:02.0f}s", std::floor(s / 60), std::fmod(s, 60));
  return fmt::format("{:.0f}s", s);
}

}  // namespace

CLI::App* add_profile_command(CLI::App& app) {
  auto* p =
      app.add_subcommand("profile",
                         "Measure every device alone and every combination over batch sizes and splits;\n"
                         "write the configuration table for `hpr run --table` (hetero-opencl-adaptive-scheduler §4.1)");
  g_prof_cmd = p;
  p->add_option("-c,--config", g_prof_config, "TOML configuration of the run (app, devices, lanes, input, [power])");
  p->add_option("--app", g_prof.run.app, "Application: ipv4, dpi, md5, aes");
  p->add_option("--in", g_prof_in, "Traffic: gen (generator, default) | pcap:PATH (read in a loop)");
  p->add_option("--devices", g_prof_devices, "OpenCL devices: all | none | comma-separated name substrings");
  p->add_option("--native", g_prof.run.native_lanes, "Native CPU lanes");
  p->add_option("--flows", g_prof.run.input.gen_flows, "Generator: flows");
  p->add_option("--zipf", g_prof.run.input.gen_zipf, "Generator: Zipf exponent (0: uniform)");
  p->add_option("--sizes", g_prof_sizes, "Generator: imix | fixed:N | uniform:A-B");
  p->add_option("--seed", g_prof.run.input.gen_seed, "Generator: seed");
  p->add_option("--routes", g_prof.run.app_opts.routes, "ipv4: route table");
  p->add_option("--rules", g_prof.run.app_opts.rules, "dpi: rule file or directory");
  p->add_option("-o,--out", g_prof.out_path, "Table file to write (JSON)")->capture_default_str();
  p->add_option("--min-batch", g_prof.min_batch, "Smallest batch (power of two)")->capture_default_str();
  p->add_option("--max-batch", g_prof.max_batch, "Largest batch (power of two, <= 65536)")->capture_default_str();
  p->add_option("--quantum-ms", g_prof.quantum_ms, "Measurement quantum per point (ms; at least two status samples)")
      ->capture_default_str();
  p->add_option("--splits", g_prof.split_steps, "Split grid of combinations: shares in steps of 1/N")
      ->capture_default_str();
  p->add_option("--max-set", g_prof.max_set_size, "Largest device combination (0: all lanes)")->capture_default_str();
  p->add_option("--budget-s", g_prof.budget_s, "Stop after this many seconds, keeping what was measured (0: none)");
  p->add_option("--min-samples", g_prof.sampling.min_samples,
                "Samples per point at least (each one quantum, interleaved with the point's neighbours)")
      ->capture_default_str();
  p->add_option("--max-samples", g_prof.sampling.max_samples, "Samples per point at most")->capture_default_str();
  p->add_option("--spread", g_prof.sampling.spread_delta,
                "Sample until each point's relative spread (half-width of the median's 87.5 % confidence interval / "
                "median) of throughput and power is within this")
      ->capture_default_str();
  p->add_option(
       "--interleave", g_prof_interleave,
       "grid: rounds over the whole grid (a load that comes and goes hits every point alike; the table is "
       "written at the end, a stop keeps all points or none); block: rounds over the batch sizes of one device "
       "set and split at a time (each finished block is kept); auto: grid, or block with --budget-s")
      ->capture_default_str();
  p->add_option("--rapl-root", g_prof.power.rapl_root, "powercap sysfs root for RAPL")->capture_default_str();
  p->add_flag("-q,--quiet", g_prof_quiet, "No progress bar");
  return p;
}

int run_profile_command() {
  ProfileOptions o = g_prof;
  if (!g_prof_config.empty()) {
    auto f = load_run_config(g_prof_config);
    if (!f) {
      fmt::print(stderr, "hpr profile: {}\n", f.status().message());
      return f.status().code() == Code::kInvalidArgument ? 2 : 3;
    }
    RunConfig base = *f;
    auto given = [&](const char* n) { return g_prof_cmd->count(n) > 0; };
    if (given("--app")) base.app = o.run.app;
    if (given("--native")) base.native_lanes = o.run.native_lanes;
    if (given("--flows")) base.input.gen_flows = o.run.input.gen_flows;
    if (given("--zipf")) base.input.gen_zipf = o.run.input.gen_zipf;
    if (given("--seed")) base.input.gen_seed = o.run.input.gen_seed;
    if (given("--routes")) base.app_opts.routes = o.run.app_opts.routes;
    if (given("--rules")) base.app_opts.rules = o.run.app_opts.rules;
    if (!given("--rapl-root")) o.power = base.power;
    o.run = base;
  }
  if (!g_prof_sizes.empty()) o.run.input.gen_sizes = g_prof_sizes;
  if (!g_prof_in.empty()) {
    if (g_prof_in.rfind("pcap:", 0) == 0) {
      o.run.input.kind = "pcap";
      o.run.input.pcap = g_prof_in.substr(5);
      o.run.input.loops = 0;
    } else if (g_prof_in == "gen" || g_prof_in == "generator") {
      o.run.input.kind = "generator";
    } else {
      fmt::print(stderr, "hpr profile: --in '{}': use gen or pcap:PATH\n", g_prof_in);
      return 2;
    }
  }
  if (!g_prof_devices.empty()) {
    o.run.devices.clear();
    for (size_t a = 0, b; a <= g_prof_devices.size(); a = b + 1) {
      b = g_prof_devices.find(',', a);
      if (b == std::string::npos) b = g_prof_devices.size();
      if (b > a) o.run.devices.push_back(g_prof_devices.substr(a, b - a));
    }
  }
  o.run.output.kind = "null";
  // The structure `hpr run` gets by default on this host (run to completion on 2 cores or fewer), so that the
  // table describes what the runs it serves will do.
  const char* rtc = auto_run_to_completion(o.run, std::thread::hardware_concurrency());
  if (g_prof_interleave != "auto" && g_prof_interleave != "block" && g_prof_interleave != "grid") {
    fmt::print(stderr, "hpr profile: --interleave: want auto, block or grid, not '{}'\n", g_prof_interleave);
    return 2;
  }
  // auto: rounds over the whole grid rank points alike on a loaded machine (docs/scheduler.md, "Do two profiles rank
  // points alike?"), but a grid keeps all its points or none, so a budget that ends it early would keep nothing.
  const bool automatic = g_prof_interleave == "auto";
  o.interleave_grid = g_prof_interleave == "grid" || (automatic && o.budget_s <= 0);
  const char* why = !automatic          ? ""
                    : o.interleave_grid ? " (auto: no --budget-s)"
                                        : " (auto: --budget-s may end a grid before any point has its samples)";
  if (Status v = validate(o.sampling); !v.is_ok()) {
    fmt::print(stderr, "hpr profile: {}\n", v.message());
    return 2;
  }
  spdlog::set_level(spdlog::level::warn);
  fmt::print(
      "hpr profile: app {} | traffic {} | batches {}..{} | quantum {} ms | splits 1/{} | {}..{} samples per "
      "point, spread {}, rounds over {}{}{} -> {}\n",
      o.run.app, traffic_description(o.run.input), o.min_batch, o.max_batch, o.quantum_ms, o.split_steps,
      o.sampling.min_samples, o.sampling.max_samples, o.sampling.spread_delta,
      o.interleave_grid ? "the whole grid" : "each block", why,
      rtc != nullptr ? fmt::format(" | run to completion ({})", rtc) : std::string(), o.out_path);
  std::signal(SIGINT, on_profile_signal);
  std::signal(SIGTERM, on_profile_signal);
  auto r = run_profile(
      o,
      [](Pipeline* p) {
        g_prof_pipeline = p;
        if (p != nullptr && g_prof_stop) p->request_stop();
      },
      [&](const ProfileProgress& pr) {
        if (g_prof_quiet) return;
        // The bar and the estimate count samples (the repeats), not points.
        double frac =
            pr.samples_planned ? static_cast<double>(pr.samples) / static_cast<double>(pr.samples_planned) : 1;
        fmt::print(stderr,
                   "\r[{}] {}/{} points, {}/~{} samples, {} elapsed, ~{} left | {} #{}: {:.3f} Gbit/s {:.1f} W    ",
                   bar(std::min(frac, 1.0), 30), pr.done, pr.planned, pr.samples, pr.samples_planned,
                   eta_text(pr.elapsed_s), eta_text(pr.eta_s), pr.last->describe(), pr.last->samples,
                   pr.last->throughput_bps / 1e9, pr.last->power_w);
      });
  if (!g_prof_quiet) fmt::print(stderr, "\n");
  if (!r) {
    fmt::print(stderr, "hpr profile: {}\n", r.status().message());
    return r.status().code() == Code::kInvalidArgument ? 2 : 3;
  }
  fmt::print("hpr profile: {} of {} points in {:.1f} s{}, power source {} -> {} ({})\n", r->measured, r->planned,
             r->seconds, r->budget_hit ? " (time budget reached)" : "", r->power_source, o.out_path,
             r->complete ? "complete" : "incomplete: what was measured is kept");
  fmt::print("  {}\n", r->power_description);
  if (o.interleave_grid && !r->complete && r->measured == 0)
    fmt::print(
        "hpr profile: stopped before every point had {} samples: rounds over the whole grid keep all points or "
        "none; --interleave block keeps each block it finishes\n",
        o.sampling.min_samples);
  fmt::print("hpr profile: {} samples; samples per point: median {}, max {}; {} of {} points not within spread {} "
             "(throughput or power)\n",
             r->samples, r->samples_median, r->samples_max, r->not_within, r->measured, o.sampling.spread_delta);
  return 0;
}

}  // namespace hpr::cli
