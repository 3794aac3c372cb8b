// Issue 2 benchmarks.
//   classify_fwd dpdk --capture F --seconds S [--mode io|classify]
//       rx → (parse → flow key → CRC32C → flow table) → tx through DPDK net_pcap (infinite_rx=1) into
//       net_null, one core, like dpdk-testpmd --forward-mode=io; prints JSON {"mpps": ...}.
//   classify_fwd classifier --runs N
//       the classifier alone over every capture in memory: ns per packet, median and spread.
#include <fmt/format.h>

#include <cstring>
#include <string>
#include <vector>

#include "hpr/clock.hpp"
#include "hpr/data_dir.hpp"
#include "hpr/stats.hpp"
#include "runtime/flow.hpp"
#include "runtime/parser.hpp"
#include "runtime/pcap_file.hpp"
#include "runtime/ports/dpdk_port.hpp"

using namespace hpr;

namespace {

// Parse, key, hash and look up one packet: the per-packet work of the dispatcher's classifier.
inline void classify(Packet& p, FlowTable& ft, uint64_t now) {
  if (parse(p) != DropReason::kNone) return;
  if (p.l3 != L3::kIPv4 && p.l3 != L3::kIPv6) return;
  FlowKey k;
  p.hash = canonical_flow_key(p, k);
  p.flow_id = ft.lookup_or_insert(k, p.hash, now);
}

int run_dpdk(const std::string& capture, double seconds, bool do_classify) {
  Status st = dpdk_init(dpdk_default_args({"net_pcap0,rx_pcap=" + capture + ",infinite_rx=1", "net_null0"}));
  if (!st.is_ok()) {
    fmt::print(stderr, "{}\n", st.message());
    return 1;
  }
  auto in = make_dpdk_port({.name = "net_pcap0"});
  auto out = make_dpdk_port({.name = "net_null0"});
  if (!in || !out) {
    fmt::print(stderr, "ports: {} {}\n", in.status().message(), out.status().message());
    return 1;
  }
  auto ft = FlowTable::create(1 << 16, 30'000'000'000ull);
  Packet pkts[32];
  uint64_t n = 0, t0 = monotonic_ns(), warm = t0 + 500'000'000ull;
  uint64_t end = warm + static_cast<uint64_t>(seconds * 1e9), counted_from = 0;
  for (uint64_t now = t0; now < end; now = monotonic_ns()) {
    if (counted_from == 0 && now >= warm) {
      counted_from = now;
      n = 0;
    }
    uint16_t k = (*in)->rx_burst(pkts, 32, now);
    if (do_classify)
      for (uint16_t i = 0; i < k; ++i) classify(pkts[i], **ft, now);
    uint16_t sent = (*out)->tx_burst(pkts, k);
    (*in)->release(pkts, k);
    n += sent;
  }
  double s = static_cast<double>(monotonic_ns() - counted_from) / 1e9;
  fmt::print("{{\"mode\": \"{}\", \"mpps\": {:.4f}, \"seconds\": {:.3f}}}\n", do_classify ? "classify" : "io", n / s / 1e6, s);
  return 0;
}

int run_classifier(int runs) {
  std::vector<std::vector<uint8_t>> frames;
  for (const auto& f : list_captures(data_path("pcap/ndpi"))) {
    auto c = load_capture(f);
    if (!c) continue;
    for (auto& fr : c->frames)
      if (fr.size() <= 0xffff) frames.push_back(std::move(fr));
  }
  std::vector<Packet> pkts(frames.size());
  auto ft = FlowTable::create(1 << 16, ~0ull);
  std::vector<double> ns;
  for (int r = 0; r < runs + 1; ++r) {
    uint64_t t0 = monotonic_ns();
    for (size_t i = 0; i < frames.size(); ++i) {
      Packet& p = pkts[i];
      p.data = frames[i].data();
      p.len = static_cast<uint16_t>(frames[i].size());
      classify(p, **ft, 1);
    }
    double per = static_cast<double>(monotonic_ns() - t0) / static_cast<double>(frames.size());
    if (r > 0) ns.push_back(per);  // run 0 warms caches and fills the flow table
  }
  Summary s = summarize(ns);
  fmt::print("{{\"packets\": {}, \"ns_per_packet_median\": {:.2f}, \"spread\": {:.3f}, \"min\": {:.2f}, \"max\": {:.2f}, \"runs\": {}}}\n",
             frames.size(), s.median, s.spread, s.min, s.max, runs);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string mode = argc > 1 ? argv[1] : "";
  std::string capture = data_path("pcap/ndpi/443-chrome.pcap"), fwd = "classify";
  double seconds = 3;
  int runs = 11;
  for (int i = 2; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--capture") capture = argv[i + 1];
    else if (a == "--seconds") seconds = std::stod(argv[i + 1]);
    else if (a == "--mode") fwd = argv[i + 1];
    else if (a == "--runs") runs = std::stoi(argv[i + 1]);
  }
  if (mode == "dpdk") return run_dpdk(capture, seconds, fwd == "classify");
  if (mode == "classifier") return run_classifier(runs);
  fmt::print(stderr, "usage: classify_fwd dpdk [--capture F] [--seconds S] [--mode io|classify]\n"
                     "       classify_fwd classifier [--runs N]\n");
  return 2;
}
