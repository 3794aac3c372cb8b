#pragma once
// OpenSSL EVP peers of the MD5 and AES-128-CBC apps, on a batch (gathered or in place: BatchView::slice):
// the same bytes and the same work as our packet rule (docs/crypto.md). Used by crypto_bench and
// app_bench.
//   MD5: one reused EVP_MD_CTX, Init/Update/Final per packet, digest to out[16 * i].
//   AES: per flow a pre-keyed EVP_CIPHER_CTX for AES-128-ECB (the derived IV) and one for
//        AES-128-CBC-CTS (CS2), Init(iv)+Update per packet, in place. Keys: those of connections
//        numbered_flow(f) for flows 0..flows-1 under the table's epoch (key_derive.hpp); IV counters: the
//        table's, so the bytes are those of our rule.
#include <openssl/core_names.h>
#include <openssl/evp.h>

#include <cstring>
#include <vector>

#include "kernels/aes/aes_app.hpp"
#include "kernels/aes/key_derive.hpp"
#include "kernels/app.hpp"

namespace hpr::bench {

struct EvpMd5 {
  EVP_MD* md = EVP_MD_fetch(nullptr, "MD5", nullptr);
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  EvpMd5() = default;
  EvpMd5(const EvpMd5&) = delete;
  EvpMd5& operator=(const EvpMd5&) = delete;
  ~EvpMd5() {
    EVP_MD_CTX_free(ctx);
    EVP_MD_free(md);
  }
  void run(const kernels::BatchView& b) {
    for (uint32_t i = 0; i < b.n; ++i) {
      unsigned int len = 0;
      EVP_DigestInit_ex2(ctx, md, nullptr);
      EVP_DigestUpdate(ctx, b.slice(i), b.desc[i].len);
      EVP_DigestFinal_ex(ctx, b.out + 16 * size_t{i}, &len);
    }
  }
};

struct EvpAes {
  EVP_CIPHER* ecb = EVP_CIPHER_fetch(nullptr, "AES-128-ECB", nullptr);
  EVP_CIPHER* cts = EVP_CIPHER_fetch(nullptr, "AES-128-CBC-CTS", nullptr);
  std::vector<EVP_CIPHER_CTX*> ecb_ctx, cts_ctx;
  const kernels::aes::KeyTable& keys;
  EvpAes(const kernels::aes::Key& master, const kernels::aes::KeyTable& table, uint32_t flows) : keys(table) {
    OSSL_PARAM params[2] = {OSSL_PARAM_construct_utf8_string(OSSL_CIPHER_PARAM_CTS_MODE, const_cast<char*>("CS2"), 0),
                            OSSL_PARAM_END};
    uint8_t zero_iv[16] = {};
    for (uint32_t f = 0; f < flows; ++f) {
      namespace aes = kernels::aes;
      aes::Key k = aes::derive_conn_key(master, table.epoch(), aes::tuple_of(aes::numbered_flow(f)));
      EVP_CIPHER_CTX* e = EVP_CIPHER_CTX_new();
      EVP_EncryptInit_ex2(e, ecb, k.data(), nullptr, nullptr);
      EVP_CIPHER_CTX_set_padding(e, 0);
      EVP_CIPHER_CTX* c = EVP_CIPHER_CTX_new();
      EVP_EncryptInit_ex2(c, cts, k.data(), zero_iv, params);
      ecb_ctx.push_back(e);
      cts_ctx.push_back(c);
    }
  }
  EvpAes(const EvpAes&) = delete;
  EvpAes& operator=(const EvpAes&) = delete;
  ~EvpAes() {
    for (auto* c : ecb_ctx) EVP_CIPHER_CTX_free(c);
    for (auto* c : cts_ctx) EVP_CIPHER_CTX_free(c);
    EVP_CIPHER_free(ecb);
    EVP_CIPHER_free(cts);
  }
  // Precondition: every desc[i].flow < flows, and keyed in the table.
  void run(const kernels::BatchView& b) {
    for (uint32_t i = 0; i < b.n; ++i) {
      const kernels::Desc& d = b.desc[i];
      uint8_t ctr[16], iv[16];
      kernels::aes::iv_input(keys.epoch(), kernels::aes::KeyTable::counter(*keys.slot(d.flow), d.seq), d.seq, ctr);
      int n = 0;
      EVP_EncryptUpdate(ecb_ctx[d.flow], iv, &n, ctr, 16);
      EVP_EncryptInit_ex2(cts_ctx[d.flow], nullptr, nullptr, iv, nullptr);
      uint8_t* p = b.slice(i);
      EVP_EncryptUpdate(cts_ctx[d.flow], p, &n, p, d.len);
    }
  }
};

}  // namespace hpr::bench
