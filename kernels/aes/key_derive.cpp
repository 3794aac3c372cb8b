// Per-connection key derivation (see key_derive.hpp).
#include "kernels/aes/key_derive.hpp"

// The low-level SHA-256 of ConnKeyDeriver (deprecated in OpenSSL 3.0, not removed).
#define OPENSSL_SUPPRESS_DEPRECATED
#include <fmt/format.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <openssl/sha.h>

#include <cstring>

#include "kernels/aes/aes_app.hpp"
#include "runtime/flow.hpp"

namespace hpr::kernels::aes {
namespace {

constexpr size_t kLabelBytes = sizeof(kConnKeyLabel) - 1;
constexpr size_t kShaBlockBytes = 64;

}  // namespace

Result<KeyEpoch> parse_key_epoch(std::string_view hex) {
  auto k = parse_hex_key(hex);  // the same 32 hex digits; its messages never hold the text
  if (!k) return k.status();
  KeyEpoch e;
  std::memcpy(e.data(), k->data(), e.size());
  return e;
}

Result<KeyEpoch> random_key_epoch() {
  KeyEpoch e{};
  if (RAND_bytes(e.data(), static_cast<int>(e.size())) != 1)
    return error(Code::kUnavailable, "aes: the OpenSSL random generator failed to give a key epoch");
  return e;
}

std::string epoch_hex(const KeyEpoch& epoch) {
  std::string s;
  for (uint8_t b : epoch) s += fmt::format("{:02x}", b);
  return s;
}

FlowTuple tuple_of(const FlowKey& key) {
  FlowTuple t;
  t.family = key.family;
  t.proto = key.proto;
  std::memcpy(t.src.data(), key.src, 16);
  std::memcpy(t.dst.data(), key.dst, 16);
  t.sport = key.sport;
  t.dport = key.dport;
  return t;
}

FlowKey numbered_flow(uint32_t f) {
  FlowKey k;
  k.family = 4;
  k.proto = 17;
  const uint8_t a[4] = {10, 0, 0, 1}, b[4] = {10, static_cast<uint8_t>(128 | (f >> 24)), static_cast<uint8_t>(f >> 16),
                                              static_cast<uint8_t>(f >> 8)};
  std::memcpy(k.src, a, 4);
  std::memcpy(k.dst, b, 4);
  k.sport = 1024;
  k.dport = static_cast<uint16_t>(1024 + (f & 255));
  return k.canonical();
}

Key derive_conn_key(const Key& master, const KeyEpoch& epoch, const FlowTuple& t) {
  uint8_t msg[kLabelBytes + kEpochBytes + kCanonicalBytes];
  std::memcpy(msg, kConnKeyLabel, kLabelBytes);
  std::memcpy(msg + kLabelBytes, epoch.data(), kEpochBytes);
  const auto c = canonical_bytes(t);
  std::memcpy(msg + kLabelBytes + kEpochBytes, c.data(), c.size());
  uint8_t mac[EVP_MAX_MD_SIZE];
  unsigned int mac_len = 0;
  HMAC(EVP_sha256(), master.data(), static_cast<int>(master.size()), msg, sizeof msg, mac, &mac_len);
  Key k{};
  std::memcpy(k.data(), mac, k.size());
  OPENSSL_cleanse(mac, sizeof mac);
  return k;
}

// HMAC-SHA256 (RFC 2104) with the pads' SHA-256 states kept: HMAC() fetches the digest, sets up a context
// and hashes both pads on every call. The states are OpenSSL's low-level SHA256_CTX (deprecated in 3.0, still
// there): copying one is a struct copy, where EVP_MD_CTX_copy_ex allocates a provider context per copy
// (1.2 us a key with EVP contexts on this machine, see docs/crypto.md).
struct ConnKeyDeriver::Ctx {
  SHA256_CTX inner;  // after (K xor ipad) || label || epoch
  SHA256_CTX outer;  // after (K xor opad)
};

ConnKeyDeriver::ConnKeyDeriver(const Key& master, const KeyEpoch& epoch) : ctx_(std::make_unique<Ctx>()) {
  uint8_t ipad[kShaBlockBytes], opad[kShaBlockBytes];
  std::memset(ipad, 0x36, sizeof ipad);
  std::memset(opad, 0x5c, sizeof opad);
  for (size_t i = 0; i < master.size(); ++i) {  // the 16-byte key, zero padded to the block
    ipad[i] ^= master[i];
    opad[i] ^= master[i];
  }
  SHA256_Init(&ctx_->inner);
  SHA256_Update(&ctx_->inner, ipad, sizeof ipad);
  SHA256_Update(&ctx_->inner, kConnKeyLabel, kLabelBytes);
  SHA256_Update(&ctx_->inner, epoch.data(), epoch.size());
  SHA256_Init(&ctx_->outer);
  SHA256_Update(&ctx_->outer, opad, sizeof opad);
  OPENSSL_cleanse(ipad, sizeof ipad);
  OPENSSL_cleanse(opad, sizeof opad);
}

ConnKeyDeriver::~ConnKeyDeriver() { OPENSSL_cleanse(ctx_.get(), sizeof(Ctx)); }

Key ConnKeyDeriver::derive(const FlowTuple& t) {
  const auto info = canonical_bytes(t);
  uint8_t inner_hash[SHA256_DIGEST_LENGTH], mac[SHA256_DIGEST_LENGTH];
  SHA256_CTX w = ctx_->inner;
  SHA256_Update(&w, info.data(), info.size());
  SHA256_Final(inner_hash, &w);
  w = ctx_->outer;
  SHA256_Update(&w, inner_hash, sizeof inner_hash);
  SHA256_Final(mac, &w);
  Key key{};
  std::memcpy(key.data(), mac, key.size());
  OPENSSL_cleanse(mac, sizeof mac);
  OPENSSL_cleanse(&w, sizeof w);
  return key;
}

}  // namespace hpr::kernels::aes
