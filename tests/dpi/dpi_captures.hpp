#pragma once
// Test helper: every capture of ../shared/data/pcap/ndpi parsed into packets (frames owned here).
#include <catch2/catch.hpp>

#include <vector>

#include "hpr/data_dir.hpp"
#include "runtime/packet.hpp"
#include "runtime/parser.hpp"
#include "runtime/pcap_file.hpp"

namespace hpr::dpi::test {

struct ParsedCapture {
  Capture cap;
  std::vector<Packet> pkts;
};

inline const std::vector<ParsedCapture>& all_captures() {
  static std::vector<ParsedCapture> all = [] {
    std::vector<ParsedCapture> v;
    for (const auto& path : list_captures(data_path("pcap/ndpi"))) {
      auto c = load_capture(path);
      if (!c.is_ok()) continue;  // unreadable link types are the parser's tests' business
      ParsedCapture pc{std::move(*c), {}};
      for (size_t i = 0; i < pc.cap.frames.size(); ++i) {
        auto& f = pc.cap.frames[i];
        if (f.size() > 65535) continue;
        Packet p;
        p.data = f.data();
        p.len = static_cast<uint16_t>(f.size());
        p.rx_ns = pc.cap.ts_ns[i];
        parse(p);
        pc.pkts.push_back(p);
      }
      v.push_back(std::move(pc));
    }
    REQUIRE(v.size() > 200);
    return v;
  }();
  return all;
}

}  // namespace hpr::dpi::test
