#include "kernels/md5/md5_app.hpp"

#include <string>

namespace hpr::kernels::md5 {
namespace {
class NoTables final : public DeviceTables {
 public:
  Status bind(cl::Kernel&) override { return Status::ok(); }
};
}  // namespace

Slice Md5App::slice(const Packet& p) const {
  if (options_.whole_frame) return Slice{0, p.len, 0};
  if (p.payload_off == kNoOffset) return Slice{0, 0, 0};
  return Slice{p.payload_off, p.payload_len, 0};
}

std::string Md5App::kernel_source() const {
  std::string src(embedded_source("hpr_desc"));
  src += "\n";
  src += embedded_source("md5");
  return src;
}

Result<std::unique_ptr<DeviceTables>> Md5App::make_device_tables(const cl::Context&, const cl::CommandQueue&) const {
  return std::unique_ptr<DeviceTables>(std::make_unique<NoTables>());
}

void Md5App::finish(std::span<Packet>, const BatchView&) const {}

}  // namespace hpr::kernels::md5
