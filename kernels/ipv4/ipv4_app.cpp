#include "kernels/ipv4/ipv4_app.hpp"

#include <algorithm>
#include <cstring>

#include "kernels/ipv4/ipv4_hdr.hpp"

namespace hpr::kernels::ipv4 {
namespace {

class Ipv4Tables final : public DeviceTables {
 public:
  Ipv4Tables(cl::Buffer t24, cl::Buffer t8, cl::Buffer t6_24, cl::Buffer t6_8)
      : tbl24_(std::move(t24)), tbl8_(std::move(t8)), tbl6_24_(std::move(t6_24)), tbl6_8_(std::move(t6_8)) {}
  Status bind(cl::Kernel& kernel) override {
    try {
      kernel.setArg(4, tbl24_);
      kernel.setArg(5, tbl8_);
      kernel.setArg(6, tbl6_24_);
      kernel.setArg(7, tbl6_8_);
    } catch (const cl::Error& e) {
      return error(Code::kUnavailable, "ipv4: setting table arguments failed: {} ({})", e.what(), e.err());
    }
    return Status::ok();
  }

 private:
  cl::Buffer tbl24_;
  cl::Buffer tbl8_;
  cl::Buffer tbl6_24_;
  cl::Buffer tbl6_8_;
};

bool ends_with(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

Result<RouteLoad> load_routes(const std::string& path, RouteFormat format, uint32_t num_ports,
                              std::span<const NextHopAddr> addrs) {
  if (format == RouteFormat::kAuto) {
    format = ends_with(path, ".dat") || ends_with(path, ".dat.gz") ? RouteFormat::kIpasn : RouteFormat::kText;
  }
  return format == RouteFormat::kIpasn ? load_ipasn(path, num_ports) : load_route_text(path, addrs);
}

Result<std::unique_ptr<Ipv4App>> Ipv4App::create(std::span<const Route> routes, const Ipv4Config& config,
                                                 std::span<const Route6> routes6) {
  if (config.num_ports == 0) return error(Code::kInvalidArgument, "ipv4: num_ports must be at least 1");
  if (routes.empty()) return error(Code::kInvalidArgument, "ipv4: empty route table");
  for (const Route& r : routes) {
    if (r.next_hop >= config.num_ports) {
      return error(Code::kInvalidArgument, "ipv4: route {}/{} has next hop {} but num_ports is {} (next hops are ports)",
                   format_ipv4(r.prefix), r.len, r.next_hop, config.num_ports);
    }
  }
  if (config.default_next_hop && *config.default_next_hop >= config.num_ports) {
    return error(Code::kInvalidArgument, "ipv4: default_next_hop {} must be < num_ports {}", *config.default_next_hop,
                 config.num_ports);
  }
  if (config.non_ipv4_port && *config.non_ipv4_port >= config.num_ports) {
    return error(Code::kInvalidArgument, "ipv4: non_ipv4_port {} must be < num_ports {}", *config.non_ipv4_port,
                 config.num_ports);
  }
  for (const Route6& r : routes6) {
    if (r.next_hop >= config.num_ports) {
      return error(Code::kInvalidArgument, "ipv4: route {}/{} has next hop {} but num_ports is {} (next hops are ports)",
                   format_ipv6(r.prefix), r.len, r.next_hop, config.num_ports);
    }
  }
  auto lpm = FlatLpm::build(routes, config.lpm_width);
  if (!lpm) return lpm.status();
  std::optional<Lpm6> lpm6;
  if (!routes6.empty()) {
    auto l6 = Lpm6::build(routes6);
    if (!l6) return l6.status();
    lpm6.emplace(std::move(l6).value());
  }
  return std::unique_ptr<Ipv4App>(new Ipv4App(std::move(lpm).value(), std::move(lpm6), config));
}

Result<std::unique_ptr<Ipv4App>> Ipv4App::from_file(const std::string& path, const Ipv4Config& config,
                                                   RouteFormat format) {
  auto routes = load_routes(path, format, config.num_ports);
  if (!routes) return routes.status();
  return create(routes->routes, config, routes->routes6);
}

[[gnu::flatten]] void Ipv4App::slices_in_place(std::span<const Packet> pkts, Desc* desc, uint8_t** slices) const {
  slices_in_place_of(*this, pkts, desc, slices);
}

std::string Ipv4App::kernel_source() const {
  std::string src(embedded_source("hpr_desc"));
  src += "\n";
  src += embedded_source("ipv4");
  return src;
}

std::string Ipv4App::build_options() const {
  auto d = [](DropReason r) { return static_cast<int>(r); };
  std::string o = fmt::format(
      "-DDROP_TRUNCATED={} -DDROP_BAD_VERSION={} -DDROP_BAD_IHL={} -DDROP_BAD_TOTAL_LENGTH={} -DDROP_BAD_CHECKSUM={} "
      "-DDROP_TTL_EXCEEDED={} -DDROP_NO_ROUTE={} -DDROP_NOT_IPV4={}",
      d(DropReason::kTruncated), d(DropReason::kBadVersion), d(DropReason::kBadIhl), d(DropReason::kBadTotalLength),
      d(DropReason::kBadChecksum), d(DropReason::kTtlExceeded), d(DropReason::kNoRoute), d(DropReason::kNotIPv4));
  if (lpm_.wide()) o += " -DLPM_WIDE";
  if (lpm6_) o += " -DIPV6_ROUTES";
  if (config_.default_next_hop) o += fmt::format(" -DIPV4_DEFAULT_NH={}u", *config_.default_next_hop);
  if (config_.non_ipv4_port) o += fmt::format(" -DIPV4_NON_IPV4_PORT={}", *config_.non_ipv4_port);
  return o;
}

Result<std::unique_ptr<DeviceTables>> Ipv4App::make_device_tables(const cl::Context& ctx,
                                                                  const cl::CommandQueue& /*queue*/) const {
  try {
    // COPY_HOST_PTR: one upload at start; the tables never change while the app runs.
    cl::Buffer t24(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, lpm_.tbl24_bytes(), const_cast<void*>(lpm_.tbl24()));
    cl::Buffer t8(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, lpm_.tbl8_bytes(), const_cast<void*>(lpm_.tbl8()));
    static const uint32_t kNone6 = 0;  // placeholder: no IPv6 routes, the kernel never reads it
    const void* p24 = lpm6_ ? lpm6_->tbl24() : &kNone6;
    const void* p8 = lpm6_ ? lpm6_->tbl8() : &kNone6;
    cl::Buffer t6_24(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, lpm6_ ? lpm6_->tbl24_bytes() : 4, const_cast<void*>(p24));
    cl::Buffer t6_8(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, lpm6_ ? lpm6_->tbl8_bytes() : 4, const_cast<void*>(p8));
    return std::unique_ptr<DeviceTables>(new Ipv4Tables(std::move(t24), std::move(t8), std::move(t6_24), std::move(t6_8)));
  } catch (const cl::Error& e) {
    return error(Code::kUnavailable, "ipv4: uploading LPM tables ({} + {} bytes, IPv6 {} bytes) failed: {} ({})",
                 lpm_.tbl24_bytes(), lpm_.tbl8_bytes(), lpm6_ ? lpm6_->tbl24_bytes() + lpm6_->tbl8_bytes() : 0,
                 e.what(), e.err());
  }
}

void Ipv4App::finish(std::span<Packet> pkts, const BatchView& batch) const {
  const auto* res = reinterpret_cast<const Ipv4Result*>(batch.out);
  const size_t n = std::min<size_t>(pkts.size(), batch.n);
  for (size_t i = 0; i < n; ++i) {
    Ipv4Result r;
    std::memcpy(&r, res + i, sizeof r);
    apply_result(pkts[i], r);
  }
  rewrite_l2(pkts.first(n), res);
}

void Ipv4App::rewrite_l2(std::span<Packet> pkts, const Ipv4Result* res) const {
  if (neighbours_.empty()) return;  // no table: frames leave as they came (one branch per batch)
  // l3fwd's rewrite of the forwarded IPv4 frames (non-IPv4 passed to non_ipv4_port leaves as it came).
  for (size_t i = 0; i < pkts.size(); ++i) {
    Ipv4Result r;
    std::memcpy(&r, res + i, sizeof r);
    if (pkts[i].drop != DropReason::kNone || (r.flags & kResNotIpv4) != 0 || r.next_hop >= neighbours_.size())
      continue;
    const Neighbour& nb = neighbours_[r.next_hop];
    std::memcpy(pkts[i].data, nb.dst_mac.data(), 6);
    std::memcpy(pkts[i].data + 6, nb.src_mac.data(), 6);
    pkts[i].out_port = nb.port;
  }
}

uint64_t Ipv4App::count_events(std::span<const Packet>, const BatchView& batch) const {
  uint64_t n = 0;
  for (uint32_t i = 0; i < batch.n; ++i) n += batch.out[size_t{i} * sizeof(Ipv4Result) + 6] == 0;
  return n;
}

Result<size_t> build_icmp_time_exceeded(const Packet& p, uint32_t router_addr, std::span<uint8_t> out) {
  if (p.l3_off == kNoOffset || p.l3_off < 14 || size_t{p.l3_off} + 20 > p.len) {
    return error(Code::kInvalidArgument, "icmp: packet has no complete IPv4 header (l3_off {}, len {})", p.l3_off, p.len);
  }
  const uint8_t* ip = p.data + p.l3_off;
  const uint32_t ihl4 = (ip[0] & 0xfu) * 4u;
  if ((ip[0] >> 4) != 4 || ihl4 < 20 || p.l3_off + ihl4 > p.len) {
    return error(Code::kInvalidArgument, "icmp: bad IPv4 header (version/IHL byte {:#04x})", ip[0]);
  }
  const uint32_t tot = (uint32_t{ip[2]} << 8) | ip[3];
  const uint32_t data_avail = std::min<uint32_t>(tot > ihl4 ? tot - ihl4 : 0, p.len - p.l3_off - ihl4);
  const uint32_t quoted = ihl4 + std::min<uint32_t>(8, data_avail);
  const size_t l2 = p.l3_off;
  const size_t total = l2 + 20 + 8 + quoted;
  if (out.size() < total) return error(Code::kInvalidArgument, "icmp: output buffer {} bytes, need {}", out.size(), total);

  uint8_t* f = out.data();
  reply_l2(f, p);
  uint8_t* h = f + l2;
  const uint16_t ip_len = static_cast<uint16_t>(20 + 8 + quoted);
  h[0] = 0x45;
  h[1] = 0xc0;  // precedence "internetwork control", as routers send ICMP errors
  h[2] = static_cast<uint8_t>(ip_len >> 8);
  h[3] = static_cast<uint8_t>(ip_len);
  h[4] = h[5] = 0;  // identification
  h[6] = h[7] = 0;  // flags, fragment offset
  h[8] = 64;
  h[9] = 1;
  h[10] = h[11] = 0;
  h[12] = static_cast<uint8_t>(router_addr >> 24);
  h[13] = static_cast<uint8_t>(router_addr >> 16);
  h[14] = static_cast<uint8_t>(router_addr >> 8);
  h[15] = static_cast<uint8_t>(router_addr);
  std::memcpy(h + 16, ip + 12, 4);  // dst = original source
  const uint16_t hc = ip_checksum(h, 20);
  h[10] = static_cast<uint8_t>(hc >> 8);
  h[11] = static_cast<uint8_t>(hc);

  uint8_t* ic = h + 20;
  ic[0] = 11;  // Time Exceeded
  ic[1] = 0;   // TTL exceeded in transit
  ic[2] = ic[3] = 0;
  ic[4] = ic[5] = ic[6] = ic[7] = 0;
  std::memcpy(ic + 8, ip, quoted);
  const uint16_t cc = ip_checksum(ic, 8 + quoted);
  ic[2] = static_cast<uint8_t>(cc >> 8);
  ic[3] = static_cast<uint8_t>(cc);
  return total;
}

}  // namespace hpr::kernels::ipv4
