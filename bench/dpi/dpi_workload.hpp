#pragma once
// Shared by dpi_bench.cpp and dpi_series.cpp: the capture payload workload and thread CPU time.
#include <ctime>
#include <string>
#include <vector>

#include "hpr/data_dir.hpp"
#include "kernels/dpi/dpi_app.hpp"
#include "kernels/runner.hpp"
#include "runtime/parser.hpp"
#include "runtime/pcap_file.hpp"

namespace hpr::dpi::bench {

constexpr uint32_t kHeaderBytes = 54;  // Ethernet + IPv4 + TCP without options

struct Workload {
  std::string name;
  kernels::HostBatch pool;          // payloads in kernel layout (absolute offsets)
  std::vector<uint32_t> frame_len;  // per pool packet
};

// Capture payloads (kernel slices) in file order.
inline Workload capture_workload(const DpiApp& app, std::vector<uint8_t>& stream, size_t max_pkts) {
  Workload w{"capture", {}, {}};
  std::vector<Packet> pkts;
  std::vector<std::vector<uint8_t>> frames;
  for (const auto& path : list_captures(data_path("pcap/ndpi"))) {
    auto c = load_capture(path);
    if (!c.is_ok()) continue;
    for (auto& f : c->frames) {
      if (f.size() > 65535) continue;
      frames.push_back(std::move(f));
    }
  }
  for (auto& f : frames) {
    Packet p;
    p.data = f.data();
    p.len = static_cast<uint16_t>(f.size());
    if (parse(p) != DropReason::kNone || p.payload_off == kNoOffset || p.payload_len == 0) continue;
    pkts.push_back(p);
    stream.insert(stream.end(), p.payload(), p.payload() + p.payload_len);
    if (pkts.size() == max_pkts) break;
  }
  w.pool = kernels::gather(app, pkts);
  for (auto& p : pkts) w.frame_len.push_back(p.len);
  return w;
}

inline uint64_t thread_cpu_ns() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

}  // namespace hpr::dpi::bench
