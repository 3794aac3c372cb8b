#pragma once
// DPI application (heterogeneous-scheduler paper §3.2.2, §3.3): Aho-Corasick over the L4 payload of
// every packet, thread per packet, with the ET/Snort `content:` patterns (kernels/dpi/rules.hpp)
// compiled into one DFA table (kernels/dpi/ac.hpp).
//
// Slice: the L4 payload (Packet::payload_off, payload_len). Packets without one get len 0 and a
//   result of zero matches. A payload longer than max_slice_bytes is scanned only up to it and its
//   desc flags carry kDpiTruncated.
// Result per packet (uint32 words, K = DpiConfig::max_ids, build option -DK_MATCHES=K):
//   [0] number of matches (one per (pattern, end offset), as Hyperscan without HS_FLAG_SINGLEMATCH)
//   [1..K] ids of the first min(count, K) matches, ordered by end offset then id; kNoId after them.
// Packets never travel back (writes_back() = false); finish() drops nothing; the pipeline logs
// alerts with format_alert().
// Kernel arguments from index 4: byte_class, trans, out_ids, pat_bytes, pat_off.
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>

#include "kernels/app.hpp"
#include "kernels/dpi/ac.hpp"
#include "kernels/dpi/prefilter_matcher.hpp"
#include "kernels/dpi/rules.hpp"

namespace hpr::dpi {

inline constexpr uint16_t kDpiTruncated = 1;  // Desc::flags: payload longer than max_slice_bytes

struct DpiConfig {
  uint32_t max_ids = 8;              // K: pattern ids kept per packet (1..64)
  uint32_t max_slice_bytes = 9216;   // longest payload scanned (jumbo frames); must be < 65536
  uint64_t max_table_bytes = 2ull << 30;  // refuse larger automata (typical CL_DEVICE_MAX_MEM_ALLOC_SIZE)
  // Native path: payloads scanned in lockstep, 1 or 4 (0 = default, 4: faster or equal in the
  // bench on both ET sets and every workload but noise; see docs/dpi.md).
  uint32_t native_lanes = 0;
  // Native path: the whole-set automaton (kAutomaton, the kernel's table) or the prefilter path
  // (kPrefilter, prefilter_matcher.hpp: its own tables, an automaton of the >= 4-byte patterns among
  // them, built beside the kernel's). Same result bytes either way. kAuto picks the default (see docs/dpi.md for the figures behind it).
  enum class Engine : uint8_t { kAuto, kAutomaton, kPrefilter };
  Engine native_engine = Engine::kAuto;
  SimdPath prefilter_simd = SimdPath::kAuto;  // the prefilter's SIMD path (resolved by CPU feature)
  // Automaton state order (AcOrder, ac.hpp): empty = BFS (the default); else a pcap file or a
  // directory of captures whose L4 payloads are scanned to count state visits, and the states of
  // both automata (the whole set's, the prefilter's long patterns') are renumbered by visits. Same
  // matches either way; measured in docs/dpi.md ("Hot-DFA state order"). Errors at create:
  // kNotFound / kInvalidArgument naming `automaton_train` (hot_order.hpp).
  std::string automaton_train;
};
// The prefilter path: faster than the automaton on the real captures with both ET sets (docs/dpi.md).
inline constexpr DpiConfig::Engine kDefaultNativeEngine = DpiConfig::Engine::kPrefilter;

// One packet's result, read from a BatchView.
struct MatchView {
  uint32_t count = 0;
  std::span<const uint32_t> ids;  // min(count, K) ids
};

class DpiApp final : public kernels::App {
 public:
  // Errors: kInvalidArgument (max_ids or max_slice_bytes out of range; AcDfa::build errors).
  static Result<std::unique_ptr<DpiApp>> create(PatternSet patterns, DpiConfig cfg = {});
  // Loads *.rules from `dir` (rules.hpp errors) and creates the app.
  static Result<std::unique_ptr<DpiApp>> from_rule_dir(const std::string& dir, DpiConfig cfg = {});

  std::string_view name() const override { return "dpi"; }
  kernels::Slice slice(const Packet& p) const override;
  void slices_in_place(std::span<const Packet> pkts, kernels::Desc* desc, uint8_t** slices) const override;
  uint32_t max_slice_bytes() const override { return cfg_.max_slice_bytes; }
  uint32_t result_bytes() const override { return 4 * (cfg_.max_ids + 1); }
  bool writes_back() const override { return false; }
  std::string kernel_source() const override;
  std::string_view kernel_name() const override { return "dpi_match"; }
  std::string build_options() const override;
  // Five read-only buffers: the DFA table in place (CL_MEM_USE_HOST_PTR) when every device of the
  // context has host-unified memory, else copied (CL_MEM_COPY_HOST_PTR), like the small ones. The
  // app must outlive the tables. Errors: kInvalidArgument when the DFA table is
  // larger than a device's CL_DEVICE_MAX_MEM_ALLOC_SIZE; kUnavailable on an OpenCL error.
  Result<std::unique_ptr<kernels::DeviceTables>> make_device_tables(const cl::Context& ctx,
                                                                    const cl::CommandQueue& queue) const override;
  void run_native(const kernels::BatchView& batch) const override;
  void finish(std::span<Packet> pkts, const kernels::BatchView& batch) const override;
  bool finish_changes_nothing() const override { return true; }

  // Alert log: one line per packet with at least one match: "<prefix> dpi matches=<n> ids=<a>,<b>,...".
  void append_log(std::span<const Packet> pkts, const kernels::BatchView& batch,
                  const std::function<std::string(uint32_t)>& prefix, std::string& out) const override;
  uint64_t count_events(std::span<const Packet> pkts, const kernels::BatchView& batch) const override;  // matches
  std::string_view event_name() const override { return "matches"; }

  MatchView result(const kernels::BatchView& batch, uint32_t i) const;
  // The whole-set automaton (the kernel's table, and the native path with kAutomaton): built at create for
  // kAutomaton, else on first use, by the first device lane (a native-only run with the prefilter never holds it).
  // automaton() gives its build error (the table too large, say); dfa() is for tests and benches, which know it builds.
  Result<const AcDfa*> automaton() const;
  const AcDfa& dfa() const;
  const PrefilterMatcher* prefilter() const { return prefilter_.get(); }  // null unless kPrefilter
  const PatternSet& patterns() const { return patterns_; }
  const DpiConfig& config() const { return cfg_; }

 private:
  DpiApp(PatternSet p, std::unique_ptr<PrefilterMatcher> pf, DpiConfig c)
      : patterns_(std::move(p)), prefilter_(std::move(pf)), cfg_(c) {
    if (cfg_.native_lanes == 0) cfg_.native_lanes = 4;
  }
  PatternSet patterns_;
  mutable std::once_flag dfa_once_;
  mutable std::optional<AcDfa> dfa_;
  mutable Status dfa_status_;
  std::unique_ptr<PrefilterMatcher> prefilter_;
  DpiConfig cfg_;
};

// Native batch scan on the kernel layout (dpi_ref.cpp): `out` gets K + 1 words per packet.
// `lanes`: 1 (one payload at a time) or 4 (four in lockstep); same results either way.
void run_native_batch(const AcDfa& dfa, uint32_t k, const kernels::BatchView& batch, uint32_t lanes = 4);
// The same through the prefilter path, one payload at a time; same bytes. (Four payloads interleaved,
// as the automaton's lanes, were measured slower: 2.6 against 3.3 Gbit/s on ET >= 4, docs/dpi.md.)
void run_native_batch(const PrefilterMatcher& pf, uint32_t k, const kernels::BatchView& batch);

// One alert line, no allocation: "<sec>.<ns> flow=<id> <src>:<sport> -> <dst>:<dport> proto=<n>
// matches=<count> ids=<id>,<id>,..." (addresses when the packet has IPv4/IPv6 headers parsed).
// Returns the characters written (truncated to buf.size()).
size_t format_alert(std::span<char> buf, uint64_t time_ns, const Packet& p, const MatchView& m);
std::string format_alert(uint64_t time_ns, const Packet& p, const MatchView& m);

}  // namespace hpr::dpi
