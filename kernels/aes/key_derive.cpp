// Key derivation from a master key (declared in aes_app.hpp).
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "kernels/aes/aes_app.hpp"

namespace hpr::kernels::aes {
namespace {

constexpr char kLabel[] = "hpr aes-128-cbc v1";
constexpr size_t kLabelBytes = sizeof(kLabel) - 1;
constexpr size_t kShaBlockBytes = 64;

// derive_key_for_flow for many flow ids under one master key: the same HMAC-SHA256 (RFC 2104), with the
// SHA-256 states after (K ^ ipad) || label and after (K ^ opad) computed once. A key then costs two
// SHA-256 finalisations of one block each, where HMAC() fetches the digest, sets up a context and
// hashes both pads for every call (measured 2.7 us a key, 11 s for 4M flow ids). Falls back to
// derive_key_for_flow if OpenSSL fails to set up (allocation), so the keys are the same either way.
class FlowKeyDeriver {
 public:
  explicit FlowKeyDeriver(const Key& master) {
    md_ = EVP_MD_fetch(nullptr, "SHA256", nullptr);
    inner_ = EVP_MD_CTX_new();
    outer_ = EVP_MD_CTX_new();
    work_ = EVP_MD_CTX_new();
    if (md_ == nullptr || inner_ == nullptr || outer_ == nullptr || work_ == nullptr) return;
    uint8_t ipad[kShaBlockBytes], opad[kShaBlockBytes];
    std::memset(ipad, 0x36, sizeof ipad);
    std::memset(opad, 0x5c, sizeof opad);
    for (size_t i = 0; i < master.size(); ++i) {  // the 16-byte key, zero padded to the block
      ipad[i] ^= master[i];
      opad[i] ^= master[i];
    }
    ok_ = EVP_DigestInit_ex(inner_, md_, nullptr) == 1 && EVP_DigestUpdate(inner_, ipad, sizeof ipad) == 1 &&
          EVP_DigestUpdate(inner_, kLabel, kLabelBytes) == 1 && EVP_DigestInit_ex(outer_, md_, nullptr) == 1 &&
          EVP_DigestUpdate(outer_, opad, sizeof opad) == 1;
    OPENSSL_cleanse(ipad, sizeof ipad);
    OPENSSL_cleanse(opad, sizeof opad);
  }
  ~FlowKeyDeriver() {
    EVP_MD_CTX_free(work_);
    EVP_MD_CTX_free(outer_);
    EVP_MD_CTX_free(inner_);
    EVP_MD_free(md_);
  }
  FlowKeyDeriver(const FlowKeyDeriver&) = delete;
  FlowKeyDeriver& operator=(const FlowKeyDeriver&) = delete;

  // derive_key_for_flow(master, flow), or false when OpenSSL failed (the caller falls back).
  bool derive(uint32_t flow, Key& key) {
    if (!ok_) return false;
    uint8_t info[4], inner_hash[32], mac[32];
    std::memcpy(info, &flow, 4);  // le32 on the little-endian hosts we build for, as derive_key_for_flow
    unsigned int n = 0;
    bool ok = EVP_MD_CTX_copy_ex(work_, inner_) == 1 && EVP_DigestUpdate(work_, info, sizeof info) == 1 &&
              EVP_DigestFinal_ex(work_, inner_hash, &n) == 1 && EVP_MD_CTX_copy_ex(work_, outer_) == 1 &&
              EVP_DigestUpdate(work_, inner_hash, sizeof inner_hash) == 1 && EVP_DigestFinal_ex(work_, mac, &n) == 1;
    if (!ok) return false;
    std::memcpy(key.data(), mac, key.size());
    return true;
  }

 private:
  EVP_MD* md_ = nullptr;
  EVP_MD_CTX* inner_ = nullptr;
  EVP_MD_CTX* outer_ = nullptr;
  EVP_MD_CTX* work_ = nullptr;
  bool ok_ = false;
};

}  // namespace

Key derive_key(const Key& master, std::span<const uint8_t> info) {
  std::vector<uint8_t> msg(kLabel, kLabel + kLabelBytes);
  msg.insert(msg.end(), info.begin(), info.end());
  uint8_t mac[EVP_MAX_MD_SIZE];
  unsigned int mac_len = 0;
  HMAC(EVP_sha256(), master.data(), static_cast<int>(master.size()), msg.data(), msg.size(), mac, &mac_len);
  Key k{};
  std::memcpy(k.data(), mac, k.size());
  return k;
}

Key derive_key(const Key& master, const FlowTuple& t) { return derive_key(master, canonical_bytes(t)); }

Key derive_key_for_flow(const Key& master, uint32_t flow) {
  uint8_t info[4];
  std::memcpy(info, &flow, 4);
  return derive_key(master, info);
}

void fill_derived(KeyTable& table, const Key& master, uint32_t first, uint32_t count, unsigned threads) {
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  table.set_keys(first, count, threads, [&master]() -> KeyTable::KeyFn {
    auto deriver = std::make_shared<FlowKeyDeriver>(master);  // one per part: EVP contexts are not shared
    return [deriver, &master](uint32_t flow) {
      Key key{};
      if (!deriver->derive(flow, key)) key = derive_key_for_flow(master, flow);
      return key;
    };
  });
}

}  // namespace hpr::kernels::aes
