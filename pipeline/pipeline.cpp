#include "pipeline/pipeline.hpp"

#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <cstring>

#include "hpr/clock.hpp"
#include "kernels/service/service_app.hpp"
#include "pipeline/pipeline_internal.hpp"
#include "pipeline/shared_device.hpp"
#include "runtime/balance_glue.hpp"
#include "runtime/ports/dpdk_port.hpp"

namespace hpr {

static_assert(kernels::kMaxServices <= kServiceBooks, "a book for every service");
using detail::backoff;
using detail::kNoLane;
using detail::policy_weights;

Result<std::unique_ptr<Pipeline>> Pipeline::create(PipelineConfig cfg, std::shared_ptr<const kernels::App> app,
                                                   Port& rx, Port& tx) {
  return create(std::move(cfg), std::move(app), rx, std::vector<Port*>{&tx});
}

Result<std::unique_ptr<Pipeline>> Pipeline::create(PipelineConfig cfg, std::shared_ptr<const kernels::App> app,
                                                   Port& rx, std::vector<Port*> tx) {
  if (tx.empty() || std::find(tx.begin(), tx.end(), nullptr) != tx.end())
    return error(Code::kInvalidArgument, "output: no output port");
  if (tx.size() > 65535) return error(Code::kInvalidArgument, "output: at most 65535 output ports");
  for (size_t i = 0; i < cfg.port_map.size(); ++i)
    if (cfg.port_map[i] >= tx.size())
      return error(Code::kInvalidArgument,
                   "ports.map (--port-map): entry {} names output port {}, but there {} {} output port{}", i,
                   cfg.port_map[i], tx.size() == 1 ? "is" : "are", tx.size(), tx.size() == 1 ? "" : "s");
  if (cfg.lanes.empty()) return error(Code::kInvalidArgument, "no lanes: enable at least one device or native worker");
  if (cfg.lanes.size() >= kNoLane) return error(Code::kInvalidArgument, "at most {} lanes", kNoLane - 1);
  std::unique_ptr<Pipeline> p(new Pipeline());
  auto ft = FlowTable::create(cfg.flow_capacity, cfg.flow_idle_ns);
  if (!ft) return ft.status();
  p->flows_ = std::move(*ft);
  p->expected_seq_.assign(p->flows_->capacity(), 0);
  if (cfg.move_hold > 32767) return error(Code::kInvalidArgument, "move_hold: {} is above 32767 packets", cfg.move_hold);
  StagePlan plan;  // app.place: each lane's stage and the apps it runs
  if (!cfg.app_lanes.empty()) {
    auto r = plan_stages(cfg, app);
    if (!r) return r.status();
    plan = std::move(*r);
  }
  std::vector<LaneSpec> started;
  std::vector<uint8_t> started_stage;
  for (size_t si = 0; si < cfg.lanes.size(); ++si) {
    LaneSpec& spec = cfg.lanes[si];
    const bool staged = plan.first.size() > 1;
    const uint8_t stage = staged ? plan.of_lane[si] : 0;
    const kernels::App& lane_app = staged ? *plan.apps[stage] : *app;
    if (staged) {
      spec.lane.chain_part = true;
      spec.lane.first_app = plan.first[stage];
      if (spec.program) spec.program = spec.program->part(plan.first[stage], plan.end[stage]);
    }
    if (spec.lane.batch_size == 0) return error(Code::kInvalidArgument, "lane {}: batch size must be at least 1", spec.lane.name);
    if (spec.lane.queue_size == 0) return error(Code::kInvalidArgument, "lane {}: queue size must be at least 1", spec.lane.name);
    ExecutorConfig ec{std::max(spec.lane.max_batch, spec.lane.batch_size), spec.in_flight};
    std::unique_ptr<Executor> ex;
    if (spec.kind == LaneSpec::Kind::kNative) {
      ex = make_native_executor(lane_app, ec);
    } else {
      auto e = spec.shared && !staged ? spec.shared->client(lane_app, spec.program, spec.host_unified, ec)
                                      : make_cl_executor(lane_app, spec.program, spec.host_unified, ec);
      if (!e) {
        // A device whose queues or buffers cannot be created is left out; the other lanes go on.
        spdlog::warn("lane {} left out: {}", spec.lane.name, e.status().message());
        p->left_out_.push_back(spec.lane.name + ": " + e.status().message());
        continue;
      }
      ex = std::move(*e);
    }
    p->lanes_.push_back(std::make_unique<Lane>(spec.lane, lane_app, std::move(ex), cfg.completion_ring));
    p->egress_handled_.push_back(std::make_unique<std::atomic<uint64_t>>(0));
    started.push_back(std::move(spec));
    started_stage.push_back(stage);
  }
  if (started.empty()) return error(Code::kUnavailable, "no lane could be started: {}", fmt::join(p->left_out_, "; "));
  cfg.lanes = std::move(started);
  for (size_t s = 0; s < plan.first.size() && plan.first.size() > 1; ++s)
    if (std::find(started_stage.begin(), started_stage.end(), s) == started_stage.end())
      return error(Code::kUnavailable, "app.place: no lane of {} could be started: {}", plan.apps[s]->name(),
                   fmt::join(p->left_out_, "; "));
  plan.of_lane = std::move(started_stage);
  p->init_stages(std::move(plan));
  HPR_RETURN_IF_ERROR(p->place_services(cfg.service_lanes, *app));
  // The app's first version (app_swap.hpp), held by every lane's executor until it takes the next.
  auto first = std::make_shared<AppVersion>();
  first->generation = 1;
  first->app = app;
  for (const auto& spec : cfg.lanes)
    first->programs.push_back(spec.kind == LaneSpec::Kind::kOpenCL ? spec.program : nullptr);
  p->swap_ = std::make_unique<AppSwap>(std::move(first));
  // A lane of a stage runs a part of the chain: it follows no version (a live reload is refused, replace_app).
  for (size_t i = 0; i < p->lanes_.size() && !p->stages_on_; ++i)
    HPR_RETURN_IF_ERROR(p->lanes_[i]->follow(p->swap_.get(), i));
  // The balancer: one slot per flow-table id, one lane per lane, weights from the lanes.
  balance::BalancerConfig bc = cfg.balancer_cfg;
  bc.lanes = static_cast<uint32_t>(cfg.lanes.size());
  for (const auto& spec : cfg.lanes) p->weights_.push_back(static_cast<float>(spec.lane.weight));
  bc.lane_weights = policy_weights(p->weights_);
  bc.flow_slots = p->flows_->capacity();
  bc.burst_max = 256;
  if (cfg.balancer == "laps" && app->service_count() > 1) {
    // LAPS's service partitions are the run's [[service]] entries: each its share of the lanes.
    bc.services = app->service_count();
    if (bc.services > bc.lanes)
      return error(Code::kInvalidArgument,
                   "lanes.balancer: laps gives each of the {} services lanes of its own, and there are {} lanes: give "
                   "as many lanes (--native) or another balancer",
                   bc.services, bc.lanes);
  }
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
    const std::vector<std::string> services = app->service_names();  // what a class's service names refer to
    for (size_t i = 0; by_class && i < sc.classes.size(); ++i) {
      const ShapingClass& k = sc.classes[i];
      auto prof = p->shaper_->add_profile(profile(k.rate_bytes_per_s, k.burst_bytes, k.alpha_bytes));
      if (!prof) return error(prof.status().code(), "shaper.class[{}] ({}): {}", i, k.name, prof.status().message());
      HPR_RETURN_IF_ERROR(p->shaper_->configure_queue(static_cast<uint32_t>(i), *prof, now));
      ClassMatch m;
      m.any_dscp = k.dscp.empty();
      for (uint8_t d : k.dscp) m.dscp_mask |= 1ull << (d & 63);
      m.ports = k.ports;
      for (const std::string& name : k.services) {
        auto it = std::find(services.begin(), services.end(), name);
        if (it == services.end())
          return error(Code::kInvalidArgument, "shaper.class[{}].service: '{}' is not a [[service]] of this run ({})", i,
                       name, services.empty() ? "it has none" : fmt::format("{}", fmt::join(services, ", ")));
        m.svc_mask |= 1u << (it - services.begin());
      }
      p->class_match_.push_back(std::move(m));
      p->shaper_classes_.push_back({.name = k.name, .rate_bytes_per_s = k.rate_bytes_per_s});
    }
  }
  if (!cfg.log_path.empty()) {
    auto f = AtomicFile::open(cfg.log_path, "app.log (--log)");
    if (!f) return f.status();
    p->log_.emplace(std::move(*f));
    for (auto& l : p->lanes_) l->set_logging(true, log_prefix());
  }
  p->cfg_ = std::move(cfg);
  p->burst_ = std::make_unique<Burst>();
  p->svc_books_ = std::make_unique<std::array<ServiceBooks, kServiceBooks>>();
  p->init_egress();
  size_t held = p->eg_.refs.size();  // every lane full, and egress holding a burst
  for (const auto& l : p->lanes_) held += l->holds();
  p->store_ = std::make_unique<PacketStore>(held);
  if (p->cfg_.run_to_completion)
    for (auto& l : p->lanes_) {
      l->on_completions_full([pp = p.get()] { pp->egress_poll(); });
      l->set_polled();
    }
  p->app_ = std::move(app);
  p->svc_books_on_ = !p->app_->service_names().empty();
  p->rx_ = &rx;
  p->txs_ = std::move(tx);
  if (p->cfg_.port_map.empty())
    for (size_t i = 0; i < p->txs_.size(); ++i) p->port_of_.push_back(static_cast<uint16_t>(i));
  else
    p->port_of_ = p->cfg_.port_map;
  if (p->txs_.size() > 1) {
    p->tx_counters_ = std::make_unique<TxCounters[]>(p->txs_.size());
    p->eg_.split.resize(p->txs_.size());
    for (auto& v : p->eg_.split) v.reserve(Burst::kMax);
  }
  p->enqueued_.assign(p->lanes_.size(), 0);
  p->in_place_.assign(p->lanes_.size(), 0);
  if (use_worker_path(p->cfg_)) {
    p->init_worker();
    p->worker_on_ = true;
  } else {
    bool any_eligible = false;
    for (const auto& l : p->cfg_.lanes) any_eligible |= worker_eligible(l);
    if (p->cfg_.run_to_completion && !p->shaper_ && any_eligible &&
        !p->stages_on_) {  // the worker path transmits on this thread
      p->init_worker();
      p->worker_dynamic_ = true;
      for (size_t i = 0; i < p->lanes_.size(); ++i) p->in_place_[i] = worker_eligible(p->cfg_.lanes[i]);
    }
    if (p->cfg_.move_hold > 0 && p->lanes_.size() > 1) {
      p->held_count_.assign(p->flows_->capacity(), 0);
      p->held_to_.assign(p->flows_->capacity(), kNoLane);
      p->held_.reserve(p->cfg_.move_hold);
    }
  }
  return p;
}

// PipelineConfig::service_lanes against the lanes that started: each name part must match one.
Status Pipeline::place_services(const std::vector<std::vector<std::string>>& names, const kernels::App& app) {
  const std::vector<std::string> services = app.service_names();
  for (size_t s = 0; s < names.size(); ++s) {
    if (names[s].empty()) continue;
    if (s >= services.size() || s >= kServiceBooks)
      return error(Code::kInvalidArgument, "service[{}].lanes: there is no service[{}] ({} services)", s, s, services.size());
    std::vector<uint8_t> allow(lanes_.size(), 0);
    for (const std::string& part : names[s]) {
      bool any = false;
      for (size_t i = 0; i < lanes_.size(); ++i)
        if (lanes_[i]->name().find(part) != std::string::npos) {
          allow[i] = 1;
          any = true;
        }
      if (any) continue;
      std::vector<std::string> lanes;
      for (const auto& l : lanes_) lanes.push_back(l->name());
      return error(Code::kInvalidArgument, "service[{}].lanes ({}): '{}' is in no lane's name (the lanes: {}{}{})", s,
                   services[s], part, fmt::join(lanes, ", "), left_out_.empty() ? "" : "; left out: ",
                   fmt::join(left_out_, "; "));
    }
    svc_user_lanes_[s] = allow;
    svc_lanes_[s] = std::move(allow);
    pins_on_ = true;
  }
  svc_lanes_shown_ = svc_lanes_;
  return Status::ok();
}

std::vector<std::string> Pipeline::placed_on(size_t service) const {
  std::lock_guard<std::mutex> g(place_mu_);
  std::vector<std::string> on;
  for (size_t i = 0; service < svc_lanes_shown_.size() && i < svc_lanes_shown_[service].size(); ++i)
    if (svc_lanes_shown_[service][i]) on.push_back(lanes_[i]->name());
  return on;
}

std::vector<bool> Pipeline::placeable_services() const {
  const size_t n = std::min(app_->service_names().size(), kServiceBooks);
  if (n < 2 || lanes_.size() < 2) return {};
  std::vector<bool> out(n);
  for (size_t s = 0; s < n; ++s) out[s] = svc_user_lanes_[s].empty();
  return out;
}

Status Pipeline::set_service_lanes(const std::vector<int16_t>& place) {
  if (place.size() > kServiceBooks)
    return error(Code::kInvalidArgument, "{} services placed; at most {}", place.size(), kServiceBooks);
  for (size_t s = 0; s < place.size(); ++s) {
    if (place[s] < -1 || place[s] >= static_cast<int>(lanes_.size()))
      return error(Code::kInvalidArgument, "service[{}] placed on lane {}: {} lanes", s, place[s], lanes_.size());
    if (place[s] >= 0 && !svc_user_lanes_[s].empty())
      return error(Code::kInvalidArgument, "service[{}] is placed by the config (service[{}].lanes)", s, s);
  }
  std::lock_guard<std::mutex> g(weights_mu_);
  pending_place_ = place;
  place_given_ = place;
  weights_dirty_.store(true, std::memory_order_release);
  return Status::ok();
}

std::vector<int16_t> Pipeline::service_lanes() {
  std::lock_guard<std::mutex> g(weights_mu_);
  return place_given_;
}

void Pipeline::adopt_placement(const std::vector<int16_t>& place) {
  bool any = false;
  for (size_t s = 0; s < kServiceBooks; ++s) {
    if (s < place.size() && place[s] >= 0) {
      svc_lanes_[s].assign(lanes_.size(), 0);
      svc_lanes_[s][static_cast<size_t>(place[s])] = 1;
    } else {
      svc_lanes_[s] = svc_user_lanes_[s];
    }
    any = any || !svc_lanes_[s].empty();
  }
  pins_on_ = any;
  std::lock_guard<std::mutex> g(place_mu_);
  svc_lanes_shown_ = svc_lanes_;
}

std::string Pipeline::placement() const {
  const std::vector<std::string> services = app_->service_names();
  std::string out;
  for (size_t s = 0; s < services.size(); ++s)
    if (const auto on = placed_on(s); !on.empty())
      out += fmt::format("{}{} on {}", out.empty() ? "" : "; ", services[s], fmt::join(on, ", "));
  return out;
}

Pipeline::~Pipeline() {
  stop_rx_ = true;
  if (dispatcher_.joinable()) dispatcher_.join();
  for (auto& l : lanes_) l->request_stop();
  for (auto& l : lanes_) l->join();
  lanes_done_ = true;
  if (egress_.joinable()) egress_.join();
}

uint8_t Pipeline::pick_lane(uint32_t hash, const std::vector<uint8_t>* allow) const {
  // Weighted choice among the running lanes (a service's own, while one of them runs) by the flow hash: deterministic
  // per flow. Where all of them weigh 0 (a service's lanes while the learner runs the rest elsewhere, or every lane
  // left), evenly rather than a drop.
  const uint8_t l = weighted_lane(
      hash, [&](size_t i) { return lanes_[i]->state() == LaneState::kRunning && (allow == nullptr || (*allow)[i]); });
  // None of its lanes runs: as a failed lane's (a stage's packets: no other lane runs its app).
  return l == kNoLane && allow != nullptr && !stages_on_ ? pick_lane(hash) : l;
}

// Takes a drained lane out of the set; returns what it handed back and what was pushed to its queue
// after it drained itself, oldest first.
std::vector<Packet*> Pipeline::retire(Lane& lane) {
  std::vector<Packet*> out = std::move(lane.orphans());
  Packet* p;
  while (lane.input().pop(p)) out.push_back(p);
  lane.mark_removed();
  bump(lane_failures_, 1);
  return out;
}

// Re-routes the packets of lanes that failed, once egress has sent everything they completed
// (so the re-routed packets of a flow cannot overtake its earlier ones). Returns true when it
// re-routed anything.
bool Pipeline::handle_failed_lanes() {
  bool any = false;
  // Stages: the last stage's first, since retiring a lane waits for its completions to be handed on to the next.
  const size_t stages = stages_on_ ? stage_lanes_.size() : 1;
  for (size_t s = stages; s-- > 0;)
    for (size_t li = 0; li < lanes_.size(); ++li) {
      Lane& lane = *lanes_[li];
      LaneState st = lane.state();
      if (stage_of(li) != s || st == LaneState::kRunning || st == LaneState::kRemoved) continue;
      int rounds = 0;
      while (lane.state() == LaneState::kFailed) backoff(rounds);  // the lane is handing back its packets
      lane.join();
      reroute(li, [this](size_t, int& r) { wait_step(r); });
      any = true;
    }
  return any;
}

// Once egress has sent everything lane `li` completed (so that a flow's re-routed packets cannot overtake its
// earlier ones), its packets go to the remaining lanes by their flows; `room(to, rounds)` is called while lane
// `to`'s queue is full (a re-routed packet is never dropped for room). Returns the lanes given packets.
std::vector<bool> Pipeline::reroute(size_t li, const std::function<void(size_t, int&)>& room) {
  Lane& lane = *lanes_[li];
  int rounds = 0;
  while (egress_handled_[li]->load(std::memory_order_acquire) != lane.stats().packets.load(std::memory_order_acquire))
    wait_step(rounds);
  std::vector<Packet*> orphans = retire(lane);
  spdlog::warn("lane {} removed; re-routing {} packets to the remaining lanes", lane.name(), orphans.size());
  std::vector<bool> given(lanes_.size(), false);
  for (Packet* r : orphans) {
    Packet& o = *r;
    uint8_t to = kNoLane;
    if (stage_of(li) > 0) {
      to = stage_lane(o.hash, stage_of(li));  // a later stage's flow: by its hash, as forward() chooses
    } else if (o.flow_id != kNoFlow) {
      FlowState& fs = flows_->state(o.flow_id);
      if (fs.lane == li || fs.lane == kNoLane) fs.lane = pick_lane(o.hash, lanes_for(o));
      to = fs.lane;
    } else {
      to = pick_lane(o.hash, lanes_for(o));
    }
    if (to == kNoLane) {
      if (o.flow_id != kNoFlow) flight_sub(o.flow_id);
      drop_at_dispatch(&o, 1, DropReason::kNoLane);
      store_->give_back_here(r);
      continue;
    }
    int rounds = 0;
    while (!lanes_[to]->input().push(r)) room(to, rounds);
    ++enqueued_[to];
    given[to] = true;
  }
  return given;
}

size_t Pipeline::descriptors_in_use() const {
  size_t n = store_->in_use();
  for (const auto& w : workers_) n += w->descriptors_in_use();
  return n;
}

Status Pipeline::set_lane_weights(const std::vector<float>& w) {
  // A later stage's flows take their lane by the weights, without the move rule: weights that change would reorder.
  if (stages_on_)
    return error(Code::kUnimplemented, "app.place: the lanes of apps placed on their own keep their weights");
  if (w.size() != lanes_.size())
    return error(Code::kInvalidArgument, "{} lane weights given for {} lanes", w.size(), lanes_.size());
  for (float x : w)
    if (!(x >= 0)) return error(Code::kInvalidArgument, "lane weights must be >= 0");
  std::lock_guard<std::mutex> g(weights_mu_);
  pending_weights_ = w;
  weights_dirty_.store(true, std::memory_order_release);
  return Status::ok();
}

void Pipeline::start() {
  start_ns_.store(monotonic_ns(), std::memory_order_relaxed);
  if (!cfg_.run_to_completion) {
    for (auto& l : lanes_) l->start();
    egress_ = std::thread([this] {
      detail::fine_timer_slack();
      const DpdkThread dpdk;  // tx and mbuf frees through a per-thread mempool cache
      egress_loop();
    });
  }
  dispatcher_ = std::thread([this] {
    detail::fine_timer_slack();
    if (cfg_.cpu >= 0) detail::pin_to_cpu(cfg_.cpu, "dispatcher");
    const DpdkThread dpdk;  // rx, tx and mbuf frees through a per-thread mempool cache
    dispatch_loop();
  });
}

bool Pipeline::running() const {
  if (!dispatch_done_.load(std::memory_order_acquire)) return true;
  for (const auto& w : workers_)
    if (w->running()) return true;
  return false;
}

void Pipeline::request_stop() {
  stop_rx_.store(true, std::memory_order_relaxed);
  for (auto& w : workers_) w->request_stop();
}

Summary Pipeline::run() {
  start();
  for (auto& w : workers_) w->start();
  if (cfg_.control_cpu >= 0) detail::pin_to_cpu(cfg_.control_cpu, "control");
  uint64_t last = start_ns_.load(std::memory_order_relaxed);
  while (running()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(kControlTickMs));
    uint64_t now = monotonic_ns();
    if (cfg_.status_interval_ns != 0 && now - last >= cfg_.status_interval_ns && on_status_) {
      on_status_(snapshot(), static_cast<double>(now - last) / 1e9);
      last = now;
    }
    if (log_) write_log();
  }
  // The other workers end first: this one's ports (view 0) close the shared ones.
  for (auto& w : workers_) {
    const Summary ws = w->finish();
    output_errors_.insert(output_errors_.end(), ws.output_errors.begin(), ws.output_errors.end());
  }
  return finish();
}

Summary Pipeline::finish() {
  dispatcher_.join();
  for (auto& l : lanes_) l->request_stop();
  for (auto& l : lanes_) l->join();
  // A lane that failed while draining, after the dispatcher had ended, still holds what it handed back: this thread
  // re-routes it to the lanes that drained well and runs them to the end again (their threads have ended; egress
  // still sends; run to completion: this thread serves lanes and egress as the dispatcher did). With no lane left, it
  // is counted (no_lane) rather than lost.
  // One step of lane `to`'s work on this thread: run to completion, every lane and egress (wait_step); threaded,
  // the lane alone (its thread has ended).
  auto serve = [this](size_t to, int& r) {
    if (cfg_.run_to_completion) wait_step(r);
    else if (!lanes_[to]->poll()) backoff(r);
  };
  for (size_t li = 0; li < lanes_.size(); ++li) {
    if (lanes_[li]->state() != LaneState::kDrained) continue;
    spdlog::warn("lane {} failed while draining", lanes_[li]->name());
    const std::vector<bool> given = reroute(li, serve);
    for (size_t to = 0; to < given.size(); ++to) {
      int r = 0;
      while (given[to] && !lanes_[to]->finished()) serve(to, r);  // stopped: it runs what it was given, then ends
    }
  }
  lanes_done_.store(true, std::memory_order_release);
  if (egress_.joinable()) egress_.join();
  end_ns_.store(monotonic_ns(), std::memory_order_release);
  if (log_) {
    write_log();
    if (Status st = log_->commit(); !st.is_ok()) output_errors_.push_back(st.message());
    log_.reset();
  }
  for (Port* tx : txs_)
    if (Status st = tx->close(); !st.is_ok()) output_errors_.push_back(st.message());
  Summary s = snapshot();
  s.output_errors = output_errors_;
  return s;
}

void Pipeline::add_worker(std::unique_ptr<Pipeline> w) {
  if (log_)
    for (auto& l : w->lanes_) l->set_logging(true, log_prefix());
  workers_.push_back(std::move(w));
}

// "<rx ns> <src>:<sport> > <dst>:<dport> proto <n>"
std::function<std::string(const Packet&)> Pipeline::log_prefix() {
  return [](const Packet& pk) { return fmt::format("{} {}", pk.rx_ns, flow_text(pk)); };
}

// Every lane's lines since the last call, the workers' too (each flow lives on one worker, so its lines stay in order).
void Pipeline::write_log() {
  for (Pipeline* w : all_workers())
    for (auto& l : w->lanes_) {
      auto s = l->log_drain();
      if (!s.empty() && std::fwrite(s.data(), 1, s.size(), log_->file()) != s.size() && log_errors_++ == 0)
        spdlog::error("app.log (--log) {}: write failed: {}", log_->path(), std::strerror(errno));
    }
}

Summary Pipeline::snapshot() const {
  Summary s;
  const uint64_t ended = end_ns_.load(std::memory_order_acquire);
  uint64_t end = ended != 0 ? ended : monotonic_ns();
  s.seconds = static_cast<double>(end - start_ns_.load(std::memory_order_relaxed)) / 1e9;
  PortStats rs = rx_->stats();
  s.rx_packets = rs.rx_packets + rs.rx_too_long + rs.rx_pool_empty;
  s.rx_bytes = rs.rx_bytes;
  s.port_missed = rx_->kind() == "dpdk" ? rs.rx_no_buffer : rs.rx_missed;
  s.rx_buffers_in_use = rs.buffers_in_use;
  s.tx_packets = tx_packets_.load();
  s.tx_bytes = tx_bytes_.load();
  for (size_t i = 0; i < txs_.size(); ++i) {
    Summary::OutPort o{.name = txs_[i]->describe()};
    if (tx_counters_) {
      o.packets = tx_counters_[i].packets.load(std::memory_order_relaxed);
      o.bytes = tx_counters_[i].bytes.load(std::memory_order_relaxed);
      o.failed = tx_counters_[i].failed.load(std::memory_order_relaxed);
    } else {  // one output: its counts are the totals
      o.packets = s.tx_packets;
      o.bytes = s.tx_bytes;
      o.failed = drops_egress_.get(DropReason::kTxFailed) + drops_egress_.get(DropReason::kTxError);
    }
    s.out_ports.push_back(std::move(o));
  }
  for (size_t r = 1; r < static_cast<size_t>(DropReason::kCount); ++r) {
    auto reason = static_cast<DropReason>(r);
    uint64_t c = drops_dispatch_.get(reason) + drops_egress_.get(reason);
    if (reason == DropReason::kFrameTooLong) c += rs.rx_too_long;
    if (reason == DropReason::kPoolEmpty) c += rs.rx_pool_empty;
    if (c != 0) s.drops.emplace_back(std::string(drop_reason_name(reason)), c);
    s.dropped += c;
  }
  s.reorders = reorders_.load();
  s.unaccounted = ended != 0 && s.rx_packets > s.tx_packets + s.dropped ? s.rx_packets - s.tx_packets - s.dropped : 0;
  s.flows_seen = flows_seen_.load();
  s.dispatch_busy_s = static_cast<double>(dispatch_busy_ns_.load()) / 1e9;
  s.egress_busy_s = static_cast<double>(egress_busy_ns_.load()) / 1e9;
  s.flow_table_full = flows_->full_events();
  s.lane_failures = lane_failures_.load();
  s.host_frames = host_frames_.load();
  const auto version = swap_->current();  // app_ is the dispatcher's
  s.event_name = std::string(version->app->event_name());
  if (const kernels::App& app = *version->app; app.chain_length() > 1)
    for (uint32_t k = 0; k < app.chain_length(); ++k)
      s.chain_events.push_back({app.chain_label(k), std::string(app.chain_app(k).event_name()), 0});
  s.app_info = version->app->summary_info();
  if (stages_on_) s.app_info.emplace_back("placement", stage_text_);
  const std::vector<std::string> services = version->app->service_names();
  for (size_t i = 0; i < services.size() && i < kServiceBooks; ++i) {
    const ServiceBooks& b = (*svc_books_)[i];
    const auto c = b.latency.counts();
    s.services.push_back({.name = services[i],
                          .out = b.out.load(std::memory_order_relaxed),
                          .out_bytes = b.out_bytes.load(std::memory_order_relaxed),
                          .dropped = b.dropped.load(std::memory_order_relaxed),
                          .lost = b.lost.load(std::memory_order_relaxed),
                          .latency_buckets = {c.begin(), c.end()}});
    s.services.back().set_latency();
    s.services.back().lanes = placed_on(i);
  }
  // After live reloads: which version of the tables runs (the first is generation 1).
  if (version->generation > 1) s.app_info.emplace_back("tables", fmt::format("generation {}", version->generation));
  s.balancer = cfg_.balancer;
  if (ended != 0) s.balance = balancer_->stats();  // the dispatcher has ended: no writer left
  s.move_held = move_held_.load(std::memory_order_relaxed);
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
  {
    auto c = latency_.counts();
    s.latency_buckets.assign(c.begin(), c.end());
  }
  s.latency_p50_ns = LogLinear::percentile(s.latency_buckets, 50);
  s.latency_p99_ns = LogLinear::percentile(s.latency_buckets, 99);
  for (const auto& l : lanes_) {
    auto& st = const_cast<Lane&>(*l).stats();
    LaneSummary ls;
    ls.name = l->name();
    const size_t li = static_cast<size_t>(&l - lanes_.data());
    const bool in_place = worker_on_.load(std::memory_order_relaxed) && li == worker_lane_.load(std::memory_order_relaxed);
    ls.executor = in_place        ? "native, in place on the rx burst"
                  : in_place_[li] ? "native, in place on its queue's packets"
                                  : l->executor();
    static const char* kStates[] = {"running", "failed", "drained", "removed"};
    const LaneState state = l->state();  // acquire: a failed lane wrote its failure before its state
    ls.state = kStates[static_cast<int>(state)];
    if (state != LaneState::kRunning) ls.failure = l->failure();
    ls.batches = st.batches.load();
    ls.packets = st.packets.load();
    // The summary's events are the (last) app's; a chain's apps have theirs in chain_events.
    ls.events = st.events[(stages_on_ ? stage_end_[stage_of_[li]] : version->app->chain_length()) - 1].load();
    ls.queue_full = st.queue_full.load();
    s.events += ls.events;
    for (size_t k = 0; k < s.chain_events.size(); ++k) {
      s.chain_events[k].count += st.events[k].load();
      s.chain_events[k].in += st.app_in[k].load();
      s.chain_events[k].passed += st.app_out[k].load();
    }
    ls.mean_batch = ls.batches != 0 ? static_cast<double>(st.batch_pkts_sum.load()) / static_cast<double>(ls.batches) : 0;
    ls.utilisation = s.seconds > 0 ? static_cast<double>(st.busy_ns.load()) / 1e9 / s.seconds : 0;
    ls.p50_ns = st.batch_latency.percentile_ns(50);
    ls.p99_ns = st.batch_latency.percentile_ns(99);
    s.lanes.push_back(std::move(ls));
  }
  for (const auto& w : workers_) s.add_worker(w->snapshot());
  return s;
}

}  // namespace hpr
