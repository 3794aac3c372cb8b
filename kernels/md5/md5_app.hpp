#pragma once
// MD5 packet hashing (paper §3.2.3, "Packet hashing"; MD5 as in RFC 1321).
//
// Per packet: the 16-byte MD5 digest of the L4 payload (Packet::payload_off/payload_len), or of the
// whole Ethernet frame with Md5Options::whole_frame. A packet without a parsed payload
// (payload_off == kNoOffset) hashes the empty string. Digests go to `out` (16 bytes per packet,
// RFC 1321 byte order); packets are never modified (writes_back() == false) and never dropped.
//
// Native path (md5_ref.cpp, md5_avx512.cpp): batch-oriented and multi-buffer. With AVX-512 sixteen packets
// are hashed at once, one per 32-bit lane of a zmm register, with AVX2 eight (ymm); a lane that finishes its packet is refilled with the
// next packet of the batch, so packets of different lengths share the lanes (the technique of Intel's
// multi-buffer crypto / isa-l_crypto md5_mb). The CPU is checked once (__builtin_cpu_supports) and
// kAuto picks the fastest path it has (auto_impl()); the scalar path is the fallback and the test oracle.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "kernels/app.hpp"

namespace hpr::kernels::md5 {

inline constexpr uint32_t kDigestBytes = 16;

// Which native implementation run_native uses. kAuto: auto_impl() from 4 packets a batch, scalar below.
// kAvx2: 8 lanes (ymm); kAvx512X16: 16 lanes (zmm, vprold, vpternlogd; md5_avx512.cpp).
enum class Impl : uint8_t { kAuto, kScalar, kAvx2, kAvx512X16 };

// True when the CPU (and the build) support `impl`. kAuto and kScalar are always supported.
bool impl_supported(Impl impl);
std::string_view impl_name(Impl impl);
// The impl kAuto runs on this CPU for batches of 4 packets or more (never kAuto).
Impl auto_impl();

// One-shot MD5 of `len` bytes (scalar, RFC 1321).
void md5(const uint8_t* data, size_t len, uint8_t digest[kDigestBytes]);

// The native batch: for each i < batch.n, MD5 of pkts[desc[i].off, +desc[i].len) into
// out[16*i, 16*i+16). kAuto falls back to scalar when the CPU lacks AVX2; an explicitly requested
// unsupported impl also falls back to scalar (an explicit impl is the tests' and benches' override).
void md5_batch(const BatchView& batch, Impl impl = Impl::kAuto);

struct Md5Options {
  bool whole_frame = false;        // hash the whole frame instead of the L4 payload
  Impl impl = Impl::kAuto;         // native implementation
  uint32_t max_frame_bytes = 9216; // upper bound of a frame (jumbo), for max_slice_bytes()
};

class Md5App final : public App {
 public:
  explicit Md5App(Md5Options options = {}) : options_(options) {}

  std::string_view name() const override { return "md5"; }
  Slice slice(const Packet& p) const override;
  void slices_in_place(std::span<const Packet> pkts, Desc* desc, uint8_t** slices) const override;
  uint32_t max_slice_bytes() const override { return options_.max_frame_bytes; }
  uint32_t result_bytes() const override { return kDigestBytes; }
  bool writes_back() const override { return false; }
  bool reads_l2() const override { return options_.whole_frame; }

  std::string kernel_source() const override;
  std::string_view kernel_name() const override { return "md5"; }
  // No tables: the returned object binds nothing.
  Result<std::unique_ptr<DeviceTables>> make_device_tables(const cl::Context& ctx,
                                                           const cl::CommandQueue& queue) const override;

  void run_native(const BatchView& batch) const override { md5_batch(batch, options_.impl); }
  // Nothing to apply: digests stay in `out` for the caller (dedup store, logs).
  void finish(std::span<Packet> pkts, const BatchView& batch) const override;
  bool finish_changes_nothing() const override { return true; }
  // One line per packet not dropped: "<prefix(i)> md5 <32 hex digits>\n".
  void append_log(std::span<const Packet> pkts, const BatchView& batch,
                  const std::function<std::string(uint32_t)>& prefix, std::string& out) const override;
  // A digest per packet that reached the app (in a chain, an app before it may have dropped some).
  uint64_t count_events(std::span<const Packet> pkts, const BatchView& batch) const override;
  std::string_view event_name() const override { return "digests"; }

  const Md5Options& options() const { return options_; }

 private:
  Md5Options options_;
};

}  // namespace hpr::kernels::md5
