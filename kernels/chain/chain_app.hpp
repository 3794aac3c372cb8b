#pragma once
// Several apps on each packet, in order (`--app ipv4,aes`: a gateway that routes, then encrypts; VPP's feature arcs,
// Click's element chains). Each app runs on the whole batch in turn, in place on the frames; a packet one app drops
// leaves the chain with that app's reason (the apps after it give it an empty slice and leave it alone). Each app keeps
// its own part of the batch (descriptors, slice pointers, result bytes), reported after it finishes
// (App::AppDone), so its events and log lines are its own.
//
// On a native lane each app runs in place on the frames in turn (run_in_place). On an OpenCL lane each app's kernel runs
// in turn on one gathered copy of the batch (device_stages(); pipeline/cl_executor.cpp): each packet's bytes from its
// first app's slice to its last's end are gathered once, the apps between them read and write them on the device, and
// only what the apps write goes back to the frames, after the last app.
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/composite_app.hpp"

namespace hpr::kernels {

class ChainApp final : public CompositeApp {
 public:
  // max_frame: the largest frame the run's port hands out (AppOptions::max_frame_bytes): a device gathers each
  // packet's span over every app's slice, at most the frame. Errors: fewer than two apps.
  static Result<std::shared_ptr<ChainApp>> create(std::vector<std::shared_ptr<App>> apps, uint32_t max_frame);
  // Apps a..b-1 of this chain (a stage of lanes, pipeline/stages.cpp): the app itself where b = a + 1, else a chain of
  // them, sharing their tables and keys with this one.
  std::shared_ptr<const App> part(uint32_t a, uint32_t b) const;

  std::string_view name() const override { return name_; }
  uint32_t max_slice_bytes() const override;
  uint32_t result_bytes() const override { return out_off_.back(); }
  bool writes_back() const override;

  void run_in_place(std::span<Packet> pkts, Desc* desc, uint8_t** slices, uint8_t* out,
                    const AppDone& done) const override;
  uint32_t chain_length() const override { return static_cast<uint32_t>(apps_.size()); }
  const App& chain_app(uint32_t k) const override { return *apps_[k]; }
  // Empty, unless an app reads the Ethernet header that an app before it rewrites in its finish (App::rewrites_l2).
  std::string device_refusal() const override;

  void flow_started(uint32_t id, const FlowKey& canonical) const override;
  void flow_seq_half(uint32_t id, uint32_t half) const override;
  void take_over_from(const App& running) const override;
  bool keeps_flow_state() const override;
  // Every app's, in order (their keys differ: only aes has any, key_epoch).
  std::vector<std::pair<std::string, std::string>> summary_info() const override;
  // Events are each app's (run_in_place reports each app's part of the batch; Summary::chain_events).
  std::string_view event_name() const override { return apps_.back()->event_name(); }

 private:
  ChainApp(std::vector<std::shared_ptr<App>> apps, uint32_t max_frame);
  std::vector<std::shared_ptr<App>> apps_;
  uint32_t max_frame_;
  // App k's results begin at out + n × out_off_[k]; out_off_.back() is the chain's result_bytes. Each app's share is
  // rounded up to 16 bytes, so every app's results stay as aligned as in a batch of its own.
  std::vector<uint32_t> out_off_;
  std::string name_;
};

}  // namespace hpr::kernels
