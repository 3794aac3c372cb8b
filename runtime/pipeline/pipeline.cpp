#include "runtime/pipeline/pipeline.hpp"

#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <nlohmann/json.hpp>

#include "hpr/clock.hpp"
#include "runtime/balance_glue.hpp"

namespace hpr {
namespace {

constexpr uint8_t kNoLane = 0xff;

void backoff(int& rounds) {
  if (++rounds > 64) std::this_thread::sleep_for(std::chrono::microseconds(rounds > 1024 ? 50 : 5));
  else std::this_thread::yield();
}

// The policies want weights > 0: a lane of weight 0 (no new flows; the dispatcher disables it for the
// policy) gets a token one.
float policy_weight(float w) { return w > 0 ? w : 1e-6f; }
std::vector<float> policy_weights(const std::vector<float>& w) {
  std::vector<float> out;
  for (float x : w) out.push_back(policy_weight(x));
  return out;
}

}  // namespace

Result<std::unique_ptr<Pipeline>> Pipeline::create(PipelineConfig cfg, std::shared_ptr<const kernels::App> app,
                                                   Port& rx, Port& tx) {
  if (cfg.lanes.empty()) return error(Code::kInvalidArgument, "no lanes: enable at least one device or native worker");
  if (cfg.lanes.size() >= kNoLane) return error(Code::kInvalidArgument, "at most {} lanes", kNoLane - 1);
  std::unique_ptr<Pipeline> p(new Pipeline());
  auto ft = FlowTable::create(cfg.flow_capacity, cfg.flow_idle_ns);
  if (!ft) return ft.status();
  p->flows_ = std::move(*ft);
  p->expected_seq_.assign(p->flows_->capacity(), 0);
  std::vector<LaneSpec> started;
  for (auto& spec : cfg.lanes) {
    if (spec.lane.batch_size == 0) return error(Code::kInvalidArgument, "lane {}: batch size must be at least 1", spec.lane.name);
    if (spec.lane.queue_size == 0) return error(Code::kInvalidArgument, "lane {}: queue size must be at least 1", spec.lane.name);
    ExecutorConfig ec{std::max(spec.lane.max_batch, spec.lane.batch_size), spec.in_flight};
    std::unique_ptr<Executor> ex;
    if (spec.kind == LaneSpec::Kind::kNative) {
      ex = make_native_executor(*app, ec);
    } else {
      auto e = make_cl_executor(*app, spec.program, spec.host_unified, ec);
      if (!e) {
        // A device whose queues or buffers cannot be created is left out; the other lanes go on.
        spdlog::warn("lane {} left out: {}", spec.lane.name, e.status().message());
        p->left_out_.push_back(spec.lane.name + ": " + e.status().message());
        continue;
      }
      ex = std::move(*e);
    }
    p->lanes_.push_back(std::make_unique<Lane>(spec.lane, *app, std::move(ex), cfg.completion_ring));
    p->egress_handled_.push_back(std::make_unique<std::atomic<uint64_t>>(0));
    started.push_back(std::move(spec));
  }
  if (started.empty()) return error(Code::kUnavailable, "no lane could be started: {}", fmt::join(p->left_out_, "; "));
  cfg.lanes = std::move(started);
  // The balancer: one slot per flow-table id, one lane per lane, weights from the lanes.
  balance::BalancerConfig bc = cfg.balancer_cfg;
  bc.lanes = static_cast<uint32_t>(cfg.lanes.size());
  for (const auto& spec : cfg.lanes) p->weights_.push_back(static_cast<float>(spec.lane.weight));
  bc.lane_weights = policy_weights(p->weights_);
  bc.flow_slots = p->flows_->capacity();
  bc.burst_max = 256;
  auto bal = balance::make_balancer(cfg.balancer, bc);
  if (!bal) return error(bal.status().code(), "lanes.balancer: {}", bal.status().message());
  p->balancer_ = std::move(*bal);
  p->lane_states_.resize(cfg.lanes.size());
  p->flow_pending_.assign(p->flows_->capacity(), 0);
  if (cfg.shaping.enabled) {
    const ShapingConfig& sc = cfg.shaping;
    const bool by_class = sc.by == ShapeBy::kClass;
    if (by_class && sc.classes.empty())
      return error(Code::kInvalidArgument, "shaper.class: shaper.by = class needs at least one class");
    shaper::ShaperConfig shc;
    shc.num_queues = by_class                  ? static_cast<uint32_t>(sc.classes.size())
                     : sc.by == ShapeBy::kFlow ? p->flows_->capacity() + 1  // +1: packets without a flow
                                               : 65536;
    shc.pool_slots = sc.waiting_packets;
    shc.queue_limit_pkts = sc.queue_packets;
    uint32_t max_packet = sc.burst_bytes;  // larger frames could never conform: the smallest burst
    if (by_class) {
      max_packet = 65535;
      for (const auto& k : sc.classes) max_packet = std::min(max_packet, k.burst_bytes);
    }
    shc.max_packet_bytes = std::min<uint32_t>(max_packet, 65535);
    shc.adaptive = sc.adaptive;
    auto sh = shaper::EventShaper::create(shc);
    if (!sh) return error(sh.status().code(), "shaper: {}", sh.status().message());
    p->shaper_ = std::make_unique<shaper::EventShaper>(std::move(*sh));
    const uint64_t now = monotonic_ns();
    auto profile = [](uint64_t rate, uint32_t burst, uint32_t alpha) {
      return shaper::ShapingProfile{rate, burst, alpha != 0 ? alpha : burst / 4};
    };
    if (!by_class) {
      auto prof = p->shaper_->add_profile(profile(sc.rate_bytes_per_s, sc.burst_bytes, sc.alpha_bytes));
      if (!prof) return error(prof.status().code(), "shaper: {}", prof.status().message());
      HPR_RETURN_IF_ERROR(p->shaper_->configure_all(*prof, now));
    }
    for (size_t i = 0; by_class && i < sc.classes.size(); ++i) {
      const ShapingClass& k = sc.classes[i];
      auto prof = p->shaper_->add_profile(profile(k.rate_bytes_per_s, k.burst_bytes, k.alpha_bytes));
      if (!prof) return error(prof.status().code(), "shaper.class[{}] ({}): {}", i, k.name, prof.status().message());
      HPR_RETURN_IF_ERROR(p->shaper_->configure_queue(static_cast<uint32_t>(i), *prof, now));
      ClassMatch m;
      m.any_dscp = k.dscp.empty();
      for (uint8_t d : k.dscp) m.dscp_mask |= 1ull << (d & 63);
      m.ports = k.ports;
      p->class_match_.push_back(std::move(m));
      p->shaper_classes_.push_back({.name = k.name, .rate_bytes_per_s = k.rate_bytes_per_s});
    }
  }
  if (!cfg.log_path.empty()) {
    p->log_ = std::fopen(cfg.log_path.c_str(), "w");
    if (p->log_ == nullptr) return error(Code::kIoError, "cannot write the result log '{}'", cfg.log_path);
    // "<rx ns> <src>:<sport> > <dst>:<dport> proto <n>"
    for (auto& l : p->lanes_)
      l->set_logging(true, [](const Packet& pk) { return fmt::format("{} {}", pk.rx_ns, flow_text(pk)); });
  }
  p->cfg_ = std::move(cfg);
  p->burst_ = std::make_unique<Burst>();
  p->init_egress();
  if (p->cfg_.run_to_completion)
    for (auto& l : p->lanes_) l->on_completions_full([pp = p.get()] { pp->egress_poll(); });
  p->app_ = std::move(app);
  p->rx_ = &rx;
  p->tx_ = &tx;
  return p;
}

Pipeline::~Pipeline() {
  stop_rx_ = true;
  if (dispatcher_.joinable()) dispatcher_.join();
  for (auto& l : lanes_) l->request_stop();
  for (auto& l : lanes_) l->join();
  lanes_done_ = true;
  if (egress_.joinable()) egress_.join();
  if (log_ != nullptr) std::fclose(log_);
}

uint8_t Pipeline::pick_lane(uint32_t hash) const {
  // Weighted choice among running lanes by the flow hash (deterministic per flow).
  double total = 0;
  for (size_t i = 0; i < lanes_.size(); ++i)
    if (lanes_[i]->state() == LaneState::kRunning) total += weights_[i];
  if (total <= 0) {  // every running lane has weight 0: any running lane rather than a drop
    for (size_t i = 0; i < lanes_.size(); ++i)
      if (lanes_[i]->state() == LaneState::kRunning) return static_cast<uint8_t>(i);
    return kNoLane;
  }
  double x = static_cast<double>(hash) / 4294967296.0 * total;
  uint8_t last = kNoLane;
  for (size_t i = 0; i < lanes_.size(); ++i) {
    if (lanes_[i]->state() != LaneState::kRunning) continue;
    last = static_cast<uint8_t>(i);
    x -= weights_[i];
    if (x < 0) return last;
  }
  return last;
}

void Pipeline::drop_at_dispatch(Packet* p, uint16_t n, DropReason r) {
  drops_dispatch_.add(r, n);
  rx_->release(p, n);
}

// Puts p on lane `li`; false when the queue is full (and backpressure is off).
bool Pipeline::enqueue(Packet& p, uint8_t li) {
  int rounds = 0;
  while (!lanes_[li]->input().push(p)) {
    if (!cfg_.backpressure || lanes_[li]->state() != LaneState::kRunning) return false;
    wait_step(rounds);
  }
  return true;
}

// Takes a drained lane out of the set; returns what it handed back and what was pushed to its queue
// after it drained itself, oldest first.
std::vector<Packet> Pipeline::retire(Lane& lane) {
  std::vector<Packet> out = std::move(lane.orphans());
  Packet p;
  while (lane.input().pop(p)) out.push_back(p);
  lane.mark_removed();
  lane_failures_.fetch_add(1, std::memory_order_relaxed);
  return out;
}

// Re-routes the packets of lanes that failed, once egress has sent everything they completed
// (so the re-routed packets of a flow cannot overtake its earlier ones). Returns true when it
// re-routed anything.
bool Pipeline::handle_failed_lanes() {
  bool any = false;
  for (size_t li = 0; li < lanes_.size(); ++li) {
    Lane& lane = *lanes_[li];
    LaneState st = lane.state();
    if (st == LaneState::kRunning || st == LaneState::kRemoved) continue;
    int rounds = 0;
    while (lane.state() == LaneState::kFailed) backoff(rounds);  // the lane is handing back its packets
    lane.join();
    while (egress_handled_[li]->load(std::memory_order_acquire) != lane.stats().packets.load(std::memory_order_acquire))
      wait_step(rounds);
    std::vector<Packet> orphans = retire(lane);
    spdlog::warn("lane {} removed; re-routing {} packets to the remaining lanes", lane.name(), orphans.size());
    for (auto& o : orphans) {
      uint8_t to = kNoLane;
      if (o.flow_id != kNoFlow) {
        FlowState& fs = flows_->state(o.flow_id);
        if (fs.lane == li || fs.lane == kNoLane) fs.lane = pick_lane(o.hash);
        to = fs.lane;
      } else {
        to = pick_lane(o.hash);
      }
      bool ok = to != kNoLane;
      if (ok) {
        int r = 0;
        while (!lanes_[to]->input().push(o)) wait_step(r);  // never drop a re-routed packet for room
      } else {
        if (o.flow_id != kNoFlow) flows_->in_flight(o.flow_id).fetch_sub(1, std::memory_order_release);
        drop_at_dispatch(&o, 1, DropReason::kNoLane);
      }
    }
    any = true;
  }
  return any;
}

Status Pipeline::set_lane_weights(const std::vector<float>& w) {
  if (w.size() != lanes_.size())
    return error(Code::kInvalidArgument, "{} lane weights given for {} lanes", w.size(), lanes_.size());
  for (float x : w)
    if (!(x >= 0)) return error(Code::kInvalidArgument, "lane weights must be >= 0");
  std::lock_guard<std::mutex> g(weights_mu_);
  pending_weights_ = w;
  weights_dirty_.store(true, std::memory_order_release);
  return Status::ok();
}

// Waits for room or for egress: in run-to-completion mode by doing the lanes' and egress' work
// (nobody else will), otherwise by backing off.
void Pipeline::wait_step(int& rounds) {
  if (cfg_.run_to_completion && service()) return;
  backoff(rounds);
}

// Run-to-completion: one round of every lane and of egress, on the dispatcher's thread.
bool Pipeline::service() {
  bool did = false;
  for (auto& l : lanes_) did |= l->poll();
  did |= egress_poll();
  return did;
}

void Pipeline::dispatch_loop() {
  int idle = 0;
  while (!stop_rx_.load(std::memory_order_relaxed)) {
    handle_failed_lanes();
    if (weights_dirty_.load(std::memory_order_acquire)) {
      std::lock_guard<std::mutex> g(weights_mu_);
      weights_ = pending_weights_;
      (void)balancer_->set_lane_weights(policy_weights(weights_));  // validated in set_lane_weights
      weights_dirty_.store(false, std::memory_order_relaxed);
    }
    uint64_t now = monotonic_ns();
    if (cfg_.max_duration_ns != 0 && now - start_ns_ >= cfg_.max_duration_ns) break;
    uint16_t n = dispatch_burst(now);
    bool did = n > 0;
    if (cfg_.run_to_completion) did |= service();
    if (n == 0 && rx_->rx_done()) break;
    if (did) idle = 0;
    else backoff(idle);
  }
  handle_failed_lanes();
  if (cfg_.run_to_completion) {
    // Drain on this thread what the lane and egress threads would: lanes until they are empty
    // (re-routing what a lane that fails now hands back), then egress and the shaper.
    for (auto& l : lanes_) l->request_stop();
    int rounds = 0;
    for (;;) {
      bool did = service();
      did = handle_failed_lanes() || did;
      bool all = true;
      for (auto& l : lanes_) all &= l->finished();
      if (all && !did) break;
      if (!did) backoff(rounds);
    }
    lanes_done_.store(true, std::memory_order_release);
    egress_loop();
  }
  dispatch_done_.store(true, std::memory_order_release);
}

// One rx burst: classify, choose lanes, enqueue in arrival order. Returns the packets received.
uint16_t Pipeline::dispatch_burst(uint64_t now) {
  // Arrays that live as long as the pipeline: constructing 256 descriptors per burst cost more
  // than classifying them.
  Packet* pkts = burst_->pkts;
  balance::PacketMeta* metas = burst_->metas;
  uint16_t* chosen = burst_->chosen;
  uint8_t* what = burst_->what;
  enum : uint8_t { kDropped, kFlow, kNoFlowPkt };
  const uint16_t burst = std::min<uint16_t>(cfg_.rx_burst, Burst::kMax);
  uint16_t n = rx_->rx_burst(pkts, burst, now);
  if (n == 0) return 0;
  // Pass 1: classify; flows go to the balancer in one call per burst.
  uint16_t nm = 0;
  for (uint16_t i = 0; i < n; ++i) {
    Packet& p = pkts[i];
    if (parse(p, cfg_.parse) != DropReason::kNone) {
      drop_at_dispatch(&p, 1, p.drop);
      what[i] = kDropped;
      continue;
    }
    what[i] = kNoFlowPkt;
    p.hash = 0;
    p.flow_id = kNoFlow;
    if (p.l3 != L3::kIPv4 && p.l3 != L3::kIPv6) continue;
    FlowKey k = flow_key(p).canonical();
    p.hash = flow_hash(k);
    bool inserted = false;
    p.flow_id = flows_->lookup_or_insert(k, p.hash, now, &inserted);
    flows_seen_.fetch_add(inserted, std::memory_order_relaxed);
    if (p.flow_id == kNoFlow) continue;
    what[i] = kFlow;
    flow_pending_[p.flow_id] = flows_->in_flight(p.flow_id).load(std::memory_order_acquire);
    metas[nm++] = {to_five_tuple(k), p.hash, p.flow_id, p.len, p.service, 0};
  }
  if (nm > 0) {
    for (size_t l = 0; l < lanes_.size(); ++l) {
      auto& ls = lane_states_[l];
      ls.queued = static_cast<uint32_t>(lanes_[l]->input().size());
      ls.capacity = static_cast<uint32_t>(lanes_[l]->input().capacity());
      ls.weight = policy_weight(weights_[l]);
      ls.enabled = lanes_[l]->state() == LaneState::kRunning && weights_[l] > 0;
    }
    balance::LaneTable table{lane_states_, flow_pending_, now};
    balancer_->assign({metas, nm}, table, {chosen, nm});
  }
  // Pass 2: enqueue in arrival order.
  uint16_t j = 0;
  for (uint16_t i = 0; i < n; ++i) {
    if (what[i] == kDropped) continue;
    Packet& p = pkts[i];
    FlowState* fs = nullptr;
    uint8_t lane;
    if (what[i] == kFlow) {
      fs = &flows_->state(p.flow_id);
      lane = static_cast<uint8_t>(chosen[j++]);
      // Whatever the policy wanted, a flow with packets in flight stays where they are.
      auto stay = [&] {
        if (fs->lane != kNoLane && flows_->in_flight(p.flow_id).load(std::memory_order_acquire) > 0) lane = fs->lane;
      };
      stay();
      // The state is read once per decision: a lane that fails after it was seen running takes
      // this packet into its queue, which it hands back in order. One that has failed has its
      // packets (maybe this flow's) re-routed first, which this one would otherwise overtake;
      // they may have moved the flow.
      LaneState ls = lane < lanes_.size() ? lanes_[lane]->state() : LaneState::kRemoved;
      while (ls == LaneState::kFailed || ls == LaneState::kDrained) {
        handle_failed_lanes();
        stay();
        ls = lanes_[lane]->state();
      }
      if (ls != LaneState::kRunning) lane = pick_lane(p.hash);
      fs->lane = lane;
      p.seq = fs->next_seq++;
      fs->packets++;
      fs->bytes += p.len;
    } else {
      lane = pick_lane(p.hash);
    }
    if (lane == kNoLane) {
      if (fs != nullptr) fs->next_seq--;
      drop_at_dispatch(&p, 1, DropReason::kNoLane);
      continue;
    }
    p.lane = lane;
    if (fs != nullptr) flows_->in_flight(p.flow_id).fetch_add(1, std::memory_order_acq_rel);
    if (!enqueue(p, lane)) {
      if (fs != nullptr) {
        flows_->in_flight(p.flow_id).fetch_sub(1, std::memory_order_acq_rel);
        fs->next_seq--;  // keep the flow's sequence contiguous: this packet never existed for egress
      }
      lanes_[lane]->stats().queue_full.fetch_add(1, std::memory_order_relaxed);
      drop_at_dispatch(&p, 1, DropReason::kQueueFull);
    }
  }
  if (now - last_expire_ns_ > 10'000'000) {  // age idle flows a slice at a time, every 10 ms
    flows_->expire(now, 4096);
    last_expire_ns_ = now;
  }
  return n;
}

// Sends what egress decided to send, counts what the port refused, and returns every buffer.
void Pipeline::transmit(std::vector<Packet>& txq) {
  if (txq.empty()) return;
  uint16_t sent = tx_->tx_burst(txq.data(), static_cast<uint16_t>(txq.size()));
  uint64_t bytes = 0;
  for (uint16_t i = 0; i < sent; ++i) bytes += txq[i].len;
  tx_packets_.fetch_add(sent, std::memory_order_relaxed);
  tx_bytes_.fetch_add(bytes, std::memory_order_relaxed);
  if (sent < txq.size()) drops_egress_.add(DropReason::kTxFailed, txq.size() - sent);
  rx_->release(txq.data(), static_cast<uint16_t>(txq.size()));
  txq.clear();
}

// Egress state is owned by the egress thread (the dispatcher's in run-to-completion mode).
void Pipeline::init_egress() {
  Egress& e = eg_;
  e.buf.resize(256);
  e.txq.reserve(512);
  e.ready.resize(256);
  if (shaper_) {
    e.waiting.resize(cfg_.shaping.waiting_packets);
    for (uint32_t i = 0; i < cfg_.shaping.waiting_packets; ++i) e.free_items.push_back(cfg_.shaping.waiting_packets - 1 - i);
    if (cfg_.shaping.by == ShapeBy::kClass) {
      e.waiting_class.resize(cfg_.shaping.waiting_packets);
      e.classes.resize(cfg_.shaping.classes.size());
    }
  }
}

// The first class whose DSCP and output-port lists both match (an empty list matches anything).
uint32_t Pipeline::shaper_class(const Packet& p) const {
  int dscp = -1;  // non-IP: matches only classes with no DSCP list
  if (p.l3_off != kNoOffset && p.l3 == L3::kIPv4)
    dscp = p.data[p.l3_off + 1] >> 2;
  else if (p.l3_off != kNoOffset && p.l3 == L3::kIPv6)
    dscp = ((p.data[p.l3_off] & 0x0f) << 2) | (p.data[p.l3_off + 1] >> 6);
  for (size_t i = 0; i < class_match_.size(); ++i) {
    const ClassMatch& m = class_match_[i];
    if (!m.any_dscp && (dscp < 0 || ((m.dscp_mask >> dscp) & 1) == 0)) continue;
    if (!m.ports.empty() && std::find(m.ports.begin(), m.ports.end(), p.out_port) == m.ports.end()) continue;
    return static_cast<uint32_t>(i);
  }
  return kNoClass;
}

// Shaped packets wait in eg_.waiting, indexed by the shaper's item number, with their buffers.
void Pipeline::shape(Packet& p, uint64_t now) {
  Egress& e = eg_;
  uint32_t q = 0;
  Summary::ShaperClass* cls = nullptr;
  switch (cfg_.shaping.by) {
    case ShapeBy::kFlow:
      q = p.flow_id == kNoFlow ? flows_->capacity() : p.flow_id;
      break;
    case ShapeBy::kPort:
      q = p.out_port;
      break;
    case ShapeBy::kClass:
      q = shaper_class(p);
      if (q == kNoClass) {  // no class: leaves unshaped
        ++e.unclassified;
        e.txq.push_back(p);
        return;
      }
      cls = &e.classes[q];
      break;
  }
  if (e.free_items.empty()) {  // cannot happen: the shaper's pool is the same size
    drops_egress_.add(DropReason::kShaperQueueFull);
    if (cls != nullptr) ++cls->dropped;
    rx_->release(&p, 1);
    return;
  }
  uint64_t item = e.free_items.back();
  switch (shaper_->enqueue(q, item, p.len, now)) {
    case shaper::Verdict::kSend:
      e.txq.push_back(p);
      if (cls != nullptr) {
        ++cls->packets;
        cls->bytes += p.len;
      }
      break;
    case shaper::Verdict::kQueued:
      e.free_items.pop_back();
      e.waiting[item] = p;
      if (cls != nullptr) e.waiting_class[item] = q;
      shaper_delayed_.fetch_add(1, std::memory_order_relaxed);
      break;
    case shaper::Verdict::kDropTooLarge:
      drops_egress_.add(DropReason::kFrameTooLong);
      if (cls != nullptr) ++cls->dropped;
      rx_->release(&p, 1);
      break;
    default:
      drops_egress_.add(DropReason::kShaperQueueFull);
      if (cls != nullptr) ++cls->dropped;
      rx_->release(&p, 1);
  }
}

void Pipeline::release_shaped(uint64_t now) {
  if (!shaper_) return;
  Egress& e = eg_;
  const bool by_class = cfg_.shaping.by == ShapeBy::kClass;
  for (;;) {
    size_t k = shaper_->poll(now, e.ready);
    for (size_t i = 0; i < k; ++i) {
      const Packet& w = e.waiting[e.ready[i]];
      if (by_class) {
        Summary::ShaperClass& c = e.classes[e.waiting_class[e.ready[i]]];
        ++c.packets;
        c.bytes += w.len;
      }
      e.txq.push_back(w);
      e.free_items.push_back(e.ready[i]);
    }
    transmit(e.txq);
    if (k < e.ready.size()) break;
  }
  std::lock_guard<std::mutex> g(shaper_mu_);
  shaper_stats_ = shaper_->stats();
  shaper_unclassified_ = e.unclassified;
  for (uint32_t i = 0; i < shaper_classes_.size(); ++i) {
    Summary::ShaperClass& c = shaper_classes_[i];
    c.packets = e.classes[i].packets;
    c.bytes = e.classes[i].bytes;
    c.dropped = e.classes[i].dropped;
    c.waiting = shaper_->backlog(i);
    c.throttled = shaper_->throttled(i);
    c.alpha_bytes = shaper_->alpha_bytes(i);
  }
}

// One pass over every lane's completions: order check, drops, shaping, tx. Returns whether any came.
bool Pipeline::egress_poll() {
  Egress& e = eg_;
  bool any = false;
  for (size_t li = 0; li < lanes_.size(); ++li) {
    size_t n = lanes_[li]->completions().pop_burst(e.buf.data(), e.buf.size());
    if (n == 0) continue;
    any = true;
    uint64_t now = monotonic_ns();
    for (size_t i = 0; i < n; ++i) {
      Packet& p = e.buf[i];
      if (p.flow_id != kNoFlow) {
        uint32_t& exp = expected_seq_[p.flow_id];
        if (p.seq != 0 && p.seq != exp) reorders_.fetch_add(1, std::memory_order_relaxed);
        exp = p.seq + 1;
        flows_->in_flight(p.flow_id).fetch_sub(1, std::memory_order_acq_rel);
      }
      if (p.drop != DropReason::kNone) {
        drops_egress_.add(p.drop);
        if (cfg_.on_drop) {
          auto frame = cfg_.on_drop(p, e.scratch);
          if (!frame.empty()) {
            Packet h;
            h.data = const_cast<uint8_t*>(frame.data());
            h.len = static_cast<uint16_t>(frame.size());
            h.buf_kind = kBufPool;
            host_frames_.fetch_add(tx_->tx_burst(&h, 1), std::memory_order_relaxed);
          }
        }
        rx_->release(&p, 1);
        continue;
      }
      latency_.add(now - p.rx_ns);
      if (shaper_) shape(p, now);
      else e.txq.push_back(p);
    }
    transmit(e.txq);
    egress_handled_[li]->fetch_add(n, std::memory_order_release);
  }
  release_shaped(monotonic_ns());
  return any;
}

// Runs until every lane has ended and what they completed is sent (or, for shaped packets still
// waiting past the drain timeout, counted).
void Pipeline::egress_loop() {
  Egress& e = eg_;
  int idle = 0;
  uint64_t drain_deadline = 0;
  for (;;) {
    if (egress_poll()) {
      idle = 0;
      continue;
    }
    if (lanes_done_.load(std::memory_order_acquire)) {
      // Every lane has ended: what is left is in the completion rings and the shaper.
      bool empty = true;
      for (auto& l : lanes_) empty &= l->completions().empty();
      if (empty) {
        bool shaped_left = shaper_ && e.free_items.size() < e.waiting.size();
        if (!shaped_left) break;
        uint64_t now = monotonic_ns();
        if (drain_deadline == 0) drain_deadline = now + cfg_.shaping.drain_timeout_ns;
        if (now >= drain_deadline) {
          // Whatever still waits is counted, never lost silently.
          std::vector<bool> is_free(e.waiting.size(), false);
          for (uint64_t f : e.free_items) is_free[f] = true;
          for (size_t i = 0; i < e.waiting.size(); ++i)
            if (!is_free[i]) {
              drops_egress_.add(DropReason::kShaperDrain);
              rx_->release(&e.waiting[i], 1);
            }
          break;
        }
      }
    }
    backoff(idle);
  }
  tx_->flush();
}

Summary Pipeline::run() {
  start_ns_ = monotonic_ns();
  if (!cfg_.run_to_completion) {
    for (auto& l : lanes_) l->start();
    egress_ = std::thread([this] { egress_loop(); });
  }
  dispatcher_ = std::thread([this] { dispatch_loop(); });
  uint64_t last = start_ns_;
  while (!dispatch_done_.load(std::memory_order_acquire)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    uint64_t now = monotonic_ns();
    if (cfg_.status_interval_ns != 0 && now - last >= cfg_.status_interval_ns && on_status_) {
      on_status_(snapshot(), static_cast<double>(now - last) / 1e9);
      last = now;
    }
    if (log_ != nullptr)
      for (auto& l : lanes_) {
        auto s = l->log_drain();
        if (!s.empty()) std::fwrite(s.data(), 1, s.size(), log_);
      }
  }
  dispatcher_.join();
  for (auto& l : lanes_) l->request_stop();
  for (auto& l : lanes_) l->join();
  // A lane that failed while draining, after the dispatcher had ended, still holds what it handed
  // back, and no dispatcher is left to re-route it: count it (no_lane) rather than lose it.
  for (auto& l : lanes_) {
    if (l->state() != LaneState::kDrained) continue;
    std::vector<Packet> left = retire(*l);
    spdlog::warn("lane {} failed while draining; {} packets it held are counted as no_lane", l->name(), left.size());
    for (auto& o : left) {
      if (o.flow_id != kNoFlow) flows_->in_flight(o.flow_id).fetch_sub(1, std::memory_order_release);
      drop_at_dispatch(&o, 1, DropReason::kNoLane);
    }
  }
  lanes_done_.store(true, std::memory_order_release);
  if (egress_.joinable()) egress_.join();
  end_ns_ = monotonic_ns();
  if (log_ != nullptr) {
    for (auto& l : lanes_) {
      auto s = l->log_drain();
      if (!s.empty()) std::fwrite(s.data(), 1, s.size(), log_);
    }
    std::fflush(log_);
  }
  return snapshot();
}

Summary Pipeline::snapshot() const {
  Summary s;
  uint64_t end = end_ns_ != 0 ? end_ns_ : monotonic_ns();
  s.seconds = static_cast<double>(end - start_ns_) / 1e9;
  PortStats rs = rx_->stats();
  s.rx_packets = rs.rx_packets + rs.rx_too_long;
  s.rx_bytes = rs.rx_bytes;
  if (rx_->kind() == "dpdk") s.port_missed = rs.rx_no_buffer;
  s.rx_buffers_in_use = rs.buffers_in_use;
  s.tx_packets = tx_packets_.load();
  s.tx_bytes = tx_bytes_.load();
  for (size_t r = 1; r < static_cast<size_t>(DropReason::kCount); ++r) {
    auto reason = static_cast<DropReason>(r);
    uint64_t c = drops_dispatch_.get(reason) + drops_egress_.get(reason);
    if (reason == DropReason::kFrameTooLong) c += rs.rx_too_long;
    if (c != 0) s.drops.emplace_back(std::string(drop_reason_name(reason)), c);
    s.dropped += c;
  }
  s.reorders = reorders_.load();
  s.unaccounted = end_ns_ != 0 && s.rx_packets > s.tx_packets + s.dropped ? s.rx_packets - s.tx_packets - s.dropped : 0;
  s.flows_seen = flows_seen_.load();
  s.flow_table_full = flows_->full_events();
  s.lane_failures = lane_failures_.load();
  s.host_frames = host_frames_.load();
  s.event_name = std::string(app_->event_name());
  s.balancer = cfg_.balancer;
  if (end_ns_ != 0) s.balance = balancer_->stats();  // the dispatcher has ended: no writer left
  if (shaper_) {
    std::lock_guard<std::mutex> g(shaper_mu_);
    s.shaping = true;
    s.shaped_queues = shaper_stats_.queues_configured;
    s.shaper_heap = shaper_stats_.heap_size;
    s.shaper_waiting = shaper_stats_.waiting_pkts;
    s.shaper_reschedules = shaper_stats_.reschedules;
    s.shaper_delayed = shaper_delayed_.load();
    s.shaper_throttled = shaper_stats_.queues_throttled;
    s.shaper_heap_high_water = shaper_stats_.heap_high_water;
    s.shaper_unclassified = shaper_unclassified_;
    s.shaper_classes = shaper_classes_;
  }
  s.latency_p50_ns = latency_.percentile_ns(50);
  s.latency_p99_ns = latency_.percentile_ns(99);
  for (const auto& b : latency_.b) s.latency_buckets.push_back(b.load(std::memory_order_relaxed));
  for (const auto& l : lanes_) {
    auto& st = const_cast<Lane&>(*l).stats();
    LaneSummary ls;
    ls.name = l->name();
    ls.executor = l->executor();
    static const char* kStates[] = {"running", "failed", "drained", "removed"};
    const LaneState state = l->state();  // acquire: a failed lane wrote its failure before its state
    ls.state = kStates[static_cast<int>(state)];
    if (state != LaneState::kRunning) ls.failure = l->failure();
    ls.batches = st.batches.load();
    ls.packets = st.packets.load();
    ls.events = st.events.load();
    ls.queue_full = st.queue_full.load();
    s.events += ls.events;
    ls.mean_batch = ls.batches != 0 ? static_cast<double>(st.batch_pkts_sum.load()) / static_cast<double>(ls.batches) : 0;
    ls.utilisation = s.seconds > 0 ? static_cast<double>(st.busy_ns.load()) / 1e9 / s.seconds : 0;
    ls.p50_ns = st.batch_latency.percentile_ns(50);
    ls.p99_ns = st.batch_latency.percentile_ns(99);
    s.lanes.push_back(std::move(ls));
  }
  return s;
}

std::string Summary::to_json() const {
  nlohmann::json j;
  j["seconds"] = seconds;
  j["rx"] = {{"packets", rx_packets}, {"bytes", rx_bytes}, {"port_missed", port_missed}};
  j["tx"] = {{"packets", tx_packets}, {"bytes", tx_bytes}};
  j["dropped"] = dropped;
  for (const auto& [r, c] : drops) j["drops"][r] = c;
  j["reorders"] = reorders;
  j["unaccounted"] = unaccounted;
  j["flows"] = flows_seen;
  j["flow_table_full"] = flow_table_full;
  j["lane_failures"] = lane_failures;
  j["host_frames"] = host_frames;
  j["rx_buffers_in_use"] = rx_buffers_in_use;
  j["app_events"] = {{"name", event_name}, {"count", events}};
  j["latency_ns"] = {{"p50", latency_p50_ns}, {"p99", latency_p99_ns}};
  if (!power_source.empty()) j["power"] = {{"watts", power_w}, {"energy_j", energy_j}, {"source", power_source}};
  if (balance)
    j["balancer"] = {{"policy", balancer},
                     {"moves", balance->moves},
                     {"blocked_moves", balance->blocked_moves},
                     {"would_reorder", balance->would_reorder},
                     {"migrations", balance->migrations},
                     {"adjustments", balance->adjustments}};
  if (shaping) {
    j["shaper"] = {{"queues", shaped_queues},
                   {"throttled", shaper_throttled},
                   {"heap", shaper_heap},
                   {"heap_high_water", shaper_heap_high_water},
                   {"waiting", shaper_waiting},
                   {"reschedules", shaper_reschedules},
                   {"delayed_packets", shaper_delayed}};
    if (!shaper_classes.empty()) {
      j["shaper"]["unclassified"] = shaper_unclassified;
      for (const auto& c : shaper_classes)
        j["shaper"]["classes"].push_back({{"name", c.name},
                                          {"rate_bps", c.rate_bytes_per_s * 8},
                                          {"packets", c.packets},
                                          {"bytes", c.bytes},
                                          {"dropped", c.dropped},
                                          {"waiting", c.waiting},
                                          {"throttled", c.throttled},
                                          {"alpha_bytes", c.alpha_bytes}});
    }
  }
  for (const auto& l : lanes) {
    j["lanes"].push_back({{"name", l.name},
                          {"executor", l.executor},
                          {"state", l.state},
                          {"failure", l.failure},
                          {"batches", l.batches},
                          {"packets", l.packets},
                          {"events", l.events},
                          {"queue_full", l.queue_full},
                          {"mean_batch", l.mean_batch},
                          {"utilisation", l.utilisation},
                          {"batch_latency_ns", {{"p50", l.p50_ns}, {"p99", l.p99_ns}}}});
  }
  return j.dump(2);
}

std::string Summary::to_text() const {
  std::string s;
  double mpps = seconds > 0 ? static_cast<double>(rx_packets) / seconds / 1e6 : 0;
  double gbps = seconds > 0 ? static_cast<double>(tx_bytes) * 8 / seconds / 1e9 : 0;
  s += fmt::format("  time        {:.3f} s\n", seconds);
  s += fmt::format("  received    {} packets ({} bytes), {:.3f} Mpps\n", rx_packets, rx_bytes, mpps);
  if (port_missed) s += fmt::format("  port missed {} packets (dropped by the input port before hpr received them)\n", port_missed);
  s += fmt::format("  transmitted {} packets ({} bytes), {:.3f} Gbit/s\n", tx_packets, tx_bytes, gbps);
  s += fmt::format("  dropped     {}\n", dropped);
  for (const auto& [r, c] : drops) s += fmt::format("    {:<18} {}\n", r, c);
  s += fmt::format("  books       received = transmitted + dropped: {} ({} unaccounted)\n",
                   unaccounted == 0 && rx_packets == tx_packets + dropped ? "balanced" : "NOT BALANCED", unaccounted);
  s += fmt::format("  reorders    {}\n", reorders);
  s += fmt::format("  flows       {}{}\n", flows_seen, flow_table_full ? fmt::format(" (table full {} times)", flow_table_full) : "");
  s += fmt::format("  {:<11} {}\n", event_name, events);
  s += fmt::format("  latency     p50 {:.1f} us, p99 {:.1f} us (rx to tx, log2 buckets)\n", latency_p50_ns / 1e3,
                   latency_p99_ns / 1e3);
  if (!power_source.empty()) s += fmt::format("  power       {:.1f} W, energy {:.1f} J (source: {})\n", power_w, energy_j, power_source);
  if (shaping) {
    s += fmt::format("  shaper      {} queues, {} packets delayed, {} reschedules, heap {} now (most {})\n",
                     shaped_queues, shaper_delayed, shaper_reschedules, shaper_heap, shaper_heap_high_water);
    for (const auto& c : shaper_classes)
      s += fmt::format("    class {:<12} {:>12.0f} bit/s  {} packets {} bytes sent, {} dropped\n", c.name,
                       static_cast<double>(c.rate_bytes_per_s) * 8, c.packets, c.bytes, c.dropped);
    if (!shaper_classes.empty()) s += fmt::format("    unclassified {} packets (sent unshaped)\n", shaper_unclassified);
  }
  if (balance)
    s += fmt::format("  balancer    {}: {} flow moves, {} refused (would have reordered {} packets), {} migrations\n",
                     balancer, balance->moves, balance->blocked_moves, balance->would_reorder, balance->migrations);
  if (host_frames) s += fmt::format("  host frames {} (ICMP sent by the host)\n", host_frames);
  s += fmt::format("  rx buffers  {} still in use\n", rx_buffers_in_use);
  s += "  lanes:\n";
  for (const auto& l : lanes) {
    s += fmt::format(
        "    {:<28} {:>10} pkts {:>8} batches  mean batch {:>7.1f}  busy {:>5.1f}%  batch p50 {:.1f} us p99 {:.1f} us  "
        "{}{}{}\n",
        l.name, l.packets, l.batches, l.mean_batch, l.utilisation * 100, l.p50_ns / 1e3, l.p99_ns / 1e3, l.state,
        l.queue_full ? fmt::format("  queue full {}", l.queue_full) : "",
        l.failure.empty() ? "" : " (" + l.failure + ")");
  }
  return s;
}

}  // namespace hpr
