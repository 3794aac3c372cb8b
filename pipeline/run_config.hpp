#pragma once
// Configuration of `hpr run`: a TOML file (see docs/config.md and config/hpr.toml) that command-line
// flags override. Every error names the setting and says what is accepted.
#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "hpr/status.hpp"
#include "kernels/registry.hpp"
#include "pipeline/pipeline.hpp"
#include "pipeline/power.hpp"
#include "runtime/frame_pools.hpp"
#include "runtime/opencl/devices.hpp"
#include "runtime/port.hpp"
#include "runtime/ports/generator.hpp"
#include "runtime/ports/generator_profile.hpp"

namespace hpr {

struct EndpointConfig {
  std::string kind;      // input: pcap | dpdk | generator; output: pcap | dpdk | null
  std::string pcap;      // capture path
  uint32_t loops = 1;    // input pcap: times to read the file (0: forever)
  std::string dpdk_port; // ethdev name (e.g. net_pcap0)
  // generator (input)
  // Packets to send (0: unlimited). Not given (gen_packets_given) and run.duration_s given: unlimited, the duration
  // ends the run (a learning run of `--duration 10` had ended after 0.4 s at 1,000,000 packets).
  uint64_t gen_packets = 1'000'000;
  bool gen_packets_given = false;
  double gen_rate_pps = 0;       // 0: as fast as possible
  uint32_t gen_flows = 10'000;
  double gen_zipf = 1.0;         // 0: uniform
  std::string gen_sizes = "imix";// imix | fixed:N | uniform:A-B
  uint64_t gen_seed = 1;
  std::string gen_template;          // capture whose flows' headers become the generator's flows
  std::vector<std::string> gen_patterns;  // byte strings planted in payloads (DPI tests)
  double gen_match_rate = 0;         // fraction of packets carrying one planted pattern
  std::string gen_traffic_steps;     // "DUR_S:SIZES[@MATCH],..." size mix / match rate over time, cycled
  double gen_ttl_low_share = 0;      // fraction of packets sent with TTL 1
  double gen_ipv6_share = 0;         // fraction of synthetic flows that are IPv6
  std::string gen_rate_steps;        // "dur_s:pps,dur_s:pps,..." offered-rate steps (overrides rate_pps)
  // Holt-Winters offered rate (LAPS eq. 1) with Table IV's set 1 (under-load) or set 2 (overload) of four
  // services, in Mpps × gen_rate_scale; overrides rate_pps and rate_steps. Empty: off.
  std::string gen_rate_model;  // "" | laps-set1 | laps-set2
  double gen_rate_scale = 1.0;
};

// The longest run.duration_s (365 days), checked by the settings table and by validate().
inline constexpr double kMaxRunSeconds = 31'536'000;

// [[neighbour]] (docs/pipeline.md "Neighbour table"): a route's next hop → the output port it leaves by and the
// neighbour's MAC, written as the frame's destination (source: the output port's MAC), as DPDK l3fwd does.
struct NeighbourConfig {
  uint32_t next_hop = 0;  // a route's next hop (ipv4 app: < app.ports)
  uint32_t port = 0;      // output port index (the order of --out / output.ports)
  std::string mac;        // "aa:bb:cc:dd:ee:ff"
  std::string address;    // optional next-hop IPv4 address a.b.c.d that text route files may name for next_hop
};

struct RunConfig {
  EndpointConfig input{.kind = "generator"};
  EndpointConfig output{.kind = "null"};  // output port 0
  // Output ports 1.. (a repeated --out, or output.ports with more than one entry); empty: one output port.
  std::vector<EndpointConfig> more_outputs;
  // [ports] map: the app's out_port i (ipv4: the next hop) → output port map[i mod size]; empty: i mod outputs.
  std::vector<uint32_t> port_map;
  // [ports] macs: each output port's MAC, for the Ethernet rewrite of [[neighbour]]; "" or missing: the DPDK
  // port's own MAC (rte_eth_macaddr_get); other ports need one here when the neighbour table sends to them.
  std::vector<std::string> port_macs;
  std::vector<NeighbourConfig> neighbours;  // [[neighbour]]; empty: frames leave with their Ethernet addresses
  std::vector<std::string> eal_args;  // DPDK EAL arguments; empty: dpdk_default_args(vdevs)
  // [ports]: the largest frame a port takes (longer: frame_too_long) and every app handles, and how many buffers
  // of that size hold frames longer than a small (2048-byte) slot (runtime/frame_pools.hpp).
  uint32_t max_frame = kDefaultMaxFrame;
  uint32_t large_buffers = kDefaultLargeSlots;
  // ports.buffers: buffers of the input port (DPDK mbufs, pcap or generator slots); 0: as many as the lanes can
  // hold at once (input_buffers), so that a device lane's batches can fill.
  uint32_t buffers = 0;
  std::vector<std::string> vdevs;

  std::string app = "ipv4";
  kernels::AppOptions app_opts;
  std::string log_path;
  bool icmp_time_exceeded = true;        // ipv4: answer TTL <= 1 with ICMP Time Exceeded from the host
  std::string router_addr = "192.0.2.1"; // ipv4: source address of those ICMP messages
  std::string router_addr6 = "2001:db8::1";  // ipv4 with IPv6 routes: source address of ICMPv6 Time Exceeded

  std::vector<std::string> devices = {"all"};  // "all", "none", or device name substrings
  KindOverrides kinds;
  uint32_t native_lanes = 1;
  uint32_t batch = 256;
  uint64_t batch_timeout_us = 100;
  uint32_t queue = 4096;
  uint32_t in_flight = 2;
  uint32_t max_batch = 0;            // largest batch the scheduler may set (0: batch)
  // A discrete GPU's lanes' largest batch where it is larger than max_batch (0: max_batch): learning's
  // kLearnMaxBatchDiscrete when lanes.max_batch is not given (set by hpr run, not a setting).
  uint32_t max_batch_discrete = 0;
  std::string balancer = "whrw";     // rr crc16 crc32 hrw whrw ahrw subflow fcfs afs laps
  // Workers (issue 12): threads that each receive, classify, run the app and transmit, one per core, each with a lane
  // on every device. Ports with RSS give each worker an rx queue, others are spread by flow hash (spread_port.hpp).
  // workers_auto (lanes.workers = auto, the command's default): resolve_workers() sets `workers` before the run.
  uint32_t workers = 1;
  bool workers_auto = true;
  std::vector<std::string> cores;    // the workers' cores in order; empty: the cores this process may run on
  // The workers' lanes on one OpenCL device share its executor (pipeline/shared_device.hpp) where the app allows:
  // on | off | auto (GPUs and accelerators: on; CPU devices, which run on the workers' own cores: off).
  std::string share_devices = "auto";
  std::string rx_spread = "auto";    // auto | hash | queues (settings.cpp ports.rx_spread)
  // A full lane queue makes the dispatcher wait (the input port's ring fills; a DPDK port then counts
  // its misses) instead of dropping the packet as queue_full. Off: drop and count.
  bool backpressure = true;
  // One thread for rx, classification, every lane and tx (PipelineConfig::run_to_completion).
  bool run_to_completion = false;
  // Set when the file or a flag gave run_to_completion; `hpr run` otherwise turns it on by itself for a
  // run of one native lane and no device (auto_run_to_completion).
  bool run_to_completion_given = false;
  // Native lanes close a batch as soon as their queue is empty (LaneConfig::run_what_arrived); off: they
  // wait for `batch` packets or `batch_timeout_us`, as device lanes do.
  bool native_run_what_arrived = true;
  // [lanes.weights]: lane name substring → share of new flows (>= 0). Default: an OpenCL lane weighs
  // its device's compute units, a native lane 1.
  std::map<std::string, double> lane_weights;
  // service[N].lanes: the lanes service N's flows may take (lane name substrings; empty: any lane, as the balancer
  // and the weights say). One list per [[service]], or none.
  std::vector<std::vector<std::string>> service_lanes;
  // [app.place] / --place-app: a chain's app → the lanes it runs on (lane name substrings); the apps not named run on
  // the lanes no app names (PipelineConfig::app_lanes; docs/chains.md "Placement per app").
  std::map<std::string, std::vector<std::string>> app_place;
  // app.place = "learned" / --place-app learned: each app placed from its own learned state at the start
  // (pipeline/place_learned.hpp); app_place is then empty.
  bool app_place_learned = false;
  std::map<std::string, uint64_t> fail_after;  // fault injection: lane name substring → batch
  std::map<std::string, uint64_t> slow_lane_us;  // fault injection [faults.slow_lane_us]: lane substring → µs added per batch
  double slow_from_s = 0, slow_until_s = 0;     // [faults] when the slow lanes are slow (seconds into the run; until 0: to the end)

  ShapingConfig shaping;            // [shaper]; rate given in bits/s in the file and flags
  uint32_t flow_capacity = 65536;
  double flow_idle_s = 30;

  std::string prometheus;      // "127.0.0.1:9464"; empty: off
  std::string ctl_path;        // control socket (control_socket.hpp); "": default_control_path(); "none": off
  double status_interval_s = 1;
  std::string summary_json;    // path; empty: none
  double duration_s = 0;

  PowerConfig power;               // [power] rapl_root, rapl, nvml
  // [adaptive]. With a table (written by `hpr profile`): the table-driven scheduler (pipeline/adaptive_control.hpp).
  // Without one: learning mode (pipeline/learn_control.hpp) unless adapt_static, [lanes.weights] is given, or the
  // run has one native lane and no device (nothing to choose; learning_mode()).
  std::string adapt_table;
  bool adapt_static = false;       // --static: the fixed weights of [lanes.weights] or the defaults
  std::string adapt_state_dir;     // learning mode's saved state; "": default_state_dir(); "none": not kept
  std::string adapt_policy = "throughput";  // energy | latency | throughput | latency-target
  double adapt_latency_target_us = 0;
  bool adapt_allow_mismatch = false;
  double adapt_quantum_ms = 40;
  std::string adapt_csv;           // per-quantum CSV; empty: none
  bool adapt_learn = true;         // Step 3 (batch search, table updates); false: table lookups only
};

// Errors: kNotFound (file), kInvalidArgument naming the key and the accepted values.
Result<RunConfig> load_run_config(const std::string& path);
Status validate(const RunConfig& c);
inline constexpr uint32_t kMaxWorkers = 64;
Status validate_workers(const RunConfig& c);  // lanes.workers and what it rules out (part of validate)
// lanes.workers = auto: one worker per core the run may use where the input is a DPDK port with RSS and enough rx
// queues (each worker its own queue); else 1, since one reader spreading a port without RSS by flow hash forwards
// less than one worker does (docs/pipeline.md "Workers"), and also where a setting rules workers out. Initialises
// DPDK to ask a DPDK input for its queues. Returns the start line's words ("1 (auto: ...)"), empty when the count was
// given. Errors: those of DPDK's initialisation and of an unknown input port.
Result<std::string> resolve_workers(RunConfig& c);
// Without an explicit lanes.run_to_completion, a run of one native lane and no OpenCL device runs to completion
// (one thread has the whole path, so no packet waits for another thread to be scheduled: light load, or a core
// shared with another process), and so does every run on a host of 2 cores or fewer (`host_cores`, 0: unknown),
// where the dispatcher, egress and lane threads would take turns on the cores: measured here, learning over all
// lanes forwarded 4.56 Mpps run to completion against 3.07 threaded, with a third of the per-quantum noise.
// Returns why it turned the mode on, or nullptr.
const char* auto_run_to_completion(RunConfig& c, unsigned host_cores);
// Whether `hpr run` learns lane shares and batch sizes online (see RunConfig::adapt_static).
bool learning_mode(const RunConfig& c);
// The largest batch learning mode may set when lanes.max_batch is not given: on CPU devices and integrated GPUs, and
// on a discrete GPU, whose batch pays for a copy each way and a launch (on an H200, aes and dpi ran fastest at 8,192:
// docs/gpu/nvidia-h200/README.md).
inline constexpr uint32_t kLearnMaxBatch = 4096, kLearnMaxBatchDiscrete = 16384;
// A discrete GPU's first batch in learning mode (lanes.batch where that is larger): on the H200 every app ran faster
// with each doubling from 256 to 8,192. From 2,048 the search stalled there: 4,096 gained about 5 % a step, within
// the spreads of the first second, while 8,192 delivered 1.2x (aes; docs/gpu/nvidia-h200/README.md, "Learning on the
// GPU alone"). At light load a batch closes at its timeout (lanes.timeout_us) whatever its size.
inline constexpr uint32_t kLearnStartBatchDiscrete = 8192;
// The largest batch of one lane (its buffers, and the bound of the scheduler's search): lanes.max_batch or
// lanes.batch, and for a lane on a discrete GPU (`discrete`) at least max_batch_discrete.
inline uint32_t lane_max_batch(const RunConfig& c, bool discrete) {
  return std::max({c.batch, c.max_batch, discrete ? c.max_batch_discrete : 0u});
}
// The batch a lane starts at: lanes.batch, and for a discrete GPU's lane in learning mode (max_batch_discrete set)
// kLearnStartBatchDiscrete where that is larger, within lane_max_batch.
inline uint32_t lane_start_batch(const RunConfig& c, bool discrete) {
  if (!discrete || c.max_batch_discrete == 0) return c.batch;
  return std::min(std::max(c.batch, kLearnStartBatchDiscrete), lane_max_batch(c, true));
}
// ports.buffers when it is 0: the input's small buffers for what `workers` workers' lanes can hold at once (each
// of `device_lanes` device lanes in_flight batches and the one it fills, each native lane two), of the largest
// batch, plus each worker's rx burst and ring; at least `floor` (the port's own default), at most kMaxAutoBuffers.
// A discrete GPU's lanes count their start batch (lane_start_batch), not learning's bound: every packet held is a
// buffer that waits, and on an H200 the pool for 16,384 (51,200) ran 0.74x of the one for 8,192 at batch 8,192
// (aes; latency p50 21 ms against 6-10 ms), while learning with the smaller pool still tries 16,384 (its batches then
// close at their timeout) (docs/gpu/nvidia-h200/README.md, "The input's buffers").
// Measured on an H200 (docs/pipeline.md, "Buffers"): with DPDK's 8,191 mbufs, of which net_pcap's infinite_rx
// keeps the capture, a GPU lane's batches closed at 1,920 packets whatever lanes.batch said.
// 2,048-byte buffers: ~160 MB of mbufs, within the EAL's default -m 512 beside an output port's pool (on an H200
// machine, 131,072 beside a 38,911-mbuf net_null pool did not fit; a DPDK port halves a size that does not fit).
inline constexpr uint32_t kMaxAutoBuffers = 65536;
// `discrete_lanes` of the device lanes are on discrete GPUs (their batches: lane_max_batch(c, true)).
uint32_t input_buffers(const RunConfig& c, size_t device_lanes, uint16_t workers, uint32_t floor,
                       size_t discrete_lanes = 0);
// "dur_s:pps,dur_s:pps" → generator rate steps. Errors: kInvalidArgument naming the bad item.
Result<std::vector<RateStep>> parse_rate_steps(const std::string& spec);
// "imix" | "fixed:N" | "uniform:A-B" into step's size fields; kInvalidArgument naming `setting`.
Status parse_sizes(const std::string& spec, TrafficStep& step, std::string_view setting);
// input.traffic_steps: "DUR_S:SIZES[@MATCH],..." (e.g. "5:imix,5:fixed:1500@0.3"); a step without @MATCH keeps
// input.match_rate. kInvalidArgument naming the setting and the step.
Result<std::vector<TrafficStep>> parse_traffic_steps(const std::string& spec, double default_match_rate);

// Everything a run owns, built from a RunConfig.
struct RunContext {
  std::unique_ptr<Port> rx, tx;  // tx: output port 0
  std::vector<std::unique_ptr<Port>> more_tx;  // output ports 1..
  std::shared_ptr<kernels::App> app;
  kernels::AppOptions app_options;         // what the app was made with (a live reload makes the next from them)
  std::vector<DeviceInfo> devices;        // the devices that got a lane
  std::vector<std::string> left_out;      // devices that failed to build or start, with reasons
  std::vector<std::unique_ptr<Port>> worker_ports;  // the other workers' rx and tx views (rx, tx: worker 0's)
  std::vector<std::shared_ptr<kernels::App>> worker_apps;  // apps that keep per-flow state: one per other worker
  std::string buffers;  // "input buffers 34816 (...)" (start line; a DPDK pool that does not fit warns)
  std::string placed_from;  // app.place = "learned": what was placed from what (start line), else ""
  std::string budget;  // "workers 2 on cores 0,1", "core budget: 2 cores; ...; PoCL CPU threads 1 ..." (start line)
  std::unique_ptr<Pipeline> pipeline;     // worker 0; the others run beside it (Pipeline::add_worker)
};

// Errors: bad configuration (kInvalidArgument), missing files (kNotFound), a device named in
// `devices` that does not exist (kNotFound listing the devices), no lane at all (kUnavailable).
Result<std::unique_ptr<RunContext>> prepare_run(const RunConfig& c);

}  // namespace hpr
