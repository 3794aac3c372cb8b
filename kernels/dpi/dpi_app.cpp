// DPI application: host side (see dpi_app.hpp).
#include "kernels/dpi/dpi_app.hpp"

#include <arpa/inet.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

#include "kernels/dpi/hot_order.hpp"

namespace hpr::dpi {
namespace {

class DpiDeviceTables final : public kernels::DeviceTables {
 public:
  cl::Buffer cls, trans, out_ids, pat_bytes, pat_off;
  Status bind(cl::Kernel& kernel) override {
    try {
      kernel.setArg(4, cls);
      kernel.setArg(5, trans);
      kernel.setArg(6, out_ids);
      kernel.setArg(7, pat_bytes);
      kernel.setArg(8, pat_off);
    } catch (const cl::Error& e) {
      return error(Code::kUnavailable, "dpi: setting kernel arguments failed: {} ({})", e.what(), e.err());
    }
    return Status::ok();
  }
};

template <typename T>
cl::Buffer ro_buffer(const cl::Context& ctx, const T* data, size_t count) {
  return cl::Buffer(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, count * sizeof(T), const_cast<T*>(data));
}

}  // namespace

Result<std::unique_ptr<DpiApp>> DpiApp::create(PatternSet patterns, DpiConfig cfg) {
  if (cfg.max_ids < 1 || cfg.max_ids > 64)
    return error(Code::kInvalidArgument, "dpi: max_ids (K) = {} must be in 1..64", cfg.max_ids);
  if (cfg.native_lanes != 0 && cfg.native_lanes != 1 && cfg.native_lanes != 4)
    return error(Code::kInvalidArgument, "dpi: native_lanes = {} must be 0 (auto), 1 or 4", cfg.native_lanes);
  if (cfg.max_slice_bytes < 1 || cfg.max_slice_bytes > 65535)
    return error(Code::kInvalidArgument, "dpi: max_slice_bytes = {} must be in 1..65535", cfg.max_slice_bytes);
  if (cfg.native_engine == DpiConfig::Engine::kAuto) cfg.native_engine = kDefaultNativeEngine;
  std::vector<std::vector<uint8_t>> train;  // kAutomaton: read by automaton(), below
  if (!cfg.automaton_train.empty() && cfg.native_engine == DpiConfig::Engine::kPrefilter) {
    auto t = load_payloads(cfg.automaton_train, "dpi: automaton_train");
    if (!t.is_ok()) return t.status();
    train = std::move(*t);
  }
  std::unique_ptr<PrefilterMatcher> pf;
  if (cfg.native_engine == DpiConfig::Engine::kPrefilter) {
    auto r = PrefilterMatcher::build(patterns.patterns, cfg.prefilter_simd, cfg.max_table_bytes,
                                     AcOrder{payload_spans(train), 1});
    if (!r.is_ok()) return r.status();
    pf = std::move(*r);
  }
  std::unique_ptr<DpiApp> app(new DpiApp(std::move(patterns), std::move(pf), cfg));
  if (cfg.native_engine == DpiConfig::Engine::kAutomaton) {  // the native path needs it: build it now
    auto a = app->automaton();
    if (!a.is_ok()) return a.status();
  }
  return app;
}

Result<const AcDfa*> DpiApp::automaton() const {
  std::call_once(dfa_once_, [this] {
    std::vector<std::vector<uint8_t>> train;  // read again: not held by a run that never builds this
    if (!cfg_.automaton_train.empty()) {
      auto t = load_payloads(cfg_.automaton_train, "dpi: automaton_train");
      if (!t.is_ok()) {
        dfa_status_ = t.status();
        return;
      }
      train = std::move(*t);
    }
    auto d = AcDfa::build(patterns_.patterns, AcOrder{payload_spans(train), 1}, cfg_.max_table_bytes);
    if (d.is_ok()) dfa_.emplace(std::move(*d));
    else dfa_status_ = d.status();
  });
  if (!dfa_) return dfa_status_;
  return &*dfa_;
}

const AcDfa& DpiApp::dfa() const {
  auto a = automaton();
  if (!a.is_ok()) {  // tests and benches only: their pattern sets build
    fmt::print(stderr, "dpi: {}\n", a.status().message());
    std::abort();
  }
  return **a;
}

Result<std::unique_ptr<DpiApp>> DpiApp::from_rule_dir(const std::string& dir, DpiConfig cfg) {
  auto set = load_rule_dir(dir);
  if (!set.is_ok()) return set.status();
  return create(std::move(*set), cfg);
}

kernels::Slice DpiApp::slice(const Packet& p) const {
  if (p.payload_off == kNoOffset || p.payload_len == 0) return {0, 0, 0};
  if (p.payload_len > cfg_.max_slice_bytes)
    return {p.payload_off, static_cast<uint16_t>(cfg_.max_slice_bytes), kDpiTruncated};
  return {p.payload_off, p.payload_len, 0};
}

[[gnu::flatten]] void DpiApp::slices_in_place(std::span<const Packet> pkts, kernels::Desc* desc, uint8_t** slices) const {
  kernels::slices_in_place_of(*this, pkts, desc, slices);
}

std::string DpiApp::kernel_source() const {
  std::string s(kernels::embedded_source("hpr_desc"));
  s += '\n';
  s += kernels::embedded_source("dpi");
  return s;
}

std::string DpiApp::build_options() const {
  return fmt::format("-DK_MATCHES={}", cfg_.max_ids);
}

Result<std::unique_ptr<kernels::DeviceTables>> DpiApp::make_device_tables(const cl::Context& ctx,
                                                                          const cl::CommandQueue& /*queue*/) const {
  auto built = automaton();
  if (!built.is_ok()) return built.status();
  const AcDfa& dfa = **built;
  const uint64_t trans_bytes = dfa.trans().size() * 4ull;
  try {
    for (const auto& dev : ctx.getInfo<CL_CONTEXT_DEVICES>()) {
      uint64_t max_alloc = dev.getInfo<CL_DEVICE_MAX_MEM_ALLOC_SIZE>();
      if (trans_bytes > max_alloc) {
        return error(Code::kInvalidArgument,
                     "dpi: the DFA table ({} MB, {} states x {} words) exceeds CL_DEVICE_MAX_MEM_ALLOC_SIZE ({} MB) of "
                     "device '{}'; use fewer patterns",
                     trans_bytes >> 20, dfa.stats().states, dfa.row_words(), max_alloc >> 20,
                     dev.getInfo<CL_DEVICE_NAME>());
      }
    }
    bool unified = true;
    for (const auto& dev : ctx.getInfo<CL_CONTEXT_DEVICES>()) unified = unified && dev.getInfo<CL_DEVICE_HOST_UNIFIED_MEMORY>();
    auto t = std::make_unique<DpiDeviceTables>();
    t->cls = ro_buffer(ctx, dfa.byte_class().data(), 256);
    if (unified) {
      // Host-unified devices use the host table in place (2 MB aligned): no 184 MB copy per context.
      // The app must outlive the tables (it owns the DFA), as it must outlive its programs anyway.
      t->trans = cl::Buffer(ctx, CL_MEM_READ_ONLY | CL_MEM_USE_HOST_PTR, dfa.trans().size() * 4,
                            const_cast<uint32_t*>(dfa.trans().data()));
    } else {
      t->trans = ro_buffer(ctx, dfa.trans().data(), dfa.trans().size());
    }
    t->out_ids = ro_buffer(ctx, dfa.out_ids().data(), dfa.out_ids().size());
    t->pat_bytes = ro_buffer(ctx, dfa.pat_bytes().data(), dfa.pat_bytes().size());
    t->pat_off = ro_buffer(ctx, dfa.pat_off().data(), dfa.pat_off().size());
    return std::unique_ptr<kernels::DeviceTables>(std::move(t));
  } catch (const cl::Error& e) {
    return error(Code::kUnavailable, "dpi: creating device tables ({} MB) failed: {} ({})",
                 dfa.stats().table_bytes >> 20, e.what(), e.err());
  }
}

void DpiApp::run_native(const kernels::BatchView& batch) const {
  if (prefilter_) run_native_batch(*prefilter_, cfg_.max_ids, batch);
  else run_native_batch(*dfa_, cfg_.max_ids, batch, cfg_.native_lanes);  // built at create
}

void DpiApp::finish(std::span<Packet> /*pkts*/, const kernels::BatchView& /*batch*/) const {
  // DPI observes: nothing is dropped or rerouted. Alerts are logged by the pipeline (format_alert).
}

MatchView DpiApp::result(const kernels::BatchView& batch, uint32_t i) const {
  const auto* r = reinterpret_cast<const uint32_t*>(batch.out) + static_cast<size_t>(i) * (cfg_.max_ids + 1);
  uint32_t n = r[0] < cfg_.max_ids ? r[0] : cfg_.max_ids;
  return {r[0], std::span<const uint32_t>(r + 1, n)};
}

size_t format_alert(std::span<char> buf, uint64_t time_ns, const Packet& p, const MatchView& m) {
  char* const begin = buf.data();
  char* it = begin;
  char* const end = begin + buf.size();
  auto put = [&](std::string_view f, const auto&... args) {
    if (it >= end) return;
    auto r = fmt::format_to_n(it, static_cast<size_t>(end - it), fmt::runtime(f), args...);
    it = r.out;
  };
  put("{}.{:09d} flow={}", time_ns / 1000000000ull, time_ns % 1000000000ull, p.flow_id);
  if (p.data != nullptr && p.l3_off != kNoOffset && (p.l3 == L3::kIPv4 || p.l3 == L3::kIPv6)) {
    char src[INET6_ADDRSTRLEN] = "?", dst[INET6_ADDRSTRLEN] = "?";
    const uint8_t* ip = p.data + p.l3_off;
    if (p.l3 == L3::kIPv4) {
      inet_ntop(AF_INET, ip + 12, src, sizeof src);
      inet_ntop(AF_INET, ip + 16, dst, sizeof dst);
    } else {
      inet_ntop(AF_INET6, ip + 8, src, sizeof src);
      inet_ntop(AF_INET6, ip + 24, dst, sizeof dst);
    }
    if (p.l4_off != kNoOffset && (p.l4 == 6 || p.l4 == 17)) {
      const uint8_t* l4 = p.data + p.l4_off;
      unsigned sport = l4[0] << 8 | l4[1], dport = l4[2] << 8 | l4[3];
      if (p.l3 == L3::kIPv6) put(" [{}]:{} -> [{}]:{}", src, sport, dst, dport);
      else put(" {}:{} -> {}:{}", src, sport, dst, dport);
    } else {
      put(" {} -> {}", src, dst);
    }
    put(" proto={}", p.l4);
  }
  put(" matches={} ids=", m.count);
  for (size_t j = 0; j < m.ids.size(); ++j) put(j == 0 ? "{}" : ",{}", m.ids[j]);
  if (m.count > m.ids.size()) put(",...");
  return static_cast<size_t>(it - begin);
}

void DpiApp::append_log(std::span<const Packet> pkts, const kernels::BatchView& batch,
                        const std::function<std::string(uint32_t)>& prefix, std::string& out) const {
  for (uint32_t i = 0; i < batch.n && i < pkts.size(); ++i) {
    MatchView m = result(batch, i);
    if (m.count == 0) continue;
    out += prefix(i);
    out += fmt::format(" dpi matches={} ids=", m.count);
    for (size_t j = 0; j < m.ids.size(); ++j) out += fmt::format("{}{}", j ? "," : "", m.ids[j]);
    out += '\n';
  }
}

uint64_t DpiApp::count_events(std::span<const Packet>, const kernels::BatchView& batch) const {
  uint64_t n = 0;
  for (uint32_t i = 0; i < batch.n; ++i) n += result(batch, i).count;
  return n;
}

std::string format_alert(uint64_t time_ns, const Packet& p, const MatchView& m) {
  char buf[512];
  size_t n = format_alert(std::span<char>(buf, sizeof buf), time_ns, p, m);
  return std::string(buf, n);
}

}  // namespace hpr::dpi
