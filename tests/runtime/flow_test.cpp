#include <catch2/catch.hpp>

#include <cstring>
#include <random>
#include <set>
#include <unordered_map>

#include "hpr/data_dir.hpp"
#include "runtime/flow.hpp"
#include "runtime/pcap_file.hpp"
#include "runtime/parser.hpp"
#include "tests/runtime/test_frames.hpp"

using namespace hpr;
using namespace hpr::test;

static FlowKey key_of(std::vector<uint8_t>& f) {
  Packet p = view(f);
  REQUIRE(parse(p) == DropReason::kNone);
  return flow_key(p);
}

TEST_CASE("CRC32C matches the standard check value") {
  const char* s = "123456789";
  CHECK((crc32c(s, 9) ^ 0xffffffffu) == 0xe3069283u);
}

TEST_CASE("symmetric hash is equal for both directions, directional hash is not") {
  auto a = ipv4_frame(6, 0, 64, 0x0a000001, 0xc0a80001, 40000, 443);
  auto b = ipv4_frame(6, 0, 64, 0xc0a80001, 0x0a000001, 443, 40000);
  FlowKey ka = key_of(a), kb = key_of(b);
  CHECK(ka == kb.reversed());
  CHECK(ka.canonical() == kb.canonical());
  CHECK(flow_hash_symmetric(ka) == flow_hash_symmetric(kb));
  CHECK(flow_hash(ka) != flow_hash(kb));
}

TEST_CASE("FlowKey equality reads every byte that differs: IPv6 addresses to their last byte, IPv4 and IPv6 apart") {
  FlowKey a;
  a.family = 6;
  a.proto = 6;
  a.sport = 1000;
  a.dport = 80;
  for (int i = 0; i < 16; ++i) {
    a.src[i] = static_cast<uint8_t>(0x20 + i);
    a.dst[i] = static_cast<uint8_t>(0x40 + i);
  }
  CHECK(a == a);
  for (int i = 0; i < 16; ++i) {  // every byte of each address, the second halves too
    FlowKey b = a;
    b.src[i] ^= 1;
    CHECK_FALSE(a == b);
    CHECK_FALSE(b == a);
    FlowKey c = a;
    c.dst[i] ^= 1;
    CHECK_FALSE(a == c);
  }
  // An IPv4 key and an IPv6 key with the same first four bytes of each address and the same ports.
  FlowKey v4;
  v4.family = 4;
  v4.proto = 6;
  v4.sport = 1000;
  v4.dport = 80;
  std::memcpy(v4.src, a.src, 4);
  std::memcpy(v4.dst, a.dst, 4);
  FlowKey v6 = v4;
  v6.family = 6;
  CHECK_FALSE(v4 == v6);
  CHECK_FALSE(v6 == v4);
  CHECK(v4 == FlowKey(v4));
}

TEST_CASE("fragments of one datagram share a key") {
  auto first = ipv4_frame(17, 20);
  first[14 + 6] = 0x20;  // MF
  fix_ipv4_checksum(first);
  auto later = ipv4_frame(17, 20);
  later[14 + 7] = 0x03;  // offset 3
  fix_ipv4_checksum(later);
  CHECK(key_of(first) == key_of(later));
}

TEST_CASE("canonical_flow_key equals flow_key().canonical() on every packet of every capture, both directions alike") {
  size_t checked = 0;
  for (const auto& f : list_captures(data_path("pcap/ndpi"))) {
    auto cap = load_capture(f);
    REQUIRE(cap.is_ok());
    for (auto& fr : cap->frames) {
      Packet p = view(fr);
      (void)parse(p);  // dropped and non-IP packets too: both give the empty key
      FlowKey want = flow_key(p).canonical(), got;
      std::memset(static_cast<void*>(&got), 0xab, sizeof got);
      const uint32_t h = canonical_flow_key(p, got);
      INFO(f << " frame of " << fr.size() << " bytes");
      REQUIRE(std::memcmp(&got, &want, sizeof got) == 0);
      REQUIRE(h == flow_hash(want));
      // The definition: an IPv4 key's 16 significant bytes (the two addresses, then ports, protocol, family and
      // padding), any other key's 40.
      if (want.family == 4) {
        uint8_t sig[16];
        std::memcpy(sig, want.src, 4);
        std::memcpy(sig + 4, want.dst, 4);
        std::memcpy(sig + 8, &want.sport, 8);
        REQUIRE(h == crc32c(sig, sizeof sig));
      } else {
        REQUIRE(h == crc32c(&want, sizeof want));
      }
      ++checked;
    }
  }
  CHECK(checked > 90000);
  // A connection and its reply: one key.
  auto fa = ipv4_frame(6, 0, 64, 0x0a000001, 0xc0a80001, 40000, 443);
  auto fb = ipv4_frame(6, 0, 64, 0xc0a80001, 0x0a000001, 443, 40000);
  Packet a = view(fa), b = view(fb);
  REQUIRE(parse(a) == DropReason::kNone);
  REQUIRE(parse(b) == DropReason::kNone);
  FlowKey ka, kb;
  canonical_flow_key(a, ka);
  canonical_flow_key(b, kb);
  CHECK(ka == kb);
}

TEST_CASE("flow hash spreads the captures' flows evenly over 16 buckets") {
  std::set<std::vector<uint8_t>> seen;
  std::vector<uint32_t> hashes;
  for (const auto& f : list_captures(data_path("pcap/ndpi"))) {
    auto cap = load_capture(f);
    REQUIRE(cap.is_ok());
    for (auto& fr : cap->frames) {
      Packet p = view(fr);
      if (parse(p) != DropReason::kNone || (p.l3 != L3::kIPv4 && p.l3 != L3::kIPv6)) continue;
      FlowKey k = flow_key(p).canonical();
      std::vector<uint8_t> raw(reinterpret_cast<uint8_t*>(&k), reinterpret_cast<uint8_t*>(&k) + sizeof k);
      if (seen.insert(raw).second) hashes.push_back(flow_hash_symmetric(k));
    }
  }
  REQUIRE(hashes.size() > 5000);
  std::array<double, 16> b{};
  for (uint32_t h : hashes) b[h & 15] += 1;
  double expect = static_cast<double>(hashes.size()) / 16;
  double chi2 = 0;
  for (double x : b) chi2 += (x - expect) * (x - expect) / expect;
  // 15 degrees of freedom: chi2 < 37.7 with probability 0.999 for a uniform hash.
  CHECK(chi2 < 37.7);
  // Each bucket within 3.5 standard deviations of a binomial count (~18% at 5,600 flows): a fixed
  // "few percent" bound would fail for a perfect hash at this many flows.
  double sigma = std::sqrt(expect * (1.0 - 1.0 / 16));
  for (double x : b) CHECK(std::abs(x - expect) < 3.5 * sigma);
}

TEST_CASE("FlowTable gives stable ids, ages idle flows and reuses ids") {
  auto t = FlowTable::create(1000, /*idle_ns=*/1000);
  REQUIRE(t.is_ok());
  auto& ft = **t;
  CHECK(ft.capacity() == 1024);
  std::mt19937 rng(7);
  std::unordered_map<uint32_t, uint32_t> ids;  // key seed -> id
  auto make = [](uint32_t s) {
    FlowKey k;
    k.family = 4;
    std::memcpy(k.src, &s, 4);
    k.sport = static_cast<uint16_t>(s);
    k.proto = 6;
    return k;
  };
  for (uint32_t s = 0; s < 1000; ++s) {
    FlowKey k = make(s);
    bool ins = false;
    uint32_t id = ft.lookup_or_insert(k, flow_hash(k), 0, &ins);
    REQUIRE(id != kNoFlow);
    CHECK(ins);
    ids[s] = id;
  }
  CHECK(ft.size() == 1000);
  for (uint32_t s = 0; s < 1000; ++s) CHECK(ft.find(make(s), flow_hash(make(s))) == ids[s]);
  // Keep flows with even seeds busy (recent), let odd ones age; one odd flow has a packet in flight.
  for (uint32_t s = 0; s < 1000; s += 2) ft.lookup_or_insert(make(s), flow_hash(make(s)), 5000);
  ft.in_flight(ids[1]).store(1);
  uint32_t removed = ft.expire(5500, ft.capacity());
  CHECK(removed == 499);
  CHECK(ft.find(make(1), flow_hash(make(1))) == ids[1]);
  for (uint32_t s = 3; s < 1000; s += 2) CHECK(ft.find(make(s), flow_hash(make(s))) == kNoFlow);
  for (uint32_t s = 0; s < 1000; s += 2) CHECK(ft.find(make(s), flow_hash(make(s))) == ids[s]);
}

TEST_CASE("FlowTable agrees with a reference map under random insert and expiry") {
  auto t = FlowTable::create(256, 10);
  auto& ft = **t;
  std::mt19937 rng(11);
  std::unordered_map<uint32_t, uint32_t> ref;
  uint64_t now = 100;
  for (int step = 0; step < 20000; ++step) {
    uint32_t s = rng() % 600;
    FlowKey k;
    k.family = 4;
    std::memcpy(k.src, &s, 4);
    uint32_t h = flow_hash(k) & 0x3f;  // many collisions on purpose
    uint32_t id = ft.lookup_or_insert(k, h, now);
    if (id == kNoFlow) {
      CHECK(ft.size() == ft.capacity());
      continue;
    }
    if (ref.count(s)) CHECK(ref[s] == id);
    ref[s] = id;
    if (step % 50 == 0) {
      now += 20;
      ft.expire(now, ft.capacity());
      for (auto it = ref.begin(); it != ref.end();) {
        FlowKey kk;
        kk.family = 4;
        std::memcpy(kk.src, &it->first, 4);
        uint32_t f = ft.find(kk, flow_hash(kk) & 0x3f);
        if (f == kNoFlow) it = ref.erase(it);
        else { CHECK(f == it->second); ++it; }
      }
    }
  }
  CHECK(ft.size() == ref.size());
}
