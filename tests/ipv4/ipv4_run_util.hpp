#pragma once
// One native batch of the ipv4 app over test frames, as a lane runs it (gather, run_native, scatter_back, finish),
// for the IPv4 and IPv6 forwarding tests.
#include <cstring>
#include <vector>

#include "ipv4_test_util.hpp"
#include "kernels/ipv4/ipv4_app.hpp"
#include "kernels/runner.hpp"

namespace hpr::ipv4_test {

// Runs one batch natively, scatters the headers back, applies finish(); returns the results.
inline std::vector<kernels::ipv4::Ipv4Result> run(const kernels::ipv4::Ipv4App& app, std::vector<Frame>& frames) {
  std::vector<hpr::Packet> pkts;
  for (auto& f : frames) {
    refresh(f);
    pkts.push_back(f.pkt);
  }
  auto b = hpr::kernels::gather(app, pkts);
  app.run_native(b.view());
  hpr::kernels::scatter_back(app, pkts, b.view());
  app.finish(pkts, b.view());
  std::vector<kernels::ipv4::Ipv4Result> res(frames.size());
  std::memcpy(res.data(), b.out.data(), res.size() * sizeof(kernels::ipv4::Ipv4Result));
  for (size_t i = 0; i < frames.size(); ++i) frames[i].pkt = pkts[i];
  return res;
}

inline kernels::ipv4::Ipv4Result run_one(const kernels::ipv4::Ipv4App& app, Frame& f) {
  std::vector<Frame> v{f};
  auto r = run(app, v);
  f = v[0];
  f.pkt.data = f.bytes.data();
  return r[0];
}

}  // namespace hpr::ipv4_test
