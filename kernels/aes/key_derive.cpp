// Per-connection key derivation (see key_derive.hpp).
#include "kernels/aes/key_derive.hpp"

#include <fmt/format.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

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
// and hashes both pads on every call (2.7 us a key where this takes about 0.3 us).
struct ConnKeyDeriver::Ctx {
  EVP_MD* md = nullptr;
  EVP_MD_CTX* inner = nullptr;  // after (K xor ipad) || label || epoch
  EVP_MD_CTX* outer = nullptr;  // after (K xor opad)
  EVP_MD_CTX* work = nullptr;
  bool ok = false;
  ~Ctx() {
    EVP_MD_CTX_free(work);
    EVP_MD_CTX_free(outer);
    EVP_MD_CTX_free(inner);
    EVP_MD_free(md);
  }
};

ConnKeyDeriver::ConnKeyDeriver(const Key& master, const KeyEpoch& epoch)
    : ctx_(std::make_unique<Ctx>()), master_(master), epoch_(epoch) {
  Ctx& c = *ctx_;
  c.md = EVP_MD_fetch(nullptr, "SHA256", nullptr);
  c.inner = EVP_MD_CTX_new();
  c.outer = EVP_MD_CTX_new();
  c.work = EVP_MD_CTX_new();
  if (c.md == nullptr || c.inner == nullptr || c.outer == nullptr || c.work == nullptr) return;
  uint8_t ipad[kShaBlockBytes], opad[kShaBlockBytes];
  std::memset(ipad, 0x36, sizeof ipad);
  std::memset(opad, 0x5c, sizeof opad);
  for (size_t i = 0; i < master.size(); ++i) {  // the 16-byte key, zero padded to the block
    ipad[i] ^= master[i];
    opad[i] ^= master[i];
  }
  c.ok = EVP_DigestInit_ex(c.inner, c.md, nullptr) == 1 && EVP_DigestUpdate(c.inner, ipad, sizeof ipad) == 1 &&
         EVP_DigestUpdate(c.inner, kConnKeyLabel, kLabelBytes) == 1 &&
         EVP_DigestUpdate(c.inner, epoch.data(), epoch.size()) == 1 && EVP_DigestInit_ex(c.outer, c.md, nullptr) == 1 &&
         EVP_DigestUpdate(c.outer, opad, sizeof opad) == 1;
  OPENSSL_cleanse(ipad, sizeof ipad);
  OPENSSL_cleanse(opad, sizeof opad);
}

ConnKeyDeriver::~ConnKeyDeriver() { OPENSSL_cleanse(master_.data(), master_.size()); }

Key ConnKeyDeriver::derive(const FlowTuple& t) {
  Ctx& c = *ctx_;
  const auto info = canonical_bytes(t);
  uint8_t inner_hash[32], mac[32];
  unsigned int n = 0;
  const bool ok =
      c.ok && EVP_MD_CTX_copy_ex(c.work, c.inner) == 1 && EVP_DigestUpdate(c.work, info.data(), info.size()) == 1 &&
      EVP_DigestFinal_ex(c.work, inner_hash, &n) == 1 && EVP_MD_CTX_copy_ex(c.work, c.outer) == 1 &&
      EVP_DigestUpdate(c.work, inner_hash, sizeof inner_hash) == 1 && EVP_DigestFinal_ex(c.work, mac, &n) == 1;
  if (!ok) return derive_conn_key(master_, epoch_, t);
  Key key{};
  std::memcpy(key.data(), mac, key.size());
  OPENSSL_cleanse(mac, sizeof mac);
  return key;
}

}  // namespace hpr::kernels::aes
