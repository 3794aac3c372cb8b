#pragma once
// AES-128-CBC per-connection packet encryption (paper §3.2.4: "AES-CBC encryption using a different
// 128-bit key for each connection"). AES: FIPS-197. CBC and ciphertext stealing: NIST SP 800-38A and
// its addendum (CBC-CS2).
//
// Packet rule (device kernel aes.cl and every native path implement exactly this):
//   * Key: the key table (KeyTable, key_table.hpp) holds one key slot per Desc::flow (the FlowTable's flow
//     id, < capacity), filled when the flow starts (AesApp::flow_started): from the master key, the key is
//     derived from the connection's canonical 5-tuple and the run's key epoch (key_derive.hpp), so a slot
//     that the FlowTable gives to a later connection gets that connection's key.
//     No key for the flow (flow >= capacity, kNoFlow, or never set) -> result kKeyMissing, the payload
//     is left untouched, and finish() drops the packet with DropReason::kKeyMissing. This holds for
//     every packet of an unkeyed flow, even an empty one: traffic of an unkeyed flow never leaves in clear.
//   * IV (IvMode::kDerived, default): IV = AES_K(E xor (le64(c) || le64(seq))), E the key epoch, seq
//     (Desc::seq) the flow's 32-bit packet number and c = the slot's IV counter for the half of the
//     sequence space seq is in (seq >> 31). Each counter value is taken once per run from the table's one
//     64-bit counter (when the flow starts, and each time its sequence enters the other half), so the
//     input block never repeats under a key: the "encrypt a nonce under the same key" method of SP 800-38A
//     Appendix C. docs/crypto.md has the rule with a worked example.
//     IvMode::kCarried: the first 16 payload bytes are the IV, sent in clear; the rest is the plaintext.
//   * Plaintext length m (the payload, minus 16 in kCarried mode):
//       m == 0                 -> nothing to do, result kEmpty (not dropped);
//       0 < m < 16             -> left in clear, result kShort, counted (Counters::short_payloads);
//       m % 16 == 0            -> plain CBC, result kEncrypted;
//       m > 16, m % 16 != 0    -> CBC-CS2 ciphertext stealing (SP 800-38A addendum): CBC over the zero-padded
//                                 last block, then the last full ciphertext block and the final partial block
//                                 swap places; the ciphertext has exactly m bytes. Result kEncrypted.
//     (OpenSSL 3 "AES-128-CBC-CTS" with cts_mode "CS2" gives the same bytes; the tests check it.)
//   Results: one uint32 per packet in `out` (PacketResult).
//
// Native paths (aes_ref.cpp): kScalar (table AES, no AES-NI), kAesni (AES-NI, one packet at a time,
// like OpenSSL's EVP), kAesniX8 (multi-buffer: 8 independent CBC streams interleaved so that eight
// aesenc are in flight, hiding the aesenc latency that bounds a single CBC-encrypt stream), kVaesX16
// (VAES on ymm: 16 streams, two per register), kVaes512X16 / kVaes512X32 (VAES on zmm, AVX512F: four
// streams per register, 16 or 32 streams). kAuto picks the fastest the CPU has (docs/crypto.md).
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/aes/key_table.hpp"
#include "kernels/app.hpp"

namespace hpr::kernels::aes {

// Per-packet result in `out` (uint32 little endian).
enum PacketResult : uint32_t { kEncrypted = 0, kShort = 1, kKeyMissing = 2, kEmpty = 3 };

enum class IvMode : uint8_t { kDerived, kCarried };
enum class Impl : uint8_t { kAuto, kScalar, kAesni, kAesniX8, kVaesX16, kVaes512X16, kVaes512X32 };
bool impl_supported(Impl impl);
std::string_view impl_name(Impl impl);
// The impl kAuto runs on this CPU (never kAuto).
Impl auto_impl();

// FIPS-197 §5.2 key expansion. kScalar: S-box table; any other impl: AESKEYGENASSIST where the CPU has
// AES-NI (~10x faster; the same bytes, tested). kAuto picks AES-NI when present.
RoundKeys expand_key(const Key& key, Impl impl = Impl::kAuto);

// ---- single-stream primitives (tests, control plane); `len` a multiple of 16, in == out allowed.
void encrypt_block(const RoundKeys& rk, const uint8_t in[16], uint8_t out[16]);
void cbc_encrypt(const RoundKeys& rk, const uint8_t iv[16], const uint8_t* in, uint8_t* out, size_t len,
                 Impl impl = Impl::kAuto);
// CBC decryption (native path only; the device never decrypts).
void cbc_decrypt(const Key& key, const uint8_t iv[16], const uint8_t* in, uint8_t* out, size_t len,
                 Impl impl = Impl::kAuto);
// CBC-CS2 decryption of `len` >= 16 bytes (inverse of the packet rule's tail handling).
void cbc_cs2_decrypt(const Key& key, const uint8_t iv[16], const uint8_t* in, uint8_t* out, size_t len);

// IV of IvMode::kDerived: AES_K(epoch xor (le64(counter) || le64(seq))).
std::array<uint8_t, 16> derive_iv(const RoundKeys& rk, const KeyEpoch& epoch, uint64_t counter, uint32_t seq);
// The block the IV encrypts: epoch xor (le64(counter) || le64(seq)).
void iv_input(const KeyEpoch& epoch, uint64_t counter, uint32_t seq, uint8_t out[16]);

// A connection as written in a key file. Both directions of a connection share a key.
struct FlowTuple {
  uint8_t family = 4;  // 4 or 6
  uint8_t proto = 0;   // IP protocol number
  std::array<uint8_t, 16> src{}, dst{};  // IPv4 uses the first 4 bytes
  uint16_t sport = 0, dport = 0;
};
// Canonical bytes (direction independent): family, proto, then the two (address[16], port BE) endpoints
// in ascending byte order. 38 bytes.
inline constexpr size_t kCanonicalBytes = 38;
std::array<uint8_t, kCanonicalBytes> canonical_bytes(const FlowTuple& t);

struct KeyFileEntry {
  bool by_flow_id = false;  // "flow <id> <key>"
  uint32_t flow_id = 0;
  FlowTuple tuple;          // when !by_flow_id
  Key key{};
  uint32_t line = 0;        // 1-based line in the file
};

// Parses 32 hex digits (either case) into a key. Errors (kInvalidArgument) say what is wrong and never
// hold the text (it is key material): "want 32 hex digits (AES-128), got N characters" or
// "want 32 hex digits (AES-128), character N is not one" (N 1-based).
Result<Key> parse_hex_key(std::string_view hex);

// Key file format (UTF-8 text, one entry a line; '#' starts a comment; blank lines ignored):
//   flow <flow-id> <key>                                         key for a flow id
//   <proto> <src-addr> <src-port> <dst-addr> <dst-port> <key>    key for a connection
// proto: tcp | udp | sctp | a number 0..255; addresses IPv4 dotted or IPv6 (inet_pton), ports 0..65535,
// key: 32 hex digits. Errors (kInvalidArgument) name "file:line: what is wrong" and the field number, never
// the text of the line (a shifted line puts the key where an address was expected); kInvalidArgument
// for a directory; kNotFound (missing) / kIoError (unreadable) when the file cannot be read. A later line
// for the same flow/connection overrides an earlier one.
Result<std::vector<KeyFileEntry>> load_key_file(const std::string& path);
Result<std::vector<KeyFileEntry>> parse_key_text(std::string_view text, std::string_view file_name);

// Installs entries: flow-id entries directly, connection entries through `flow_of` (the FlowTable
// lookup; kNoFlow = flow not known yet, entry skipped). Returns the number installed, or
// kInvalidArgument "file:line: flow id N >= key table capacity C".
Result<uint32_t> install(KeyTable& table, std::span<const KeyFileEntry> entries,
                         const std::function<uint32_t(const FlowTuple&)>& flow_of, std::string_view file_name = "");

// ---- the app ---------------------------------------------------------------------------------
// The packet rule on one packet (scalar reference; `data` holds `len` slice bytes, modified in place).
PacketResult encrypt_packet(const KeyTable& keys, IvMode iv, uint32_t flow, uint32_t seq, uint8_t* data,
                            uint32_t len);
// The native batch: every packet of `batch` by the packet rule; out[i] = PacketResult (uint32).
void aes_batch(const BatchView& batch, const KeyTable& keys, IvMode iv, Impl impl = Impl::kAuto);

struct AesOptions {
  IvMode iv = IvMode::kDerived;
  Impl impl = Impl::kAuto;
  uint32_t max_payload_bytes = 9216;
};

struct Counters {
  uint64_t encrypted = 0, short_payloads = 0, key_missing = 0, empty = 0;
};

class FlowKeySource;  // key_source.hpp

class AesApp final : public App {
 public:
  // `source` fills a slot when its flow starts (key_source.hpp); without one (tests) the table's keys stay
  // as set and a flow start only takes fresh IV counters for its slot.
  AesApp(std::shared_ptr<KeyTable> keys, AesOptions options = {}, std::shared_ptr<FlowKeySource> source = nullptr);

  std::string_view name() const override { return "aes"; }
  Slice slice(const Packet& p) const override;
  void slices_in_place(std::span<const Packet> pkts, Desc* desc, uint8_t** slices) const override;
  uint32_t max_slice_bytes() const override { return options_.max_payload_bytes; }
  uint32_t result_bytes() const override { return sizeof(uint32_t); }
  bool writes_back() const override { return true; }

  // hpr_desc + generated T-table/S-box constants + aes.cl.
  std::string kernel_source() const override;
  std::string_view kernel_name() const override { return "aes_cbc"; }
  std::string build_options() const override;
  // Kernel args 4, 5, 6: the batch's key slots, their count, the key epoch; stage() fills the first two
  // per batch (aes_app.cpp). Errors: kUnavailable with the OpenCL error.
  Result<std::unique_ptr<DeviceTables>> make_device_tables(const cl::Context& ctx,
                                                           const cl::CommandQueue& queue) const override;

  void run_native(const BatchView& batch) const override { aes_batch(batch, *keys_, options_.iv, options_.impl); }
  // kKeyMissing -> Packet::drop = DropReason::kKeyMissing; every result counted (counters()).
  // Packets that already carry a drop reason are left alone.
  void finish(std::span<Packet> pkts, const BatchView& batch) const override;
  // Packets encrypted in the batch.
  uint64_t count_events(std::span<const Packet> pkts, const BatchView& batch) const override;
  std::string_view event_name() const override { return "encrypted"; }
  // The slot's key from the source (none: cleared, never the previous connection's) and fresh IV counters.
  void flow_started(uint32_t id, const FlowKey& canonical) const override;
  void flow_seq_half(uint32_t id, uint32_t half) const override;
  bool keeps_flow_state() const override { return true; }
  void take_over_from(const App& running) const override;
  // key_epoch: the run's key epoch, hex (not secret: a receiver needs it to derive the keys).
  std::vector<std::pair<std::string, std::string>> summary_info() const override;

  Counters counters() const;
  const KeyTable& keys() const { return *keys_; }
  const AesOptions& options() const { return options_; }

 private:
  std::shared_ptr<KeyTable> keys_;  // written by flow_started / flow_seq_half only (one thread)
  AesOptions options_;
  std::shared_ptr<FlowKeySource> source_;
  mutable std::atomic<uint64_t> encrypted_{0}, short_{0}, key_missing_{0}, empty_{0};
};

}  // namespace hpr::kernels::aes
