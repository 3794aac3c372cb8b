#pragma once
// crypto_bench's AES-128-CBC contestants on the same batches: hpr native (kAuto, and AES-NI x8 where kAuto is
// another path), intel-ipsec-mb (the arch asked for, and AVX2 beside AVX-512), OpenSSL EVP.
// rounds() and callgrind(): bench/crypto/rounds.hpp (every contestant's ciphertext must equal hpr's).
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "bench/crypto/evp_peers.hpp"
#include "bench/crypto/rounds.hpp"
#include "hpr/build_features.hpp"
#include "kernels/aes/aes_app.hpp"
#if HPR_HAVE_IPSEC_MB
#include "bench/crypto/ipsec_mb_peer.hpp"
#endif

namespace hpr::bench {

class AesContestants : public Contestants {
 public:
  // imb_check_args: IMB_SUBMIT_JOB (true) or IMB_SUBMIT_JOB_NOCHECK (false, the default).
  AesContestants(const kernels::aes::KeyTable& keys, const std::string& imb_arch, bool imb_check_args = false)
      : Contestants(What::kPackets) {
    namespace aes = kernels::aes;
    const aes::Impl best = aes::auto_impl();
    auto hpr = [&keys](aes::Impl i) {
      return [&keys, i](const kernels::BatchView& b) { aes::aes_batch(b, keys, aes::IvMode::kDerived, i); };
    };
    cs_.push_back({"hpr_" + std::string(aes::impl_name(best)), true, hpr(best)});  // kAuto's pick first
    for (aes::Impl i : {aes::Impl::kVaes512X32, aes::Impl::kVaes512X16, aes::Impl::kVaesX16, aes::Impl::kAesniX8})
      if (i != best && aes::impl_supported(i)) cs_.push_back({"hpr_" + std::string(aes::impl_name(i)), true, hpr(i)});
#if HPR_HAVE_IPSEC_MB
    std::string err;
    imb_ = ImbAes::create(keys, imb_arch, &err);
    if (!imb_) {
      std::printf("intel-ipsec-mb %s: %s: peer skipped\n", ImbAes::version().c_str(), err.c_str());
      return;
    }
    imb_->set_check_args(imb_check_args);
    std::printf("intel-ipsec-mb %s: arch %s (asked %s), %s, CPU features it detected: %s\n", ImbAes::version().c_str(),
                imb_->arch().c_str(), imb_arch.c_str(), imb_check_args ? "IMB_SUBMIT_JOB" : "IMB_SUBMIT_JOB_NOCHECK",
                imb_->features().c_str());
    cs_.push_back({"imb_" + imb_->arch(), false, [this](const kernels::BatchView& b) { imb_->run(b); }});
    if (imb_arch == "auto" && imb_->arch() == "avx512") {  // the AVX2 manager beside it: no VAES, no zmm
      imb2_ = ImbAes::create(keys, "avx2", &err);
      if (imb2_) {
        imb2_->set_check_args(imb_check_args);
        std::printf("intel-ipsec-mb avx2 beside it: arch %s, CPU features it detected: %s\n", imb2_->arch().c_str(),
                    imb2_->features().c_str());
        cs_.push_back({"imb_avx2", false, [this](const kernels::BatchView& b) { imb2_->run(b); }});
      }
    }
#else
    (void)imb_arch;
    (void)imb_check_args;
    std::printf(
        "intel-ipsec-mb: not in this build (HPR_WITH_IPSEC_MB=OFF or the library was not found): peer skipped\n");
#endif
  }
  void add_openssl(EvpAes& evp) {
    cs_.push_back({"openssl", false, [&evp](const kernels::BatchView& b) { evp.run(b); }});
  }

#if HPR_HAVE_IPSEC_MB
  ImbAes* imb() const { return imb_.get(); }
#else
  struct NoPeer {
    void run(const kernels::BatchView&) {}
  };
  NoPeer* imb() const { return nullptr; }
#endif

 private:
#if HPR_HAVE_IPSEC_MB
  std::unique_ptr<ImbAes> imb_, imb2_;
#endif
};

}  // namespace hpr::bench
