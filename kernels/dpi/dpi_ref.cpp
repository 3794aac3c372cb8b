// Native DPI path: the same DFA and result layout as dpi.cl, batch at a time.
//
// Why lanes: one table load per byte, each dependent on the previous one, into a 181 MB table;
// perf puts ~60% of the time on the load after the transition (cache and TLB misses). Stepping
// kLanes payloads in lockstep gives the core kLanes independent miss chains to overlap. Each lane
// is exactly the single-payload scan, so results are identical to ac_scan and to the kernel.
// Measured (bench/dpi, CPU time, full matrix): ET >= 4 bytes ~0.9-1.0 -> 1.4-2.6 Gbit/s with 4
// lanes on 1514-byte frames; on the full ET set (matches on ~every byte) the output path, not the
// table miss, dominates and 4 lanes gain only 0-15% (single quick runs even showed 1 lane ahead).
#include "kernels/dpi/dpi_app.hpp"

namespace hpr::dpi {
namespace {

constexpr int kLanes = 4;

inline void finish_lane(const AcLane& l, uint32_t* r, uint32_t k) {
  r[0] = l.count;
  for (uint32_t j = l.nid; j < k; ++j) r[1 + j] = kNoId;
}

// One payload at a time, through any scanner with AcDfa::scan's convention.
template <typename Scanner>
void run_single(const Scanner& sc, uint32_t k, const kernels::BatchView& batch) {
  auto* o = reinterpret_cast<uint32_t*>(batch.out);
  for (uint32_t i = 0; i < batch.n; ++i) {
    uint32_t* r = o + static_cast<size_t>(i) * (k + 1);
    r[0] = sc.scan(batch.slice(i), batch.desc[i].len, r + 1, k);
    for (uint32_t j = r[0] < k ? r[0] : k; j < k; ++j) r[1 + j] = kNoId;
  }
}

}  // namespace

void run_native_batch(const AcDfa& dfa, uint32_t k, const kernels::BatchView& batch, uint32_t lanes) {
  const AcTables t = dfa.tables();
  if (lanes == 1) {
    run_single(dfa, k, batch);
    return;
  }
  auto* out = reinterpret_cast<uint32_t*>(batch.out);
  AcLane lane[kLanes];
  uint32_t* res[kLanes] = {};
  uint32_t next = 0;
  // Loads the next non-empty payload into lane j; empty payloads get their (zero) result at once.
  auto refill = [&](int j) -> bool {
    while (next < batch.n) {
      const kernels::Desc& d = batch.desc[next];
      uint32_t* r = out + static_cast<size_t>(next) * (k + 1);
      AcLane l;
      l.p = batch.slice(next);
      ++next;
      l.len = d.len;
      l.ids = r + 1;
      if (d.len == 0) { finish_lane(l, r, k); continue; }
      lane[j] = l;
      res[j] = r;
      return true;
    }
    return false;
  };
  int active = 0;
  while (active < kLanes && refill(active)) ++active;
  while (active == kLanes) {
    uint32_t m = lane[0].len - lane[0].i;
    for (int j = 1; j < kLanes; ++j) m = std::min(m, lane[j].len - lane[j].i);
    for (uint32_t s = 0; s < m; ++s) {
      for (int j = 0; j < kLanes; ++j) ac_step(t, lane[j], k);
    }
    for (int j = 0; j < kLanes; ++j) {
      if (lane[j].i < lane[j].len) continue;
      finish_lane(lane[j], res[j], k);
      if (!refill(j)) {  // no more payloads: move the last active lane here, finish the rest singly
        --active;
        lane[j] = lane[active];
        res[j] = res[active];
        break;
      }
    }
  }
  for (int j = 0; j < active; ++j) {
    while (lane[j].i < lane[j].len) ac_step(t, lane[j], k);
    finish_lane(lane[j], res[j], k);
  }
}

void run_native_batch(const PrefilterMatcher& pf, uint32_t k, const kernels::BatchView& batch) {
  run_single(pf, k, batch);
}

}  // namespace hpr::dpi
