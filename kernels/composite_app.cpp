#include "kernels/composite_app.hpp"

namespace hpr::kernels {

Result<std::unique_ptr<DeviceTables>> CompositeApp::make_device_tables(const cl::Context&, const cl::CommandQueue&) const {
  // A device runs a chain's apps' own tables (AppProgram::parts); services none.
  return error(Code::kUnimplemented, "{} has no tables of its own: its apps' tables run on a device", name());
}

void CompositeApp::slices_in_place(std::span<const Packet> pkts, Desc* desc, uint8_t** slices) const {
  for (size_t i = 0; i < pkts.size(); ++i) {
    desc[i] = Desc{0, 0, 0, pkts[i].flow_id, pkts[i].seq};
    slices[i] = pkts[i].data;
  }
}

}  // namespace hpr::kernels
