// Native DPI path: the same DFA and result layout as dpi.cl, batch at a time.
#include "kernels/dpi/dpi_app.hpp"

namespace hpr::dpi {

void run_native_batch(const AcDfa& dfa, uint32_t k, const kernels::BatchView& batch) {
  const uint32_t* trans = dfa.trans().data();
  const uint8_t* cls = dfa.byte_class().data();
  const StateOut* outs = dfa.outs().data();
  const uint32_t* out_ids = dfa.out_ids().data();
  const uint8_t* pat_bytes = dfa.pat_bytes().data();
  const uint32_t* pat_off = dfa.pat_off().data();
  auto* out = reinterpret_cast<uint32_t*>(batch.out);
  for (uint32_t i = 0; i < batch.n; ++i) {
    const kernels::Desc& d = batch.desc[i];
    uint32_t* r = out + static_cast<size_t>(i) * (k + 1);
    uint32_t count = ac_scan(trans, cls, outs, out_ids, pat_bytes, pat_off, batch.pkts + d.off, d.len, r + 1, k);
    r[0] = count;
    for (uint32_t j = count < k ? count : k; j < k; ++j) r[1 + j] = kNoId;
  }
}

}  // namespace hpr::dpi
