// Key derivation from a master key (declared in aes_app.hpp).
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <cstring>
#include <vector>

#include "kernels/aes/aes_app.hpp"

namespace hpr::kernels::aes {

Key derive_key(const Key& master, std::span<const uint8_t> info) {
  static constexpr char kLabel[] = "hpr aes-128-cbc v1";
  std::vector<uint8_t> msg(kLabel, kLabel + sizeof(kLabel) - 1);
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

void fill_derived(KeyTable& table, const Key& master, uint32_t first, uint32_t count) {
  for (uint64_t f = first; f < uint64_t{first} + count && f < table.capacity(); ++f)
    (void)table.set_key(static_cast<uint32_t>(f), derive_key_for_flow(master, static_cast<uint32_t>(f)));
}

}  // namespace hpr::kernels::aes
