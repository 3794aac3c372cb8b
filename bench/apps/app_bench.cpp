// Device sweep of the four apps (issue 3, "Benchmark"): each app on the native lane, on every OpenCL
// device and beside its peer, for batch sizes and frame sizes, reporting throughput (Gbit/s, Mpps)
// and batch latency (median, p99). One CSV per app: <out>/<app>.csv; plot: bench/apps/plot_apps.py.
//
// Engines, all on the same packets in the same run:
//   native  the pipeline's native executor (pipeline/native_executor.cpp): run_native in place on
//           the frames (App::slices_in_place) + finish, i.e. what a native lane does per batch.
//   cl<i>   the pipeline's OpenCL executor on device i: buffers allocated once at start, mapped on
//           host-unified devices (PoCL), gather into them, kernel, scatter back + finish. One batch
//           in flight (submit, then wait), so a batch's time is its latency.
//   peer    md5, aes: OpenSSL EVP (bench/crypto/evp_peers.hpp); dpi: Hyperscan block mode
//           (kernels/dpi/hs_peer.hpp), each run in place on the frames like the native lane. ipv4
//           has no forwarding peer here: its peer, rte_lpm, is compared on lookups (ipv4_bench).
// Apps come from the registry (kernels/registry.hpp) with their defaults: ipv4 the full RouteViews
// table (4 ports), dpi the full ET Open 2017 set (one DFA, built once and shared by every engine),
// md5 over the L4 payload, aes with keys derived for 1,024 flows.
//
// Packets: Ethernet/IPv4/UDP frames of 60 B ("64-byte": 64 with the FCS, 18 payload bytes), 1,514 B
// (1,472 payload bytes) and the mix 25% 60 B / 75% 1,514 B (sizes cycled 60, 1514, 1514, 1514 as
// in bench/dpi). Payloads are cut from the L4 payload byte stream of the nDPI captures (the match
// density of real traffic for dpi); destinations are random addresses that the route table covers
// (the forwarding path, not the no-route drop); flow = packet index mod 1,024, seq = index. --distinct
// frames (16,384) per size, repeated in order up to the largest batch; batch k takes the window
// [k*batch mod pool, +batch). ipv4 writes TTL and checksum back: the headers are restored between
// batches (not timed) so every batch forwards.
// Per point: one warm-up batch, then batches until at least --min-ms, --min-batches and enough
// batches to cover the --distinct frames once (cap --max-batches); median and p99 batch time, spread
// (p90-p10)/median; Gbit/s = frame bytes of the timed batches * 8 / their total time (frame bytes as
// held in memory: 60 / 1,514, no FCS), Mpps likewise: the mean, not the median, because batches differ
// in work (dpi: match density varies along the capture stream). Wall-clock time (the devices work on
// their own threads).
// The native and device engines must report the same app events (forwarded, matches, digests,
// encrypted; CSV column events_warmup) for the warm-up batch; a difference is printed as MISMATCH and
// makes the exit status 1 (the dpi peer too: Hyperscan counts the same matches).
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <array>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

#include "bench/crypto/evp_peers.hpp"
#include "hpr/clock.hpp"
#include "hpr/data_dir.hpp"
#include "hpr/stats.hpp"
#include "runtime/checksum.hpp"
#include "kernels/dpi/dpi_app.hpp"
#include "kernels/dpi/hs_peer.hpp"
#include "kernels/ipv4/ipv4_app.hpp"
#include "kernels/ipv4/ipv4_hdr.hpp"
#include "kernels/registry.hpp"
#include "runtime/opencl/devices.hpp"
#include "runtime/parser.hpp"
#include "runtime/pcap_file.hpp"
#include "pipeline/lane.hpp"

using namespace hpr;

namespace {

constexpr uint32_t kFlows = 1024;
constexpr uint32_t kL3 = 14, kHeaders = 14 + 20 + 8;  // Ethernet, IPv4, UDP
constexpr uint64_t kNoEvents = ~uint64_t{0};          // an engine whose events are not comparable

// Every L4 payload byte of the nDPI captures, in file order.
std::vector<uint8_t> capture_payload_stream() {
  std::vector<uint8_t> s;
  for (const auto& path : list_captures(data_path("pcap/ndpi"))) {
    auto c = load_capture(path);
    if (!c.is_ok()) continue;
    for (auto& f : c->frames) {
      if (f.size() > 65535) continue;
      Packet p;
      p.data = f.data();
      p.len = static_cast<uint16_t>(f.size());
      if (parse(p) != DropReason::kNone || p.payload_off == kNoOffset) continue;
      s.insert(s.end(), p.payload(), p.payload() + p.payload_len);
    }
  }
  if (s.empty()) s.assign(1 << 20, 0x5a);  // no captures: a constant payload (dpi then matches little)
  return s;
}

// The frames of one size, `distinct` of them, and `total` packets referring to them in order.
struct Frames {
  std::vector<uint8_t> mem;
  std::vector<uint32_t> off;                // per distinct frame
  std::vector<Packet> pkts;                 // total
  std::vector<std::array<uint8_t, 20>> ip;  // per distinct frame: its IPv4 header as built
  void restore_ip(uint32_t first, uint32_t n) {
    for (uint32_t i = first; i < first + n; ++i) std::memcpy(pkts[i].data + kL3, ip[i % ip.size()].data(), 20);
  }
};


Frames make_frames(const std::string& size, uint32_t distinct, uint32_t total, const std::vector<uint8_t>& stream,
                   const std::function<uint32_t(std::mt19937&)>& dst, std::mt19937& rng) {
  Frames f;
  std::vector<uint16_t> lens(distinct);
  for (uint32_t i = 0; i < distinct; ++i) {
    lens[i] = size == "64" ? 60 : size == "1514" ? 1514 : (i % 4 == 0 ? 60 : 1514);
    f.off.push_back(static_cast<uint32_t>(f.mem.size()));
    f.mem.resize(f.mem.size() + (lens[i] + 63) / 64 * 64, 0);
  }
  size_t pos = 0;
  f.ip.resize(distinct);
  for (uint32_t i = 0; i < distinct; ++i) {
    uint8_t* e = f.mem.data() + f.off[i];
    const uint16_t len = lens[i];
    e[0] = e[6] = 2;  // 02:00:00:00:00:01 <- 02:00:00:00:00:02, IPv4
    e[5] = 1;
    e[11] = 2;
    e[12] = 0x08;
    uint8_t* h = e + kL3;
    const uint16_t ip_len = len - kL3, udp_len = len - kL3 - 20;
    const uint32_t src = 0x0a000000u | (i & 0xffffffu), d = dst(rng);
    h[0] = 0x45;  // version 4, IHL 5
    store_be16(h + 2, ip_len);
    store_be16(h + 4, static_cast<uint16_t>(i));  // id
    h[6] = 0x40;                             // DF
    h[8] = 64;                               // TTL
    h[9] = 17;                               // UDP
    store_be16(h + 12, static_cast<uint16_t>(src >> 16));
    store_be16(h + 14, static_cast<uint16_t>(src));
    store_be16(h + 16, static_cast<uint16_t>(d >> 16));
    store_be16(h + 18, static_cast<uint16_t>(d));
    store_be16(h + 10, ip_checksum(h, 20));
    std::memcpy(f.ip[i].data(), h, 20);
    uint8_t* u = h + 20;
    const uint16_t sport = static_cast<uint16_t>(1024 + i % 60000);
    store_be16(u, sport);
    store_be16(u + 2, 8080);
    store_be16(u + 4, udp_len);  // checksum 0: none
    for (uint32_t j = kHeaders; j < len; ++j) {
      e[j] = stream[pos];
      pos = pos + 1 == stream.size() ? 0 : pos + 1;
    }
  }
  f.pkts.resize(total);
  for (uint32_t i = 0; i < total; ++i) {
    Packet& p = f.pkts[i];
    const uint32_t k = i % distinct;
    p.data = f.mem.data() + f.off[k];
    p.len = lens[k];
    p.flow_id = i % kFlows;
    p.seq = i;
    parse(p);
  }
  return f;
}

// Runs one batch, synchronously; sets `events` to the app's event count of the batch (or kNoEvents).
using EngineFn = std::function<Status(Packet* pkts, uint32_t n, uint64_t& events)>;

struct Engine {
  std::string name;    // native, cl0, cl1, openssl, hyperscan
  std::string device;  // device name, or what runs it
  EngineFn run;
};

EngineFn executor_engine(const kernels::App& app, std::shared_ptr<Executor> exec) {
  auto done = std::make_shared<std::vector<Packet*>>();
  // The executor writes its verdicts back through the references: into copies, so that the next pass over the same
  // packets does not skip the ones this one dropped.
  auto copies = std::make_shared<std::vector<Packet>>();
  auto refs = std::make_shared<std::vector<Packet*>>();
  return [&app, exec, done, copies, refs](Packet* pkts, uint32_t n, uint64_t& events) -> Status {
    copies->assign(pkts, pkts + n);
    refs->resize(n);
    for (uint32_t i = 0; i < n; ++i) (*refs)[i] = &(*copies)[i];
    HPR_RETURN_IF_ERROR(exec->submit(refs->data(), n));
    done->clear();
    auto r = exec->reap(true, *done,
                        [&](std::span<const Packet> pk, const kernels::BatchView& v, const kernels::App& a, uint32_t) { events = a.count_events(pk, v); });
    if (!r.is_ok()) return r.status();
    return Status::ok();
  };
}

// In place like the native lane (App::slices_in_place): `fn` reads and writes each slice in its frame.
EngineFn peer_engine(const kernels::App& app, uint32_t max_batch,
                     std::function<uint64_t(const kernels::BatchView&)> fn) {
  struct Buffers {
    std::vector<kernels::Desc> desc;
    std::vector<uint8_t*> slices;
    std::vector<uint8_t> out;
  };
  auto hb = std::make_shared<Buffers>();
  hb->desc.resize(max_batch);
  hb->slices.resize(max_batch);
  hb->out.resize(size_t{max_batch} * app.result_bytes());
  return [&app, hb, fn](Packet* pkts, uint32_t n, uint64_t& events) -> Status {
    app.slices_in_place({pkts, n}, hb->desc.data(), hb->slices.data());
    events = fn(kernels::BatchView{hb->desc.data(), n, nullptr, hb->out.data(), hb->slices.data()});
    return Status::ok();
  };
}

struct Opts {
  std::vector<std::string> apps = kernels::app_names();
  std::vector<std::string> sizes = {"64", "1514", "mix"};
  std::vector<uint32_t> batches = {64, 256, 1024, 4096, 16384, 65536};
  double min_ms = 200;
  uint32_t min_batches = 3, max_batches = 5000, distinct = 16384;
  bool devices = true, peer = true;
  std::string out = "out/apps";
};

int run_app(const std::string& name, const Opts& o, const std::vector<DeviceInfo>& devs,
            const std::vector<uint8_t>& stream) {
  kernels::AppOptions ao;
  ao.key_capacity = kFlows;
  const kernels::aes::Key master{0x2b, 0x7e, 0x15, 0x16, 0x28, 0xae, 0xd2, 0xa6,
                                 0xab, 0xf7, 0x15, 0x88, 0x09, 0xcf, 0x4f, 0x3c};
  for (uint8_t b : master) ao.master_key += fmt::format("{:02x}", b);
  const uint64_t t_app = monotonic_ns();
  auto app_r = kernels::make_app(name, ao);
  if (!app_r.is_ok()) {
    fmt::print(stderr, "{}\n", app_r.status().to_string());
    return 1;
  }
  const kernels::App& app = **app_r;
  // Flows 0..kFlows-1 start as connections numbered_flow(f) (aes: their keys and IV counters).
  for (uint32_t f = 0; f < kFlows; ++f) app.flow_started(f, kernels::aes::numbered_flow(f));
  const uint32_t max_batch = *std::max_element(o.batches.begin(), o.batches.end());
  const uint32_t pool = std::max(max_batch, o.distinct);

  std::vector<Engine> engines;
  ExecutorConfig ec{.max_batch = max_batch, .in_flight = 1};
  engines.push_back({"native", "host", executor_engine(app, make_native_executor(app, ec))});
  for (const auto& d : o.devices ? devs : std::vector<DeviceInfo>{}) {
    auto prog = kernels::AppProgram::create(app, d.device);
    if (!prog.is_ok()) {
      fmt::print(stderr, "{} on {}: {}\n", name, d.name, prog.status().to_string());
      return 1;
    }
    auto ex = make_cl_executor(app, *prog, d.host_unified, ec);
    if (!ex.is_ok()) {
      fmt::print(stderr, "{} on {}: {}\n", name, d.name, ex.status().to_string());
      return 1;
    }
    engines.push_back(
        {fmt::format("cl{}", d.index), d.name, executor_engine(app, std::shared_ptr<Executor>(std::move(*ex)))});
  }
  if (o.peer && name == "md5") {
    auto evp = std::make_shared<bench::EvpMd5>();
    engines.push_back({"openssl", "OpenSSL EVP MD5", peer_engine(app, max_batch, [evp](const kernels::BatchView& v) {
                         evp->run(v);
                         return kNoEvents;
                       })});
  } else if (o.peer && name == "aes") {
    auto evp = std::make_shared<bench::EvpAes>(master, dynamic_cast<const kernels::aes::AesApp&>(app).keys(), kFlows);
    engines.push_back(
        {"openssl", "OpenSSL EVP AES-128-CBC-CTS", peer_engine(app, max_batch, [evp](const kernels::BatchView& v) {
           evp->run(v);
           return kNoEvents;
         })});
  } else if (o.peer && name == "dpi") {
    const auto& dpi = dynamic_cast<const dpi::DpiApp&>(app);
    auto hs = dpi::HsPeer::compile(dpi.patterns().patterns);
    if (!hs.is_ok()) {
      fmt::print(stderr, "{}\n", hs.status().to_string());
      return 1;
    }
    auto peer = std::make_shared<dpi::HsPeer>(std::move(*hs));
    const uint32_t words = app.result_bytes() / 4;
    engines.push_back(
        {"hyperscan", "Hyperscan block mode", peer_engine(app, max_batch, [peer, words](const kernels::BatchView& v) {
           uint64_t sum = 0;
           auto* out = reinterpret_cast<uint32_t*>(v.out);
           for (uint32_t i = 0; i < v.n; ++i) sum += out[size_t{i} * words] = peer->count(v.slice(i), v.desc[i].len);
           return sum;
         })});
  }
  fmt::print("{}: app and {} engines ready in {:.1f} s\n", name, engines.size(), (monotonic_ns() - t_app) / 1e9);

  // ipv4: destinations the table covers.
  std::function<uint32_t(std::mt19937&)> dst = [](std::mt19937&) { return 0xc0a80001u; };
  if (const auto* v4 = dynamic_cast<const kernels::ipv4::Ipv4App*>(&app)) {
    dst = [v4](std::mt19937& rng) {
      for (;;) {
        const uint32_t a = rng();
        if (v4->lpm().lookup(a) != kernels::ipv4::kNoNextHop) return a;
      }
    };
  }
  std::filesystem::create_directories(o.out);
  const std::string csv_path = o.out + "/" + name + ".csv";
  std::ofstream csv(csv_path);
  csv << "app,engine,device,size,batch,batches,frame_bytes_per_batch,lat_median_us,lat_p99_us,spread,gbps,mpps,"
         "ratio_vs_native,ratio_vs_peer,events_warmup\n";
  int rc = 0;
  std::mt19937 rng(7);
  for (const auto& size : o.sizes) {
    Frames fr = make_frames(size, o.distinct, pool, stream, dst, rng);
    for (uint32_t batch : o.batches) {
      struct Point {
        Summary lat;
        size_t batches;
        uint64_t events;
        double gbps, mpps;
      };
      std::vector<Point> pts;
      uint64_t frame_bytes = 0;
      for (uint32_t i = 0; i < batch; ++i) frame_bytes += fr.pkts[i].len;
      const uint32_t windows = pool / batch;
      // Timed batches: enough to see every distinct frame once (payloads differ in cost: dpi).
      const size_t need = std::max<size_t>(o.min_batches, (o.distinct + batch - 1) / batch);
      for (auto& e : engines) {
        std::vector<double> ns;
        uint64_t events = 0, ev = 0, t0 = 0;
        for (uint64_t k = 0;; ++k) {
          const uint32_t s = static_cast<uint32_t>(k % windows) * batch;
          const uint64_t a = monotonic_ns();
          Status st = e.run(fr.pkts.data() + s, batch, ev);
          const uint64_t b = monotonic_ns();
          if (!st.is_ok()) {
            fmt::print(stderr, "{} {}: {}\n", name, e.name, st.to_string());
            return 1;
          }
          if (app.writes_back() && name == "ipv4") fr.restore_ip(s, batch);
          if (k == 0) {  // warm-up
            events = ev;
            t0 = monotonic_ns();
            continue;
          }
          ns.push_back(static_cast<double>(b - a));
          if (ns.size() >= o.max_batches) break;
          if (ns.size() >= need && b - t0 >= o.min_ms * 1e6) break;
        }
        Point p{summarize(ns), ns.size(), events, 0, 0};
        double total_ns = 0;
        for (double x : ns) total_ns += x;
        p.gbps = static_cast<double>(frame_bytes) * 8 * ns.size() / total_ns;
        p.mpps = static_cast<double>(batch) * ns.size() / total_ns * 1e3;
        pts.push_back(p);
      }
      const Point* peer = engines.size() > 1 && !engines.back().name.starts_with("cl") ? &pts.back() : nullptr;
      for (size_t i = 0; i < engines.size(); ++i) {
        const Point& p = pts[i];
        if (p.events != kNoEvents && p.events != pts[0].events) {
          fmt::print(stderr, "MISMATCH {} {} batch {} size {}: {} events, native {}\n", name, engines[i].name, batch,
                     size, p.events, pts[0].events);
          rc = 1;
        }
        const double rn = p.gbps / pts[0].gbps, rp = peer ? p.gbps / peer->gbps : 0;
        fmt::print(
            "{:5} {:9} {:4} batch {:6} {:8.3f} Gbit/s {:8.3f} Mpps  lat {:10.1f} us p99 {:10.1f} us spread {:5.2f}  "
            "x{:.2f} native{}\n",
            name, engines[i].name, size, batch, p.gbps, p.mpps, p.lat.median / 1e3, p.lat.p99 / 1e3, p.lat.spread, rn,
            peer ? fmt::format(" x{:.2f} {}", rp, engines.back().name) : "");
        csv << fmt::format("{},{},{},{},{},{},{},{:.2f},{:.2f},{:.4f},{:.4f},{:.4f},{:.3f},{:.3f},{}\n", name,
                           engines[i].name, engines[i].device, size, batch, p.batches, frame_bytes, p.lat.median / 1e3,
                           p.lat.p99 / 1e3, p.lat.spread, p.gbps, p.mpps, rn, rp,
                           p.events == kNoEvents ? std::string() : std::to_string(p.events));
      }
      std::fflush(stdout);
      csv.flush();
    }
  }
  fmt::print("{}: wrote {} ({:.0f} s)\n", name, csv_path, (monotonic_ns() - t_app) / 1e9);
  return rc;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App cli{"Each app on the native lane, every OpenCL device and beside its peer: Gbit/s, Mpps, batch latency"};
  Opts o;
  bool no_devices = false, no_peer = false;
  cli.add_option("--apps", o.apps, "apps to run (ipv4 dpi md5 aes)");
  cli.add_option("--sizes", o.sizes, "frame sizes: 64 1514 mix")->check(CLI::IsMember({"64", "1514", "mix"}));
  cli.add_option("--batches", o.batches, "batch sizes")->check(CLI::Range(1u, 1u << 20));
  cli.add_option("--min-ms", o.min_ms, "time quantum per point and engine, ms");
  cli.add_option("--min-batches", o.min_batches, "timed batches per point at least")->check(CLI::Range(1u, 1u << 20));
  cli.add_option("--max-batches", o.max_batches, "timed batches per point at most")->check(CLI::Range(1u, 1u << 24));
  cli.add_option("--distinct", o.distinct, "distinct frames per size")->check(CLI::Range(1u, 1u << 20));
  cli.add_flag("--no-devices", no_devices, "native lane and peer only");
  cli.add_flag("--no-peer", no_peer, "no OpenSSL / Hyperscan");
  cli.add_option("--out", o.out, "CSV folder (<app>.csv)");
  CLI11_PARSE(cli, argc, argv);
  o.devices = !no_devices;
  o.peer = !no_peer;
  const uint32_t max_batch = *std::max_element(o.batches.begin(), o.batches.end());
  for (uint32_t b : o.batches) {
    if (std::max(max_batch, o.distinct) % b != 0) {
      fmt::print(stderr, "--batches: {} does not divide the pool of max(largest batch, --distinct) = {} packets\n", b,
                 std::max(max_batch, o.distinct));
      return 2;
    }
  }
  for (const auto& a : o.apps) {
    const auto names = kernels::app_names();
    if (std::find(names.begin(), names.end(), a) == names.end()) {
      fmt::print(stderr, "--apps: unknown app '{}' (known: ipv4 dpi md5 aes)\n", a);
      return 2;
    }
  }
  std::vector<DeviceInfo> devs;
  if (o.devices) {
    auto d = discover_devices();
    if (!d.is_ok()) {
      fmt::print(stderr, "{}\n", d.status().to_string());
      return 1;
    }
    devs = std::move(*d);
    for (const auto& x : devs)
      fmt::print("cl{}: {} ({}, {})\n", x.index, x.name, x.platform, x.host_unified ? "host-unified" : "discrete");
  }
  const std::vector<uint8_t> stream = capture_payload_stream();
  fmt::print("payload stream: {:.1f} MB from the captures\n", stream.size() / 1e6);
  int rc = 0;
  for (const auto& a : o.apps) rc |= run_app(a, o, devs, stream);
  return rc;
}
