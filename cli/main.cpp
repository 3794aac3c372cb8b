// hpr: the command-line front end. Subcommands: devices, run, profile (cli/profile_cmd.cpp), report
// (cli/report_cmd.cpp), selftest (cli/selftest_cmd.cpp), ctl (cli/ctl_cmd.cpp), bench.
// Exit codes: 0 ok; 1 the run finished but its books did not balance or a reorder happened;
// 2 bad configuration or arguments; 3 a resource was missing or failed (file, device, port).
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <mutex>
#include <optional>
#include <thread>

#include "cli/ctl_cmd.hpp"
#include "cli/profile_cmd.hpp"
#include "cli/report_cmd.hpp"
#include "cli/run_extras.hpp"
#include "cli/sd_notify.hpp"
#include "cli/selftest_cmd.hpp"
#include "hpr/atomic_file.hpp"
#include "hpr/build_features.hpp"
#include "hpr/data_dir.hpp"
#include "kernels/registry.hpp"
#include "runtime/opencl/devices.hpp"
#include "pipeline/run_config.hpp"
#include "pipeline/settings.hpp"
#include "pipeline/telemetry.hpp"

using namespace hpr;

namespace {

constexpr int kExitOk = 0, kExitBooks = 1, kExitConfig = 2, kExitResource = 3;

int exit_code_for(const Status& s) {
  return s.code() == Code::kInvalidArgument ? kExitConfig : kExitResource;
}

std::atomic<Pipeline*> g_pipeline{nullptr};
std::atomic<bool> g_stop{false};  // a signal that came before the pipeline existed
std::atomic<bool> g_hup{false};   // SIGHUP (systemctl reload): answered on the next status tick
void on_hup(int) { g_hup = true; }
void on_signal(int) {
  g_stop = true;
  if (Pipeline* p = g_pipeline.load()) p->request_stop();
}

std::string human_bytes(uint64_t b) {
  if (b >= (1ull << 30)) return fmt::format("{:.1f} GiB", static_cast<double>(b) / (1ull << 30));
  return fmt::format("{:.0f} MiB", static_cast<double>(b) / (1ull << 20));
}

int cmd_devices(bool json, const std::vector<std::string>& kind_overrides) {
  auto ov = parse_kind_overrides(kind_overrides);
  if (!ov) {
    fmt::print(stderr, "hpr devices: {}\n", ov.status().message());
    return kExitConfig;
  }
  auto devs = discover_devices(*ov);
  if (!devs) {
    fmt::print(stderr, "hpr devices: {}\n", devs.status().to_string());
    return kExitResource;
  }
  const IcdReport icds = check_icds();
  for (const auto& p : icds.problems) fmt::print(stderr, "hpr devices: {}\n", p);
  if (json) {
    nlohmann::json j = nlohmann::json::array();
    for (const auto& d : *devs)
      j.push_back({{"index", d.index}, {"name", d.name}, {"vendor", d.vendor}, {"platform", d.platform},
                   {"kind", kind_name(d.kind)}, {"kind_overridden", d.kind_overridden},
                   {"compute_units", d.compute_units}, {"max_clock_mhz", d.max_clock_mhz},
                   {"global_mem_bytes", d.global_mem_bytes}, {"max_alloc_bytes", d.max_alloc_bytes},
                   {"opencl_version", d.version}, {"opencl_c_version", d.opencl_c}, {"driver", d.driver},
                   {"zero_copy", d.host_unified}});
    fmt::print("{}\n", j.dump(2));
    return kExitOk;
  }
  if (devs->empty()) {
    if (icds.drivers > icds.problems.size())
      fmt::print("No OpenCL device found, although drivers are registered in {}. A driver may have\n"
                 "failed to start: PoCL needs a writable cache (POCL_CACHE_DIR, or $XDG_CACHE_HOME / $HOME/.cache),\n"
                 "and POCL_DEVICES limits what it shows. `clinfo -l` lists what the ICD loader sees. hpr still runs\n"
                 "on native lanes.\n", icds.where);
    else
      fmt::print("No OpenCL device found. Install a driver: pocl-opencl-icd (CPUs), intel-opencl-icd (Intel GPUs),\n"
                 "or NVIDIA's driver; `clinfo -l` lists what the ICD loader sees. hpr still runs on native lanes.\n");
    fmt::print("hpr {}: {}\n", HPR_VERSION, build_features());
    return kExitOk;
  }
  fmt::print("{:<3} {:<34} {:<6} {:>4} {:>6} {:>9} {:>9}  {:<10} {:<9} {}\n", "#", "device", "kind", "CUs", "MHz",
             "memory", "max alloc", "OpenCL C", "zero-copy", "platform / driver");
  for (const auto& d : *devs) {
    std::string cver = d.opencl_c.size() > 9 ? d.opencl_c.substr(9, 9) : d.opencl_c;  // drop "OpenCL C "
    fmt::print("{:<3} {:<34} {:<6} {:>4} {:>6} {:>9} {:>9}  {:<10} {:<9} {} / {}\n", d.index, d.name.substr(0, 34),
               std::string(kind_name(d.kind)) + (d.kind_overridden ? "*" : ""), d.compute_units, d.max_clock_mhz,
               human_bytes(d.global_mem_bytes), human_bytes(d.max_alloc_bytes), cver,
               d.host_unified ? "yes" : "no", d.platform, d.driver);
  }
  if (std::any_of(devs->begin(), devs->end(), [](const auto& d) { return d.kind_overridden; }))
    fmt::print("* kind set by --kind / devices.kinds, not by the driver\n");
  fmt::print("hpr {}: {}\n", HPR_VERSION, build_features());
  return kExitOk;
}

// The benchmark binaries (bench/, built by scripts/bench.sh beside this binary): name → path below the
// build directory and what it measures (docs/benchmarks.md).
struct BenchEntry {
  const char* name;
  const char* path;
  const char* what;
};
constexpr BenchEntry kBenches[] = {
    {"classify", "bench/runtime/classify_fwd", "rx -> classify -> tx through DPDK, and the classifier alone (issue 2)"},
    {"generator", "bench/generator/generator_bench", "traffic generator rate"},
    {"ipv4", "bench/ipv4/ipv4_bench", "LPM beside DPDK rte_lpm, native forwarding"},
    {"ipv6", "bench/ipv4/ipv6_bench", "IPv6 LPM beside DPDK rte_lpm6 (synthetic IPv6 table)"},
    {"apps", "bench/apps/app_bench", "every app on the native lane and each OpenCL device, beside its peer (issue 3)"},
    {"dpi", "bench/dpi/dpi_bench", "Aho-Corasick beside Hyperscan (full ET set and >= 4-byte patterns)"},
    {"crypto", "bench/crypto/crypto_bench", "MD5 and AES-128-CBC beside OpenSSL EVP"},
    {"decision", "bench/fig7/sched_decision_bench", "adaptive scheduler decision cost"},
    {"fig7", "bench/fig7/fig7_sim", "Fig. 7 replay on model devices"},
    {"balance", "bench/balance/balance_sim", "load balancers, three-paper simulator"},
    {"shaper", "bench/shaper/shaper_sim", "token-bucket shaper at scale, model, conformance"},
    {"heap", "bench/shaper/shaper_heap_bench", "shaper heap insert/delete cost"},
};

// `hpr bench [NAME [ARGS...]]`: lists the benchmarks, or runs one with its own arguments.
int cmd_bench(const std::string& name, const std::vector<std::string>& args) {
  std::error_code ec;
  auto build = std::filesystem::read_symlink("/proc/self/exe", ec).parent_path().parent_path();  // build/cli/hpr
  if (name.empty()) {
    fmt::print("Benchmarks (hpr bench NAME [ARGS...]; NAME --help for its options; figures: docs/benchmarks.md):\n");
    for (const auto& b : kBenches)
      fmt::print("  {:<10} {:<60} {}\n", b.name, b.what,
                 std::filesystem::exists(build / b.path) ? "" : "(not built: scripts/bench.sh)");
    return kExitOk;
  }
  for (const auto& b : kBenches) {
    if (name != b.name) continue;
    std::string path = (build / b.path).string();
    if (!std::filesystem::exists(path)) {
      fmt::print(stderr, "hpr bench: {} is not built ({} missing); build the benchmarks with scripts/bench.sh\n", name,
                 path);
      return kExitResource;
    }
    std::vector<char*> argv{path.data()};
    std::vector<std::string> copy = args;
    for (auto& a : copy) argv.push_back(a.data());
    argv.push_back(nullptr);
    std::fflush(stdout);
    execv(path.c_str(), argv.data());
    fmt::print(stderr, "hpr bench: cannot run {}: {}\n", path, std::strerror(errno));
    return kExitResource;
  }
  fmt::print(stderr, "hpr bench: unknown benchmark '{}'; `hpr bench` lists them\n", name);
  return kExitConfig;
}

int cmd_run(RunConfig cfg, bool quiet) {
  std::signal(SIGINT, on_signal);  // from the start: loading tables and building programs takes seconds
  std::signal(SIGTERM, on_signal);
  std::signal(SIGHUP, on_hup);  // not the default (which ends the process): a reload must never lose packets
  if (Status v = validate(cfg); !v.is_ok()) {
    fmt::print(stderr, "hpr run: {}\n", v.message());
    return kExitConfig;
  }
  if (Status p = PrometheusExporter::available(); !cfg.prometheus.empty() && !p.is_ok()) {
    fmt::print(stderr, "hpr run: {}\n", p.message());  // before devices and tables are set up
    return kExitResource;
  }
  auto workers = resolve_workers(cfg);
  if (!workers) {
    fmt::print(stderr, "hpr run: {}\n", workers.status().message());
    return exit_code_for(workers.status());
  }
  const char* auto_rtc = auto_run_to_completion(cfg, std::thread::hardware_concurrency());
  cli::adjust_run_config(cfg);
  auto ctx = prepare_run(cfg);
  if (!ctx) {
    fmt::print(stderr, "hpr run: {}\n", ctx.status().message());
    return exit_code_for(ctx.status());
  }
  auto& c = **ctx;
  auto extras = cli::RunExtras::create(cfg, c);
  if (!extras) {
    fmt::print(stderr, "hpr run: {}\n", extras.status().message());
    return exit_code_for(extras.status());
  }
  PrometheusExporter tel;
  if (!cfg.prometheus.empty()) {
    if (Status s = tel.start(cfg.prometheus, cfg.shaping.enabled); !s.is_ok()) {
      fmt::print(stderr, "hpr run: {}\n", s.message());
      return kExitResource;
    }
  }
  std::string outs = c.tx->describe();
  for (const auto& t : c.more_tx) outs += ", " + t->describe();
  fmt::print("hpr run: app {} | in {} | out {} | lanes:", c.app->name(), c.rx->describe(), outs);
  for (const auto& d : c.devices) fmt::print(" [{} {}]", d.name, kind_name(d.kind));
  fmt::print(" [native x{}] | batch {}{} | {}\n", cfg.native_lanes, cfg.batch,
             cfg.run_to_completion ? (auto_rtc ? fmt::format(" | run to completion (one thread: {})", auto_rtc) : std::string(" | run to completion (one thread)")) : std::string(), cfg.prometheus.empty() ? "telemetry off" : "metrics http://" + tel.listening() + "/metrics");
  if (!workers->empty()) fmt::print("  workers {}\n", *workers);
  if (!c.budget.empty()) fmt::print("  {}\n", c.budget);
  fmt::print("  {}\n", c.buffers);
  for (const auto& l : c.left_out) fmt::print("  left out: {}\n", l);
  if (!c.placed_from.empty()) fmt::print("  apps placed from the learned state: {}\n", c.placed_from);
  if (const std::string placed = c.pipeline->placement(); !placed.empty())
    fmt::print("  services placed: {}{}\n", placed, cfg.workers > 1 ? " (worker 0; each worker's own lanes alike)" : "");
  fmt::print("  {}\n", (*extras)->describe());
  // The control socket (hpr ctl): a socket another daemon answers on is a warning, not a reason to stop this run.
  std::mutex sched_mu;     // the scheduler's report, copied on the status thread for hpr ctl scheduler
  std::string sched_text;
  // From here the pipelines own the app: a live reload frees the one it replaces.
  const std::string app_name(c.app->name());
  c.app.reset();
  c.worker_apps.clear();
  Reloader reloader(cfg.app, c.app_options, *c.pipeline);  // hpr ctl reload and SIGHUP
  std::thread hup_reload;  // SIGHUP's reload, apart from the status thread
  std::atomic<bool> hup_busy{false};
  std::unique_ptr<ControlServer> ctl;
  cli::SchedulerHooks sched_hooks{(*extras)->weights_owner(), [x = (*extras).get()](const std::string& g, double t) {
                                    return x->request_policy(g, t);
                                  }};
  if (cfg.ctl_path != "none") {
    const std::string path = cfg.ctl_path.empty() ? default_control_path() : cfg.ctl_path;
    auto server = ControlServer::start(path, cli::control_handler(*c.pipeline, reloader, [&] {
                                         std::lock_guard<std::mutex> l(sched_mu);
                                         return sched_text;
                                       }, sched_hooks),
                                       "control.socket (--ctl)", ControlServer::kIdleMs, cli::kSlowCommands);
    if (server) {
      ctl = std::move(*server);
      fmt::print("  control socket {} (hpr ctl --ctl {} help)\n", path, path);
    } else if (!cfg.ctl_path.empty()) {
      fmt::print(stderr, "hpr run: {}\n", server.status().message());
      return exit_code_for(server.status());
    } else {
      spdlog::warn("{}; this run has no control socket", server.status().message());
    }
  }
  Summary prev;
  c.pipeline->on_status([&](const Summary& snap, double) {
    Summary s = snap;
    bool due = (*extras)->on_status(s);
    tel.update(s);
    if (g_hup.exchange(false)) {
      // systemctl reload: the app's files again (as the run loaded them, or as the last reload named them), on a
      // thread of its own so that status ticks go on.
      if (reloader.kinds().empty()) {
        spdlog::info("SIGHUP: the {} app has no files to reload; nothing to do", app_name);
      } else if (hup_busy.load()) {
        spdlog::warn("SIGHUP: the last SIGHUP's reload is still running; this one is skipped");
      } else {
        if (hup_reload.joinable()) hup_reload.join();  // it has ended
        hup_busy = true;
        hup_reload = std::thread([&reloader, &hup_busy] {
          cli::sd_notify("RELOADING=1");
          auto r = reloader.reload("", "");
          if (!r) spdlog::error("SIGHUP: {}; the running tables stay", r.status().message());
          cli::sd_notify("READY=1");
          hup_busy = false;
        });
      }
    }
    if (!due) return;
    if (ctl) {
      std::string r = (*extras)->report();
      std::lock_guard<std::mutex> l(sched_mu);
      sched_text = std::move(r);
    }
    const std::string line = status_line(prev, s);
    prev = s;
    cli::sd_notify("STATUS=" + line);  // systemctl status shows it
    if (quiet) return;
    fmt::print("{}\n", line);
    std::fflush(stdout);
  });
  g_pipeline = c.pipeline.get();
  if (g_stop) c.pipeline->request_stop();  // SIGINT/SIGTERM during the start: stop at once, with the summary
  // Type=notify (packaging/hpr.service): ready once the ports are open, the lanes built and the control socket up.
  cli::sd_notify("READY=1\nSTATUS=forwarding");
  Summary s = c.pipeline->run();
  cli::sd_notify("STOPPING=1\nSTATUS=stopped; summary printed");
  g_pipeline = nullptr;
  ctl.reset();  // no request reaches the pipeline after its run
  if (hup_reload.joinable()) hup_reload.join();
  (*extras)->finish(s);
  tel.update(s);
  fmt::print("\nSummary ({}):\n{}{}", app_name, s.to_text(), (*extras)->report());
  if (!cfg.summary_json.empty()) {
    Status w = write_file_atomic(cfg.summary_json, s.to_json() + "\n", "telemetry.summary_json (--summary-json)");
    if (w.is_ok())
      fmt::print("  summary written to {}\n", cfg.summary_json);
    else
      s.output_errors.push_back(w.message());
  }
  if (!cfg.log_path.empty() && std::none_of(s.output_errors.begin(), s.output_errors.end(), [&](const std::string& e) {
        return e.find(cfg.log_path) != std::string::npos;
      }))
    fmt::print("  result log written to {}\n", cfg.log_path);
  for (const auto& e : s.output_errors) fmt::print(stderr, "hpr run: output failed: {}\n", e);
  bool ok = s.unaccounted == 0 && s.rx_packets == s.tx_packets + s.dropped && s.reorders == 0;
  if (!s.output_errors.empty()) return kExitResource;
  return ok ? kExitOk : kExitBooks;
}

}  // namespace

int main(int argc, char** argv) {
  spdlog::set_pattern("[%H:%M:%S.%e] [%^%l%$] %v");
  CLI::App app{"hpr: heterogeneous packet-processing runtime (IPv4 forwarding, DPI, MD5, AES-128-CBC on every\n"
               "OpenCL device and native CPU lanes). Data: $HPR_DATA_DIR (default " + data_dir() + ")."};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string(HPR_VERSION) + " (" + build_features() + ")");
  app.footer(
      "Exit codes: 0 ok; 1 the run ended with unbalanced books or a reorder; 2 bad configuration or arguments\n"
      "(the message names the setting); 3 a resource is missing or failed (file, device, port), or an output\n"
      "(capture, result log, summary JSON) could not be written.");

  auto* dev = app.add_subcommand("devices", "List the OpenCL devices the ICD loader finds");
  bool dev_json = false;
  std::vector<std::string> dev_kinds;
  dev->add_flag("--json", dev_json, "Print JSON instead of a table");
  dev->add_option("--kind", dev_kinds, "Override a device's kind: NAME_SUBSTRING=cpu|igpu|dgpu|accelerator");

  auto* run = app.add_subcommand("run", "Process packets: port in -> classify -> lanes (devices, native) -> port out.\n"
                                        "With no options: the IPv4 app on generated IMIX traffic, all devices + 1 native lane.");
  std::string config_path;
  bool quiet = false;
  run->add_option("-c,--config", config_path, "TOML configuration file (flags override it); see config/hpr.toml");
  // Every other flag comes from the settings table (pipeline/settings.cpp), which also reads the file.
  std::vector<std::vector<std::string>> run_args(run_settings().size());
  for (size_t i = 0; i < run_settings().size(); ++i) {
    const Setting& st = run_settings()[i];
    if (st.flag.empty()) continue;
    std::string help(st.help);
    if (!st.key.empty()) help += fmt::format(" [{}]", st.key);
    if (st.arg == Setting::Arg::kSwitch)
      run->add_flag(std::string(st.flag))->description(help);
    else
      run->add_option(std::string(st.flag), run_args[i], help)
          ->allow_extra_args(false)
          ->type_name("VALUE");
  }
  run->add_flag("-q,--quiet", quiet, "No status line every second");

  auto* profile = cli::add_profile_command(app);
  auto* report = cli::add_report_command(app);
  auto* selftest = cli::add_selftest_command(app);
  auto* ctl = cli::add_ctl_command(app);
  auto* bench = app.add_subcommand(
      "bench", "List the benchmarks, or run one: hpr bench NAME [ARGS...] (built by scripts/bench.sh)");
  std::string bench_name;
  bench->add_option("name", bench_name, "Benchmark to run (none: list them)");
  bench->allow_extras();
  bench->prefix_command();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version exit 0; every argument error exits 2 as documented (not CLI11's own codes).
    int rc = app.exit(e);
    return rc == 0 ? kExitOk : kExitConfig;
  }

  if (dev->parsed()) return cmd_devices(dev_json, dev_kinds);
  if (profile->parsed()) return cli::run_profile_command();
  if (report->parsed()) return cli::run_report_command(report->remaining());
  if (selftest->parsed()) return cli::run_selftest_command();
  if (ctl->parsed()) return cli::run_ctl_command();
  if (bench->parsed()) return cmd_bench(bench_name, bench->remaining());
  if (run->parsed()) {
    RunConfig cfg;
    if (!config_path.empty()) {
      auto f = load_run_config(config_path);
      if (!f) {
        fmt::print(stderr, "hpr run: {}\n", f.status().message());
        return exit_code_for(f.status());
      }
      cfg = *f;
    }
    // Flags override the file.
    for (size_t i = 0; i < run_settings().size(); ++i) {
      const Setting& st = run_settings()[i];
      if (st.flag.empty() || run->count(std::string(st.flag)) == 0) continue;
      if (Status a = st.apply(cfg, SettingValue{.args = run_args[i]}); !a.is_ok()) {
        fmt::print(stderr, "hpr run: {}\n", a.message());
        return kExitConfig;
      }
    }
    return cmd_run(cfg, quiet);
  }
  return kExitConfig;
}
