#include "kernels/service/service_app.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace hpr::kernels {
namespace {

uint32_t be32(const uint8_t* b) {
  return (uint32_t{b[0]} << 24) | (uint32_t{b[1]} << 16) | (uint32_t{b[2]} << 8) | b[3];
}
bool in_prefix(uint32_t a, uint32_t prefix, uint8_t len) {
  return len == 0 || (a >> (32 - len)) == (prefix >> (32 - len));
}

}  // namespace

bool ServiceMatch::matches(const Packet& p) const {
  if (gen_service && p.service != *gen_service) return false;
  if (proto && p.l4 != *proto) return false;
  if (p.l3_off == kNoOffset) return !src && !dst && !dscp && !port;
  const uint8_t* ip = p.data + p.l3_off;
  if (src || dst) {
    if (p.l3 != L3::kIPv4) return false;
    if (src && !in_prefix(be32(ip + 12), *src, src_len)) return false;
    if (dst && !in_prefix(be32(ip + 16), *dst, dst_len)) return false;
  }
  if (dscp) {
    const uint8_t tc = p.l3 == L3::kIPv4 ? ip[1] : p.l3 == L3::kIPv6 ? static_cast<uint8_t>((ip[0] << 4) | (ip[1] >> 4)) : 0;
    if (p.l3 != L3::kIPv4 && p.l3 != L3::kIPv6) return false;
    if ((tc >> 2) != *dscp) return false;
  }
  if (port) {
    const bool ports = p.l4 == 6 || p.l4 == 17 || p.l4 == 132;
    if (!ports || p.l4_off == kNoOffset || p.l4_off + 4 > p.len) return false;
    const uint8_t* l4 = p.data + p.l4_off;
    if (((uint16_t{l4[2]} << 8) | l4[3]) != *port) return false;
  }
  return true;
}

Result<std::shared_ptr<ServiceApp>> ServiceApp::create(std::vector<Service> services) {
  if (services.empty()) return error(Code::kInvalidArgument, "service: no service given");
  if (services.size() > kMaxServices)
    return error(Code::kInvalidArgument, "service: {} services, at most {}", services.size(), kMaxServices);
  int dflt = -1;
  for (size_t i = 0; i < services.size(); ++i) {
    Service& s = services[i];
    if (!s.match.has_condition()) s.match.is_default = true;
    if (!s.match.is_default) continue;
    if (dflt >= 0)
      return error(Code::kInvalidArgument,
                   "service[{}] ({}): a second default service (service[{}], {}, is one: a service with default = true "
                   "or without any match condition)",
                   i, s.name, dflt, services[static_cast<size_t>(dflt)].name);
    if (s.match.has_condition())
      return error(Code::kInvalidArgument,
                   "service[{}] ({}): a default service takes what matched no other; give it no match condition", i,
                   s.name);
    dflt = static_cast<int>(i);
  }
  if (dflt >= 0 && static_cast<size_t>(dflt) != services.size() - 1)
    return error(Code::kInvalidArgument,
                 "service[{}] ({}): the default service must be the last one (first match wins, so the services after "
                 "it would never see a packet)",
                 dflt, services[static_cast<size_t>(dflt)].name);
  return std::shared_ptr<ServiceApp>(new ServiceApp(std::move(services)));
}

ServiceApp::ServiceApp(std::vector<Service> services) : services_(std::move(services)) {
  name_ = "services:";
  for (size_t s = 0; s < services_.size(); ++s) {
    const App& a = *services_[s].app;
    name_ += (s ? "+" : "") + services_[s].name;
    first_.push_back(static_cast<uint32_t>(apps_.size()));
    for (uint32_t k = 0; k < a.chain_length(); ++k) {
      apps_.push_back(&a.chain_app(k));
      svc_of_.push_back(static_cast<uint8_t>(s));
      labels_.push_back(services_[s].name + ":" + std::string(a.chain_app(k).name()));
    }
  }
}

std::string ServiceApp::chain_label(uint32_t k) const { return labels_[k]; }

uint32_t ServiceApp::max_slice_bytes() const {
  uint32_t m = 0;
  for (const auto& s : services_) m = std::max(m, s.app->max_slice_bytes());
  return m;
}
uint32_t ServiceApp::result_bytes() const {
  uint32_t m = 0;
  for (const auto& s : services_) m = std::max(m, s.app->result_bytes());
  return m;
}
uint32_t ServiceApp::desc_slots() const {
  uint32_t m = 0;
  for (const auto& s : services_) m = std::max(m, s.app->desc_slots());
  return m;
}
bool ServiceApp::writes_back() const {
  return std::any_of(services_.begin(), services_.end(), [](const Service& s) { return s.app->writes_back(); });
}

int ServiceApp::classify(const Packet& p) const {
  for (size_t s = 0; s < services_.size(); ++s)
    if (services_[s].match.is_default || services_[s].match.matches(p)) return static_cast<int>(s);
  return -1;
}

std::string ServiceApp::device_refusal() const {
  for (const auto& s : services_)
    if (std::string why = s.app->device_refusal(); !why.empty()) return fmt::format("service {}: {}", s.name, why);
  return {};
}

void ServiceApp::classify_batch(std::span<Packet> pkts) const {
  for (Packet& p : pkts) {
    const int s = p.drop == DropReason::kNone ? classify(p) : -1;
    if (s < 0 && p.drop == DropReason::kNone) p.drop = DropReason::kNoService;
    p.svc = s < 0 ? kNoSvc : static_cast<uint8_t>(s);
  }
}

void ServiceApp::run_in_place(std::span<Packet> pkts, Desc* desc, uint8_t** slices, uint8_t* out,
                              const AppDone& done) const {
  // Per thread (lanes run at once), grown to the largest batch once.
  thread_local std::vector<Packet> sub;
  thread_local std::vector<uint32_t> idx;
  const size_t n = pkts.size();
  classify_batch(pkts);
  int only = -1;  // the one service of every packet, or -2: several, or one that goes to none
  for (const Packet& p : pkts) {
    const int s = p.svc == kNoSvc ? -1 : p.svc;
    only = s < 0 ? -2 : only == -1 || only == s ? s : -2;
  }
  auto run = [&](int s, std::span<Packet> pk) {
    const uint32_t base = first_[static_cast<size_t>(s)];
    services_[static_cast<size_t>(s)].app->run_in_place(
        pk, desc, slices, out,
        [&](uint32_t k, const App& a, std::span<const Packet> p, const BatchView& v) { done(base + k, a, p, v); });
  };
  if (only >= 0) {  // every packet in one service: the whole batch as it is
    run(only, pkts);
    return;
  }
  // Several, or some to none: each service's packets in their batch order, then back where they were.
  for (int s = 0; s < static_cast<int>(services_.size()); ++s) {
    sub.clear();
    idx.clear();
    for (uint32_t i = 0; i < n; ++i)
      if (pkts[i].svc == s) {
        idx.push_back(i);
        sub.push_back(pkts[i]);
      }
    if (sub.empty()) continue;
    run(s, sub);
    for (size_t j = 0; j < idx.size(); ++j) pkts[idx[j]] = sub[j];
  }
}

void ServiceApp::flow_started(uint32_t id, const FlowKey& canonical) const {
  for (const auto& s : services_) s.app->flow_started(id, canonical);
}
void ServiceApp::flow_seq_half(uint32_t id, uint32_t half) const {
  for (const auto& s : services_) s.app->flow_seq_half(id, half);
}
void ServiceApp::take_over_from(const App& running) const {
  const auto* r = dynamic_cast<const ServiceApp*>(&running);
  if (r == nullptr || r->services_.size() != services_.size()) return;
  for (size_t s = 0; s < services_.size(); ++s) services_[s].app->take_over_from(*r->services_[s].app);
}
bool ServiceApp::keeps_flow_state() const {
  return std::any_of(services_.begin(), services_.end(), [](const Service& s) { return s.app->keeps_flow_state(); });
}
std::vector<std::string> ServiceApp::service_names() const {
  std::vector<std::string> names;
  for (const auto& s : services_) names.push_back(s.name);
  return names;
}

std::vector<std::pair<std::string, std::string>> ServiceApp::summary_info() const {
  std::vector<std::pair<std::string, std::string>> all;
  for (const auto& s : services_) {
    all.emplace_back("service " + s.name, std::string(s.app->name()));
    for (auto& kv : s.app->summary_info())
      if (std::none_of(all.begin(), all.end(), [&](const auto& x) { return x.first == kv.first; })) all.push_back(kv);
  }
  return all;
}

}  // namespace hpr::kernels
