#pragma once
// crypto_bench's MD5 contestants on the same batches: hpr native (kAuto's pick first, then every other
// multi-buffer impl the CPU has) and OpenSSL EVP. rounds() and callgrind(): bench/crypto/rounds.hpp (every
// contestant's digests must equal hpr's).
#include <string>

#include "bench/crypto/evp_peers.hpp"
#include "bench/crypto/rounds.hpp"
#include "kernels/md5/md5_app.hpp"

namespace hpr::bench {

class Md5Contestants : public Contestants {
 public:
  explicit Md5Contestants(EvpMd5& evp) : Contestants(What::kOut) {
    namespace md5 = kernels::md5;
    const md5::Impl best = md5::auto_impl();
    auto hpr = [](md5::Impl i) { return [i](const kernels::BatchView& b) { md5::md5_batch(b, i); }; };
    cs_.push_back({"hpr_" + std::string(md5::impl_name(best)), true, hpr(best)});
    for (md5::Impl i : {md5::Impl::kAvx512X16, md5::Impl::kAvx2})
      if (i != best && md5::impl_supported(i)) cs_.push_back({"hpr_" + std::string(md5::impl_name(i)), true, hpr(i)});
    cs_.push_back({"openssl", false, [&evp](const kernels::BatchView& b) { evp.run(b); }});
  }
};

}  // namespace hpr::bench
