#include "kernels/chain/chain_app.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace hpr::kernels {

Result<std::shared_ptr<ChainApp>> ChainApp::create(std::vector<std::shared_ptr<App>> apps, uint32_t max_frame) {
  if (apps.size() < 2) return error(Code::kInvalidArgument, "a chain needs two apps or more, got {}", apps.size());
  return std::shared_ptr<ChainApp>(new ChainApp(std::move(apps), max_frame));
}

std::shared_ptr<const App> ChainApp::part(uint32_t a, uint32_t b) const {
  if (b == a + 1) return apps_[a];
  return std::shared_ptr<ChainApp>(new ChainApp({apps_.begin() + a, apps_.begin() + b}, max_frame_));
}

ChainApp::ChainApp(std::vector<std::shared_ptr<App>> apps, uint32_t max_frame)
    : apps_(std::move(apps)), max_frame_(max_frame) {
  out_off_.push_back(0);
  for (const auto& a : apps_) {
    name_ += (name_.empty() ? "" : ",") + std::string(a->name());
    out_off_.push_back(out_off_.back() + (a->result_bytes() + 15) / 16 * 16);
  }
}

uint32_t ChainApp::max_slice_bytes() const {
  // A device gathers a packet's span from its first app's slice to its last's end: more than any one app's slice,
  // at most the frame.
  uint32_t m = max_frame_;
  for (const auto& a : apps_) m = std::max(m, a->max_slice_bytes());
  return m;
}

std::string ChainApp::device_refusal() const {
  for (size_t k = 0; k < apps_.size(); ++k) {
    if (!apps_[k]->rewrites_l2()) continue;
    for (size_t j = k + 1; j < apps_.size(); ++j)
      if (apps_[j]->reads_l2())
        return fmt::format("the chain {} runs on native lanes only ({} reads the Ethernet addresses that {} rewrites "
                           "after its kernel)", name_, apps_[j]->name(), apps_[k]->name());
  }
  for (const auto& a : apps_)
    if (std::string why = a->device_refusal(); !why.empty()) return why;
  return {};
}

bool ChainApp::writes_back() const {
  return std::any_of(apps_.begin(), apps_.end(), [](const auto& a) { return a->writes_back(); });
}

void ChainApp::run_in_place(std::span<Packet> pkts, Desc* desc, uint8_t** slices, uint8_t* out,
                            const AppDone& done) const {
  const size_t n = pkts.size();
  // App k after app k-1 has finished: a packet it dropped has its reason now, and app k gives it an empty slice.
  for (uint32_t k = 0; k < apps_.size(); ++k)
    apps_[k]->run_in_place(pkts, desc + k * n, slices + k * n, out + n * out_off_[k],
                           [&](uint32_t, const App& a, std::span<const Packet> pk, const BatchView& v) { done(k, a, pk, v); });
}

void ChainApp::flow_started(uint32_t id, const FlowKey& canonical) const {
  for (const auto& a : apps_) a->flow_started(id, canonical);
}

void ChainApp::flow_seq_half(uint32_t id, uint32_t half) const {
  for (const auto& a : apps_) a->flow_seq_half(id, half);
}

void ChainApp::take_over_from(const App& running) const {
  // The running version is this chain with older tables (a reload keeps the app name): app k from its app k.
  if (running.chain_length() != apps_.size()) return;
  for (uint32_t k = 0; k < apps_.size(); ++k) apps_[k]->take_over_from(running.chain_app(k));
}

bool ChainApp::keeps_flow_state() const {
  return std::any_of(apps_.begin(), apps_.end(), [](const auto& a) { return a->keeps_flow_state(); });
}

std::vector<std::pair<std::string, std::string>> ChainApp::summary_info() const {
  std::vector<std::pair<std::string, std::string>> all;
  for (const auto& a : apps_)
    for (auto& kv : a->summary_info()) all.push_back(std::move(kv));
  return all;
}

}  // namespace hpr::kernels
