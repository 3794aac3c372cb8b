#pragma once
// The data path of `hpr run` (architecture.md): rx → classify → dispatch to lanes → egress.
//
// Threads: one dispatcher (rx, parse, flow table, lane choice), one per lane (batch builder and
// executor), one egress (per-flow order check, tx, buffer release), and the caller's thread for
// control (status line, telemetry) until the run ends. In run-to-completion mode the dispatcher
// also polls the lanes and egress itself (the same code, on one thread); with one native lane and no
// device it runs the app in place on each rx burst instead (worker.cpp: no queue or copy between).
//
// Order: a flow is bound to one lane and moves only when none of its packets is queued or in
// flight, so egress sees each flow's packets in sequence; it checks the sequence numbers the
// dispatcher assigned and counts any reorder (must stay 0).
//
// Books: every packet the rx port took in is transmitted or counted under one DropReason:
//   rx_packets + rx_too_long + rx_pool_empty == tx_packets + sum(drops).
#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "hpr/atomic_file.hpp"
#include "kernels/app.hpp"
#include "pipeline/app_swap.hpp"
#include "runtime/flow.hpp"
#include "runtime/parser.hpp"
#include "pipeline/counters.hpp"
#include "pipeline/lane.hpp"
#include "pipeline/packet_store.hpp"
#include "pipeline/summary.hpp"
#include "runtime/port.hpp"
#include "scheduler/balance/balancer.hpp"
#include "scheduler/shaper/shaper.hpp"

namespace hpr {

// One flow of `hpr ctl flows top` (flows_top.cpp).
struct TopFlow {
  FlowKey key;  // canonical (endpoints ordered)
  uint64_t packets = 0, bytes = 0;
  uint64_t idle_ns = 0;      // since its last packet
  uint8_t lane = 0xff;       // index into the pipeline's lanes; 0xff: none yet
  std::string lane_name;     // filled in by Pipeline::top_flows
};
// The n flows of `t` with the most bytes, most first (ties: fewer packets, then the key). A scan of every id of the
// table (O(capacity), a bounded heap of n): the dispatcher's cost of one `flows top` request. In slices: the ids
// [from, to) into `heap` (the n largest so far, a heap), then top_flows_sort(heap).
std::vector<TopFlow> top_flows(const FlowTable& t, size_t n, uint64_t now_ns);
void top_flows_scan(const FlowTable& t, size_t n, uint64_t now_ns, uint32_t from, uint32_t to,
                    std::vector<TopFlow>& heap);
void top_flows_sort(std::vector<TopFlow>& heap);
// "tcp 10.0.0.1:80 <-> 10.0.0.2:5555", "udp [2001:db8::1]:53 <-> [2001:db8::2]:4000", "proto 47 10.0.0.1 <-> 10.0.0.2".
std::string flow_key_text(const FlowKey& k);

class SharedDevice;
struct LaneSpec {
  enum class Kind { kNative, kOpenCL } kind = Kind::kNative;
  std::shared_ptr<kernels::AppProgram> program;  // OpenCL: the app built for the device
  bool host_unified = true;                      // OpenCL: map instead of copy
  // OpenCL with workers: the device's executor, shared by every worker's lane on it (shared_device.hpp); null: the
  // lane's own.
  std::shared_ptr<SharedDevice> shared;
  LaneConfig lane;
  uint32_t in_flight = 2;
};

// Egress shaping (token-bucket-parallel-heaps.txt: event-driven refill on a heap). Off by default.
enum class ShapeBy : uint8_t {
  kFlow,   // one token bucket per flow (the default per-flow rate)
  kPort,   // one per output port the app chose
  kClass,  // one per ShapingClass, each with its own rate and burst
};

// A traffic class (ShapeBy::kClass): every packet that matches shares the class's one bucket. A
// packet matches when its DSCP is in `dscp` and its output port is in `ports`; an empty list matches
// anything (a class with both empty matches every packet: the default class, listed last). The first
// class that matches wins; a packet that matches none leaves unshaped (counted as unclassified).
struct ShapingClass {
  std::string name;
  std::vector<uint8_t> dscp;    // 0..63: upper 6 bits of the IPv4 TOS / IPv6 traffic class
  std::vector<uint16_t> ports;  // output port chosen by the app (ipv4: the route's port)
  std::vector<std::string> services;  // [[service]] names: the packets their chains passed on
  uint64_t rate_bytes_per_s = 0;
  uint32_t burst_bytes = 0;  // >= the largest frame (ports.max_frame)
  uint32_t alpha_bytes = 0;  // reschedule threshold (alpha_min when adaptive); 0: burst / 4
};

struct ShapingConfig {
  bool enabled = false;
  ShapeBy by = ShapeBy::kFlow;
  uint64_t rate_bytes_per_s = 0;     // committed rate of each bucket (kFlow, kPort)
  uint32_t burst_bytes = 0;          // bucket size (>= the largest frame)
  uint32_t alpha_bytes = 0;          // reschedule threshold (alpha_min when adaptive; 0: burst / 4)
  uint16_t queue_packets = 64;       // packets that may wait per bucket; more → shaper_queue_full
  uint32_t waiting_packets = 16384;  // packets that may wait in all buckets together
  uint64_t drain_timeout_ns = 10'000'000'000ull;  // at stop: wait this long, then count shaper_drain
  std::vector<ShapingClass> classes;              // kClass
  shaper::AdaptiveAlphaConfig adaptive;           // eq. 14: alpha grows by gamma under repeated reschedules
};

struct PipelineConfig {
  ShapingConfig shaping;
  std::vector<LaneSpec> lanes;
  // Balancer policy by name (scheduler/balance: rr crc16 crc32 hrw whrw ahrw subflow fcfs afs laps),
  // its settings (lanes, weights and flow slots are filled in from the lanes and the flow table).
  std::string balancer = "whrw";
  balance::BalancerConfig balancer_cfg;
  // Placement per service ([[service]] lanes): service N's flows take only the lanes whose names contain one of
  // service_lanes[N] (an empty list, or no entry: any lane), split among them by the lanes' weights, or evenly where
  // those are all 0 (a learner that runs everything elsewhere). The balancer places the other services' flows. Where
  // none of a service's lanes is running, its flows go to the running ones, as a failed lane's do.
  std::vector<std::vector<std::string>> service_lanes;
  // Placement per app of a chain (app.place; stages.cpp): app k runs on the lanes whose names contain one of
  // app_lanes[k]; an app with no entry (or an empty one) on the lanes that no app names. Consecutive apps on the same
  // lanes are one stage; a lane of one stage hands the packets its apps passed on to the next stage's lanes. Empty:
  // every lane runs the whole chain. Run to completion only.
  std::vector<std::vector<std::string>> app_lanes;
  uint32_t flow_capacity = 1u << 20;
  uint64_t flow_idle_ns = 30'000'000'000ull;
  ParseOptions parse;
  // Wait for room instead of dropping when a lane queue is full (file input: every packet counts).
  bool backpressure = false;
  uint16_t rx_burst = 32;
  uint32_t completion_ring = 8192;
  // A flow whose lane the balancer changes while packets of it are still in flight on the old lane has its new
  // packets held (in arrival order, at most this many packets for all flows together) until the old lane has
  // sent them all, then sent to the new lane: moves happen without reordering even for flows that are never
  // idle. 0, or a full hold: such a flow stays on its lane for now (move_hold.cpp).
  uint32_t move_hold = 4096;
  // One thread does rx, classification, every lane's batches and tx (polling the lanes and egress
  // between bursts) instead of a thread per lane and one for egress: no hand-off between cores,
  // for machines with few cores. Same books, order and failure handling.
  bool run_to_completion = false;
  std::string log_path;            // result log (DPI alerts, MD5 digests); empty: none
  uint64_t max_duration_ns = 0;    // stop after this long (0: until the source ends or a signal)
  uint64_t status_interval_ns = 1'000'000'000ull;  // console status line period (0: none)
  // Host-side handling of packets the app dropped for `on_drop_reason` (ICMP Time Exceeded for
  // kTtlExceeded). Returns a frame to transmit, or an empty span. Not called for other reasons (most
  // drops: no_route), so that a drop costs no call.
  std::function<std::span<const uint8_t>(const Packet&, std::vector<uint8_t>& scratch)> on_drop;
  DropReason on_drop_reason = DropReason::kTtlExceeded;
  // The core the dispatcher thread is pinned to (the run's core budget); -1: not pinned.
  int cpu = -1;
  // The core run()'s calling thread (the control thread: status line, result log, the scheduler's ticks, a SIGHUP
  // reload) is pinned to once the run's threads have started (so none of them inherits it); -1: not pinned.
  int control_cpu = -1;
  // Output ports (docs/pipeline.md "Output ports"): the app's out_port i (ipv4: the next hop) leaves by output
  // port_map[i mod port_map.size()]; empty: by output i mod (number of outputs). Every entry must name an output.
  std::vector<uint16_t> port_map;
};

class Pipeline {
 public:
  // How often run()'s control loop wakes (status line, result log).
  static constexpr int kControlTickMs = 20;
  // A lane whose executor cannot be created is left out (left_out()); errors: no lane at all
  // (kUnavailable, with the reasons), bad lane settings, flow table.
  static Result<std::unique_ptr<Pipeline>> create(PipelineConfig cfg, std::shared_ptr<const kernels::App> app,
                                                  Port& rx, Port& tx);
  // Several output ports, tx[0] being output port 0 (cfg.port_map picks one per packet); host frames (ICMP) leave
  // by tx[0]. Errors: also kInvalidArgument for no output or a port_map entry that names no output (ports.map).
  static Result<std::unique_ptr<Pipeline>> create(PipelineConfig cfg, std::shared_ptr<const kernels::App> app, Port& rx,
                                                  std::vector<Port*> tx);
  ~Pipeline();

  // Runs until the source ends, max_duration passes, or request_stop(); then drains and returns.
  // With workers (add_worker), they run beside this one and the summary is the sum of all.
  Summary run();
  // Safe from a signal handler: stops rx (of every worker); run() drains and returns.
  void request_stop();
  bool stop_requested() const { return stop_rx_.load(std::memory_order_relaxed); }
  Summary snapshot() const;
  // After run(): lane descriptors (packet_store.hpp) not given back, every worker's; 0 unless one was lost.
  size_t descriptors_in_use() const;
  // Another worker of the run (issue 12): a pipeline with its own rx and tx port views, flow table and lanes, started
  // and ended by this one's run(); its counters are added to this one's snapshots (Summary::add_worker). Call before
  // run(). The pipeline whose run() is called owns the status callback, the result log and the closing of shared
  // ports (the views with index 0), so the others' ports must not need it.
  // With a result log (this one's), the worker's lanes log into it too.
  void add_worker(std::unique_ptr<Pipeline> w);

  // Control (any thread; applied by the dispatcher at its next burst): relative lane weights, 0
  // takes a lane out of the choice for new flows. Flows move only when nothing of theirs is in
  // flight, so a change never reorders. Errors: kInvalidArgument for a wrong count or weight < 0.
  Status set_lane_weights(const std::vector<float>& w);
  // The weights last given to set_lane_weights (those of the lanes' config before any), any thread.
  std::vector<float> lane_weights();
  const std::string& lane_name(size_t lane) const { return lanes_.at(lane)->name(); }
  // This pipeline, then the other workers (add_worker) in order: the order of the snapshot's lanes.
  std::vector<Pipeline*> all_workers();
  // hpr ctl flows top (flows_top.cpp; any thread, callers one after the other): each worker's dispatcher scans its
  // table at the top of its loop iterations, a slice each (a scan no sooner than 100 ms after its last), and answers
  // with its n largest flows; merged, most bytes first, with the live flows and the capacity of all tables together.
  // Errors: kUnavailable when the run is stopping or a dispatcher has ended, or when one did not answer within
  // timeout_ms (it is busy).
  struct FlowsTop {
    std::vector<TopFlow> flows;
    uint64_t live = 0, capacity = 0;
    uint64_t scan_ns = 0;  // the longest scan of a dispatcher (the time in its slices together)
  };
  Result<FlowsTop> flows_top(size_t n, int timeout_ms);
  // Batch size of one lane from its next batch, clamped to [1, its max_batch].
  void set_lane_batch(size_t lane, uint32_t batch) { lanes_.at(lane)->set_batch_size(batch); }
  size_t lane_count() const { return lanes_.size(); }
  // Lanes that could not start (their executor failed to create queues or buffers), with the reason.
  const std::vector<std::string>& left_out() const { return left_out_; }
  // The services placed on lanes of their own (PipelineConfig::service_lanes), for the start line:
  // "gw on cl0:pthread-…; dns on cl1:basic, native0"; empty where none is.
  std::string placement() const;
  // Whether the chain's apps run on lanes of their own (app.place; then the weights are static).
  bool staged() const { return stages_on_; }
  std::vector<std::string> placed_on(size_t service) const;  // service's lanes by name now; empty: any (any thread)
  // The services learning mode may place (sched::Setup::place): with two lanes and two services or more, each one
  // the user gave no lanes.
  std::vector<bool> placeable_services() const;
  // Control (any thread; applied by the dispatcher at its next burst, as the weights are): per service, the one lane
  // all its flows take; -1 (and the services after the vector's end): as configured, its `lanes` or any. Its flows
  // move under the rule of a weight change (only when nothing of theirs is in flight, or held): never a reorder.
  // Errors: kInvalidArgument for a lane out of range, a service the user placed, more services than the books hold.
  Status set_service_lanes(const std::vector<int16_t>& place);
  // The placement last given to set_service_lanes (empty before any), any thread.
  std::vector<int16_t> service_lanes();
  const balance::BalancerStats& balancer_stats() const { return balancer_->stats(); }
  // Called once per status interval with the live snapshot (console line, Prometheus).
  void on_status(std::function<void(const Summary&, double interval_s)> f) { on_status_ = std::move(f); }

  // Live reload (issue 17; app_swap.hpp; replace_app.cpp). First everything is built beside the running app: `make`
  // gives the app that replaces each pipeline's (this one's, then each worker's; called once per distinct running app,
  // with it), and its tables go to the device of every OpenCL lane. Only when all of that succeeded does each
  // dispatcher swap at the top of its next burst (an app with flow state sets it up for every live flow first: AES
  // keys), and each lane from its next batch. Errors: those of `make` and of the device uploads (nothing is swapped);
  // kUnavailable when the run stops before a dispatcher swapped, or none did within `timeout_ms`.
  using MakeApp = std::function<Result<std::shared_ptr<const kernels::App>>(const kernels::App& running)>;
  struct Replaced {
    uint64_t generation = 0;
    double build_s = 0;   // `make`, every pipeline
    double upload_s = 0;  // the new tables to the OpenCL devices
    double swap_s = 0;    // until every dispatcher had swapped
    bool old_freed = false;  // every lane let go of the old version within `timeout_ms` (an idle one does so at once)
    uint64_t rss_both_kib = 0;  // resident memory with both versions built (VmRSS, just before the swap)
    std::vector<uint64_t> rx_at_swap;  // per pipeline: packets its rx port had taken in when it swapped
  };
  Result<Replaced> replace_app(const MakeApp& make, int timeout_ms = 10000);
  std::shared_ptr<const AppVersion> app_version() const { return swap_->current(); }

 private:
  Pipeline() = default;
  // Egress state (owned by the egress thread, or the dispatcher's in run-to-completion mode).
  struct Egress {
    std::vector<Packet*> refs;    // a lane's completions (references to store_'s descriptors)
    std::vector<Packet> txq;
    std::vector<Packet> dropped;  // as many as refs: a burst's drops, released together (buf and buf_kind set)
    std::vector<uint8_t> scratch;
    std::vector<std::vector<Packet>> split;    // several outputs: a burst's packets by output port
    std::vector<Packet> waiting;               // shaped packets, by the shaper's item number
    std::vector<uint64_t> free_items, ready;
    std::vector<uint32_t> waiting_class;        // kClass: class of each waiting item
    std::vector<Summary::ShaperClass> classes;  // kClass: sent/dropped per class
    uint64_t unclassified = 0;
  };
  // The dispatcher's per-burst arrays.
  struct Burst {
    static constexpr uint16_t kMax = 256;
    Packet pkts[kMax];
    balance::PacketMeta metas[kMax];
    uint16_t chosen[kMax];
    uint8_t what[kMax];
    FlowKey keys[kMax];  // canonical flow keys (dispatch_burst: by position; worker_burst: compacted)
  };
  // The in-place worker path (worker.cpp): run to completion with one native lane, no device.
  struct WorkerBurst {
    Packet dropped[Burst::kMax];         // the app's drops, released together
    Packet queued[Burst::kMax];          // lane_in_place: what it took from the lane's queue
    Packet* queued_refs[Burst::kMax];    // ... as the queue held it
    std::vector<kernels::Desc> desc;     // kMax × the app's desc_slots()
    std::vector<uint8_t*> slices;        // as many
    std::vector<uint8_t> out;            // kMax × the app's result bytes
  };
  void start();
  Summary finish();
  bool running() const;  // this dispatcher or another worker's has not ended
  static bool use_worker_path(const PipelineConfig& cfg);
  static bool worker_eligible(const LaneSpec& l);
  void init_worker();
  uint16_t worker_burst(uint64_t now);
  bool lane_in_place(size_t li);
  void run_direct(Packet* pkts, uint16_t n);
  void leave_in_place(Lane& lane, Packet* pkts, uint16_t n);
  void send_in_place(Lane& lane, Packet* pkts, uint16_t m, uint64_t t0, bool own_rx_times);
  // The worker path switched on and off at run time (worker.cpp): when the weights give every new flow to one
  // eligible native lane, the dispatcher stops receiving until every lane has drained, then runs that lane in place;
  // any other weights switch it off (nothing is in flight on it).
  void update_worker_mode(uint64_t now);
  bool worker_switch_waits(uint64_t now);
  void dispatch_loop();
  uint16_t dispatch_burst(uint64_t now);
  bool service();
  void wait_step(int& rounds);
  void init_egress();
  bool egress_poll();
  void egress_loop();
  void shape(Packet& p, uint64_t now);
  static constexpr uint32_t kNoClass = 0xffffffffu;
  uint32_t shaper_class(const Packet& p) const;  // kClass: index into cfg_.shaping.classes, or kNoClass
  void release_shaped(uint64_t now);
  void transmit(Packet* pkts, uint16_t n);
  void transmit(std::vector<Packet>& txq);
  void send(size_t port, Packet* pkts, uint16_t n);  // to one output port, counted
  // A packet its app dropped, where it leaves: counted by reason and in its service's books (inline: most of a
  // router's packets may leave this way); the reason with a reply (ipv4's TTL exceeded: ICMP) sends it.
  void drop_at_egress(const Packet& p) {
    drops_egress_.add(p.drop);
    if (p.svc < kServiceBooks) bump((*svc_books_)[p.svc].dropped);
    if (p.drop == cfg_.on_drop_reason && cfg_.on_drop) reply_to_drop(p);
  }
  void reply_to_drop(const Packet& p);
  // One packet more or fewer of a flow in flight (queued or on a lane). Run to completion: one thread adds and takes
  // away, so a load and a store (no locked instruction, as `bump`); threaded: the dispatcher adds, egress takes away.
  void flight_add(uint32_t id) {
    std::atomic<uint32_t>& c = flows_->in_flight(id);
    if (cfg_.run_to_completion) c.store(c.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    else c.fetch_add(1, std::memory_order_acq_rel);
  }
  void flight_sub(uint32_t id) {
    std::atomic<uint32_t>& c = flows_->in_flight(id);
    if (cfg_.run_to_completion) c.store(c.load(std::memory_order_relaxed) - 1, std::memory_order_relaxed);
    else c.fetch_sub(1, std::memory_order_acq_rel);
  }
  // A packet done with its lane, before it is sent or counted as dropped (egress, or a lane run in place): egress'
  // order check (a reorder when it is not its flow's next sequence number) and one packet fewer of its flow in flight.
  void off_lane(const Packet& p) {
    if (p.flow_id == kNoFlow) return;
    uint32_t& exp = expected_seq_[p.flow_id];
    // Stages: a packet an earlier stage dropped left before its flow's older ones: what leaves last is in order when
    // each flow's numbers only rise.
    if (p.seq != 0 && (stages_on_ ? p.seq < exp : p.seq != exp)) bump(reorders_, 1);
    exp = p.seq + 1;
    flight_sub(p.flow_id);
  }
  // A packet of a [[service]] leaves for the output `latency_ns` after rx: its service's books.
  void book_service(const Packet& p, uint64_t latency_ns) {
    ServiceBooks& b = (*svc_books_)[p.svc];
    bump(b.out);
    bump(b.out_bytes, p.len);
    b.latency.add(latency_ns);
  }
  Status place_services(const std::vector<std::vector<std::string>>& names, const kernels::App& app);
  // A running lane by the flow hash, weighted; `allow` (one flag per lane): only those, while one of them runs.
  uint8_t pick_lane(uint32_t hash, const std::vector<uint8_t>* allow = nullptr) const;
  // Among the lanes i with ok(i), by the flow hash, weighted (evenly where they all weigh 0); kNoLane: none.
  template <typename Ok>
  uint8_t weighted_lane(uint32_t hash, Ok ok) const {
    double total = 0;
    size_t count = 0;
    for (size_t i = 0; i < lanes_.size(); ++i)
      if (ok(i)) {
        total += weights_[i];
        ++count;
      }
    if (count == 0) return 0xff;
    const bool even = total <= 0;
    double x = static_cast<double>(hash) / 4294967296.0 * (even ? static_cast<double>(count) : total);
    uint8_t last = 0xff;
    for (size_t i = 0; i < lanes_.size(); ++i) {
      if (!ok(i)) continue;
      last = static_cast<uint8_t>(i);
      x -= even ? 1.0 : weights_[i];
      if (x < 0) break;
    }
    return last;
  }
  // The lanes p's service may take (PipelineConfig::service_lanes), or nullptr: any.
  const std::vector<uint8_t>* lanes_for(const Packet& p) const {
    if (stages_on_) return &stage_lanes_[0];
    return pins_on_ && p.svc < kServiceBooks && !svc_lanes_[p.svc].empty() ? &svc_lanes_[p.svc] : nullptr;
  }
  bool handle_failed_lanes();
  // Stages (stages.cpp): the stage of each lane from PipelineConfig::app_lanes, the app each stage runs; forward: lane
  // li's completions on to the next stage; stage_lane: a flow's lane in stage s, by its hash.
  struct StagePlan {
    std::vector<uint8_t> of_lane;                           // per LaneSpec
    std::vector<uint32_t> first, end;                       // per stage: its apps [first, end) of the chain
    std::vector<std::shared_ptr<const kernels::App>> apps;  // per stage
    std::string text;                                       // "ipv4 on native0; dpi,md5 on cl0:pthread…, cl1:basic"
  };
  static Result<StagePlan> plan_stages(const PipelineConfig& cfg, const std::shared_ptr<const kernels::App>& app);
  void init_stages(StagePlan plan);
  bool forward(size_t li);
  uint8_t stage_lane(uint32_t hash, size_t stage) const;
  size_t stage_of(size_t li) const { return stages_on_ ? stage_of_[li] : 0; }
  std::vector<bool> reroute(size_t lane, const std::function<void(size_t, int&)>& room);
  std::vector<Packet*> retire(Lane& lane);
  bool enqueue(Packet& p, uint8_t lane);
  void drop_at_dispatch(Packet* p, uint16_t n, DropReason r);
  // move_hold.cpp: hold a packet of a moving flow (false: no room, the flow stays); send on the held packets of
  // flows with nothing in flight any more (returns whether any went).
  bool hold_for_move(Packet& p, FlowState& fs, uint8_t to);
  bool flush_held();
  // replace_app.cpp: post a built version and wait until the dispatcher took it (returns its rx count then); the
  // dispatcher's side.
  Result<uint64_t> swap_to(std::shared_ptr<const AppVersion> v, uint64_t deadline_ns);
  void adopt_app();

  PipelineConfig cfg_;
  std::shared_ptr<const kernels::App> app_;  // the dispatcher's (the version it adopted last)
  std::unique_ptr<AppSwap> swap_;            // the lanes' (outlives them: declared before lanes_)
  std::mutex swap_mu_;
  std::condition_variable swap_cv_;
  std::shared_ptr<const AppVersion> swap_next_;  // posted by swap_to, taken by the dispatcher (under swap_mu_)
  std::atomic<bool> swap_pending_{false};
  uint64_t swapped_generation_ = 0, swapped_rx_ = 0;  // the dispatcher's last adoption (under swap_mu_)
  Port* rx_ = nullptr;
  std::vector<Port*> txs_;         // every output port; txs_[0] is port 0 (host frames leave by it)
  std::vector<uint16_t> port_of_;  // app out_port mod size → output port (cfg_.port_map, or one per output)
  struct TxCounters {              // per output port (several outputs only; egress writes)
    std::atomic<uint64_t> packets{0}, bytes{0}, failed{0};
  };
  std::unique_ptr<TxCounters[]> tx_counters_;
  std::unique_ptr<FlowTable> flows_;
  std::vector<std::unique_ptr<Lane>> lanes_;
  // The descriptors of the packets in the lanes (packet_store.hpp): the dispatcher takes, egress gives back.
  std::unique_ptr<PacketStore> store_;
  std::vector<std::unique_ptr<std::atomic<uint64_t>>> egress_handled_;  // per lane

  std::atomic<bool> stop_rx_{false};
  std::atomic<bool> dispatch_done_{false};
  std::atomic<bool> lanes_done_{false};
  std::thread dispatcher_, egress_;

  DropCounters drops_dispatch_, drops_egress_;
  std::atomic<uint64_t> reorders_{0}, tx_packets_{0}, tx_bytes_{0}, host_frames_{0}, lane_failures_{0};
  std::atomic<uint64_t> flows_seen_{0};
  // Host threads' work beyond the lanes' (the power model counts it): the dispatcher's bursts (rx, classify,
  // enqueue) and egress polls that found completions. lane_work_ns_: lane and egress work the dispatcher did inside a
  // burst (run to completion: waiting for room, and the in-place lanes' share, run_direct), counted as theirs and not
  // twice (dispatcher only).
  std::atomic<uint64_t> dispatch_busy_ns_{0}, egress_busy_ns_{0};
  uint64_t lane_work_ns_ = 0;
  LatencyHistogram latency_;
  std::unique_ptr<std::array<ServiceBooks, kServiceBooks>> svc_books_;  // by Packet::svc
  bool svc_books_on_ = false;  // the dispatcher's app has [[service]] entries (dispatcher-owned)
  // PipelineConfig::service_lanes as a flag per lane, by Packet::svc (empty: any lane), or the one lane learning
  // placed it on (set_service_lanes); pins_on_: any service has some. Dispatcher-owned once it runs.
  std::array<std::vector<uint8_t>, kServiceBooks> svc_lanes_;
  bool pins_on_ = false;
  std::array<std::vector<uint8_t>, kServiceBooks> svc_user_lanes_;  // PipelineConfig::service_lanes
  void adopt_placement(const std::vector<int16_t>& place);           // dispatcher: set_service_lanes' vector
  mutable std::mutex place_mu_;
  std::array<std::vector<uint8_t>, kServiceBooks> svc_lanes_shown_;  // svc_lanes_ for other threads (place_mu_)
  // Stages (stages.cpp; set at create): per lane its stage, per stage its lanes as flags and its apps' end.
  bool stages_on_ = false;
  std::vector<uint8_t> stage_of_;
  std::vector<std::vector<uint8_t>> stage_lanes_;
  std::vector<uint32_t> stage_end_;
  std::vector<std::shared_ptr<const kernels::App>> stage_apps_;
  std::string stage_text_;
  std::vector<uint32_t> expected_seq_;  // egress-owned, per flow id
  Egress eg_;
  std::unique_ptr<Burst> burst_;         // dispatcher-owned
  std::unique_ptr<WorkerBurst> worker_;  // dispatcher-owned; set when the in-place worker path may run
  std::atomic<bool> worker_on_{false};   // written by the dispatcher; read by snapshot()
  std::atomic<uint8_t> worker_lane_{0};  // the lane it runs (written by the dispatcher; read by snapshot())
  bool worker_dynamic_ = false;          // several lanes: the worker path follows the weights
  std::vector<uint8_t> in_place_;        // per lane: run to completion polls it with lane_in_place, not Lane::poll
  uint8_t worker_pending_ = 0xff;        // a lane the weights chose alone, waiting for the others to drain
  uint64_t worker_pending_since_ = 0, worker_retry_ns_ = 0;
  std::vector<uint64_t> enqueued_;       // per lane: packets the dispatcher put on its queue
  uint64_t last_expire_ns_ = 0;          // dispatcher-owned
  // Moving flows' held packets (dispatcher-owned; move_hold.cpp): arrival order, per-flow count and target lane.
  std::vector<Packet> held_;
  std::vector<uint16_t> held_count_;
  std::vector<uint8_t> held_to_;
  std::atomic<uint64_t> move_held_{0};
  std::unique_ptr<shaper::EventShaper> shaper_;  // egress-owned
  std::atomic<uint64_t> shaper_delayed_{0};
  shaper::ShaperStats shaper_stats_;             // egress copy for snapshots (under shaper_mu_)
  struct ClassMatch {
    bool any_dscp = true;         // no DSCP list: any packet, IP or not
    uint64_t dscp_mask = 0;       // bit d: DSCP d matches
    std::vector<uint16_t> ports;  // empty: any
    uint32_t svc_mask = 0;        // bit s: Packet::svc s matches; 0: any
  };
  std::vector<ClassMatch> class_match_;               // kClass, one per class
  std::vector<Summary::ShaperClass> shaper_classes_;  // egress copy for snapshots (under shaper_mu_)
  uint64_t shaper_unclassified_ = 0;                  // egress copy for snapshots (under shaper_mu_)
  mutable std::mutex shaper_mu_;
  // Written by run(), read by snapshot() from any thread (end_ns_ != 0: the dispatcher has ended).
  std::atomic<uint64_t> start_ns_{0}, end_ns_{0};
  std::function<void(const Summary&, double)> on_status_;
  std::unique_ptr<balance::Balancer> balancer_;
  std::vector<balance::LaneState> lane_states_;   // dispatcher-owned, refreshed per burst
  std::vector<uint32_t> flow_pending_;            // dispatcher-owned copy of in-flight per flow
  std::vector<float> weights_;                    // dispatcher-owned
  std::mutex weights_mu_;
  std::vector<float> pending_weights_;
  std::optional<std::vector<int16_t>> pending_place_;  // set_service_lanes (weights_mu_, weights_dirty_)
  std::vector<int16_t> place_given_;                   // the last one given (weights_mu_)
  std::atomic<bool> weights_dirty_{false};
  // flows top (flows_top.cpp): a request the dispatcher answers at the top of its loop (answer_top).
  void answer_top(uint64_t now);
  std::mutex top_call_mu_;             // one flows_top() at a time
  std::mutex top_mu_;                  // guards the fields below but top_wanted_
  std::atomic<bool> top_wanted_{false};
  size_t top_n_ = 0;
  uint64_t top_asked_ = 0, top_answered_ = 0;  // request numbers
  std::vector<TopFlow> top_result_;
  uint64_t top_live_ = 0, top_scan_ns_ = 0;
  struct TopScan {  // dispatcher-owned: the scan under way
    bool active = false;
    size_t n = 0;
    uint64_t asked = 0;
    uint32_t next = 0;  // the next id to read
    uint64_t busy_ns = 0;
    std::vector<TopFlow> heap;
  } top_scan_;
  uint64_t top_scanned_ns_ = 0;  // dispatcher-owned: when it last scanned a slice
  std::optional<AtomicFile> log_;  // result log, renamed into place at the end of the run
  uint64_t log_errors_ = 0;
  std::vector<std::string> output_errors_;
  void write_log();
  static std::function<std::string(const Packet&)> log_prefix();
  std::vector<std::string> left_out_;
  std::vector<std::unique_ptr<Pipeline>> workers_;
};

}  // namespace hpr
