#include "kernels/md5/md5_app.hpp"

#include <algorithm>
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

[[gnu::flatten]] void Md5App::slices_in_place(std::span<const Packet> pkts, Desc* desc, uint8_t** slices) const {
  slices_in_place_of(*this, pkts, desc, slices);
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

uint64_t Md5App::count_events(std::span<const Packet> pkts, const BatchView& batch) const {
  const uint32_t n = std::min<uint32_t>(batch.n, static_cast<uint32_t>(pkts.size()));
  return static_cast<uint64_t>(
      std::count_if(pkts.begin(), pkts.begin() + n, [](const Packet& p) { return p.drop == DropReason::kNone; }));
}

void Md5App::append_log(std::span<const Packet> pkts, const BatchView& batch,
                        const std::function<std::string(uint32_t)>& prefix, std::string& out) const {
  static constexpr char kHex[] = "0123456789abcdef";
  const uint32_t n = std::min<uint32_t>(batch.n, static_cast<uint32_t>(pkts.size()));
  for (uint32_t i = 0; i < n; ++i) {
    if (pkts[i].drop != DropReason::kNone) continue;
    out += prefix ? prefix(i) : std::string();
    out += " md5 ";
    const uint8_t* d = batch.out + size_t{i} * kDigestBytes;
    for (uint32_t k = 0; k < kDigestBytes; ++k) {
      out += kHex[d[k] >> 4];
      out += kHex[d[k] & 15];
    }
    out += '\n';
  }
}

}  // namespace hpr::kernels::md5
