// Stages of lanes: each app of a chain on lanes of its own (app.place; docs/chains.md "Placement per app").
//
// Consecutive apps on the same lanes are one stage; each lane is in one stage and runs its stage's apps (one app, or
// a chain of them: on a device one gathered batch, no copy between them). The dispatcher gives flows to stage 0's
// lanes. Egress takes each lane's completions: the last stage's leave as before; an earlier stage's that its apps
// passed on go to the next stage's lanes, the reference handed on (no copy), each flow to one lane of that stage by its
// hash (weighted), and those its apps dropped leave there with their reason. Run to completion only: one thread is
// then the producer of every lane's queue.
//
// Order: a lane completes in submission order and a flow takes one lane per stage, so each flow leaves the last stage
// in order. A lane that fails is retired stages last first (handle_failed_lanes): a stage waits on its completions
// being handed on, and what is handed to a failed lane waits in its queue, re-routed after its own packets.
#include <fmt/format.h>

#include <limits>

#include "kernels/chain/chain_app.hpp"
#include "pipeline/pipeline.hpp"
#include "pipeline/pipeline_internal.hpp"

namespace hpr {
using detail::kNoLane;

Result<Pipeline::StagePlan> Pipeline::plan_stages(const PipelineConfig& cfg,
                                                  const std::shared_ptr<const kernels::App>& app) {
  const uint32_t n = app->chain_length();
  const size_t lanes = cfg.lanes.size();
  auto* chain = dynamic_cast<const kernels::ChainApp*>(app.get());
  if (chain == nullptr || app->service_count() > 1)
    return error(Code::kInvalidArgument, "app.place: places the apps of one chain (--app ipv4,dpi); {}",
                 app->service_count() > 1 ? "with [[service]] give each service its lanes (service[N].lanes)"
                                          : fmt::format("{} is one app", app->name()));
  if (!cfg.run_to_completion)
    return error(Code::kInvalidArgument, "app.place: apps on lanes of their own run to completion (lanes.run_to_completion)");
  if (cfg.app_lanes.size() > n)
    return error(Code::kInvalidArgument, "app.place: {} apps placed, the chain has {}", cfg.app_lanes.size(), n);
  std::vector<std::string> names;
  for (const auto& s : cfg.lanes) names.push_back(s.lane.name);
  // on[k][i]: app k runs on lane i.
  std::vector<std::vector<uint8_t>> on(n, std::vector<uint8_t>(lanes, 0));
  std::vector<uint8_t> named(lanes, 0);
  for (uint32_t k = 0; k < n; ++k) {
    if (k >= cfg.app_lanes.size() || cfg.app_lanes[k].empty()) continue;
    for (const std::string& part : cfg.app_lanes[k]) {
      bool any = false;
      for (size_t i = 0; i < lanes; ++i)
        if (names[i].find(part) != std::string::npos) on[k][i] = named[i] = 1, any = true;
      if (!any)
        return error(Code::kInvalidArgument, "app.place.{}: '{}' is in no lane's name (the lanes: {})",
                     app->chain_app(k).name(), part, fmt::join(names, ", "));
    }
  }
  for (uint32_t k = 0; k < n; ++k)
    if (k >= cfg.app_lanes.size() || cfg.app_lanes[k].empty())
      for (size_t i = 0; i < lanes; ++i) on[k][i] = !named[i];
  StagePlan plan;
  plan.of_lane.assign(lanes, kNoLane);
  for (uint32_t k = 0; k < n;) {
    uint32_t e = k + 1;
    while (e < n && on[e] == on[k]) ++e;
    const auto s = static_cast<uint8_t>(plan.first.size());
    std::vector<std::string> where;
    for (size_t i = 0; i < lanes; ++i) {
      if (!on[k][i]) continue;
      if (plan.of_lane[i] != kNoLane)
        return error(Code::kInvalidArgument,
                     "app.place: lane {} would run {} and {}, which are not next to each other on the same lanes: give "
                     "each app lanes of its own, or consecutive apps the same lanes",
                     names[i], app->chain_app(plan.first[plan.of_lane[i]]).name(), app->chain_app(k).name());
      plan.of_lane[i] = s;
      where.push_back(names[i]);
    }
    if (where.empty())
      return error(Code::kInvalidArgument, "app.place.{}: no lane is left for it (every lane is named for another app)",
                   app->chain_app(k).name());
    plan.first.push_back(k);
    plan.end.push_back(e);
    plan.apps.push_back(chain->part(k, e));
    plan.text += fmt::format("{}{} on {}", plan.text.empty() ? "" : "; ", plan.apps.back()->name(), fmt::join(where, ", "));
    k = e;
  }
  for (size_t i = 0; i < lanes; ++i)
    if (plan.of_lane[i] == kNoLane)
      return error(Code::kInvalidArgument, "app.place: lane {} runs no app of the chain: name it for an app or leave it out",
                   names[i]);
  return plan;
}

void Pipeline::init_stages(StagePlan plan) {
  stages_on_ = plan.first.size() > 1;
  if (!stages_on_) return;
  stage_lanes_.assign(plan.first.size(), std::vector<uint8_t>(lanes_.size(), 0));
  for (size_t i = 0; i < lanes_.size(); ++i) stage_lanes_[plan.of_lane[i]][i] = 1;
  stage_of_ = std::move(plan.of_lane);
  stage_end_ = std::move(plan.end);
  stage_apps_ = std::move(plan.apps);
  stage_text_ = std::move(plan.text);
}

// A flow's lane in stage s: by its hash among the stage's lanes that are not retired, weighted (evenly where they all
// weigh 0). A failed lane not yet retired is among them: what it is given waits in its queue and is re-routed after
// its own packets, so a flow's newer packets cannot overtake them. kNoLane: none is left.
uint8_t Pipeline::stage_lane(uint32_t hash, size_t s) const {
  const std::vector<uint8_t>& allow = stage_lanes_[s];
  return weighted_lane(hash, [&](size_t i) { return allow[i] && lanes_[i]->state() != LaneState::kRemoved; });
}

// Egress, for a lane of a stage before the last: what its apps passed on goes to the next stage's lanes, what they
// dropped leaves here. At most as many as the next stage's fullest queue has room for: the rest waits on the lane's
// completion ring (and the lane, when that is full, for egress).
bool Pipeline::forward(size_t li) {
  Egress& e = eg_;
  const size_t next = stage_of_[li] + 1;
  size_t room = std::numeric_limits<size_t>::max();
  for (size_t j = 0; j < lanes_.size(); ++j)
    if (stage_lanes_[next][j] && lanes_[j]->state() != LaneState::kRemoved)
      room = std::min(room, lanes_[j]->input().capacity() - lanes_[j]->input().size());
  const size_t n = lanes_[li]->completions().pop_burst(e.refs.data(), std::min(room, e.refs.size()));
  if (n == 0) return false;
  uint16_t nd = 0;
  size_t back = 0;  // references whose descriptors go back to the store
  for (size_t i = 0; i < n; ++i) {
    Packet* r = e.refs[i];
    Packet& p = *r;
    if (p.drop == DropReason::kNone) {
      const uint8_t to = stage_lane(p.hash, next);
      if (to != kNoLane) {
        p.lane = to;
        (void)lanes_[to]->input().push(r);  // room seen above; this thread is every queue's one producer
        ++enqueued_[to];
        continue;
      }
      p.drop = DropReason::kNoLane;  // every lane of the next stage has left
    }
    if (p.flow_id != kNoFlow) flight_sub(p.flow_id);
    if (p.drop == DropReason::kNoLane) drop_at_dispatch(&p, 1, DropReason::kNoLane);
    else {
      drop_at_egress(p);
      Port::buffer_ref(e.dropped[nd++], p);
    }
    e.refs[back++] = r;
  }
  rx_->release(e.dropped.data(), nd);
  store_->give_back(e.refs.data(), back);
  egress_handled_[li]->store(egress_handled_[li]->load(std::memory_order_relaxed) + n, std::memory_order_release);
  return true;
}

}  // namespace hpr
