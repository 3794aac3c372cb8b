#include "cli/selftest_cmd.hpp"

#include <fmt/format.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <optional>

#include "hpr/clock.hpp"
#include "hpr/data_dir.hpp"
#include "hpr/stats.hpp"
#include "kernels/registry.hpp"
#include "pipeline/device_check.hpp"
#include "pipeline/power.hpp"
#include "runtime/frame_pools.hpp"

namespace hpr::cli {
namespace {

struct Options {
  std::vector<std::string> apps = kernels::app_names();
  std::vector<std::string> chains;  // --chain A,B: each app's kernel in turn on one gathered batch (docs/chains.md)
  std::vector<std::string> devices = {"all"};
  std::vector<std::string> kinds;  // NAME=KIND
  uint32_t packets = 4096, per_file = 64, batch = 0, in_flight = 2;
  double min_ms = 150;
  std::string captures, routes, rules;
  bool json = false, fill = false;
};
Options g_opt;
CLI::App* g_cmd = nullptr;

// One engine (the native lane or a device) on one app.
struct Row {
  std::string engine, device, kind, app;
  std::string result;  // "ref" (native), "PASS", "FAIL", "ERROR"
  std::string detail;  // FAIL: the first differing packet; ERROR: what failed
  uint32_t batch = 0;
  double mpps = 0, gbps = 0, spread = 0;
  double pass_ns = 0;                // median time of one pass over the sample
  std::optional<double> copy_share;  // discrete devices: copy time / batch time
  std::optional<double> link_gbps;   // discrete devices: one batch's bytes, in and out, over their copy time
  std::string memory;                // "in place", "mapped", "copied"
  std::string power;                 // rapl | nvml | model
};

struct Engine {
  std::string name, device, kind, vendor;
  std::optional<DeviceInfo> info;  // none: the native lane
  bool unified = true;
  std::string power;
};

// Passes over the sample until `min_ms` and 3 passes, frames restored between passes (not timed); batches
// pipelined up to the executor's slots. Mpps and Gbit/s of the median pass.
Status time_engine(Executor& ex, const CheckSample& s, uint32_t batch, double min_ms, Row& row) {
  std::vector<std::vector<uint8_t>> frames = s.frames;
  std::vector<Packet> pkts = s.pkts;
  std::vector<Packet*> refs, done;
  for (Packet& p : pkts) refs.push_back(&p);
  std::vector<double> pass_ns;
  const auto reap = [&]() -> Status {
    done.clear();
    auto r = ex.reap(true, done, [](std::span<const Packet>, const kernels::BatchView&, const kernels::App&, uint32_t) {});
    return r ? Status::ok() : r.status();
  };
  const uint64_t t_start = monotonic_ns();
  while (pass_ns.size() < 3 || (monotonic_ns() - t_start) < min_ms * 1e6) {
    for (size_t i = 0; i < pkts.size(); ++i) {
      std::copy(s.frames[i].begin(), s.frames[i].end(), frames[i].begin());
      pkts[i] = s.pkts[i];  // the reaps wrote the last pass's verdicts into them
      pkts[i].data = frames[i].data();
    }
    const uint64_t a = monotonic_ns();
    for (size_t first = 0; first < pkts.size(); first += batch) {
      if (ex.outstanding() == ex.slots()) HPR_RETURN_IF_ERROR(reap());
      HPR_RETURN_IF_ERROR(ex.submit(refs.data() + first, static_cast<uint32_t>(std::min<size_t>(batch, pkts.size() - first))));
    }
    while (ex.outstanding() > 0) HPR_RETURN_IF_ERROR(reap());
    pass_ns.push_back(static_cast<double>(monotonic_ns() - a));
    if (pass_ns.size() >= 1000) break;
  }
  const Summary sum = summarize(pass_ns);
  row.pass_ns = sum.median;
  row.mpps = static_cast<double>(s.pkts.size()) / sum.median * 1e3;
  row.gbps = static_cast<double>(s.frame_bytes) * 8 / sum.median;
  row.spread = sum.spread;
  return Status::ok();
}

// Copy time of one batch's bytes (in: descriptors and slices; out: results, and slices when the app writes them
// back) between pinned host memory and the device, median of 5: the share of a batch that is transfer.
Result<double> copy_ns(const kernels::AppProgram& prog, size_t in_bytes, size_t out_bytes) {
  try {
    cl::CommandQueue q(prog.context, prog.device);
    cl::Buffer dev_in(prog.context, CL_MEM_READ_WRITE, in_bytes), dev_out(prog.context, CL_MEM_READ_WRITE, out_bytes);
    cl::Buffer host_in(prog.context, CL_MEM_ALLOC_HOST_PTR, in_bytes), host_out(prog.context, CL_MEM_ALLOC_HOST_PTR, out_bytes);
    void* hin = q.enqueueMapBuffer(host_in, CL_TRUE, CL_MAP_WRITE, 0, in_bytes);
    void* hout = q.enqueueMapBuffer(host_out, CL_TRUE, CL_MAP_READ, 0, out_bytes);
    std::vector<double> ns;
    for (int k = 0; k < 6; ++k) {
      const uint64_t a = monotonic_ns();
      q.enqueueWriteBuffer(dev_in, CL_FALSE, 0, in_bytes, hin);
      q.enqueueReadBuffer(dev_out, CL_TRUE, 0, out_bytes, hout);
      if (k > 0) ns.push_back(static_cast<double>(monotonic_ns() - a));
    }
    q.enqueueUnmapMemObject(host_in, hin);
    q.enqueueUnmapMemObject(host_out, hout);
    q.finish();
    return summarize(ns).median;
  } catch (const cl::Error& e) {
    return error(Code::kUnavailable, "{} failed: {}", e.what(), cl_error_name(e.err()));
  }
}

// What one batch copies in (descriptors and slices) and out (results, and slices when an app writes them back), as
// cl_executor.cpp does: one gathered copy of the packets for a chain, descriptors and results per app.
std::pair<size_t, size_t> batch_bytes(const kernels::App& app, std::span<const Packet> pkts) {
  size_t in = 0, out = 0, bytes = 0;
  bool back = false;
  for (uint32_t k = 0; k < app.device_stages(); ++k) {
    const kernels::App& a = app.chain_app(k);
    in += sizeof(kernels::Desc) * pkts.size();
    out += pkts.size() * a.result_bytes();
    back = back || a.writes_back();
  }
  if (app.device_stages() == 1) {
    bytes = kernels::gather(app, pkts).pkts.size();
  } else {
    std::vector<int32_t> shift(pkts.size());
    std::vector<uint8_t> buf(pkts.size() * (kernels::align_slice(app.max_slice_bytes()) + 2 * kernels::kSliceAlign));
    bytes = kernels::gather_chain(app, pkts, shift.data(), buf.data(), buf.size());
  }
  return {in + bytes, out + (back ? bytes : 0)};
}

uint32_t batch_for(const Engine& e, uint32_t packets) {
  if (g_opt.batch > 0) return std::min(g_opt.batch, packets);
  // Discrete devices need large batches to hide the copies (hetero-opencl-adaptive-scheduler §3.3); the rest
  // run at the pipeline's usual size.
  return std::min(e.unified ? 1024u : 8192u, packets);
}

std::string power_source_of(const Engine& e) {
  PowerLane l{.name = e.name, .kind = e.kind, .vendor = e.vendor, .cores = e.info ? e.info->compute_units : 1,
              .device = e.name};
  // The lane's own source: other GPUs, which a run meters too (pipeline/power.hpp), are not this lane's.
  auto p = RunPower::create(PowerConfig{.use_nvml = e.vendor.find("NVIDIA") != std::string::npos}, {l}, monotonic_ns());
  return p->source();
}

std::vector<Row> run_app(const std::string& name, const std::vector<Engine>& engines, const CheckSample& s,
                         int& rc) {
  std::vector<Row> rows;
  auto row_for = [&](const Engine& e) {
    Row r;
    r.engine = e.name;
    r.device = e.device;
    r.kind = e.kind;
    r.app = name;
    r.power = e.power;
    r.batch = batch_for(e, static_cast<uint32_t>(s.pkts.size()));
    return r;
  };
  kernels::AppOptions ao;
  ao.routes = g_opt.routes;
  ao.rules = g_opt.rules;
  ao.master_key = "2b7e151628aed2a6abf7158809cf4f3c";  // a test key (FIPS-197's), never a user's
  ao.key_epoch = "000102030405060708090a0b0c0d0e0f";
  ao.iv_counter_start = 0;
  const uint64_t t0 = monotonic_ns();
  auto app_r = kernels::make_app(name, ao);
  if (!app_r) {
    for (const auto& e : engines) {
      Row r = row_for(e);
      r.result = "ERROR";
      r.detail = app_r.status().message();
      rows.push_back(r);
    }
    rc = std::max(rc, 3);
    return rows;
  }
  const kernels::App& app = **app_r;
  s.start_flows(app);
  spdlog::info("selftest: {} ready in {:.1f} s", name, (monotonic_ns() - t0) / 1e9);

  std::optional<EngineOutput> ref;
  for (const auto& e : engines) {
    Row r = row_for(e);
    const ExecutorConfig ec{.max_batch = r.batch, .in_flight = g_opt.in_flight};
    std::unique_ptr<Executor> ex;
    std::shared_ptr<kernels::AppProgram> prog;
    if (!e.info) {
      ex = make_native_executor(app, ec);
      r.memory = "in place";
    } else {
      auto p = kernels::AppProgram::create(app, e.info->device);
      auto x = p ? make_cl_executor(app, *p, e.unified, ec) : Result<std::unique_ptr<Executor>>(p.status());
      if (!x) {
        r.result = "ERROR";
        r.detail = x.status().message();
        rows.push_back(r);
        rc = std::max(rc, 1);
        continue;
      }
      prog = *p;
      ex = std::move(*x);
      r.memory = e.unified ? "mapped" : "copied";
    }
    auto out = run_sample(app, *ex, s, r.batch);
    if (!out) {
      r.result = "ERROR";
      r.detail = out.status().message();
    } else if (!e.info) {
      r.result = "ref";
      ref = std::move(*out);
    } else if (!ref) {
      r.result = "ERROR";
      r.detail = "no native reference to compare with";
    } else {
      r.detail = first_difference(app, s, *ref, *out);
      r.result = r.detail.empty() ? "PASS" : "FAIL";
    }
    if (r.result == "PASS" || r.result == "ref") {
      if (Status t = time_engine(*ex, s, r.batch, g_opt.min_ms, r); !t.is_ok()) {
        r.result = "ERROR";
        r.detail = t.message();
      }
    }
    if (r.result == "PASS" && !e.unified) {
      // One batch's bytes each way, as the discrete path copies them (cl_executor.cpp: only the bytes used).
      const auto [in, out_b] = batch_bytes(app, {s.pkts.data(), r.batch});
      const double batches = std::ceil(static_cast<double>(s.pkts.size()) / r.batch);
      if (auto c = copy_ns(*prog, std::max<size_t>(in, 16), std::max<size_t>(out_b, 16)); c) {
        r.copy_share = std::min(1.0, *c / (r.pass_ns / batches));
        r.link_gbps = static_cast<double>(in + out_b) * 8 / *c;
      }
    }
    if (r.result == "FAIL" || r.result == "ERROR") rc = std::max(rc, 1);
    rows.push_back(r);
  }
  return rows;
}

std::string fixed(double v, int prec) { return fmt::format("{:.{}f}", v, prec); }

void print_table(const std::vector<Row>& rows) {
  size_t w = 5;  // the app column: as wide as the longest app or chain
  for (const auto& r : rows) w = std::max(w, r.app.size());
  fmt::print("{:<34} {:<{}} {:<6} {:>6} {:>8} {:>8} {:>6}  {:<9} {}\n", "engine", "app", w, "result", "batch", "Mpps",
             "Gbit/s", "spread", "memory", "power");
  for (const auto& r : rows) {
    const bool timed = r.mpps > 0;
    std::string mem = r.memory;
    if (r.copy_share) mem = fmt::format("copy {:.0f}%", *r.copy_share * 100);
    fmt::print("{:<34} {:<{}} {:<6} {:>6} {:>8} {:>8} {:>6}  {:<9} {}\n", r.engine.substr(0, 34), r.app, w, r.result,
               r.batch, timed ? fixed(r.mpps, 3) : "-", timed ? fixed(r.gbps, 2) : "-",
               timed ? fixed(r.spread, 2) : "-", mem, r.power);
  }
  for (const auto& r : rows)
    if (!r.detail.empty()) fmt::print("{} {} on {}: {}\n", r.result, r.app, r.engine, r.detail);
}

nlohmann::json to_json(const std::vector<Row>& rows, const CheckSample& s, double seconds) {
  nlohmann::json j;
  j["sample"] = {{"source", s.source}, {"packets", s.pkts.size()}, {"frame_bytes", s.frame_bytes}};
  j["seconds"] = seconds;
  j["results"] = nlohmann::json::array();
  for (const auto& r : rows) {
    nlohmann::json x = {{"engine", r.engine}, {"device", r.device},  {"kind", r.kind},   {"app", r.app},
                        {"result", r.result}, {"batch", r.batch},    {"memory", r.memory}, {"power_source", r.power}};
    if (r.mpps > 0) x.update({{"mpps", r.mpps}, {"gbps", r.gbps}, {"spread", r.spread}});
    if (r.copy_share) x["copy_share"] = *r.copy_share;
    if (r.link_gbps) x["link_gbps"] = *r.link_gbps;
    if (r.result != "ref") x["in_flight"] = g_opt.in_flight;
    if (!r.detail.empty()) x[r.result == "FAIL" ? "first_difference" : "error"] = r.detail;
    j["results"].push_back(x);
  }
  return j;
}

}  // namespace

CLI::App* add_selftest_command(CLI::App& app) {
  auto* c = app.add_subcommand(
      "selftest",
      "Every app on every OpenCL device and the native lane, on a sample of real traffic: each device's output\n"
      "compared with the native reference byte for byte, then timed (the first command to run on a new machine)");
  g_cmd = c;
  auto& o = g_opt;
  c->add_option("--apps", o.apps, "Apps to test (ipv4 dpi md5 aes)")->delimiter(',');
  c->add_option("--chain", o.chains,
                "Chains to test after the apps, e.g. ipv4,aes dpi,md5 (--apps \"\" for chains only)");
  c->add_option("--devices", o.devices, "OpenCL devices: all | none | comma-separated name substrings")->delimiter(',');
  c->add_option("--kind", o.kinds, "Override a device's kind: NAME_SUBSTRING=cpu|igpu|dgpu|accelerator");
  c->add_option("--packets", o.packets, "Packets in the sample")->check(CLI::Range(1u, 1u << 20))->capture_default_str();
  c->add_option("--per-file", o.per_file, "At most this many packets from each capture")
      ->check(CLI::Range(1u, 1u << 20))
      ->capture_default_str();
  c->add_option("--batch", o.batch, "Batch size (0: 1024, 8192 on discrete devices; at most --packets)")
      ->check(CLI::Range(0u, 1u << 16));
  c->add_option("--in-flight", o.in_flight,
                "OpenCL batches outstanding at once (1: no copy of one batch overlaps another's kernel)")
      ->check(CLI::Range(1u, 8u))
      ->capture_default_str();
  c->add_option("--min-ms", o.min_ms, "Timing per engine and app, ms (at least 3 passes over the sample)")
      ->check(CLI::Range(0.0, 60000.0))
      ->capture_default_str();
  c->add_flag("--fill", o.fill,
              "Where the captures hold fewer frames than --packets, repeat them in order up to --packets (for "
              "batches larger than the captures at hand)");
  c->add_option("--captures", o.captures, "Folder of captures for the sample (default: $HPR_DATA_DIR/pcap/ndpi)");
  c->add_option("--routes", o.routes, "ipv4: route table (default: the bundled RouteViews table)");
  c->add_option("--rules", o.rules, "dpi: rule file or folder (default: the bundled ET Open rules)");
  c->add_flag("--json", o.json, "Print JSON instead of a table");
  return c;
}

int run_selftest_command() {
  const uint64_t t0 = monotonic_ns();
  auto& o = g_opt;
  // stdout carries the table (or the JSON) alone; what the apps log while loading goes to stderr.
  auto log = spdlog::stderr_color_mt("selftest");
  log->set_pattern("[%H:%M:%S.%e] [%^%l%$] %v");
  spdlog::set_default_logger(log);
  const auto names = kernels::app_names();
  const auto known = [&](const std::string& a) { return std::find(names.begin(), names.end(), a) != names.end(); };
  std::erase(o.apps, std::string());
  for (const auto& a : o.apps) {
    if (!known(a)) {
      fmt::print(stderr, "hpr selftest: --apps: unknown app '{}' (known: {})\n", a, fmt::join(names, ", "));
      return 2;
    }
  }
  for (const auto& c : o.chains) {
    auto apps = kernels::chain_apps(c);
    if (!apps) {
      fmt::print(stderr, "hpr selftest: --chain {}: {}\n", c, apps.status().message());
      return 2;
    }
    if (apps->size() < 2) {
      fmt::print(stderr, "hpr selftest: --chain {}: a chain names two apps or more (one app: --apps)\n", c);
      return 2;
    }
  }
  if (o.apps.empty() && o.chains.empty()) {
    fmt::print(stderr, "hpr selftest: --apps and --chain name nothing to test\n");
    return 2;
  }
  auto ov = parse_kind_overrides(o.kinds);
  if (!ov) {
    fmt::print(stderr, "hpr selftest: {}\n", ov.status().message());
    return 2;
  }
  for (const auto& p : check_icds().problems) fmt::print(stderr, "hpr selftest: {}\n", p);
  auto devs = choose_devices(o.devices, *ov, "--devices");
  if (!devs) {
    fmt::print(stderr, "hpr selftest: {}\n", devs.status().message());
    return devs.status().code() == Code::kNotFound ? 2 : 3;
  }
  std::vector<Engine> engines;
  engines.push_back({.name = "native", .device = "host CPU", .kind = "cpu"});
  for (const auto& d : *devs) {
    Engine e{.name = fmt::format("cl{}:{}", d.index, d.name), .device = d.name, .kind = kind_name(d.kind),
             .vendor = d.vendor, .info = d};
    e.unified = d.host_unified && d.kind != DeviceKind::kDiscreteGpu;  // the memory path hpr run takes
    engines.push_back(e);
  }
  for (auto& e : engines) e.power = power_source_of(e);
  const std::string dir = o.captures.empty() ? data_path("pcap/ndpi") : o.captures;
  const CheckSample s = load_check_sample(dir, o.packets, o.per_file, kDefaultMaxFrame, o.fill);
  if (!o.json) {
    fmt::print("hpr selftest: {} ({:.2f} MB); {} OpenCL device(s){}\n", s.source, s.frame_bytes / 1e6, devs->size(),
               devs->empty() && (o.devices.size() != 1 || o.devices[0] != "none")
                   ? ": none found (install an OpenCL driver, e.g. pocl-opencl-icd; `hpr devices` lists them)"
                   : "");
    std::fflush(stdout);
  }
  std::vector<Row> rows;
  int rc = 0;
  std::vector<std::string> cases = o.apps;
  cases.insert(cases.end(), o.chains.begin(), o.chains.end());
  for (const auto& a : cases) {
    auto r = run_app(a, engines, s, rc);
    rows.insert(rows.end(), r.begin(), r.end());
  }
  const double seconds = (monotonic_ns() - t0) / 1e9;
  if (o.json) {
    fmt::print("{}\n", to_json(rows, s, seconds).dump(2));
  } else {
    print_table(rows);
    fmt::print("power sources: rapl and nvml are measured, model is an estimate (no sensor); Mpps and Gbit/s: "
               "median pass over the sample\n");
    fmt::print("selftest {} in {:.1f} s\n", rc == 0 ? "passed" : "FAILED", seconds);
  }
  return rc;
}

}  // namespace hpr::cli
