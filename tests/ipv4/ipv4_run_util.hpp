#pragma once
// One native batch of the ipv4 app over test frames, as a lane runs it (gather, run_native, scatter_back, finish),
// for the IPv4 and IPv6 forwarding tests; every call also runs the same frames, as the parser reads them, in place
// (Ipv4App::run_in_place, the worker path's one pass) and requires the same frames, packets and results.
#include <cstring>
#include <vector>

#include "ipv4_test_util.hpp"
#include "kernels/ipv4/ipv4_app.hpp"
#include "kernels/runner.hpp"
#include "runtime/parser.hpp"

namespace hpr::ipv4_test {

// Ipv4App::run_in_place on copies of `before` equals what the gathered run made of them (`after`, `res`): frame
// bytes, packets and results, byte for byte; and it reports once, as app 0, with its results.
inline void require_in_place_equal(const kernels::ipv4::Ipv4App& app, std::vector<Frame> before,
                                   const std::vector<Frame>& after, const std::vector<kernels::ipv4::Ipv4Result>& res) {
  std::vector<hpr::Packet> pkts;
  for (auto& f : before) {
    refresh(f);
    pkts.push_back(f.pkt);
  }
  const size_t n = pkts.size();
  std::vector<kernels::Desc> desc(n);
  std::vector<uint8_t*> slices(n);
  std::vector<uint8_t> out(n * sizeof(kernels::ipv4::Ipv4Result));
  int reports = 0;
  app.run_in_place(pkts, desc.data(), slices.data(), out.data(),
                   [&](uint32_t k, const kernels::App& a, std::span<const hpr::Packet> p, const kernels::BatchView& v) {
                     ++reports;
                     REQUIRE(k == 0);
                     REQUIRE(&a == &app);
                     REQUIRE(p.size() == n);
                     REQUIRE(v.n == n);
                     REQUIRE(v.out == out.data());
                   });
  REQUIRE(reports == 1);
  REQUIRE(std::memcmp(out.data(), res.data(), out.size()) == 0);
  for (size_t i = 0; i < n; ++i) {
    INFO("packet " << i);
    REQUIRE(before[i].bytes == after[i].bytes);
    REQUIRE(pkts[i].drop == after[i].pkt.drop);
    REQUIRE(pkts[i].out_port == after[i].pkt.out_port);
  }
}

// Runs one batch natively, scatters the headers back, applies finish(); returns the results.
inline std::vector<kernels::ipv4::Ipv4Result> run_gathered(const kernels::ipv4::Ipv4App& app,
                                                           std::vector<Frame>& frames) {
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

// run_gathered on the frames as given (hand-made packets reach the app's own checks, as on a device); and on copies
// read by the parser, as the pipeline gives packets to run_in_place (parse() without its checksum check, which ipv4
// makes), run_in_place equal to run_gathered byte for byte.
inline std::vector<kernels::ipv4::Ipv4Result> run(const kernels::ipv4::Ipv4App& app, std::vector<Frame>& frames) {
  std::vector<Frame> parsed = frames;
  for (auto& f : parsed) {
    refresh(f);
    hpr::parse(f.pkt, {.verify_ipv4_checksum = false});
  }
  const std::vector<Frame> before = parsed;
  const auto parsed_res = run_gathered(app, parsed);
  require_in_place_equal(app, before, parsed, parsed_res);
  return run_gathered(app, frames);
}

inline kernels::ipv4::Ipv4Result run_one(const kernels::ipv4::Ipv4App& app, Frame& f) {
  std::vector<Frame> v{f};
  auto r = run(app, v);
  f = v[0];
  f.pkt.data = f.bytes.data();
  return r[0];
}

}  // namespace hpr::ipv4_test
