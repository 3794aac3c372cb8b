#pragma once
// Interleaved rounds of crypto_bench contestants on the same batches (bench/crypto/aes_rounds.hpp: AES,
// bench/crypto/md5_rounds.hpp: MD5).
//   rounds():    first checks that every contestant turns a copy of each batch into the same bytes as the first
//                (AES: the packets, ciphertext in place; MD5: the digests; else no figures); then interleaved
//                rounds: in each round every contestant times the batch (one warm-up batch, then at least min_runs
//                batches and min_ms; Gbit/s from the median batch), the order rotating each round; then per
//                contestant median Gbit/s and spread (max - min) / median over the rounds, and per pair hpr / peer
//                (and the first hpr contestant, kAuto's pick, / each other hpr one) the per-round ratios' median and
//                min-max. Raw rounds to a CSV.
//   callgrind(): one contestant, `iters` batches inside cg_region() (valgrind --tool=callgrind
//                --collect-atstart=no --toggle-collect='*cg_region*'), for instructions per byte.
//   steps():     every contestant on every batch, `iters` batches after a warm-up one, instructions counted on this
//                CPU by single-stepping (hpr/step_count.hpp): the instructions per byte of the paths valgrind cannot
//                run (AVX-512, VAES), and beside them those it can (equal to callgrind's, a check of the counter).
//                Table on stdout, rows to a CSV.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "hpr/clock.hpp"
#include "hpr/stats.hpp"
#include "hpr/step_count.hpp"
#include "kernels/app.hpp"

namespace hpr::bench {

inline Summary time_batches(const std::function<void()>& fn, int min_runs, double min_ms, uint64_t& runs) {
  fn();  // warm-up
  std::vector<double> ns;
  uint64_t t0 = monotonic_ns();
  while (static_cast<int>(ns.size()) < min_runs || (monotonic_ns() - t0) < min_ms * 1e6) {
    uint64_t a = monotonic_ns();
    fn();
    ns.push_back(static_cast<double>(monotonic_ns() - a));
    if (ns.size() >= 2000) break;
  }
  runs = ns.size();
  return summarize(ns);
}

// "AMD EPYC ... | aes vaes avx2 avx512f ..." (model from /proc/cpuinfo, features as this process sees them).
inline std::string cpu_line() {
  std::string model = "?";
  std::ifstream f("/proc/cpuinfo");
  for (std::string l; std::getline(f, l);)
    if (l.rfind("model name", 0) == 0) {
      model = l.substr(l.find(':') + 2);
      break;
    }
  std::string s = model + " |";
  __builtin_cpu_init();
#define HPR_FEATURE(x) \
  if (__builtin_cpu_supports(x)) s += " " x;
  HPR_FEATURE("aes")
  HPR_FEATURE("vaes")
  HPR_FEATURE("vpclmulqdq")
  HPR_FEATURE("avx") HPR_FEATURE("avx2") HPR_FEATURE("avx512f") HPR_FEATURE("avx512bw") HPR_FEATURE("avx512vl")
#undef HPR_FEATURE
      return s;
}

struct RoundBatch {
  std::string size;
  std::vector<kernels::Desc> desc;
  std::vector<uint8_t> pkts, out;
  uint64_t bytes = 0;
  kernels::BatchView view() { return {desc.data(), static_cast<uint32_t>(desc.size()), pkts.data(), out.data()}; }
};

__attribute__((noinline)) inline void cg_region(const std::function<void(const kernels::BatchView&)>& fn,
                                                const kernels::BatchView& b, int iters) {
  for (int i = 0; i < iters; ++i) fn(b);
}


class Contestants {
 public:
  struct C {
    std::string name;
    bool hpr;
    std::function<void(const kernels::BatchView&)> run;
  };
  // What must be equal across contestants: the packets (written in place) or the results in `out`.
  enum class What { kPackets, kOut };
  explicit Contestants(What what) : what_(what) {}

  int rounds(std::vector<RoundBatch>& batches, int rounds, int min_runs, double min_ms, const std::string& csv_path) {
    FILE* csv = std::fopen(csv_path.c_str(), "w");
    if (!csv) {
      std::fprintf(stderr, "cannot write %s\n", csv_path.c_str());
      return 1;
    }
    std::fprintf(csv, "size,batch,round,impl,runs,median_ns,gbps\n");
    const size_t n = cs_.size();
    for (auto& b : batches) {
      if (!same_bytes(b)) return 1;
      std::vector<std::vector<double>> g(n);  // Gbit/s per contestant per round
      for (int r = 0; r < rounds; ++r) {
        for (size_t k = 0; k < n; ++k) {
          const size_t c = (k + static_cast<size_t>(r)) % n;
          uint64_t runs = 0;
          const kernels::BatchView v = b.view();
          Summary s = time_batches([&] { cs_[c].run(v); }, min_runs, min_ms, runs);
          g[c].push_back(static_cast<double>(b.bytes) * 8 / s.median);
          std::fprintf(csv, "%s,%zu,%d,%s,%lu,%.0f,%.4f\n", b.size.c_str(), b.desc.size(), r, cs_[c].name.c_str(),
                       static_cast<unsigned long>(runs), s.median, g[c].back());
        }
      }
      std::fflush(csv);
      std::printf("\nsize %s, batch %zu, %d interleaved rounds: Gbit/s median (spread = (max - min) / median)\n",
                  b.size.c_str(), b.desc.size(), rounds);
      for (size_t c = 0; c < n; ++c) {
        auto [mn, mx] = std::minmax_element(g[c].begin(), g[c].end());
        const double med = median(g[c]);
        std::printf("  %-16s %8.2f  (%5.1f %%)\n", cs_[c].name.c_str(), med, 100 * (*mx - *mn) / med);
      }
      for (size_t h = 0; h < n; ++h) {
        if (!cs_[h].hpr) continue;
        for (size_t p = 0; p < n; ++p) {
          if (cs_[p].hpr && (h != 0 || p == 0)) continue;  // peers, and the first hpr one (kAuto's) / each other
          std::vector<double> q;
          for (int r = 0; r < rounds; ++r) q.push_back(g[h][r] / g[p][r]);
          auto [mn, mx] = std::minmax_element(q.begin(), q.end());
          std::printf("  %-16s / %-10s per round: median %.3f, %.3f-%.3f\n", cs_[h].name.c_str(), cs_[p].name.c_str(),
                      median(q), *mn, *mx);
        }
      }
      std::fflush(stdout);
    }
    std::fclose(csv);
    std::printf("wrote %s\n", csv_path.c_str());
    return 0;
  }

  // Every contestant turns a copy of the batch into the same ciphertext as the first (hpr kAuto); says so.
  bool same_bytes(RoundBatch& b) {
    std::vector<uint8_t> want;
    for (auto& c : cs_) {
      RoundBatch copy{b.size, b.desc, b.pkts, b.out, b.bytes};
      c.run(copy.view());
      std::vector<uint8_t> got = std::move(what_ == What::kPackets ? copy.pkts : copy.out);
      if (want.empty())
        want = std::move(got);
      else if (got != want) {
        std::fprintf(stderr, "size %s: %s's bytes differ from %s's: not the same function, no figures\n",
                     b.size.c_str(), c.name.c_str(), cs_[0].name.c_str());
        return false;
      }
    }
    std::printf("size %s: every contestant's %s == %s's\n", b.size.c_str(),
                what_ == What::kPackets ? "ciphertext" : "digests", cs_[0].name.c_str());
    return true;
  }

  int callgrind(const std::string& name, const kernels::BatchView& b, uint64_t bytes, int iters) {
    for (auto& c : cs_) {
      if (c.name != name) continue;
      c.run(b);  // warm-up, outside the region
      cg_region(c.run, b, iters);
      std::printf("callgrind: %s bytes %lu (%d batches of %u packets, %lu bytes each)\n", name.c_str(),
                  static_cast<unsigned long>(bytes * static_cast<uint64_t>(iters)), iters, b.n,
                  static_cast<unsigned long>(bytes));
      return 0;
    }
    std::string names;
    for (auto& c : cs_) names += " " + c.name;
    std::fprintf(stderr, "--callgrind %s: no such contestant here (have:%s)\n", name.c_str(), names.c_str());
    return 2;
  }

  int steps(std::vector<RoundBatch>& batches, int iters, const std::string& csv_path) {
    FILE* csv = std::fopen(csv_path.c_str(), "w");
    if (!csv) {
      std::fprintf(stderr, "cannot write %s\n", csv_path.c_str());
      return 1;
    }
    std::fprintf(csv, "size,batch,impl,iters,instructions,bytes,instr_per_byte\n");
    std::printf("%-16s %-5s %6s %14s %12s %10s\n", "contestant", "size", "batch", "instructions", "bytes",
                "instr/byte");
    for (auto& b : batches) {
      const kernels::BatchView v = b.view();
      const uint64_t bytes = b.bytes * static_cast<uint64_t>(iters);
      for (auto& c : cs_) {
        c.run(v);  // warm-up, outside the count
        auto n = count_steps([&] { cg_region(c.run, v, iters); });
        if (!n) {
          std::fprintf(stderr, "steps: %s, %s: %s\n", c.name.c_str(), b.size.c_str(), n.status().to_string().c_str());
          std::fclose(csv);
          return 1;
        }
        const double per_byte = static_cast<double>(n.value()) / static_cast<double>(bytes);
        std::printf("%-16s %-5s %6u %14lu %12lu %10.3f\n", c.name.c_str(), b.size.c_str(), v.n,
                    static_cast<unsigned long>(n.value()), static_cast<unsigned long>(bytes), per_byte);
        std::fprintf(csv, "%s,%u,%s,%d,%lu,%lu,%.4f\n", b.size.c_str(), v.n, c.name.c_str(), iters,
                     static_cast<unsigned long>(n.value()), static_cast<unsigned long>(bytes), per_byte);
        std::fflush(stdout);
      }
    }
    if (std::fclose(csv) != 0) {
      std::fprintf(stderr, "cannot write %s\n", csv_path.c_str());
      return 1;
    }
    std::printf("wrote %s\n", csv_path.c_str());
    return 0;
  }

 protected:
  std::vector<C> cs_;

 private:
  What what_;
};

}  // namespace hpr::bench
