#include "pipeline/quantum_csv.hpp"

#include <fmt/format.h>

#include <cmath>
#include <cstdio>

namespace hpr {

Result<QuantumCsv> QuantumCsv::open(const std::string& path) {
  auto f = AtomicFile::open(path, "adaptive.csv (--adapt-csv)");
  if (!f) return f.status();
  std::fprintf(f->file(),
               "t_s,phase,offered_bps,achieved_bps,lost_pkts,power_w,power_source,lat_p50_us,lat_p99_us,score,setup,"
               "changed,event\n");
  return QuantumCsv(std::move(*f));
}

void QuantumCsv::row(double t_s, const char* phase, const IntervalStats& st, const PowerSample& power, double score,
                     const std::string& setup, bool changed, const std::string& event) {
  std::string sc = std::isnan(score) ? std::string() : fmt::format("{:.6g}", score);
  std::fprintf(file_->file(), "%.3f,%s,%.0f,%.0f,%llu,%.2f,%s,%.1f,%.1f,%s,%s,%d,\"%s\"\n", t_s, phase,
               st.offered_bps, st.achieved_bps, static_cast<unsigned long long>(st.lost_packets), power.watts,
               power.source.c_str(), static_cast<double>(st.latency_p50_ns) / 1e3,
               static_cast<double>(st.latency_p99_ns) / 1e3, sc.c_str(), setup.c_str(), changed ? 1 : 0, event.c_str());
}

Status QuantumCsv::commit() {
  Status st = file_->commit();
  file_.reset();
  return st;
}

}  // namespace hpr
