#include "kernels/composite_app.hpp"

namespace hpr::kernels {

Result<std::unique_ptr<DeviceTables>> CompositeApp::make_device_tables(const cl::Context&, const cl::CommandQueue&) const {
  return error(Code::kUnimplemented, "{} runs on native lanes only (an OpenCL lane runs one app)", name());
}

void CompositeApp::slices_in_place(std::span<const Packet> pkts, Desc* desc, uint8_t** slices) const {
  for (size_t i = 0; i < pkts.size(); ++i) {
    desc[i] = Desc{0, 0, 0, pkts[i].flow_id, pkts[i].seq};
    slices[i] = pkts[i].data;
  }
}

}  // namespace hpr::kernels
