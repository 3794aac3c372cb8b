#pragma once
// Per-connection keys from a master key (docs/crypto.md "Keys and IVs", with a worked example):
//
//   key = first 16 bytes of HMAC-SHA256(master, "hpr-aes-conn-v1" || epoch || canonical_bytes(tuple))
//
// 15 + 16 + 38 = 69 bytes of message. canonical_bytes (aes_app.hpp): family (4|6), IP protocol, then the
// two endpoints, each the address as 16 bytes (IPv4: 4 bytes then 12 zero bytes) and the port big endian,
// in ascending byte order (memcmp of the 18-byte endpoints): both directions give the same bytes.
// The epoch is 16 bytes per run: random (announced in the log and the summary as app.key_epoch) or given
// (app.key_epoch, --key-epoch) so that a receiver's keys survive a restart.
#include <memory>
#include <string>
#include <string_view>

#include "hpr/status.hpp"
#include "kernels/aes/aes_types.hpp"

namespace hpr {
struct FlowKey;
}

namespace hpr::kernels::aes {

struct FlowTuple;
inline constexpr char kConnKeyLabel[] = "hpr-aes-conn-v1";

// 32 hex digits. Errors (kInvalidArgument) say what is wrong, never the text.
Result<KeyEpoch> parse_key_epoch(std::string_view hex);
// 16 bytes from the OpenSSL random generator; kUnavailable when it fails.
Result<KeyEpoch> random_key_epoch();
// Lower-case hex of the 16 bytes (for the log and the summary: the epoch is not secret).
std::string epoch_hex(const KeyEpoch& epoch);

// The tuple of a FlowTable key (IPv4 addresses in the first 4 bytes, as in FlowKey).
FlowTuple tuple_of(const FlowKey& key);
// Connection number f as a canonical FlowKey: UDP 10.0.0.1:1024 <-> 10.(128 | f >> 24).(f >> 16).(f >> 8)
// port 1024 + (f & 255), bytes taken mod 256. For the tests and benchmarks that number their flows 0..n-1.
FlowKey numbered_flow(uint32_t f);

// The rule above with one HMAC() call (reference; the app uses ConnKeyDeriver).
Key derive_conn_key(const Key& master, const KeyEpoch& epoch, const FlowTuple& t);

// The same bytes as derive_conn_key for many connections under one master key and epoch: the SHA-256
// states after (K xor ipad) || label || epoch and after (K xor opad) are computed once; a key then costs
// the two finalisations (three SHA-256 compressions a key). Not thread safe (one per thread).
class ConnKeyDeriver {
 public:
  ConnKeyDeriver(const Key& master, const KeyEpoch& epoch);
  ~ConnKeyDeriver();
  ConnKeyDeriver(const ConnKeyDeriver&) = delete;
  ConnKeyDeriver& operator=(const ConnKeyDeriver&) = delete;
  Key derive(const FlowTuple& t);

 private:
  struct Ctx;
  std::unique_ptr<Ctx> ctx_;
};

}  // namespace hpr::kernels::aes
