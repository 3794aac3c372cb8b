// AES-128-CBC app: NIST vectors (native encrypt + decrypt), OpenSSL equality on random packets with the
// CS2 tail rule, multi-buffer == scalar, missing keys, key files. Keys and IVs of connections:
// aes_conn_keys_test.cpp.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdio>

#include "kernels/aes/aes_app.hpp"
#include "tests/crypto/crypto_util.hpp"

using namespace hpr;
using namespace hpr::kernels;
using namespace hpr::kernels::aes;

namespace {
std::vector<Impl> impls() {
  std::vector<Impl> v;
  for (Impl i : test::kAesImpls) {
    if (impl_supported(i)) v.push_back(i);
    else WARN("aes impl " << impl_name(i) << " skipped: this CPU lacks its features");
  }
  return v;
}
// Every impl this CPU has turns the packets into the bytes and results of kScalar.
void require_impls_equal_scalar(std::vector<Packet>& pkts, const std::shared_ptr<KeyTable>& keys, IvMode mode,
                                const std::string& what) {
  AesApp app(keys, {.iv = mode});
  auto ref = kernels::gather(app, pkts);
  aes_batch(ref.view(), *keys, mode, Impl::kScalar);
  for (Impl impl : impls()) {
    auto b = kernels::gather(app, pkts);
    aes_batch(b.view(), *keys, mode, impl);
    INFO(impl_name(impl) << " " << what);
    REQUIRE(b.pkts == ref.pkts);
    REQUIRE(b.out == ref.out);
  }
}
uint32_t result(const kernels::HostBatch& b, size_t i) {
  uint32_t r;
  std::memcpy(&r, b.out.data() + 4 * i, 4);
  return r;
}
}  // namespace

TEST_CASE("aes: FIPS-197 key expansion and block (Appendix C.1)") {
  Key k = test::to_key(test::unhex("000102030405060708090a0b0c0d0e0f"));
  RoundKeys rk = expand_key(k);
  CHECK(test::hex(rk.bytes + 160, 16) == "13111d7fe3944a17f307a78b4d2b30c5");
  auto pt = test::unhex("00112233445566778899aabbccddeeff");
  uint8_t ct[16];
  encrypt_block(rk, pt.data(), ct);
  CHECK(test::hex(ct, 16) == "69c4e0d86a7b0430d8cdb78070b4c55a");
}

TEST_CASE("aes: all 588 NIST CAVS AES-128-CBC vectors, encrypt and decrypt, every native impl") {
  auto vs = test::load_all_nist();
  REQUIRE(vs.size() == 588);
  size_t enc = 0, dec = 0;
  for (const auto& v : vs) {
    INFO(v.file << " COUNT " << v.count << (v.encrypt ? " encrypt" : " decrypt"));
    Key key = test::to_key(v.key);
    RoundKeys rk = expand_key(key);
    std::vector<uint8_t> buf(v.pt.size());
    for (Impl impl : {Impl::kScalar, Impl::kAesni}) {
      if (!impl_supported(impl)) continue;
      if (v.encrypt) {
        cbc_encrypt(rk, v.iv.data(), v.pt.data(), buf.data(), v.pt.size(), impl);
        REQUIRE(buf == v.ct);
      } else {
        cbc_decrypt(key, v.iv.data(), v.ct.data(), buf.data(), v.ct.size(), impl);
        REQUIRE(buf == v.pt);
      }
    }
    (v.encrypt ? enc : dec)++;
  }
  CHECK(enc == 294);
  CHECK(dec == 294);

  // Through the app's packet path (IV carried in the payload), all vectors in one batch, each its own
  // flow and key: exercises the multi-buffer lanes with 588 different keys and lengths.
  auto keys = std::make_shared<KeyTable>(static_cast<uint32_t>(vs.size()));
  test::Packets ps;
  for (size_t i = 0; i < vs.size(); ++i) {
    REQUIRE(keys->set_key(static_cast<uint32_t>(i), test::to_key(vs[i].key)).is_ok());
    std::vector<uint8_t> payload = vs[i].iv;
    const auto& pt = vs[i].encrypt ? vs[i].pt : vs[i].pt;  // decrypt vectors: encrypt their plaintext too
    payload.insert(payload.end(), pt.begin(), pt.end());
    ps.add(payload, static_cast<uint32_t>(i), 0);
  }
  auto& pkts = ps.fix();
  AesApp app(keys, {.iv = IvMode::kCarried});
  for (Impl impl : impls()) {
    INFO(impl_name(impl));
    auto b = kernels::gather(app, pkts);
    aes_batch(b.view(), *keys, IvMode::kCarried, impl);
    for (size_t i = 0; i < vs.size(); ++i) {
      INFO(vs[i].file << " COUNT " << vs[i].count);
      REQUIRE(result(b, i) == kEncrypted);
      REQUIRE(std::memcmp(b.pkts.data() + b.desc[i].off, vs[i].iv.data(), 16) == 0);  // IV left in clear
      REQUIRE(std::memcmp(b.pkts.data() + b.desc[i].off + 16, vs[i].ct.data(), vs[i].ct.size()) == 0);
    }
  }
}

TEST_CASE("aes: random packets 0..1514 bytes equal OpenSSL EVP (CBC, CBC-CTS CS2 tails), every impl") {
  std::mt19937 rng(7);
  const Key master = test::to_key(test::unhex("2b7e151628aed2a6abf7158809cf4f3c"));
  constexpr uint32_t kFlows = 64;
  const KeyEpoch epoch = {0xe0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 0xef};
  auto keys = test::numbered_keys(kFlows, master, kFlows, epoch);
  test::Packets ps;
  for (int len = 0; len <= 1514; ++len) ps.add(test::random_bytes(rng, len), rng() % kFlows, rng());
  auto& pkts = ps.fix();
  AesApp app(keys);
  CHECK(app.writes_back());

  // OpenSSL: IV = ECB_K(epoch xor (le64 counter || le64 seq)), then CBC or CTS-CS2; < 16 bytes stay in
  // clear. Slot f's counters are 2f (seq < 2^31) and 2f + 1 (numbered_keys sets the slots in order).
  std::vector<std::vector<uint8_t>> want(pkts.size());
  for (size_t i = 0; i < pkts.size(); ++i) {
    Key k = test::numbered_key(master, epoch, pkts[i].flow_id);
    const uint64_t counter = 2 * uint64_t{pkts[i].flow_id} + (pkts[i].seq >> 31);
    REQUIRE(KeyTable::counter(*keys->slot(pkts[i].flow_id), pkts[i].seq) == counter);
    auto iv = test::evp_aes("ecb", k.data(), nullptr, test::iv_block(epoch, counter, pkts[i].seq));
    REQUIRE(iv.size() == 16);
    std::vector<uint8_t> pt(pkts[i].payload(), pkts[i].payload() + pkts[i].payload_len);
    size_t n = pt.size();
    if (n < 16) want[i] = pt;
    else if (n % 16 == 0) want[i] = test::evp_aes("cbc", k.data(), iv.data(), pt);
    else want[i] = test::evp_aes("cs2", k.data(), iv.data(), pt);
    REQUIRE(want[i].size() == n);
    // And our CS2 decryption inverts it.
    if (n >= 16) {
      std::vector<uint8_t> back(n);
      cbc_cs2_decrypt(k, iv.data(), want[i].data(), back.data(), n);
      REQUIRE(back == pt);
    }
  }
  for (Impl impl : impls()) {
    INFO(impl_name(impl));
    auto b = kernels::gather(app, pkts);
    aes_batch(b.view(), *keys, IvMode::kDerived, impl);
    for (size_t i = 0; i < pkts.size(); ++i) {
      INFO("len " << pkts[i].payload_len);
      uint32_t n = pkts[i].payload_len;
      REQUIRE(result(b, i) == (n == 0 ? kEmpty : n < 16 ? kShort : kEncrypted));
      if (n != 0) REQUIRE(std::memcmp(b.pkts.data() + b.desc[i].off, want[i].data(), n) == 0);
    }
  }
  // The scalar single-packet reference agrees too.
  for (size_t i = 0; i < pkts.size(); i += 37) {
    std::vector<uint8_t> p(pkts[i].payload(), pkts[i].payload() + pkts[i].payload_len);
    encrypt_packet(*keys, IvMode::kDerived, pkts[i].flow_id, pkts[i].seq, p.data(), static_cast<uint32_t>(p.size()));
    CHECK(p == want[i]);
  }
}

TEST_CASE("aes: multi-buffer == scalar on mixed batches of every small size") {
  std::mt19937 rng(99);
  auto keys = test::numbered_keys(40, Key{}, 32);  // flows 32..39 have no key
  for (IvMode mode : {IvMode::kDerived, IvMode::kCarried}) {
    for (uint32_t n = 1; n <= 40; ++n) {
      test::Packets ps;
      for (uint32_t i = 0; i < n; ++i) {
        size_t len = rng() % 4 == 0 ? rng() % 40 : rng() % 1515;
        ps.add(test::random_bytes(rng, len), rng() % 40, rng());
      }
      require_impls_equal_scalar(ps.fix(), keys, mode, "n " + std::to_string(n));
    }
  }
}

// The lane scheduler: batches larger than every lane count (8, 16, 32), packets all of one length (the lanes in
// step), mixes (out of step: refill, long packets first, IVs planned ahead, CS2 tails queued and flushed), and
// keyless or empty packets between them.
TEST_CASE("aes: multi-buffer == scalar on large batches: one length, the 64/1514 mix, lengths 0..100, random") {
  std::mt19937 rng(512);
  auto keys = test::numbered_keys(40, Key{}, 32);  // flows 32..39 have no key
  std::vector<std::pair<std::string, std::function<size_t(uint32_t)>>> shapes = {
      {"64 B", [](uint32_t) { return size_t{64}; }},
      {"1514 B", [](uint32_t) { return size_t{1514}; }},
      {"17 B", [](uint32_t) { return size_t{17}; }},
      {"mix", [&](uint32_t) { return rng() % 4 == 0 ? size_t{64} : size_t{1514}; }},
      {"0..100", [](uint32_t i) { return size_t{i % 101}; }},
      {"random", [&](uint32_t) { return size_t{rng() % 2000}; }},
  };
  for (IvMode mode : {IvMode::kDerived, IvMode::kCarried}) {
    const size_t extra = mode == IvMode::kCarried ? 16 : 0;
    for (auto& [name, len_of] : shapes) {
      for (uint32_t n : {31u, 32u, 33u, 64u, 257u, 1000u}) {
        test::Packets ps;
        for (uint32_t i = 0; i < n; ++i) ps.add(test::random_bytes(rng, len_of(i) + extra), rng() % 42, rng());
        require_impls_equal_scalar(ps.fix(), keys, mode,
                                   name + " n " + std::to_string(n) + (mode == IvMode::kDerived ? " derived" : " carried"));
      }
    }
  }
}

TEST_CASE("aes: short, empty and carried-IV edge cases") {
  auto keys = std::make_shared<KeyTable>(1);
  REQUIRE(keys->set_key(0, Key{}).is_ok());
  for (IvMode mode : {IvMode::kDerived, IvMode::kCarried}) {
    for (uint32_t len : {0u, 1u, 15u, 16u, 17u, 31u, 32u, 33u}) {
      std::vector<uint8_t> p(len, 0xab), orig = p;
      PacketResult r = encrypt_packet(*keys, mode, 0, 5, p.data(), len);
      uint32_t m = mode == IvMode::kCarried ? (len >= 16 ? len - 16 : len) : len;
      INFO("len " << len << " carried " << (mode == IvMode::kCarried));
      if (len == 0 || (mode == IvMode::kCarried && len == 16)) {
        CHECK(r == kEmpty);
      } else if (m < 16) {
        CHECK(r == kShort);
        CHECK(p == orig);  // left in clear
      } else {
        CHECK(r == kEncrypted);
        CHECK(p != orig);
        if (mode == IvMode::kCarried) CHECK(std::equal(p.begin(), p.begin() + 16, orig.begin()));
      }
    }
  }
}

TEST_CASE("aes: missing key is a counted drop applied in finish, payload untouched") {
  auto keys = std::make_shared<KeyTable>(4);
  REQUIRE(keys->set_key(1, Key{1}).is_ok());
  REQUIRE(keys->set_key(3, Key{3}).is_ok());
  keys->clear_key(3);
  CHECK(keys->key_count() == 1);
  test::Packets ps;
  std::vector<uint8_t> payload(100, 0x5a);
  ps.add(payload, 0, 0);        // no key
  ps.add(payload, 1, 0);        // key
  ps.add(payload, 3, 0);        // key cleared
  ps.add(payload, 9, 0);        // beyond capacity
  ps.add(payload, kNoFlow, 0);  // no flow at all
  ps.add({}, 2, 0);             // empty payload of an unkeyed flow: dropped too
  ps.add({1, 2, 3}, 1, 0);      // short payload of a keyed flow: passes in clear, counted
  auto& pkts = ps.fix();
  AesApp app(keys);
  for (Impl impl : impls()) {
    AesApp a(keys, {.impl = impl});
    auto b = kernels::gather(a, pkts);
    a.run_native(b.view());
    std::vector<Packet> copy = pkts;
    a.finish(copy, b.view());
    INFO(impl_name(impl));
    CHECK(copy[0].drop == DropReason::kKeyMissing);
    CHECK(copy[1].drop == DropReason::kNone);
    CHECK(copy[2].drop == DropReason::kKeyMissing);
    CHECK(copy[3].drop == DropReason::kKeyMissing);
    CHECK(copy[4].drop == DropReason::kKeyMissing);
    CHECK(copy[5].drop == DropReason::kKeyMissing);
    CHECK(copy[6].drop == DropReason::kNone);
    CHECK(std::memcmp(b.pkts.data() + b.desc[0].off, payload.data(), 100) == 0);
    CHECK(std::memcmp(b.pkts.data() + b.desc[1].off, payload.data(), 100) != 0);
    Counters c = a.counters();
    CHECK(c.key_missing == 5);
    CHECK(c.encrypted == 1);
    CHECK(c.short_payloads == 1);
  }
  CHECK(keys->set_key(4, Key{}).code() == Code::kInvalidArgument);
}

TEST_CASE("aes: key files: both line forms, comments, install through a resolver") {
  auto r = parse_key_text(
      "# keys for the lab\n"
      "flow 7 000102030405060708090a0b0c0d0e0f\n"
      "\n"
      "tcp 10.0.0.1 1234 10.0.0.2 80 ffeeddccbbaa99887766554433221100  # web\n"
      "udp 2001:db8::1 53 2001:db8::2 5353 00000000000000000000000000000001\n"
      "6 192.168.1.1 1 192.168.1.2 2 0f0e0d0c0b0a09080706050403020100",
      "keys.txt");
  REQUIRE(r.is_ok());
  REQUIRE(r->size() == 4);
  CHECK((*r)[0].by_flow_id);
  CHECK((*r)[0].flow_id == 7);
  CHECK((*r)[0].line == 2);
  CHECK((*r)[1].tuple.proto == 6);
  CHECK((*r)[1].tuple.sport == 1234);
  CHECK((*r)[1].line == 4);
  CHECK((*r)[2].tuple.family == 6);
  CHECK((*r)[3].tuple.proto == 6);
  KeyTable t(16);
  auto n = install(t, *r, [](const FlowTuple& ft) { return ft.proto == 17 ? 3u : ft.sport == 1234 ? 2u : kNoFlow; },
                   "keys.txt");
  REQUIRE(n.is_ok());
  CHECK(*n == 3);
  CHECK(t.has_key(7));
  CHECK(t.has_key(2));
  CHECK(t.has_key(3));
  CHECK(t.key_count() == 3);
  CHECK(std::memcmp(t.slot(7)->rk.bytes, expand_key(test::to_key(test::unhex("000102030405060708090a0b0c0d0e0f"))).bytes,
                    176) == 0);

  KeyTable small(4);
  auto big = install(small, *r, nullptr, "keys.txt");
  REQUIRE_FALSE(big.is_ok());
  CHECK(big.status().message() == "keys.txt:2: flow id 7 >= key table capacity 4");
}

TEST_CASE("aes: bad key file lines name file and line") {
  struct Bad { const char* text; const char* want; };
  for (Bad b : {Bad{"flow 1 0011", "k.txt:1: key: want 32 hex digits"},
                Bad{"\n\nflow x 000102030405060708090a0b0c0d0e0f", "k.txt:3: bad flow id in field 2"},
                Bad{"flow 1", "k.txt:1: expected 'flow <flow-id>"},
                Bad{"tcp 10.0.0.1 1 10.0.0.300 2 000102030405060708090a0b0c0d0e0f", "k.txt:1: bad destination address"},
                Bad{"tcp 10.0.0.1 99999 10.0.0.3 2 000102030405060708090a0b0c0d0e0f", "k.txt:1: bad source port"},
                Bad{"icmpx 10.0.0.1 1 10.0.0.3 2 000102030405060708090a0b0c0d0e0f", "k.txt:1: bad protocol"},
                Bad{"tcp 10.0.0.1 1 ::1 2 000102030405060708090a0b0c0d0e0f", "k.txt:1: source and destination"},
                Bad{"# ok\nflow 1 000102030405060708090a0b0c0d0e0g",
                    "k.txt:2: key: want 32 hex digits (AES-128), character 32 is not one"},
                Bad{"tcp 1.2.3.4 1 5.6.7.8", "k.txt:1: expected '<proto>"}}) {
    auto r = parse_key_text(b.text, "k.txt");
    INFO(b.text);
    REQUIRE_FALSE(r.is_ok());
    CHECK(r.status().code() == Code::kInvalidArgument);
    CHECK_THAT(r.status().message(), Catch::StartsWith(b.want));
  }
  auto missing = load_key_file("/nonexistent/keys.txt");
  REQUIRE_FALSE(missing.is_ok());
  CHECK(missing.status().code() == Code::kNotFound);

  // From a real file: the message carries the path.
  std::string path = "crypto_bad_keys.txt";
  { std::ofstream f(path); f << "flow 0 000102030405060708090a0b0c0d0e0f\nflow 1 nothex\n"; }
  auto fr = load_key_file(path);
  std::remove(path.c_str());
  REQUIRE_FALSE(fr.is_ok());
  CHECK_THAT(fr.status().message(), Catch::StartsWith(path + ":2:"));
}

TEST_CASE("aes: key expansion with AES-NI equals the table expansion") {
  std::mt19937 rng(16);
  for (int i = 0; i < 2000; ++i) {
    Key k{};
    for (auto& b : k) b = static_cast<uint8_t>(rng());
    const RoundKeys a = expand_key(k, Impl::kScalar), b = expand_key(k, Impl::kAesni);
    REQUIRE(std::memcmp(a.bytes, b.bytes, kScheduleBytes) == 0);
  }
}

TEST_CASE("aes: derived IV matches the documented formula") {
  Key k = test::to_key(test::unhex("2b7e151628aed2a6abf7158809cf4f3c"));
  RoundKeys rk = expand_key(k);
  const KeyEpoch epoch = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
  for (uint32_t seq : {0u, 9u, 0x7fffffffu, 0x80000000u, 0xffffffffu}) {
    auto iv = derive_iv(rk, epoch, 0x0123456789abcdefull, seq);
    CHECK(std::vector<uint8_t>(iv.begin(), iv.end()) ==
          test::evp_aes("ecb", k.data(), nullptr, test::iv_block(epoch, 0x0123456789abcdefull, seq)));
  }
}
