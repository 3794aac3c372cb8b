#pragma once
// Source and destination of every IPv6 header the runtime parser finds in the real captures
// (../shared/data/pcap/ndpi), in capture order: what the synthetic IPv6 table covers, and the capture address set of
// the IPv6 tests and of bench/ipv4/ipv6_bench.
#include <cstring>
#include <vector>

#include "hpr/data_dir.hpp"
#include "kernels/ipv4/routes.hpp"
#include "runtime/parser.hpp"
#include "runtime/pcap_file.hpp"

namespace hpr::synth6 {

inline std::vector<kernels::ipv4::Ipv6Addr> capture_addresses6() {
  std::vector<kernels::ipv4::Ipv6Addr> out;
  for (const auto& path : list_captures(data_path("pcap/ndpi"))) {
    auto c = load_capture(path);
    if (!c) continue;
    for (auto& f : c->frames) {
      Packet p;
      p.data = f.data();
      p.len = static_cast<uint16_t>(f.size());
      parse(p, {.verify_ipv4_checksum = false});
      if (p.l3 != L3::kIPv6 || p.l3_off == kNoOffset || p.l3_off + 40u > p.len) continue;
      for (int o : {8, 24}) {
        kernels::ipv4::Ipv6Addr a;
        std::memcpy(a.data(), p.data + p.l3_off + o, 16);
        out.push_back(a);
      }
    }
  }
  return out;
}

}  // namespace hpr::synth6
