#pragma once
// An app made of apps: a chain (chain/chain_app.hpp) or services (service/service_app.hpp). A native lane runs it
// through run_in_place; an OpenCL lane runs its apps' kernels in turn (device_stages(), chain_app(k): each app's own
// program and tables). App's per-packet hooks (slice, slices_in_place, run_native, finish) run nothing here.
#include <memory>
#include <string>
#include <string_view>

#include "kernels/app.hpp"

namespace hpr::kernels {

class CompositeApp : public App {
 public:
  Slice slice(const Packet&) const override { return {}; }
  std::string kernel_source() const override { return {}; }
  std::string_view kernel_name() const override { return {}; }
  // Errors: always (kUnimplemented, naming the app).
  Result<std::unique_ptr<DeviceTables>> make_device_tables(const cl::Context&, const cl::CommandQueue&) const override;
  // Empty slices (the apps inside make their own in run_in_place).
  void slices_in_place(std::span<const Packet> pkts, Desc* desc, uint8_t** slices) const override;
  void run_native(const BatchView&) const override {}
  void finish(std::span<Packet>, const BatchView&) const override {}
  uint32_t device_stages() const override { return chain_length(); }
};

}  // namespace hpr::kernels
