// The intel-ipsec-mb peer (bench/crypto/ipsec_mb_peer.hpp) computes hpr's AES-128-CBC packet rule: known answers
// (SP 800-38A F.2.1, the NIST CAVS encrypt vectors), and byte-for-byte equality with the native paths on
// synthetic lengths (16, 17, 31, 64, 1514, a mix; several flows, both IV modes, unkeyed flows) and on every packet
// of the nDPI captures, for every arch the library can run here. Built only with HPR_HAVE_IPSEC_MB.
#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>

#include "bench/crypto/ipsec_mb_peer.hpp"
#include "kernels/aes/aes_app.hpp"
#include "kernels/aes/key_source.hpp"
#include "runtime/flow.hpp"
#include "runtime/parser.hpp"
#include "runtime/pcap_file.hpp"
#include "tests/crypto/crypto_util.hpp"

using namespace hpr;
using namespace hpr::kernels;
using namespace hpr::kernels::aes;

namespace {

// The peers of every arch this CPU runs (auto first); arches the CPU lacks are skipped with a note.
std::vector<std::pair<std::string, std::unique_ptr<bench::ImbAes>>> peers(const KeyTable& keys) {
  std::vector<std::pair<std::string, std::unique_ptr<bench::ImbAes>>> v;
  for (const char* arch : {"auto", "sse", "avx", "avx2", "avx512"}) {
    std::string err;
    auto p = bench::ImbAes::create(keys, arch, &err);
    if (!p) {
      REQUIRE(std::string(arch) != "auto");  // the best arch must work where the library is installed
      WARN("intel-ipsec-mb arch " << arch << " skipped: " << err);
      continue;
    }
    v.emplace_back(std::string(arch) + " (" + p->arch() + ")", std::move(p));
  }
  return v;
}

// Native (kScalar, every other impl the CPU has, and kAuto) and every peer on copies of the same gathered batch: equal results and bytes.
void check_equal(const AesApp& app, const KeyTable& keys, const std::vector<Packet>& pkts, IvMode mode) {
  auto want = kernels::gather(app, pkts);
  aes_batch(want.view(), keys, mode, Impl::kScalar);
  for (Impl impl : test::kAesImpls) {
    if (!impl_supported(impl)) {
      WARN("aes impl " << impl_name(impl) << " skipped: this CPU lacks its features");
      continue;
    }
    INFO("native " << impl_name(impl));
    auto fast = kernels::gather(app, pkts);
    aes_batch(fast.view(), keys, mode, impl);
    REQUIRE(fast.pkts == want.pkts);
    REQUIRE(fast.out == want.out);
  }
  auto fast = kernels::gather(app, pkts);
  aes_batch(fast.view(), keys, mode, Impl::kAuto);
  REQUIRE(fast.pkts == want.pkts);
  REQUIRE(fast.out == want.out);
  for (auto& [name, peer] : peers(keys)) {
    for (bool check_args : {true, false}) {
      INFO("intel-ipsec-mb " << name << (check_args ? "" : ", IMB_SUBMIT_JOB_NOCHECK"));
      peer->set_check_args(check_args);
      auto got = kernels::gather(app, pkts);
      REQUIRE(peer->run(got.view(), mode) == 0);
      REQUIRE(got.out == want.out);
      for (size_t i = 0; i < pkts.size(); ++i) {
        INFO("packet " << i << " flow " << want.desc[i].flow << " length " << want.desc[i].len);
        REQUIRE(std::memcmp(got.pkts.data() + got.desc[i].off, want.pkts.data() + want.desc[i].off, want.desc[i].len) ==
                0);
      }
    }
  }
}

}  // namespace

TEST_CASE("ipsec-mb peer: SP 800-38A F.2.1 and the NIST CAVS encrypt vectors (known answers)") {
  const Key key = test::to_key(test::unhex("2b7e151628aed2a6abf7158809cf4f3c"));
  const auto iv = test::unhex("000102030405060708090a0b0c0d0e0f");
  const auto pt = test::unhex(
      "6bc1bee22e409f96e93d7e117393172aae2d8a571e03ac9c9eb76fac45af8e51"
      "30c81c46a35ce411e5fbc1191a0a52eff69f2445df4f9b17ad2b417be66c3710");
  const std::string ct =
      "7649abac8119b246cee98e9b12e9197d5086cb9b507219ee95db113a917678b2"
      "73bed6b8e3c1743b7116e69e222295163ff1caa1681fac09120eca307586e1a7";
  auto keys = std::make_shared<KeyTable>(1);
  REQUIRE(keys->set_key(0, key).is_ok());
  auto vs = test::load_all_nist();
  REQUIRE(vs.size() == 588);
  for (auto& [name, peer] : peers(*keys)) {
    INFO("intel-ipsec-mb " << name);
    std::vector<uint8_t> out(pt.size());
    REQUIRE(peer->cbc_encrypt(key, iv.data(), pt.data(), out.data(), pt.size()));
    CHECK(test::hex(out.data(), out.size()) == ct);
    // Through the batch path: IV carried in the payload, left in clear.
    test::Packets ps;
    std::vector<uint8_t> payload = iv;
    payload.insert(payload.end(), pt.begin(), pt.end());
    ps.add(payload, 0, 0);
    AesApp app(keys, {.iv = IvMode::kCarried});
    auto b = kernels::gather(app, ps.fix());
    REQUIRE(peer->run(b.view(), IvMode::kCarried) == 0);
    CHECK(test::hex(b.pkts.data() + b.desc[0].off, 16) == test::hex(iv.data(), 16));
    CHECK(test::hex(b.pkts.data() + b.desc[0].off + 16, 64) == ct);
    size_t n = 0;
    for (const auto& v : vs) {
      if (!v.encrypt) continue;
      INFO(v.file << " COUNT " << v.count);
      out.assign(v.pt.size(), 0);
      REQUIRE(peer->cbc_encrypt(test::to_key(v.key), v.iv.data(), v.pt.data(), out.data(), v.pt.size()));
      REQUIRE(out == v.ct);
      ++n;
    }
    CHECK(n == 294);
  }
}

TEST_CASE("ipsec-mb peer == native: lengths 16, 17, 31, 64, 1514 and a mix, many flows, both IV modes") {
  std::mt19937 rng(18);
  const Key master = test::to_key(test::unhex("000102030405060708090a0b0c0d0e0f"));
  const KeyEpoch epoch = {0xa0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 0xaf};
  constexpr uint32_t kFlows = 40, kKeyed = 32;  // flows 32..39 and ids beyond the table have no key
  auto keys = test::numbered_keys(kFlows, master, kKeyed, epoch);
  for (IvMode mode : {IvMode::kDerived, IvMode::kCarried}) {
    INFO((mode == IvMode::kDerived ? "derived IV" : "carried IV"));
    const uint32_t extra = mode == IvMode::kCarried ? 16 : 0;
    test::Packets ps;
    for (uint32_t len : {16u, 17u, 31u, 64u, 1514u})
      for (uint32_t f = 0; f < 8; ++f) ps.add(test::random_bytes(rng, len + extra), f * 3, rng());
    // The mix: 25 % 64 B and 75 % 1514 B (crypto_bench's), plus every length 0..100 and random up to 1514, random
    // flows (some unkeyed, some past the table) and sequence numbers in both halves.
    for (int i = 0; i < 400; ++i) ps.add(test::random_bytes(rng, rng() % 4 == 0 ? 64 : 1514), rng() % kKeyed, rng());
    for (uint32_t len = 0; len <= 100; ++len) ps.add(test::random_bytes(rng, len), rng() % (kFlows + 4), rng());
    for (int i = 0; i < 300; ++i) ps.add(test::random_bytes(rng, rng() % 1515), rng() % (kFlows + 4), rng());
    AesApp app(keys, {.iv = mode});
    check_equal(app, *keys, ps.fix(), mode);
  }
}

TEST_CASE("ipsec-mb peer == native on every packet of the nDPI captures (per-connection keys)") {
  const std::vector<std::string> files = test::ndpi_capture_files();
  REQUIRE(files.size() > 200);
  // As device_test: one FlowTable, each connection's key derived from the master key and epoch when it starts,
  // then every fifth id keyless.
  constexpr uint32_t kCapacity = 1u << 16;
  auto keys = test::capture_test_keys(kCapacity);
  REQUIRE(keys);
  AesApp app(keys->table, {}, keys->source);
  auto table = FlowTable::create(kCapacity, 1'000'000'000'000ull);
  REQUIRE(table.is_ok());
  std::vector<std::vector<uint8_t>> frames;
  std::vector<Packet> pkts;
  std::string error;
  const size_t files_read = test::load_capture_packets(files, **table, app, frames, pkts, &error);
  INFO(error);
  REQUIRE(files_read == files.size());
  REQUIRE((*table)->full_events() == 0);
  for (uint32_t f = 4; f < kCapacity; f += 5) keys->table->clear_key(f);
  CHECK(pkts.size() > 90000);
  check_equal(app, *keys->table, pkts, IvMode::kDerived);
}

TEST_CASE("ipsec-mb peer: an unknown arch is refused with a message") {
  KeyTable keys(1);
  std::string err;
  CHECK(bench::ImbAes::create(keys, "neon", &err) == nullptr);
  CHECK_THAT(err, Catch::Contains("unknown arch 'neon'"));
}
