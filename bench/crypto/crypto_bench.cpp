// MD5 and AES-128-CBC native paths (scalar and multi-buffer) beside OpenSSL EVP on the same packets,
// one core. Batch sizes 64..65,536; packet sizes 64 B, 1,514 B and the paper's mix (25% 64 B,
// 75% 1,514 B; §4). "Packet size" is the slice each packet contributes (bytes hashed / encrypted).
// Per configuration: one warm-up batch, then at least --runs batches and --min-ms of time; the batch
// latency median / p99 and spread ((p90-p10)/median) come from those; Gbit/s and Mpps from the median.
// The OpenSSL peer (bench/crypto/evp_peers.hpp) and, where the build has it, the intel-ipsec-mb peer
// (bench/crypto/ipsec_mb_peer.hpp) run in the same process on the same gathered bytes.
// --peers: AES, interleaved rounds (bench/crypto/rounds.hpp, aes_rounds.hpp): per round hpr native, intel-ipsec-mb
//   and OpenSSL one after the other, ratios per round, then median and spread; writes crypto_peers.csv.
// --md5: with --peers, MD5 instead (bench/crypto/md5_rounds.hpp: hpr x16, x8, OpenSSL); crypto_md5_peers.csv.
//   With --callgrind, NAME is an MD5 contestant.
// --callgrind NAME: one configuration, no timing, collection on only around --iters batches (run it under
//   valgrind --tool=callgrind --collect-atstart=no); prints the bytes, for instructions per byte.
// --steps: every contestant (AES, or MD5 with --md5) at 64 B, 1514 B and the mix, --iters batches (default 1) of
//   --batch packets, instructions counted on this CPU by single-stepping (rounds.hpp steps()); any CPU features,
//   AVX-512 and VAES included; writes crypto_steps.csv (crypto_md5_steps.csv). About 20 µs an instruction.
// Usage: crypto_bench [--out DIR] [--runs N] [--min-ms MS] [--max-batch N] [--quick] [--imb-arch A]
//                     [--imb-check]
//                     [--peers [--md5] [--rounds N] [--batch N]] [--md5] [--callgrind NAME --size 64|1514|mix
//                     --batch N --iters N] [--steps [--md5] [--batch N] [--iters N]]
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "bench/crypto/aes_rounds.hpp"
#include "bench/crypto/evp_peers.hpp"
#include "bench/crypto/md5_rounds.hpp"
#include "hpr/clock.hpp"
#include "hpr/stats.hpp"
#include "kernels/aes/aes_app.hpp"
#include "kernels/md5/md5_app.hpp"

using namespace hpr;
using namespace hpr::kernels;

namespace {

const char* size_names[] = {"64", "1514", "mix"};

struct Batch {
  std::vector<Desc> desc;
  std::vector<uint8_t> pkts;
  std::vector<uint8_t> out;
  uint64_t bytes = 0;
  BatchView view() { return {desc.data(), static_cast<uint32_t>(desc.size()), pkts.data(), out.data()}; }
};

constexpr uint32_t kFlows = 1024;

Batch make_batch(uint32_t n, int size_kind, std::mt19937& rng) {
  Batch b;
  uint32_t off = 0;
  for (uint32_t i = 0; i < n; ++i) {
    uint16_t len = size_kind == 0 ? 64 : size_kind == 1 ? 1514 : (rng() % 4 == 0 ? 64 : 1514);
    b.desc.push_back(Desc{off, len, 0, static_cast<uint32_t>(rng() % kFlows), i});
    off += align_slice(len);
    b.bytes += len;
  }
  b.pkts.resize(off);
  for (auto& x : b.pkts) x = static_cast<uint8_t>(rng());
  b.out.resize(size_t{n} * 16);
  return b;
}

struct Row {
  std::string app, impl, size;
  uint32_t batch;
  Summary lat;
  uint64_t runs;
  double gbps, mpps, ratio = 0;
};

}  // namespace

int main(int argc, char** argv) {
  std::string out_dir = "out/crypto";
  int min_runs = 5;
  double min_ms = 150;
  uint32_t max_batch = 65536;
  std::string imb_arch = "auto", callgrind, cg_size = "1514";
  bool peers = false, imb_check = false, md5_peers = false, steps = false;
  int rounds = 9, iters = -1;  // iters: 20 under --callgrind, 1 under --steps
  uint32_t batch = 256;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&] { return i + 1 < argc ? std::string(argv[++i]) : std::string(); };
    if (a == "--out") out_dir = next();
    else if (a == "--runs") min_runs = std::stoi(next());
    else if (a == "--min-ms") min_ms = std::stod(next());
    else if (a == "--max-batch") max_batch = static_cast<uint32_t>(std::stoul(next()));
    else if (a == "--quick") { min_ms = 20; max_batch = 4096; }
    else if (a == "--imb-arch") imb_arch = next();
    else if (a == "--peers") peers = true;
    else if (a == "--steps") steps = true;
    else if (a == "--md5") md5_peers = true;
    else if (a == "--imb-check") imb_check = true;
    else if (a == "--rounds") rounds = std::stoi(next());
    else if (a == "--batch") batch = static_cast<uint32_t>(std::stoul(next()));
    else if (a == "--callgrind") callgrind = next();
    else if (a == "--size") cg_size = next();
    else if (a == "--iters") iters = std::stoi(next());
    else {
      std::fprintf(stderr,
                   "usage: %s [--out DIR] [--runs N] [--min-ms MS] [--max-batch N] [--quick] [--imb-arch A] "
                   "[--imb-check] [--peers [--rounds N] [--batch N]] [--md5] "
                   "[--callgrind NAME --size 64|1514|mix --batch N --iters N] [--steps [--batch N] [--iters N]]\n",
                   argv[0]);
      return 2;
    }
  }
  std::printf("cpu: %s\n", bench::cpu_line().c_str());
  std::filesystem::create_directories(out_dir);

  const aes::Key master{0x2b, 0x7e, 0x15, 0x16};
  auto keys = std::make_shared<aes::KeyTable>(kFlows);
  for (uint32_t f = 0; f < kFlows; ++f)
    (void)keys->set_key(f, aes::derive_conn_key(master, keys->epoch(), aes::tuple_of(aes::numbered_flow(f))));
  bench::EvpMd5 evp_md5;
  bench::EvpAes evp_aes(master, *keys, kFlows);
  // hpr native, intel-ipsec-mb (if built and it starts), OpenSSL; not made where only MD5 runs (--md5 with --peers,
  // --steps or --callgrind), so that intel-ipsec-mb's start lines do not show there.
  const bool md5_only = md5_peers && (peers || steps || !callgrind.empty());
  std::optional<bench::AesContestants> aes_peers;
  if (!md5_only) {
    aes_peers.emplace(*keys, imb_arch, imb_check);
    aes_peers->add_openssl(evp_aes);
  }
  bench::Md5Contestants md5_contestants(evp_md5);
  bench::Contestants& contestants =
      md5_only ? static_cast<bench::Contestants&>(md5_contestants) : static_cast<bench::Contestants&>(*aes_peers);
  if (!callgrind.empty()) {
    int sk = cg_size == "64" ? 0 : cg_size == "1514" ? 1 : 2;
    std::mt19937 rng(batch * 3 + sk);
    Batch b = make_batch(batch, sk, rng);
    return contestants.callgrind(callgrind, b.view(), b.bytes, iters < 0 ? 20 : iters);
  }
  if (peers || steps) {
    std::vector<bench::RoundBatch> batches;
    for (int sk = 0; sk < 3; ++sk) {
      std::mt19937 rng(batch * 3 + sk);
      Batch b = make_batch(batch, sk, rng);
      batches.push_back({size_names[sk], std::move(b.desc), std::move(b.pkts), std::move(b.out), b.bytes});
    }
    if (steps)
      return contestants.steps(batches, iters < 0 ? 1 : iters,
                               out_dir + (md5_peers ? "/crypto_md5_steps.csv" : "/crypto_steps.csv"));
    return contestants.rounds(batches, rounds, min_runs, min_ms,
                              out_dir + (md5_peers ? "/crypto_md5_peers.csv" : "/crypto_peers.csv"));
  }
  const std::string csv_path = out_dir + "/crypto_bench.csv";
  FILE* csv = std::fopen(csv_path.c_str(), "w");
  if (!csv) { std::fprintf(stderr, "cannot write %s\n", csv_path.c_str()); return 1; }
  std::fprintf(csv, "app,impl,packet_size,batch,runs,bytes_per_batch,median_ns,p1_ns,p99_ns,spread,gbps,mpps,ratio_openssl\n");
  std::printf("%-4s %-11s %-5s %6s %9s %9s %10s %10s %7s %6s\n", "app", "impl", "size", "batch", "Gbit/s", "Mpps",
              "lat_med_us", "lat_p99_us", "spread", "x_ossl");
  for (int sk = 0; sk < 3; ++sk) {
    for (uint32_t n = 64; n <= max_batch; n *= 4) {
      std::mt19937 rng(n * 3 + sk);
      Batch b = make_batch(n, sk, rng);
      std::vector<Row> rows;
      auto add = [&](const char* app, std::string impl, const std::function<void()>& fn) {
        Row r{app, std::move(impl), size_names[sk], n, {}, 0, 0, 0};
        r.lat = bench::time_batches(fn, min_runs, min_ms, r.runs);
        r.gbps = static_cast<double>(b.bytes) * 8 / r.lat.median;
        r.mpps = n / r.lat.median * 1e3;
        rows.push_back(r);
      };
      add("md5", "openssl", [&] { evp_md5.run(b.view()); });
      for (auto impl : {md5::Impl::kScalar, md5::Impl::kAvx2, md5::Impl::kAvx512X16})
        if (md5::impl_supported(impl)) add("md5", std::string(md5::impl_name(impl)), [&, impl] { md5::md5_batch(b.view(), impl); });
      add("aes", "openssl", [&] { evp_aes.run(b.view()); });
      for (auto impl : {aes::Impl::kScalar, aes::Impl::kAesni, aes::Impl::kAesniX8, aes::Impl::kVaesX16,
                        aes::Impl::kVaes512X16, aes::Impl::kVaes512X32})
        if (aes::impl_supported(impl))
          add("aes", std::string(aes::impl_name(impl)), [&, impl] { aes::aes_batch(b.view(), *keys, aes::IvMode::kDerived, impl); });
      if (aes_peers->imb()) add("aes", "ipsec_mb", [&] { aes_peers->imb()->run(b.view()); });
      for (auto& r : rows) {
        for (auto& peer : rows)
          if (peer.app == r.app && peer.impl == "openssl") r.ratio = r.gbps / peer.gbps;
        std::printf("%-4s %-11s %-5s %6u %9.2f %9.3f %10.1f %10.1f %7.3f %6.2f\n", r.app.c_str(), r.impl.c_str(),
                    r.size.c_str(), r.batch, r.gbps, r.mpps, r.lat.median / 1e3, r.lat.p99 / 1e3, r.lat.spread, r.ratio);
        std::fprintf(csv, "%s,%s,%s,%u,%lu,%lu,%.0f,%.0f,%.0f,%.4f,%.4f,%.4f,%.4f\n", r.app.c_str(), r.impl.c_str(),
                     r.size.c_str(), r.batch, static_cast<unsigned long>(r.runs), static_cast<unsigned long>(b.bytes),
                     r.lat.median, r.lat.p1, r.lat.p99, r.lat.spread, r.gbps, r.mpps, r.ratio);
      }
      std::fflush(stdout);
      std::fflush(csv);
    }
  }
  std::fclose(csv);
  std::printf("wrote %s\n", csv_path.c_str());
  return 0;
}
