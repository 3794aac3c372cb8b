#pragma once
// Services (`[[service]]` in the config file; issue 15): traffic classes, each with its own app or chain. Each packet
// goes to the first service it matches (IP protocol, IPv4 source / destination prefix, L4 destination port, DSCP, the
// generator's service number); a service with no condition, or `default = true`, takes what matched none. A packet
// that matches none where there is no default service is dropped as `no_service` (counted, never silent).
//
// A lane's batch may mix services: run_in_place classifies its packets, runs each service's app (or chain) on that
// service's packets, in their batch order, and puts them back where they were, so order is as for one app. Every app
// of every service reports its part of the batch (App::AppDone, index = the service's first index + the app's place in
// its chain), so events and log lines are per (service, app).
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kernels/composite_app.hpp"

namespace hpr::kernels {

struct ServiceMatch {
  std::optional<uint8_t> proto;            // IP protocol (6 tcp, 17 udp, ...)
  std::optional<uint32_t> src, dst;        // IPv4 prefix (host byte order), with src_len / dst_len
  uint8_t src_len = 0, dst_len = 0;
  std::optional<uint16_t> port;            // L4 destination port (TCP, UDP, SCTP; a first fragment or none)
  std::optional<uint8_t> dscp;             // 0..63 (IPv4 TOS, IPv6 traffic class)
  std::optional<uint8_t> gen_service;      // the generator's service (Packet::service: LAPS Table IV)
  bool is_default = false;                 // takes what matched no other service (also: a service without conditions)
  bool matches(const Packet& p) const;
  bool has_condition() const { return proto || src || dst || port || dscp || gen_service; }
};

struct Service {
  std::string name;
  ServiceMatch match;
  std::shared_ptr<App> app;  // one app or a chain (chain_app.hpp)
};

// The most services a run may have (and so the most apps a lane counts: kMaxServices × kMaxChainLength).
inline constexpr uint32_t kMaxServices = 8;

class ServiceApp final : public CompositeApp {
 public:
  // Errors (naming service[N]): none given, more than kMaxServices, two default services, a default service that is
  // not last (the services after it would never see a packet), a default service with conditions.
  static Result<std::shared_ptr<ServiceApp>> create(std::vector<Service> services);

  std::string_view name() const override { return name_; }
  uint32_t max_slice_bytes() const override;
  uint32_t result_bytes() const override;
  bool writes_back() const override;

  void run_in_place(std::span<Packet> pkts, Desc* desc, uint8_t** slices, uint8_t* out,
                    const AppDone& done) const override;
  uint32_t chain_length() const override { return static_cast<uint32_t>(apps_.size()); }
  const App& chain_app(uint32_t k) const override { return *apps_[k]; }
  std::string chain_label(uint32_t k) const override;
  uint32_t desc_slots() const override;
  // A device runs every service's apps in turn, each on its service's packets.
  uint8_t stage_service(uint32_t k) const override { return svc_of_[k]; }
  // Each packet's service in Packet::svc; a packet that matches none is dropped as no_service (run_in_place's first
  // step).
  void classify_batch(std::span<Packet> pkts) const override;
  // The first service chain's that has one (ChainApp::device_refusal).
  std::string device_refusal() const override;

  void flow_started(uint32_t id, const FlowKey& canonical) const override;
  void flow_seq_half(uint32_t id, uint32_t half) const override;
  void take_over_from(const App& running) const override;
  bool keeps_flow_state() const override;
  std::vector<std::pair<std::string, std::string>> summary_info() const override;
  std::string_view event_name() const override { return "events"; }

  uint32_t service_count() const override { return static_cast<uint32_t>(services_.size()); }
  std::vector<std::string> service_names() const override;
  uint8_t service_index(const Packet& p) const override {
    const int s = classify(p);
    return s < 0 ? kNoSvc : static_cast<uint8_t>(s);
  }
  // The matched service (what matches none: 0; the lane drops it as no_service). The dispatcher has put it in
  // Packet::svc (service_index) just before: read there, not classified a second time.
  uint8_t balance_service(const Packet& p) const override {
    const uint8_t s = p.svc != kNoSvc ? p.svc : service_index(p);
    return s == kNoSvc ? 0 : s;
  }

  const std::vector<Service>& services() const { return services_; }
  // The service of `p` (its index), or -1: none matched and there is no default.
  int classify(const Packet& p) const;

 private:
  explicit ServiceApp(std::vector<Service> services);
  std::vector<Service> services_;
  std::vector<const App*> apps_;        // every service's apps in order: the AppDone indices
  std::vector<std::string> labels_;     // "service:app" per index
  std::vector<uint32_t> first_;         // service s's first AppDone index
  std::vector<uint8_t> svc_of_;         // the service of each AppDone index
  std::string name_;
};

}  // namespace hpr::kernels
