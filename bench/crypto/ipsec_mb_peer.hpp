#pragma once
// intel-ipsec-mb (Intel's Multi-Buffer Crypto for IPsec library) as the peer of the AES-128-CBC app: the packet
// rule of docs/crypto.md on a batch (BatchView::slice, in place), computed through the library's multi-buffer job
// API (alloc_mb_mgr, init_mb_mgr_*, IMB_AES_KEYEXP_128, IMB_GET_NEXT_JOB / IMB_SUBMIT_JOB_NOCHECK / IMB_FLUSH_JOB,
// IMB_CIPHER_CBC, encrypt, IMB_ORDER_CIPHER_HASH, IMB_AUTH_NULL, 16-byte keys). Used by crypto_bench and
// tests/crypto/ipsec_mb_test.cpp; only built with HPR_HAVE_IPSEC_MB.
//
// Same function as aes_batch(): same results in out[4 i], same bytes. The library does whole-block CBC, so a batch
// is three job rounds, each one job per packet submitted back to back and flushed at the end:
//   1. IV (derived mode): CBC over the one IV input block with a zero IV (= AES_K(block), as hpr computes it);
//   2. the m / 16 full blocks, in place, from that IV (carried mode: the first 16 payload bytes);
//   3. CS2 tail (m > 16, m % 16 != 0): CBC of the zero-padded tail block chained on C_n (a 16-byte job whose IV is
//      C_n in the packet), then C_n moves behind it, truncated (hpr's cs2_swap).
// Key schedules: the library's own (IMB_AES_KEYEXP_128), expanded once per keyed flow when the peer is made from
// the table's keys (round key 0 of an AES-128 schedule is the key), as hpr keeps one schedule per flow; rekey() after
// a slot's key changes. Which packets have a key is read from the table at run time. No key material is printed.
#include <intel-ipsec-mb.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "kernels/aes/aes_app.hpp"
#include "kernels/app.hpp"

namespace hpr::bench {

class ImbAes {
 public:
  // arch: "auto" (init_mb_mgr_auto: the best the CPU has), or "sse", "avx", "avx2", "avx512" to force one.
  // nullptr with *error set when the library cannot be used (allocation or init failed, unknown arch).
  static std::unique_ptr<ImbAes> create(const kernels::aes::KeyTable& table, const std::string& arch,
                                        std::string* error) {
    IMB_MGR* mgr = alloc_mb_mgr(0);
    if (mgr == nullptr) {
      *error = "intel-ipsec-mb: alloc_mb_mgr failed";
      return nullptr;
    }
    if (arch == "auto")
      init_mb_mgr_auto(mgr, nullptr);
    else if (arch == "sse")
      init_mb_mgr_sse(mgr);
    else if (arch == "avx")
      init_mb_mgr_avx(mgr);
    else if (arch == "avx2")
      init_mb_mgr_avx2(mgr);
    else if (arch == "avx512")
      init_mb_mgr_avx512(mgr);
    else {
      free_mb_mgr(mgr);
      *error = "intel-ipsec-mb: unknown arch '" + arch + "' (want auto, sse, avx, avx2 or avx512)";
      return nullptr;
    }
    if (int e = imb_get_errno(mgr); e != 0 || mgr->used_arch == IMB_ARCH_NONE) {
      *error = std::string("intel-ipsec-mb: init (") + arch + ") failed: " + (e != 0 ? imb_get_strerror(e) : "no arch");
      free_mb_mgr(mgr);
      return nullptr;
    }
    return std::unique_ptr<ImbAes>(new ImbAes(mgr, table));
  }
  ~ImbAes() {
    free_mb_mgr(mgr_);
    std::memset(sched_.get(), 0, size_t{table_.capacity()} * sizeof(Sched));
  }
  ImbAes(const ImbAes&) = delete;
  ImbAes& operator=(const ImbAes&) = delete;

  // The library's schedule for the flow's current key (none: left as is; the table says the flow has no key).
  void rekey(uint32_t flow) {
    const kernels::aes::KeySlot* s = table_.slot(flow);
    if (s == nullptr) return;
    alignas(16) uint8_t dec[176];
    IMB_AES_KEYEXP_128(mgr_, s->rk.bytes, sched_[flow].b, dec);
    std::memset(dec, 0, sizeof dec);
  }

  // The packet rule on every packet of `b` (in place), results in out. Returns the number of jobs the library
  // did not complete (0 when all went well; the affected packets' bytes are then unspecified).
  uint32_t run(const kernels::BatchView& b, kernels::aes::IvMode mode = kernels::aes::IvMode::kDerived) {
    namespace aes = kernels::aes;
    if (pk_.size() < b.n) pk_.resize(b.n);
    failed_ = 0;
    uint32_t k = 0;  // packets to encrypt
    for (uint32_t i = 0; i < b.n; ++i) {
      const kernels::Desc& d = b.desc[i];
      aes::PacketResult r = aes::kEncrypted;
      const aes::KeySlot* s = table_.slot(d.flow);
      uint8_t* data = b.slice(i);
      uint32_t m = d.len;
      if (s == nullptr)
        r = aes::kKeyMissing;
      else if (mode == aes::IvMode::kCarried && m < 16)
        r = m == 0 ? aes::kEmpty : aes::kShort;
      else {
        if (mode == aes::IvMode::kCarried) {
          data += 16;
          m -= 16;
        }
        r = m == 0 ? aes::kEmpty : m < 16 ? aes::kShort : aes::kEncrypted;
      }
      uint32_t v = r;
      std::memcpy(b.out + 4 * size_t{i}, &v, 4);
      if (r != aes::kEncrypted) continue;
      Pkt& p = pk_[k++];
      p.data = data;
      p.full = m / 16;
      p.tail = m % 16;
      p.key = sched_[d.flow].b;
      if (mode == aes::IvMode::kDerived) {
        aes::iv_input(table_.epoch(), aes::KeyTable::counter(*s, d.seq), d.seq, p.iv);
        p.ivp = p.iv;
      } else {
        p.ivp = data - 16;
      }
    }
    static constexpr uint8_t kZero[16] = {};
    if (mode == aes::IvMode::kDerived) {
      for (uint32_t j = 0; j < k; ++j) submit(pk_[j].key, kZero, pk_[j].iv, pk_[j].iv, 16);
      flush();
    }
    for (uint32_t j = 0; j < k; ++j) submit(pk_[j].key, pk_[j].ivp, pk_[j].data, pk_[j].data, 16 * pk_[j].full);
    flush();
    bool tails = false;
    for (uint32_t j = 0; j < k; ++j) {
      Pkt& p = pk_[j];
      if (p.tail == 0) continue;
      tails = true;
      std::memset(p.pad, 0, 16);
      std::memcpy(p.pad, p.data + 16 * p.full, p.tail);
      submit(p.key, p.data + 16 * (p.full - 1), p.pad, p.pad, 16);
    }
    if (!tails) return failed_;
    flush();
    for (uint32_t j = 0; j < k; ++j) {
      Pkt& p = pk_[j];
      if (p.tail == 0) continue;
      uint8_t* last_full = p.data + 16 * (p.full - 1);
      uint8_t cprev[16];
      std::memcpy(cprev, last_full, 16);
      std::memcpy(last_full, p.pad, 16);
      std::memcpy(p.data + 16 * p.full, cprev, p.tail);
    }
    return failed_;
  }

  // One CBC stream of whole blocks (len % 16 == 0) through the job API: known-answer tests. False on a library error.
  bool cbc_encrypt(const kernels::aes::Key& key, const uint8_t iv[16], const uint8_t* in, uint8_t* out, size_t len) {
    alignas(16) uint8_t enc[176], dec[176];
    IMB_AES_KEYEXP_128(mgr_, key.data(), enc, dec);
    failed_ = 0;
    submit(enc, iv, in, out, len);
    flush();
    std::memset(enc, 0, sizeof enc);
    std::memset(dec, 0, sizeof dec);
    return failed_ == 0;
  }

  // The arch the manager runs ("avx512", ...) and the CPU features it uses ("aesni vaes avx512 ...").
  std::string arch() const {
    switch (mgr_->used_arch) {
      case IMB_ARCH_NOAESNI:
        return "noaesni";
      case IMB_ARCH_SSE:
        return "sse";
      case IMB_ARCH_AVX:
        return "avx";
      case IMB_ARCH_AVX2:
        return "avx2";
      case IMB_ARCH_AVX512:
        return "avx512";
      default:
        return "none";
    }
  }
  std::string features() const {
    static const std::pair<uint64_t, const char*> kNames[] = {{IMB_FEATURE_AESNI, "aesni"},
                                                              {IMB_FEATURE_VAES, "vaes"},
                                                              {IMB_FEATURE_AVX, "avx"},
                                                              {IMB_FEATURE_AVX2, "avx2"},
                                                              {IMB_FEATURE_AVX512F, "avx512f"},
                                                              {IMB_FEATURE_AVX512BW, "avx512bw"},
                                                              {IMB_FEATURE_AVX512VL, "avx512vl"},
                                                              {IMB_FEATURE_VPCLMULQDQ, "vpclmulqdq"},
                                                              {IMB_FEATURE_GFNI, "gfni"},
                                                              {IMB_FEATURE_SHANI, "shani"},
                                                              {IMB_FEATURE_AESNI_EMU, "aesni_emu"}};
    std::string s;
    for (const auto& [bit, name] : kNames)
      if (mgr_->features & bit) s += (s.empty() ? "" : " ") + std::string(name);
    return s;
  }
  static std::string version() { return imb_get_version_str(); }
  // IMB_SUBMIT_JOB_NOCHECK (default, as DPDK's aesni_mb PMD and the library's ipsec_perf submit outside debug
  // builds) or IMB_SUBMIT_JOB (the library checks each job's arguments first).
  void set_check_args(bool on) { check_args_ = on; }

 private:
  struct alignas(16) Sched {
    uint8_t b[176];
  };
  struct Pkt {
    uint8_t* data;
    const uint8_t* key;
    const uint8_t* ivp;
    uint32_t full, tail;
    alignas(16) uint8_t iv[16];
    alignas(16) uint8_t pad[16];
  };

  ImbAes(IMB_MGR* mgr, const kernels::aes::KeyTable& table)
      : mgr_(mgr), table_(table), sched_(new Sched[table.capacity()]) {
    for (uint32_t f = 0; f < table.capacity(); ++f) rekey(f);
  }
  void submit(const uint8_t* key, const uint8_t* iv, const uint8_t* src, uint8_t* dst, uint64_t len) {
    IMB_JOB* j = IMB_GET_NEXT_JOB(mgr_);
    j->cipher_mode = IMB_CIPHER_CBC;
    j->cipher_direction = IMB_DIR_ENCRYPT;
    j->chain_order = IMB_ORDER_CIPHER_HASH;
    j->hash_alg = IMB_AUTH_NULL;
    j->key_len_in_bytes = IMB_KEY_128_BYTES;
    j->enc_keys = key;
    j->dec_keys = key;
    j->src = src;
    j->dst = dst;
    j->cipher_start_src_offset_in_bytes = 0;
    j->msg_len_to_cipher_in_bytes = len;
    j->hash_start_src_offset_in_bytes = 0;
    j->msg_len_to_hash_in_bytes = 0;
    j->iv = iv;
    j->iv_len_in_bytes = 16;
    j->auth_tag_output = nullptr;
    j->auth_tag_output_len_in_bytes = 0;
    check(check_args_ ? IMB_SUBMIT_JOB(mgr_) : IMB_SUBMIT_JOB_NOCHECK(mgr_));
  }
  void flush() {
    while (IMB_JOB* j = IMB_FLUSH_JOB(mgr_)) check(j);
  }
  void check(const IMB_JOB* j) {
    if (j != nullptr && j->status != IMB_STATUS_COMPLETED) ++failed_;
  }

  IMB_MGR* mgr_;
  const kernels::aes::KeyTable& table_;
  std::unique_ptr<Sched[]> sched_;
  std::vector<Pkt> pk_;
  uint32_t failed_ = 0;
  bool check_args_ = false;
};

}  // namespace hpr::bench
