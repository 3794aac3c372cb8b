#pragma once
// Helpers for pipeline tests: run a configuration to completion, compute the native reference of a
// capture, compare captures as multisets (lanes interleave flows; per-flow order is checked by the
// pipeline's own reorder counter).
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "hpr/cores.hpp"
#include "hpr/data_dir.hpp"
#include "kernels/ipv4/ipv4_app.hpp"
#include "kernels/registry.hpp"
#include "kernels/runner.hpp"
#include "pipeline/run_config.hpp"
#include "runtime/flow.hpp"
#include "runtime/parser.hpp"
#include "runtime/pcap_file.hpp"
#include "tests/common/env_var.hpp"

namespace hpr::test {

// Two PoCL devices of different speed, also when the binary runs outside ctest.
inline const bool kPoclEnv = setenv("POCL_DEVICES", "pthread basic", 0) == 0;

// Per process: ctest runs the binaries that share this fixture at the same time.
inline std::string tmp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("hpr_pipeline_" + std::to_string(getpid()) + "_" + name)).string();
}

// A small route table so tests load fast: a default route plus a few prefixes.
inline std::string small_routes() {
  std::string p = tmp_path("routes.txt");
  FILE* f = std::fopen(p.c_str(), "w");
  std::fputs("0.0.0.0/0 1\n10.0.0.0/8 2\n192.168.0.0/16 3\n172.16.0.0/12 0\n", f);
  std::fclose(f);
  return p;
}

// The cores this process may run on (tests of several workers need 2; a container may offer 1, or not core 0).
inline std::vector<int> cores_here() { return allowed_cores(); }

// Sets an environment variable (HPR_FAULT_CL, ...) for a scope.
inline RunConfig base_config() {
  RunConfig c;
  c.status_interval_s = 0;
  c.app_opts.routes = small_routes();
  c.batch = 64;
  c.batch_timeout_us = 200;
  c.flow_capacity = 1 << 16;
  // aes: the run and the native reference derive the same keys and IVs.
  c.app_opts.key_epoch = "00112233445566778899aabbccddeeff";
  c.app_opts.iv_counter_start = 0;
  return c;
}

// What a single native pass over the capture gives: the frames that leave (bytes after the app),
// and the number dropped. Packets are processed in one batch with flow ids from a fresh flow table
// in capture order, as the dispatcher assigns them.
struct Reference {
  std::vector<std::vector<uint8_t>> out;  // forwarded frames and the ICMP messages the host sends
  std::vector<uint16_t> out_port;         // per frame of `out`: the app's out_port (ICMP: 0, the host's port)
  std::vector<bool> out_ipv4;             // per frame of `out`: a forwarded IPv4 packet (the neighbour rewrite's)
  uint64_t dropped = 0;
  uint64_t icmp = 0;
  std::vector<std::string> log;  // result-log lines (DPI alerts, MD5 digests) without the leading rx time
};

// Each app of a chain in turn (one app: itself), each in the device layout (gathered, then scattered back): a packet
// one app drops has an empty slice in the next. Services: each service's chain on its packets (in batch order), a
// packet that matches none dropped as no_service.
inline void reference_apps(const kernels::App& app, std::vector<Packet>& kept, std::string& lines) {
  if (const auto* svc = dynamic_cast<const kernels::ServiceApp*>(&app)) {
    std::vector<int> of(kept.size());
    for (size_t i = 0; i < kept.size(); ++i) {
      of[i] = kept[i].drop == DropReason::kNone ? svc->classify(kept[i]) : -1;
      if (of[i] < 0 && kept[i].drop == DropReason::kNone) kept[i].drop = DropReason::kNoService;
    }
    for (size_t s = 0; s < svc->services().size(); ++s) {
      std::vector<Packet> sub;
      std::vector<size_t> idx;
      for (size_t i = 0; i < kept.size(); ++i)
        if (of[i] == static_cast<int>(s)) {
          sub.push_back(kept[i]);
          idx.push_back(i);
        }
      if (sub.empty()) continue;
      reference_apps(*svc->services()[s].app, sub, lines);
      for (size_t j = 0; j < idx.size(); ++j) kept[idx[j]] = sub[j];
    }
    return;
  }
  for (uint32_t k = 0; k < app.chain_length(); ++k) {
    const kernels::App& a = app.chain_app(k);
    auto hb = kernels::gather(a, kept);
    auto v = hb.view();
    a.run_native(v);
    kernels::scatter_back(a, kept, v);
    a.finish(kept, v);
    a.append_log(kept, v, [&](uint32_t i) { return flow_text(kept[i]); }, lines);
  }
}

inline Reference native_reference(const kernels::App& app, const Capture& cap, const RunConfig& c) {
  Reference r;
  auto ft = FlowTable::create(c.flow_capacity, static_cast<uint64_t>(c.flow_idle_s * 1e9));
  std::vector<std::vector<uint8_t>> frames;
  std::vector<Packet> pkts;
  for (const auto& f : cap.frames) {
    if (f.size() > c.max_frame) {
      ++r.dropped;  // longer than ports.max_frame: frame_too_long
      continue;
    }
    frames.push_back(f);
  }
  pkts.resize(frames.size());
  ParseOptions po;
  po.verify_ipv4_checksum = !kernels::runs_app(c.app, c.app_opts, "ipv4", true);
  std::vector<Packet> kept;
  std::vector<size_t> idx;
  for (size_t i = 0; i < frames.size(); ++i) {
    Packet& p = pkts[i];
    p.data = frames[i].data();
    p.len = static_cast<uint16_t>(frames[i].size());
    if (parse(p, po) != DropReason::kNone) {
      ++r.dropped;
      continue;
    }
    if (p.l3 == L3::kIPv4 || p.l3 == L3::kIPv6) {
      FlowKey k = flow_key(p).canonical();
      p.hash = flow_hash(k);
      bool inserted = false;
      p.flow_id = (*ft)->lookup_or_insert(k, p.hash, 0, &inserted);
      if (inserted) app.flow_started(p.flow_id, k);  // as the dispatcher does (aes: the connection's key)
      p.seq = (*ft)->state(p.flow_id).next_seq++;
    }
    kept.push_back(p);
    idx.push_back(i);
  }
  std::string lines;
  reference_apps(app, kept, lines);
  for (size_t a = 0, b; (b = lines.find('\n', a)) != std::string::npos; a = b + 1)
    r.log.push_back(lines.substr(a, b - a));
  for (size_t j = 0; j < kept.size(); ++j) {
    if (kept[j].drop != DropReason::kNone) {
      ++r.dropped;
      if (kernels::runs_app(c.app, c.app_opts, "ipv4") && c.icmp_time_exceeded && kept[j].drop == DropReason::kTtlExceeded) {
        std::vector<uint8_t> icmp(2048);
        auto n = kernels::ipv4::build_icmp_time_exceeded(kept[j], 0xc0000201 /*192.0.2.1*/, icmp);
        if (n) {
          icmp.resize(*n);
          r.out.push_back(icmp);
          r.out_port.push_back(0);
          r.out_ipv4.push_back(false);
          ++r.icmp;
        }
      }
      continue;
    }
    r.out.push_back(frames[idx[j]]);
    r.out_port.push_back(kept[j].out_port);
    r.out_ipv4.push_back(kept[j].l3 == L3::kIPv4);
  }
  return r;
}

// A result log's lines without their first field (the rx time, which differs from run to run).
inline std::vector<std::string> log_lines_without_time(const std::string& path) {
  std::vector<std::string> out;
  std::ifstream f(path);
  for (std::string l; std::getline(f, l);) out.push_back(l.substr(l.find(' ') + 1));
  return out;
}

template <typename T>
std::vector<T> sorted(std::vector<T> v) {
  std::sort(v.begin(), v.end());
  return v;
}

// What a test does to the pipeline beside the run: `before` once before run(), `during` on a thread of its own while
// run() goes (until `done`).
struct RunHooks {
  std::function<void(Pipeline&)> before;
  std::function<void(Pipeline&, const std::atomic<bool>& done)> during;
};

inline Summary run_to_end(const RunConfig& c, const RunHooks& hooks = {}) {
  auto ctx = prepare_run(c);
  if (!ctx) FAIL(ctx.status().to_string());
  Pipeline& p = *(*ctx)->pipeline;
  if (hooks.before) hooks.before(p);
  std::atomic<bool> done{false};
  std::thread beside;
  if (hooks.during) beside = std::thread([&] { hooks.during(p, done); });
  Summary s = p.run();
  done = true;
  if (beside.joinable()) beside.join();
  CHECK((*ctx)->pipeline->descriptors_in_use() == 0);  // every reference a lane was given came back
  return s;
}

inline void check_books(const Summary& s) {
  INFO(s.to_text());
  CHECK(s.unaccounted == 0);
  CHECK(s.rx_packets == s.tx_packets + s.dropped);
  CHECK(s.reorders == 0);
}

// The generator's frames (IMIX, Zipf flows, 20% IPv6, 5% TTL 1, the given ET patterns planted in 30% of the
// payloads) captured once through one native lane with md5 (which does not change frames): a capture to run apps on.
inline std::string generated_capture(const std::string& name, uint64_t seed, std::vector<std::string> patterns,
                                     uint32_t packets = 3000) {
  std::string gen = tmp_path(name);
  RunConfig g = base_config();
  g.app = "md5";
  g.devices = {"none"};
  g.input = {.kind = "generator",
             .gen_packets = packets,
             .gen_flows = 300,
             .gen_zipf = 1.0,
             .gen_sizes = "imix",
             .gen_seed = seed,
             .gen_patterns = std::move(patterns),
             .gen_match_rate = 0.3,
             .gen_ttl_low_share = 0.05,
             .gen_ipv6_share = 0.2};
  g.output = {.kind = "pcap", .pcap = gen};
  auto ctx = prepare_run(g);
  if (!ctx) FAIL(ctx.status().to_string());
  REQUIRE((*ctx)->pipeline->run().tx_packets == packets);
  return gen;
}

// `capture`: a path.
inline RunConfig pcap_config(const std::string& app, const std::string& capture, const std::string& out) {
  RunConfig c = base_config();
  c.app = app;
  c.app_opts.master_key = "000102030405060708090a0b0c0d0e0f";
  c.input = {.kind = "pcap", .pcap = capture};
  c.output = {.kind = "pcap", .pcap = out};
  return c;
}

// Runs `app` on the capture (both PoCL devices and a native lane, unless `tweak` changes the configuration)
// and checks the output capture, the drops and the result log against a native pass over the same frames.
inline Summary check_against_reference(const std::string& app, const std::string& capture,
                                       const std::function<void(RunConfig&)>& tweak = {}, const RunHooks& hooks = {}) {
  std::string out = tmp_path(app + "_out.pcap");
  RunConfig c = pcap_config(app, capture, out);
  c.log_path = tmp_path(app + ".log");
  if (tweak) tweak(c);
  Summary s = run_to_end(c, hooks);
  check_books(s);
  auto in = load_capture(capture);
  REQUIRE(in.is_ok());
  CHECK(s.rx_packets == in->size());
  auto appobj = kernels::make_app(c.app, [&] {
    auto o = c.app_opts;
    o.key_capacity = c.flow_capacity;
    o.max_frame_bytes = c.max_frame;  // as prepare_run gives it
    return o;
  }());
  REQUIRE(appobj.is_ok());
  Reference ref = native_reference(**appobj, *in, c);
  auto got = load_capture(out);
  REQUIRE(got.is_ok());
  CHECK(s.dropped == ref.dropped);
  CHECK(s.host_frames == ref.icmp);
  CHECK(sorted(got->frames) == sorted(ref.out));
  if (kernels::chain_has(app, "md5") || kernels::chain_has(app, "dpi")) {
    // The result log (MD5: a digest per packet; DPI: an alert per matching packet) holds the same lines as
    // the native reference's, whichever lane ran each packet; each app's lines add up to its events (a chain's:
    // Summary::chain_events).
    auto lines = log_lines_without_time(c.log_path);
    CHECK(sorted(lines) == sorted(ref.log));
    uint64_t digests = 0, matches = 0;
    for (const auto& l : lines) {
      if (l.find(" md5 ") != std::string::npos) {
        ++digests;
      } else {
        auto at = l.find(" dpi matches=");
        REQUIRE(at != std::string::npos);
        matches += std::stoull(l.substr(at + 13));
      }
    }
    auto events_of = [&](const std::string& a) {
      if (app == a) return s.events;
      for (const auto& e : s.chain_events)
        if (e.app == a) return e.count;
      FAIL("no events of " << a << " in the summary");
      return uint64_t{0};
    };
    if (kernels::chain_has(app, "md5")) CHECK(digests == events_of("md5"));
    if (kernels::chain_has(app, "dpi")) CHECK(matches == events_of("dpi"));
    if (s.tx_packets > 0) CHECK(digests + matches > 0);  // a digest per packet; dense ET matches on real payloads
  }
  return s;
}
}  // namespace hpr::test
