// Assembling a run from a RunConfig: the app, the devices that get a lane, the ports, the pipeline.
#include <arpa/inet.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <bit>
#include <cstdlib>
#include <optional>
#include <random>

#include "hpr/cores.hpp"
#include "hpr/data_dir.hpp"
#include "kernels/ipv4/ipv4_app.hpp"
#include "pipeline/device_check.hpp"
#include "pipeline/fault_injection.hpp"
#include "pipeline/place_learned.hpp"
#include "pipeline/run_config.hpp"
#include "pipeline/shared_device.hpp"
#include "runtime/ports/dpdk_port.hpp"
#include "runtime/ports/file_ports.hpp"
#include "runtime/ports/generator.hpp"
#include "runtime/ports/spread_port.hpp"

namespace hpr {

namespace {

// line_rate: a paced generator behaves as a line-rate port (backpressure off): what hpr has not taken when more
// than a pool's worth is owed is missed and counted (port_missed), instead of offered later.
// The input port's buffers: how many (input_buffers; 0: the port's default, as for outputs), and the least a DPDK
// pool may be halved to where that many do not fit in the EAL's memory (0: a count the user gave, never halved).
struct InputBuffers {
  uint32_t count = 0, min = 0;
};

// `buffers`: the input's (input_buffer_count); outputs get none.
Result<std::unique_ptr<Port>> make_endpoint(const RunConfig& c, bool is_input, InputBuffers buffers,
                                            bool line_rate = false, const EndpointConfig* output = nullptr) {
  const EndpointConfig& e = is_input ? c.input : output != nullptr ? *output : c.output;
  if (e.kind == "pcap") {
    PcapPortConfig pc;
    (is_input ? pc.rx_path : pc.tx_path) = e.pcap;
    pc.loops = e.loops;
    pc.max_frame = c.max_frame;
    pc.large_slots = c.large_buffers;
    if (buffers.count != 0) pc.pool_slots = buffers.count;
    return make_pcap_port(pc);
  }
  if (e.kind == "dpdk") {
    DpdkPortConfig dc{.name = e.dpdk_port, .max_frame = c.max_frame, .large_slots = c.large_buffers};
    if (buffers.count != 0) dc.mbufs = buffers.count;
    dc.min_mbufs = buffers.min;
    return make_dpdk_port(dc);
  }
  if (e.kind == "null") return make_null_port();
  GeneratorConfig g;
  if (buffers.count != 0) g.pool_slots = buffers.count;
  g.max_packets = e.gen_packets_given || c.duration_s <= 0 ? e.gen_packets : 0;
  g.seed = e.gen_seed;
  g.flows = e.gen_flows;
  if (e.gen_zipf > 0) {
    g.popularity = Popularity::kZipf;
    g.zipf_s = e.gen_zipf;
  }
  if (e.gen_rate_pps > 0) {
    g.rate.mode = RateMode::kConstant;
    g.rate.rate = e.gen_rate_pps;
  }
  if (!e.gen_rate_steps.empty()) {
    auto steps = parse_rate_steps(e.gen_rate_steps);
    if (!steps) return steps.status();
    g.rate.mode = RateMode::kSteps;
    g.rate.steps = std::move(*steps);
  }
  if (!e.gen_rate_model.empty()) {
    if (e.gen_rate_model != "laps-set1" && e.gen_rate_model != "laps-set2")
      return error(Code::kInvalidArgument, "input.rate_model: '{}' is not laps-set1 or laps-set2 (LAPS Table IV)",
                   e.gen_rate_model);
    if (!(e.gen_rate_scale > 0))
      return error(Code::kInvalidArgument, "input.rate_scale: {} must be > 0", e.gen_rate_scale);
    g.rate.mode = RateMode::kHoltWinters;
    g.rate.services = e.gen_rate_model == "laps-set1" ? laps_table4_set1() : laps_table4_set2();
    g.rate.rate_scale = e.gen_rate_scale;
  }
  g.template_capture = e.gen_template;
  g.patterns = e.gen_patterns;
  g.pattern_match_rate = e.gen_match_rate;
  g.ttl_low_share = e.gen_ttl_low_share;
  g.ipv6_share = e.gen_ipv6_share;
  TrafficStep sizes;
  HPR_RETURN_IF_ERROR(parse_sizes(e.gen_sizes, sizes, "input.sizes"));
  g.size_mode = sizes.size_mode;
  g.size_bytes = sizes.size_bytes;
  g.size_min_bytes = sizes.size_min_bytes;
  g.size_max_bytes = sizes.size_max_bytes;
  if (!e.gen_traffic_steps.empty()) {
    auto steps = parse_traffic_steps(e.gen_traffic_steps, e.gen_match_rate);
    if (!steps) return steps.status();
    g.traffic_steps = std::move(*steps);
  }
  // IMIX frames (at most 1,514 bytes with tags) are not held against max_frame.
  if (uint32_t l = largest_frame(sizes, 0); l > c.max_frame)
    return error(Code::kInvalidArgument, "input.sizes (--sizes): {}-byte frames are above ports.max_frame ({} bytes)", l,
                 c.max_frame);
  for (const TrafficStep& st : g.traffic_steps)
    if (uint32_t l = largest_frame(st, 0); l > c.max_frame)
      return error(Code::kInvalidArgument,
                   "input.traffic_steps (--traffic-steps): {}-byte frames are above ports.max_frame ({} bytes)", l,
                   c.max_frame);
  if (line_rate && g.rate.mode != RateMode::kUnpaced) g.rate.max_backlog = g.pool_slots;
  return make_generator_port(g);
}

// A DPDK port's default mbufs for `workers` workers: each further queue's ring holds its own.
uint32_t dpdk_default_mbufs(uint16_t workers) { return DpdkPortConfig{}.mbufs + (workers - 1u) * 2048u; }

// The input's buffers (input_buffers, with the input kind's own default as the floor).
InputBuffers input_buffer_count(const RunConfig& c, uint16_t workers, const std::vector<DeviceInfo>& devices) {
  const uint32_t floor = c.input.kind == "dpdk"   ? dpdk_default_mbufs(workers)
                         : c.input.kind == "pcap" ? PcapPortConfig{}.pool_slots
                                                  : GeneratorConfig{}.pool_slots;
  const auto discrete = static_cast<size_t>(
      std::count_if(devices.begin(), devices.end(), [](const DeviceInfo& d) { return d.kind == DeviceKind::kDiscreteGpu; }));
  return {input_buffers(c, devices.size(), workers, floor, discrete), c.buffers == 0 ? floor : 0u};
}

// The ports of `workers` workers on one endpoint, view i for worker i: a DPDK port's own queues where it has them
// (rx: with RSS), else the one port spread by flow hash (rx) or shared under a lock (tx). `which`: one of
// c.more_outputs instead of c.output. `buffers`: the input's (input_buffer_count); outputs get none.
Result<std::vector<std::unique_ptr<Port>>> make_worker_ports(const RunConfig& c, bool is_input, uint16_t workers,
                                                             InputBuffers buffers = {},
                                                             const EndpointConfig* which = nullptr) {
  const EndpointConfig& e = which != nullptr ? *which : is_input ? c.input : c.output;
  if (workers > 1 && e.kind == "dpdk") {
    auto q = dpdk_queues(e.dpdk_port);
    if (!q) return q.status();
    DpdkPortConfig dc{.name = e.dpdk_port, .max_frame = c.max_frame, .large_slots = c.large_buffers};
    dc.mbufs = buffers.count != 0 ? buffers.count : dpdk_default_mbufs(workers);
    dc.min_mbufs = buffers.min;
    if (is_input && (c.rx_spread == "queues" || (c.rx_spread == "auto" && q->rss))) {
      if (q->max_rx < workers)
        return error(Code::kInvalidArgument,
                     "lanes.workers (--workers): {} workers need {} rx queues, but DPDK port '{}' has at most {}{}",
                     workers, workers, e.dpdk_port, q->max_rx,
                     c.rx_spread == "queues" ? " (net_pcap: one rx_pcap per queue); or --rx-spread hash" : "");
      dc.rx_queues = workers;
      return make_dpdk_ports(dc);
    }
    if (!is_input && q->max_tx >= workers) {
      dc.tx_queues = workers;
      return make_dpdk_ports(dc);
    }
  }
  auto one = make_endpoint(c, is_input, buffers, is_input && !c.backpressure, which);
  if (!one) return one.status();
  if (workers == 1) {
    std::vector<std::unique_ptr<Port>> v;
    v.push_back(std::move(*one));
    return v;
  }
  if (is_input) return make_spread_ports(std::move(*one), workers, c.backpressure);
  return make_shared_tx_ports(std::move(*one), workers);
}

// The run's cores in budget order (lanes.cores, else every core this process may run on): worker i takes the i-th,
// the control thread the one after the workers' (none left: it is not pinned). Errors: a core not allowed or named
// twice, more workers than cores (naming the settings).
Result<std::vector<int>> run_cores(const RunConfig& c) {
  const std::vector<int> allowed = allowed_cores();
  std::vector<int> cores;
  for (const std::string& s : c.cores) {
    const int core = std::stoi(s);  // digits only (validate)
    if (std::find(allowed.begin(), allowed.end(), core) == allowed.end())
      return error(Code::kInvalidArgument, "lanes.cores (--cores): core {} is not one this process may run on ({})",
                   core, fmt::join(allowed, ","));
    if (std::find(cores.begin(), cores.end(), core) != cores.end())
      return error(Code::kInvalidArgument, "lanes.cores (--cores): core {} is named twice", core);
    cores.push_back(core);
  }
  if (cores.empty()) cores = allowed;
  if (c.workers > cores.size())
    return error(Code::kInvalidArgument,
                 "lanes.workers (--workers): {} workers, but {} {} ({}): one busy worker per core; use --workers {} "
                 "or name more cores",
                 c.workers, cores.size(), c.cores.empty() ? "cores are available to this process" : "cores are named in lanes.cores",
                 fmt::join(cores, ","), cores.size());
  return cores;
}

// PoCL's CPU device runs work-groups on a thread pool of its own, one thread per core unless told otherwise: beside
// hpr's own busy threads that makes more pollers than cores, and they take turns. The budget gives PoCL the cores
// hpr's threads leave (at least one) through its environment (POCL_MAX_PTHREAD_COUNT; PoCL 5 reads
// POCL_CPU_MAX_CU_NUM), before the first OpenCL call of the process starts it; a count the user set is kept.
// Returns what the start line prints. hpr's busy threads: one per worker under run to completion; else the dispatcher, egress,
// each native lane and each device lane (one assumed for lanes.devices = all).
std::string budget_pocl_threads(const RunConfig& c, size_t cores) {
  if (c.devices.size() == 1 && c.devices[0] == "none") return "";
  const size_t device_lanes = c.devices.size() == 1 && c.devices[0] == "all" ? 1 : c.devices.size();
  const bool rtc = c.run_to_completion || c.workers > 1;  // each worker is one thread
  const size_t busy = rtc ? c.workers : 2 + c.native_lanes + device_lanes;
  const std::string what = rtc ? (c.workers > 1 ? fmt::format("{} ({} workers, run to completion)", busy, busy)
                                                                : std::string("1 (run to completion)"))
                                               : fmt::format("{} (dispatcher, egress, {} native, {} device lane{})",
                                                             busy, c.native_lanes, device_lanes,
                                                             device_lanes == 1 ? "" : "s");
  static std::string set_here;  // PoCL reads it once per process: a later run in this process keeps the first count
  for (const char* v : {"POCL_MAX_PTHREAD_COUNT", "POCL_CPU_MAX_CU_NUM"})
    if (const char* set = std::getenv(v); set != nullptr && *set != '\0')
      return fmt::format("core budget: {} cores; hpr's busy threads {}; PoCL CPU threads {} ({})", cores, what, set,
                         set == set_here ? "set by this process's first run" : fmt::format("set by {}", v));
  const std::string n = std::to_string(cores > busy ? cores - busy : 1);
  setenv("POCL_MAX_PTHREAD_COUNT", n.c_str(), 0);
  setenv("POCL_CPU_MAX_CU_NUM", n.c_str(), 0);
  set_here = n;
  return fmt::format("core budget: {} cores; hpr's busy threads {}; PoCL CPU threads {} (the cores left{})", cores,
                     what, n, cores > busy ? "" : ", at least one: more busy threads than cores, they take turns");
}

// [[neighbour]] → the ipv4 app's rewrite table; each output port's MAC from ports.macs or the port itself.
Status set_neighbours(const RunConfig& c, RunContext& ctx) {
  if (c.neighbours.empty()) return Status::ok();
  kernels::ipv4::Ipv4App* v4 = nullptr;  // the app, or the chain's ipv4
  for (uint32_t k = 0; k < ctx.app->chain_length() && v4 == nullptr; ++k)
    v4 = dynamic_cast<kernels::ipv4::Ipv4App*>(const_cast<kernels::App*>(&ctx.app->chain_app(k)));
  if (v4 == nullptr) return error(Code::kInvalidArgument, "neighbour: the neighbour table is for the ipv4 app");
  std::vector<kernels::ipv4::Neighbour> table(c.app_opts.ports);
  for (size_t i = 0; i < c.neighbours.size(); ++i) {
    const NeighbourConfig& nb = c.neighbours[i];
    Port& port = nb.port == 0 ? *ctx.tx : *ctx.more_tx.at(nb.port - 1);
    std::optional<kernels::ipv4::MacAddr> src;
    if (nb.port < c.port_macs.size() && !c.port_macs[nb.port].empty()) {
      auto m = kernels::ipv4::parse_mac(c.port_macs[nb.port]);
      if (!m)
        return error(Code::kInvalidArgument, "ports.macs (--port-mac): output port {}: {}", nb.port,
                     m.status().message());
      src = *m;
    } else {
      src = port.mac();
    }
    if (!src)
      return error(Code::kInvalidArgument,
                   "ports.macs (--port-mac): output port {} ({}) has no MAC of its own: give it in ports.macs "
                   "(neighbour[{}] sends by it)",
                   nb.port, port.describe(), i);
    auto dst = kernels::ipv4::parse_mac(nb.mac);
    if (!dst) return error(Code::kInvalidArgument, "neighbour[{}].mac: {}", i, dst.status().message());
    table.at(nb.next_hop) = {.port = static_cast<uint16_t>(nb.port), .dst_mac = *dst, .src_mac = *src};
  }
  return v4->set_neighbours(std::move(table));
}

}  // namespace

Result<std::string> resolve_workers(RunConfig& c) {
  if (!c.workers_auto) return std::string();
  c.workers_auto = false;
  c.workers = 1;
  if (c.input.kind != "dpdk")
    return std::string("1 (auto: the input has no RSS, and one reader spreading by flow hash is slower than one worker)");
  if (c.rx_spread == "hash") return std::string("1 (auto: ports.rx_spread = hash is slower than one worker)");
  HPR_RETURN_IF_ERROR(dpdk_init(c.eal_args.empty() ? dpdk_default_args(c.vdevs) : c.eal_args));
  auto q = dpdk_queues(c.input.dpdk_port);
  if (!q) return q.status();
  if (!q->rss && c.rx_spread != "queues")
    return fmt::format("1 (auto: DPDK port '{}' has no RSS; --workers N --rx-spread queues takes its queues as they are)",
                       c.input.dpdk_port);
  const size_t cores = c.cores.empty() ? allowed_cores().size() : c.cores.size();
  RunConfig more = c;
  more.workers = static_cast<uint32_t>(std::min<size_t>({cores, q->max_rx, kMaxWorkers}));
  if (more.workers <= 1) return fmt::format("1 (auto: DPDK port '{}' has one rx queue, or one core is available)", c.input.dpdk_port);
  if (Status st = validate_workers(more); !st.is_ok()) return fmt::format("1 (auto: {})", st.message());
  c.workers = more.workers;
  return fmt::format("{} (auto: one per core, each on an rx queue of DPDK port '{}')", c.workers, c.input.dpdk_port);
}

Result<std::unique_ptr<RunContext>> prepare_run(const RunConfig& c) {
  HPR_RETURN_IF_ERROR(validate(c));
  auto ctx = std::make_unique<RunContext>();
  kernels::AppOptions ao = c.app_opts;
  // AES keys are indexed by flow id, and the FlowTable rounds its capacity up to a power of two.
  ao.key_capacity = std::bit_ceil(c.flow_capacity);
  ao.max_frame_bytes = c.max_frame;  // every app takes every frame the ports hand out
  if (c.workers > 1 && !ao.iv_counter_start) {  // AES: the run's counter start, worker w's range from it (below)
    std::random_device rd;
    ao.iv_counter_start = (uint64_t{rd()} << 32) | rd();
  }
  for (const NeighbourConfig& nb : c.neighbours)  // validated: addresses parse
    if (uint32_t a = 0; !nb.address.empty() && kernels::ipv4::parse_ipv4(nb.address, a))
      ao.next_hop_addrs.emplace_back(a, nb.next_hop);
  auto app = kernels::make_app(c.app, ao);
  if (!app) return app.status();
  ctx->app = std::move(*app);
  ctx->app_options = ao;

  // The PoCL thread budget before the first OpenCL call (choose_devices) starts PoCL.
  const size_t budget_cores = c.cores.empty() ? allowed_cores().size() : c.cores.size();
  const std::string pocl_budget = budget_pocl_threads(c, budget_cores);
  // Devices first: a configuration that names a device that does not exist starts nothing.
  auto chosen_r = choose_devices(c.devices, c.kinds, "lanes.devices");
  if (!chosen_r) return chosen_r.status();
  const std::vector<DeviceInfo> chosen = std::move(*chosen_r);
  const bool pocl_chosen = std::any_of(chosen.begin(), chosen.end(), [](const DeviceInfo& d) {
    return d.kind == DeviceKind::kCpu && d.platform.find("Portable Computing Language") != std::string::npos;
  });

  bool needs_dpdk = c.input.kind == "dpdk" || c.output.kind == "dpdk" ||
                    std::any_of(c.more_outputs.begin(), c.more_outputs.end(), [](auto& e) { return e.kind == "dpdk"; });
  if (needs_dpdk) HPR_RETURN_IF_ERROR(dpdk_init(c.eal_args.empty() ? dpdk_default_args(c.vdevs) : c.eal_args));
  const auto workers = static_cast<uint16_t>(c.workers);
  std::vector<int> cores;
  int control_core = -1;
  if (workers > 1 || !c.cores.empty()) {
    auto cs = run_cores(c);
    if (!cs) return cs.status();
    cores = std::move(*cs);
    if (cores.size() > workers) control_core = cores[workers];
    cores.resize(workers);
    ctx->budget = fmt::format("{} on core{} {}; control thread {}",
                              workers > 1 ? fmt::format("workers {}", workers) : "worker", cores.size() > 1 ? "s" : "",
                              fmt::join(cores, ","),
                              control_core >= 0 ? fmt::format("on core {}", control_core)
                                                : fmt::format("not pinned (every core has a worker; it wakes every "
                                                              "{} ms)", Pipeline::kControlTickMs));
  }
  if (!pocl_budget.empty() && pocl_chosen) ctx->budget += (ctx->budget.empty() ? "" : "; ") + pocl_budget;
  const InputBuffers buffers = input_buffer_count(c, workers, chosen);
  ctx->buffers = fmt::format("input buffers {}{}", buffers.count,
                             c.buffers != 0 ? " (ports.buffers)"
                                            : " (what the lanes' batches hold at once; --buffers sets them)");
  auto rx = make_worker_ports(c, true, workers, buffers);
  if (!rx) return rx.status();
  auto tx = make_worker_ports(c, false, workers);
  if (!tx) return tx.status();
  std::vector<Port*> rxv;
  std::vector<std::vector<Port*>> txv(workers);  // worker w's output ports, output 0 first
  for (auto& p : *rx) rxv.push_back(p.get());
  for (uint16_t w = 0; w < workers; ++w) txv[w].push_back((*tx)[w].get());
  ctx->rx = std::move(rx->front());
  ctx->tx = std::move(tx->front());
  for (size_t i = 1; i < rx->size(); ++i) ctx->worker_ports.push_back(std::move((*rx)[i]));
  for (size_t i = 1; i < tx->size(); ++i) ctx->worker_ports.push_back(std::move((*tx)[i]));
  for (const EndpointConfig& e : c.more_outputs) {
    auto more = make_worker_ports(c, false, workers, {}, &e);
    if (!more) return more.status();
    for (uint16_t w = 0; w < workers; ++w) txv[w].push_back((*more)[w].get());
    ctx->more_tx.push_back(std::move(more->front()));
    for (size_t i = 1; i < more->size(); ++i) ctx->worker_ports.push_back(std::move((*more)[i]));
  }
  HPR_RETURN_IF_ERROR(set_neighbours(c, *ctx));

  std::vector<std::unique_ptr<Pipeline>> workers_made;
  PipelineConfig pc;
  pc.flow_capacity = c.flow_capacity;
  pc.flow_idle_ns = static_cast<uint64_t>(c.flow_idle_s * 1e9);
  pc.backpressure = c.backpressure;
  pc.run_to_completion = c.run_to_completion || !c.app_place.empty();  // app.place: validated not off
  pc.balancer = c.balancer;
  pc.service_lanes = c.service_lanes;
  if (auto names = kernels::chain_apps(c.app); names && !c.app_place.empty())  // validated
    for (const std::string& name : *names) {
      auto it = c.app_place.find(name);
      pc.app_lanes.push_back(it != c.app_place.end() ? it->second : std::vector<std::string>{});
    }
  if (kernels::runs_app(c.app, c.app_opts, "ipv4") && c.icmp_time_exceeded) {
    in_addr a{};
    if (inet_pton(AF_INET, c.router_addr.c_str(), &a) != 1)
      return error(Code::kInvalidArgument, "app.router_addr: '{}' is not an IPv4 address", c.router_addr);
    uint32_t router = ntohl(a.s_addr);
    kernels::ipv4::Ipv6Addr router6{};
    if (!kernels::ipv4::parse_ipv6(c.router_addr6, router6))
      return error(Code::kInvalidArgument, "app.router_addr6: '{}' is not an IPv6 address", c.router_addr6);
    pc.on_drop_reason = DropReason::kTtlExceeded;
    pc.on_drop = [router, router6](const Packet& p, std::vector<uint8_t>& scratch) -> std::span<const uint8_t> {
      scratch.resize(2048);
      auto n = p.l3 == L3::kIPv6 ? kernels::ipv4::build_icmpv6_time_exceeded(p, router6, scratch)
                                 : kernels::ipv4::build_icmp_time_exceeded(p, router, scratch);
      if (!n) return {};
      return {scratch.data(), *n};
    };
  }
  pc.shaping = c.shaping;
  pc.log_path = c.log_path;
  pc.max_duration_ns = static_cast<uint64_t>(c.duration_s * 1e9);
  pc.status_interval_ns = static_cast<uint64_t>(c.status_interval_s * 1e9);
  // The ipv4 app checks it itself; the parser checks it where a packet may reach no ipv4 app (a service without it).
  pc.parse.verify_ipv4_checksum = !kernels::runs_app(c.app, c.app_opts, "ipv4", true);
  auto lane_cfg = [&](const std::string& name, bool discrete) {
    LaneConfig lc;
    lc.name = name;
    lc.batch_size = c.batch;
    lc.max_batch = lane_max_batch(c, discrete);
    lc.batch_timeout_ns = c.batch_timeout_us * 1000;
    // A discrete GPU's larger batches (max_batch_discrete): its queue holds two of them, as hpr run makes every lane's.
    lc.queue_size = lc.max_batch > lane_max_batch(c, false) ? std::max(c.queue, 2 * lc.max_batch) : c.queue;
    for (const auto& [pat, n] : c.fail_after)
      if (name.find(pat) != std::string::npos) lc.fail_after_batches = n;
    for (const auto& [pat, us] : c.slow_lane_us)
      if (name.find(pat) != std::string::npos) lc.slow_batch_ns = us * 1000;
    lc.slow_from_ns = static_cast<uint64_t>(c.slow_from_s * 1e9);
    lc.slow_until_ns = static_cast<uint64_t>(c.slow_until_s * 1e9);
    return lc;
  };
  auto weigh = [&](LaneConfig& lc, double dflt) {
    lc.weight = dflt;
    for (const auto& [pat, w] : c.lane_weights)
      if (lc.name.find(pat) != std::string::npos) lc.weight = w;
  };
  const fault::ClFault cl_fault = fault::cl_fault_from_env();
  constexpr uint32_t kCheckPackets = 256, kCheckPerFile = 8;  // the start-up check's sample: ~30 captures
  std::optional<CheckSample> sample;
  for (const auto& d : chosen) {
    if (const std::string why = ctx->app->device_refusal(); !why.empty()) {
      spdlog::info("device '{}' left out: {}", d.name, why);
      ctx->left_out.push_back(d.name + ": " + why);
      continue;
    }
    auto prog = cl_fault.point == fault::ClPoint::kBuild && cl_fault.applies_to(d.name)
                    ? Result<std::shared_ptr<kernels::AppProgram>>(
                          error(Code::kUnavailable, "fault injected (HPR_FAULT_CL): clBuildProgram failed: CL_BUILD_PROGRAM_FAILURE"))
                    : kernels::AppProgram::create(*ctx->app, d.device);
    if (!prog) {
      // A device that cannot build the program or start is left out; the rest go on.
      spdlog::warn("device '{}' left out: {}", d.name, prog.status().message());
      ctx->left_out.push_back(d.name + ": " + prog.status().message());
      continue;
    }
    // A device that builds the program but computes wrong results is left out too (pipeline/device_check.hpp).
    if (!sample)
      sample = load_check_sample(data_path("pcap/ndpi"), kCheckPackets, kCheckPerFile, c.max_frame);
    // Memory path: mapped where the device shares host memory, copied through pinned staging where it does
    // not or where its kind is dgpu (a kind override, [devices.kinds], also selects the discrete path).
    const bool unified = d.host_unified && d.kind != DeviceKind::kDiscreteGpu;
    if (std::string why = check_device_for_run(c.app, ao, *ctx->app, *prog, unified, *sample); !why.empty()) {
      spdlog::warn("device '{}' left out: {} (hpr selftest shows every device and app)", d.name, why);
      ctx->left_out.push_back(d.name + ": " + why);
      continue;
    }
    LaneSpec s;
    s.kind = LaneSpec::Kind::kOpenCL;
    s.program = std::move(*prog);
    s.host_unified = unified;
    s.lane = lane_cfg(fmt::format("cl{}:{}", d.index, d.name), d.kind == DeviceKind::kDiscreteGpu);
    weigh(s.lane, d.compute_units);
    s.in_flight = c.in_flight;
    // Workers share one executor on the device (shared_device.hpp) where the app allows it and the lane injects no
    // fault of its own (a failing or slow lane is one worker's). auto: not on a CPU device, whose batches cost
    // little to launch and run on the workers' own cores (measured: docs/pipeline.md).
    const bool share = c.share_devices == "on" || (c.share_devices == "auto" && d.kind != DeviceKind::kCpu);
    if (workers > 1 && share && SharedDevice::can_share(*ctx->app) && !s.lane.injects_faults() && c.app_place.empty())
      s.shared = std::make_shared<SharedDevice>(workers);
    pc.lanes.push_back(std::move(s));
    ctx->devices.push_back(d);
  }
  for (uint32_t i = 0; i < c.native_lanes; ++i) {
    LaneSpec s;
    s.kind = LaneSpec::Kind::kNative;
    s.lane = lane_cfg(fmt::format("native{}", i), false);
    s.lane.run_what_arrived = c.native_run_what_arrived;
    weigh(s.lane, 1);
    pc.lanes.push_back(std::move(s));
  }
  if (pc.lanes.empty())
    return error(Code::kUnavailable, "no lane could be started (lanes.native = 0, and every device was left out: {})",
                 ctx->left_out.empty() ? std::string("none chosen") : fmt::format("{}", fmt::join(ctx->left_out, "; ")));
  if (std::none_of(pc.lanes.begin(), pc.lanes.end(), [](const LaneSpec& s) { return s.lane.weight > 0; }))
    return error(Code::kInvalidArgument, "lanes.weights: every lane has weight 0, so no lane would take a flow");
  if (c.app_place_learned) {
    std::vector<std::string> names;
    for (const auto& l : pc.lanes) names.push_back(l.lane.name);
    LearnedPlacement lp = place_learned(c, ctx->devices, names);
    spdlog::info("app.place learned: {}", lp.text);
    ctx->placed_from = std::move(lp.text);
    if (!lp.app_lanes.empty()) {
      pc.app_lanes = std::move(lp.app_lanes);
      pc.run_to_completion = true;
      for (size_t i = 0; i < pc.lanes.size(); ++i) {
        pc.lanes[i].lane.weight = lp.weights[i];
        pc.lanes[i].shared.reset();  // stages run on devices of their own (Pipeline::create)
      }
    }
  }
  pc.port_map.assign(c.port_map.begin(), c.port_map.end());
  if (!cores.empty()) pc.cpu = cores[0];
  pc.control_cpu = control_core;
  for (uint16_t w = 1; w < workers; ++w) {
    // The other workers: the same lanes under their own names, their own flow table, pinned to their own core.
    PipelineConfig pw = pc;
    for (auto& l : pw.lanes) l.lane.name = fmt::format("w{}:{}", w, l.lane.name);
    pw.cpu = cores[w];
    pw.run_to_completion = true;
    pw.log_path.clear();  // its lanes log into worker 0's result log (Pipeline::add_worker)
    std::shared_ptr<const kernels::App> app = ctx->app;
    if (ctx->app->keeps_flow_state()) {
      // AES keys by flow id: an app of its own with the run's key epoch, and IV counters from a range of its own
      // (the run's start + w × 2^48), so no two workers hand out one value (docs/crypto.md).
      for (const auto& [k, v] : ctx->app->summary_info())
        if (k == "key_epoch") ao.key_epoch = v;
      ao.iv_counter_start = *ao.iv_counter_start + (uint64_t{1} << 48);  // worker w: the start + w × 2^48
      auto a = kernels::make_app(c.app, ao);
      if (!a) return a.status();
      ctx->worker_apps.push_back(std::move(*a));
      app = ctx->worker_apps.back();
      // Its device lanes: the same built program with this app's tables (its keys, by its own flow ids).
      for (auto& l : pw.lanes) {
        if (l.kind != LaneSpec::Kind::kOpenCL) continue;
        auto prog = l.program->with_tables_of(*app);
        if (!prog) return error(prog.status().code(), "lanes.workers (--workers): worker {}, lane {}: {}", w, l.lane.name,
                                prog.status().message());
        l.program = std::move(*prog);
      }
    }
    auto wp = Pipeline::create(std::move(pw), app, *rxv[w], txv[w]);
    if (!wp) return wp.status();
    workers_made.push_back(std::move(*wp));
  }
  if (workers > 1) {
    for (auto& l : pc.lanes) l.lane.name = "w0:" + l.lane.name;
    pc.run_to_completion = true;
  }
  auto p = Pipeline::create(std::move(pc), ctx->app, *ctx->rx, txv[0]);
  if (!p) return p.status();
  ctx->pipeline = std::move(*p);
  // Every worker has a lane on each device (its own queue and buffers there): the learner and `hpr ctl` address lane
  // i of every worker alike, so a device one worker could not open is a failed start, not a left-out lane.
  for (size_t w = 0; w < workers_made.size(); ++w)
    if (workers_made[w]->lane_count() != ctx->pipeline->lane_count())
      return error(Code::kUnavailable,
                   "lanes.workers (--workers): workers 0 and {} could not start the same lanes ({}); give fewer workers "
                   "or --devices none",
                   w + 1, fmt::join(workers_made[w]->left_out().empty() ? ctx->pipeline->left_out() : workers_made[w]->left_out(), "; "));
  for (auto& w : workers_made) ctx->pipeline->add_worker(std::move(w));
  // Devices whose lane could not start (queues, buffers) are left out too.
  for (const auto& why : ctx->pipeline->left_out()) {
    ctx->left_out.push_back(why);
    std::erase_if(ctx->devices, [&](const DeviceInfo& d) { return why.starts_with(fmt::format("cl{}:", d.index)); });
  }
  return ctx;
}

}  // namespace hpr
