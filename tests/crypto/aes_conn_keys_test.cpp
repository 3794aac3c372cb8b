// Keys and IVs of connections (issue 16 item 8, docs/crypto.md "Keys and IVs"): the worked example of the
// docs as a known answer, the derivation against OpenSSL's HMAC, and the property that was broken: a slot
// that the FlowTable gives to a later connection (or the same connection again, or a restarted run) never
// encrypts under a (key, IV) pair used before. Before, key = f(slot) and IV = f(slot, seq), so the second
// connection in a slot repeated every (key, IV) pair of the first.
#include <openssl/evp.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>

#include "kernels/aes/aes_app.hpp"
#include "kernels/aes/key_derive.hpp"
#include "kernels/aes/key_source.hpp"
#include "kernels/registry.hpp"
#include "tests/crypto/crypto_util.hpp"

using namespace hpr;
using namespace hpr::kernels;
using namespace hpr::kernels::aes;

namespace {

template <size_t N>
std::array<uint8_t, N> from_hex(const std::string& s) {
  auto v = test::unhex(s);
  REQUIRE(v.size() == N);
  std::array<uint8_t, N> a{};
  std::memcpy(a.data(), v.data(), N);
  return a;
}

// The worked example of docs/crypto.md.
const std::string kMaster = "000102030405060708090a0b0c0d0e0f";
const std::string kEpoch = "a0a1a2a3a4a5a6a7a8a9aaabacadaeaf";
const std::string kCanonical = "0406c0000201000000000000000000000000c000c633640700000000000000000000000001bb";
const std::string kKey = "7fa1e78119999876c34855d5cc854639";
const uint64_t kCounter = 0x1122334455667788ull;
const uint32_t kSeq = 3;
const std::string kIvInput = "28d6c4f6e09684b6aba9aaabacadaeaf";
const std::string kIv = "00238ad197da9002e51f0b79bd23581b";
const std::string kPlain = "hpr worked example: 32 bytes ok!";
const std::string kCipher = "1e6221492684a405edf9a605eab40c042de3c2d67f8fdea9350fe00718111563";

FlowTuple example_tuple() {  // tcp 198.51.100.7:443 -> 192.0.2.1:49152 (either direction gives the same)
  FlowTuple t;
  t.family = 4;
  t.proto = 6;
  t.src = {198, 51, 100, 7};
  t.sport = 443;
  t.dst = {192, 0, 2, 1};
  t.dport = 49152;
  return t;
}

FlowKey key_of(const FlowTuple& t) {
  FlowKey k;
  k.family = t.family;
  k.proto = t.proto;
  std::memcpy(k.src, t.src.data(), 16);
  std::memcpy(k.dst, t.dst.data(), 16);
  k.sport = t.sport;
  k.dport = t.dport;
  return k.canonical();
}

// What the dispatcher does with one packet of a connection, then the app on it alone; records the
// (key, IV) pair it was encrypted under.
struct Sim {
  std::unique_ptr<FlowTable> table;
  std::shared_ptr<App> app;
  uint64_t now = 1;
  struct Sent {
    uint32_t id = 0, seq = 0;
    std::string key_iv;  // schedule || IV, as bytes
    std::vector<uint8_t> out;
  };
  Sim(uint32_t capacity, const AppOptions& opt) {
    auto t = FlowTable::create(capacity, 1);
    REQUIRE(t);
    table = std::move(*t);
    auto a = make_app("aes", opt);
    REQUIRE(a);
    app = *a;
  }
  const KeyTable& keys() const { return dynamic_cast<const AesApp&>(*app).keys(); }
  Sent send(const FlowKey& k, const std::vector<uint8_t>& payload) {
    Sent s;
    bool inserted = false;
    s.id = table->lookup_or_insert(k, flow_hash(k), now, &inserted);
    REQUIRE(s.id != kNoFlow);
    if (inserted) app->flow_started(s.id, k);
    FlowState& fs = table->state(s.id);
    s.seq = take_seq(fs, s.id, *app);
    fs.packets++;
    if (const KeySlot* slot = keys().slot(s.id)) {
      auto iv = derive_iv(slot->rk, keys().epoch(), KeyTable::counter(*slot, s.seq), s.seq);
      s.key_iv.assign(reinterpret_cast<const char*>(slot->rk.bytes), kScheduleBytes);
      s.key_iv.append(reinterpret_cast<const char*>(iv.data()), iv.size());
    }
    test::Packets ps;
    ps.add(payload, s.id, s.seq);
    auto b = kernels::gather(*app, ps.fix());
    app->run_native(b.view());
    s.out.assign(b.pkts.begin(), b.pkts.begin() + payload.size());
    return s;
  }
  // Every flow idle: the next connection reuses a slot.
  void end_flows() {
    now += 1000;
    table->expire(now, table->capacity());
    REQUIRE(table->size() == 0);
  }
};

AppOptions master_options(const std::string& epoch = "") {
  AppOptions o;
  o.master_key = kMaster;
  o.key_epoch = epoch;
  o.key_capacity = 1;
  return o;
}

}  // namespace

TEST_CASE("aes conn keys: the worked example of docs/crypto.md (known answer)") {
  const Key master = from_hex<16>(kMaster);
  const KeyEpoch epoch = from_hex<16>(kEpoch);
  const FlowTuple t = example_tuple();
  CHECK(test::hex(canonical_bytes(t).data(), kCanonicalBytes) == kCanonical);
  // key = HMAC-SHA256(master, label || epoch || canonical)[0..16), by OpenSSL's one-shot MAC too.
  std::vector<uint8_t> msg(kConnKeyLabel, kConnKeyLabel + 15);
  msg.insert(msg.end(), epoch.begin(), epoch.end());
  for (uint8_t b : test::unhex(kCanonical)) msg.push_back(b);
  uint8_t mac[32];
  size_t mac_len = 0;
  REQUIRE(EVP_Q_mac(nullptr, "HMAC", nullptr, "SHA256", nullptr, master.data(), 16, msg.data(), msg.size(), mac,
                    sizeof mac, &mac_len) != nullptr);
  CHECK(test::hex(mac, 16) == kKey);
  CHECK(test::hex(derive_conn_key(master, epoch, t).data(), 16) == kKey);
  ConnKeyDeriver deriver(master, epoch);
  CHECK(test::hex(deriver.derive(t).data(), 16) == kKey);
  // IV = AES_K(epoch xor (le64 counter || le64 seq)).
  uint8_t in[16];
  iv_input(epoch, kCounter, kSeq, in);
  CHECK(test::hex(in, 16) == kIvInput);
  const RoundKeys rk = expand_key(from_hex<16>(kKey));
  auto iv = derive_iv(rk, epoch, kCounter, kSeq);
  CHECK(test::hex(iv.data(), 16) == kIv);
  // The packet: a slot whose counter for seq 3 is kCounter, through every native impl and the app's key
  // source (a connection starting in slot 0 of a table whose counters start at kCounter).
  AppOptions o = master_options(kEpoch);
  o.iv_counter_start = kCounter;
  auto app = make_app("aes", o);
  REQUIRE(app);
  (*app)->flow_started(0, key_of(t));
  std::vector<uint8_t> pt(kPlain.begin(), kPlain.end());
  test::Packets ps;
  ps.add(pt, 0, kSeq);
  for (Impl impl : test::kAesImpls) {
    if (!impl_supported(impl)) {
      WARN("aes impl " << impl_name(impl) << " skipped: this CPU lacks its features");
      continue;
    }
    INFO(impl_name(impl));
    auto b = kernels::gather(**app, ps.fix());
    aes_batch(b.view(), dynamic_cast<const AesApp&>(**app).keys(), IvMode::kDerived, impl);
    CHECK(test::hex(b.pkts.data(), 32) == kCipher);
  }
}

TEST_CASE("aes conn keys: derivation equals HMAC-SHA256 one-shot, depends on master, epoch and tuple only") {
  std::mt19937 rng(8);
  auto random16 = [&] {
    std::array<uint8_t, 16> a{};
    for (auto& b : a) b = static_cast<uint8_t>(rng());
    return a;
  };
  const Key master = random16();
  const KeyEpoch epoch = random16();
  ConnKeyDeriver deriver(master, epoch);
  for (int i = 0; i < 2000; ++i) {
    FlowTuple t;
    t.family = i % 3 == 0 ? 6 : 4;
    t.proto = static_cast<uint8_t>(rng());
    t.src = random16();
    t.dst = random16();
    if (t.family == 4) std::fill(t.src.begin() + 4, t.src.end(), 0), std::fill(t.dst.begin() + 4, t.dst.end(), 0);
    t.sport = static_cast<uint16_t>(rng());
    t.dport = static_cast<uint16_t>(rng());
    const Key k = derive_conn_key(master, epoch, t);
    REQUIRE(deriver.derive(t) == k);
    FlowTuple r = t;  // the other direction
    std::swap(r.src, r.dst);
    std::swap(r.sport, r.dport);
    REQUIRE(deriver.derive(r) == k);
    FlowTuple other = t;
    other.sport ^= 1;
    REQUIRE(deriver.derive(other) != k);
    KeyEpoch e2 = epoch;
    e2[i % 16] ^= 1;
    REQUIRE(derive_conn_key(master, e2, t) != k);
  }
}

TEST_CASE("aes conn keys: a slot reused by a later connection never repeats a (key, IV) pair") {
  const std::vector<uint8_t> payload(64, 0x42);  // the same plaintext every time
  Sim sim(1, master_options());                  // one slot: every connection gets id 0
  std::set<std::string> pairs;
  std::set<std::vector<uint8_t>> ciphertexts;
  auto run = [&](const FlowKey& k, int packets) {
    for (int i = 0; i < packets; ++i) {
      Sim::Sent s = sim.send(k, payload);
      REQUIRE(s.id == 0);
      REQUIRE(s.seq == static_cast<uint32_t>(i));  // every connection starts at seq 0 in slot 0
      REQUIRE_FALSE(s.key_iv.empty());
      CHECK(pairs.insert(s.key_iv).second);  // before: the second connection repeated every pair
      CHECK(ciphertexts.insert(s.out).second);
    }
  };
  SECTION("a different connection") {
    run(numbered_flow(1), 4);
    sim.end_flows();
    run(numbered_flow(2), 4);
  }
  SECTION("the same connection again: the same key, fresh IV counters") {
    run(numbered_flow(1), 4);
    const std::string first_key = pairs.begin()->substr(0, kScheduleBytes);
    sim.end_flows();
    run(numbered_flow(1), 4);
    for (const auto& p : pairs) CHECK(p.substr(0, kScheduleBytes) == first_key);
  }
  CHECK(pairs.size() == 8);
}

TEST_CASE("aes conn keys: a restart gives new keys (random epoch) or the same keys with new IVs (given epoch)") {
  const std::vector<uint8_t> payload(48, 0x17);
  auto first_packet = [&](const AppOptions& o) {
    Sim sim(1, o);
    return sim.send(numbered_flow(7), payload);
  };
  // Random epoch per run: the same connection gets another key.
  auto a = first_packet(master_options()), b = first_packet(master_options());
  CHECK(a.key_iv.substr(0, kScheduleBytes) != b.key_iv.substr(0, kScheduleBytes));
  CHECK(a.out != b.out);
  // A given epoch keeps the keys across restarts (a receiver's keys stay valid); the IV counters start at a
  // random value per run, so the IVs differ.
  auto c = first_packet(master_options(kEpoch)), d = first_packet(master_options(kEpoch));
  CHECK(c.key_iv.substr(0, kScheduleBytes) == d.key_iv.substr(0, kScheduleBytes));
  CHECK(c.key_iv.substr(kScheduleBytes) != d.key_iv.substr(kScheduleBytes));
  CHECK(c.out != d.out);
}

TEST_CASE("aes conn keys: each half of the 32-bit sequence space takes a fresh counter, also after a wrap") {
  Sim sim(1, master_options(kEpoch));
  const std::vector<uint8_t> payload(32, 0);
  const FlowKey k = numbered_flow(3);
  Sim::Sent s0 = sim.send(k, payload);
  REQUIRE(s0.seq == 0);
  const KeySlot& slot = *sim.keys().slot(0);
  const uint64_t c0 = KeyTable::counter(slot, 0), c1 = KeyTable::counter(slot, 1u << 31);
  CHECK(c0 != c1);
  FlowState& fs = sim.table->state(0);
  fs.next_seq = 0x7fffffffu;  // as if 2^31 - 1 packets had been sent
  CHECK(sim.send(k, payload).seq == 0x7fffffffu);
  CHECK(KeyTable::counter(slot, 0) == c0);  // the half in use is never rewritten
  Sim::Sent h1 = sim.send(k, payload);
  CHECK(h1.seq == 0x80000000u);
  const uint64_t c1b = KeyTable::counter(slot, 1u << 31);
  CHECK(c1b != c1);
  CHECK(c1b != c0);
  fs.next_seq = 0xffffffffu;
  sim.send(k, payload);
  Sim::Sent w = sim.send(k, payload);  // seq 0 again, after the wrap
  REQUIRE(w.seq == 0);
  const uint64_t c0b = KeyTable::counter(slot, 0);
  CHECK(c0b != c0);
  CHECK(c0b != c1b);
  CHECK(w.key_iv != s0.key_iv);  // the same key, seq 0 again: another IV
  CHECK(w.out != s0.out);
}

TEST_CASE("aes conn keys: key file keys apply when their connection starts; a slot never keeps another's key") {
  const std::string path =
      (std::filesystem::temp_directory_path() / ("hpr_conn_keys_" + std::to_string(getpid()) + ".keys")).string();
  {
    std::ofstream f(path);
    f << "udp 10.0.0.1 1024 10.128.0.0 1025 " << kKey << "\n";  // numbered_flow(1)
    f << "flow 1 " << kMaster << "\n";
  }
  AppOptions o;
  o.keys = path;
  o.key_capacity = 2;
  Sim sim(1, o);  // the flow table has one slot (0); slot 1 of the key table holds the flow line's key
  std::filesystem::remove(path);
  const std::vector<uint8_t> payload(32, 9);
  Sim::Sent a = sim.send(numbered_flow(1), payload);
  REQUIRE_FALSE(a.key_iv.empty());
  CHECK(std::memcmp(a.key_iv.data(), expand_key(from_hex<16>(kKey)).bytes, kScheduleBytes) == 0);
  sim.end_flows();
  Sim::Sent b = sim.send(numbered_flow(2), payload);  // no line for it: no key, not numbered_flow(1)'s
  CHECK(b.key_iv.empty());
  CHECK(b.out == payload);  // left as it was; finish() drops it as key_missing
  sim.end_flows();
  Sim::Sent c = sim.send(numbered_flow(1), payload);  // back: its key, fresh IV counters
  CHECK(c.key_iv.substr(0, kScheduleBytes) == a.key_iv.substr(0, kScheduleBytes));
  CHECK(c.key_iv != a.key_iv);
}

// Not a check: the cost of a key at flow start (HMAC with the pads kept, then the key expansion). Hidden; run
// with `crypto_aes_conn_keys_test "[timing]"`.
TEST_CASE("aes conn keys: derivation time per connection", "[.][timing]") {
  ConnKeyDeriver deriver(Key{7}, KeyEpoch{9});
  KeyTable table(1);
  const uint32_t n = 1u << 20;
  auto t0 = std::chrono::steady_clock::now();
  for (uint32_t f = 0; f < n; ++f) (void)table.set_key(0, deriver.derive(tuple_of(numbered_flow(f))));
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  WARN(n << " connection keys derived and expanded: " << s / n * 1e9 << " ns each");
}
