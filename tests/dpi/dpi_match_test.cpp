// Aho-Corasick DFA: known answers, case handling, overlapping and dense matches, and agreement with
// a naive matcher and with Hyperscan on synthetic payloads with planted ET patterns.
#include <catch2/catch.hpp>

#include <random>

#include "hpr/data_dir.hpp"
#include "kernels/dpi/ac.hpp"
#include "kernels/dpi/hs_peer.hpp"
#include "tests/dpi/dpi_captures.hpp"
#include "tests/dpi/dpi_payloads.hpp"

using namespace hpr::dpi;
using hpr::dpi::test::et;
using hpr::dpi::test::planted_payloads;

namespace {

std::vector<Pattern> pats(std::initializer_list<std::pair<const char*, bool>> l) {
  std::vector<Pattern> v;
  for (auto& [s, nc] : l) v.push_back({s, nc, 0});
  return v;
}

struct Scan {
  uint32_t count;
  std::vector<uint32_t> ids;
};

Scan scan(const AcDfa& d, std::string_view s, uint32_t k = 8) {
  std::vector<uint32_t> ids(k, kNoId);
  uint32_t n = d.scan(reinterpret_cast<const uint8_t*>(s.data()), static_cast<uint32_t>(s.size()), ids.data(), k);
  ids.resize(std::min(n, k));
  return {n, ids};
}

Scan naive(const NaiveMatcher& m, std::string_view s, uint32_t k = 8) {
  std::vector<uint32_t> ids(k, kNoId);
  uint32_t n = m.scan(reinterpret_cast<const uint8_t*>(s.data()), static_cast<uint32_t>(s.size()), ids.data(), k);
  ids.resize(std::min(n, k));
  return {n, ids};
}

const AcDfa& et_dfa() {
  static AcDfa d = [] {
    auto r = AcDfa::build(et().patterns);
    REQUIRE(r.is_ok());
    return std::move(*r);
  }();
  return d;
}

}  // namespace

TEST_CASE("AC: textbook example and match order") {
  auto p = pats({{"he", false}, {"she", false}, {"his", false}, {"hers", false}});
  auto d = AcDfa::build(p);
  REQUIRE(d.is_ok());
  auto r = scan(*d, "ushers");
  CHECK(r.count == 3);
  CHECK(r.ids == std::vector<uint32_t>{0, 1, 3});  // end 4: he(0), she(1); end 6: hers(3)
  CHECK(scan(*d, "").count == 0);
  CHECK(scan(*d, "xyz").count == 0);
  CHECK(scan(*d, "hishe", 1).ids == std::vector<uint32_t>{2});  // K = 1 keeps the first only
  CHECK(scan(*d, "hishe", 1).count == 3);
}

TEST_CASE("AC: case-sensitive and nocase patterns in one automaton") {
  auto p = pats({{"GET", false}, {"get", true}, {"Abc", false}, {"x1Y", true}, {"|", false}});
  auto d = AcDfa::build(p);
  REQUIRE(d.is_ok());
  CHECK(d->stats().verify_patterns == 2);  // GET, Abc; "|" has no letter
  CHECK(scan(*d, "GET").ids == std::vector<uint32_t>{0, 1});
  CHECK(scan(*d, "get").ids == std::vector<uint32_t>{1});
  CHECK(scan(*d, "gEt").ids == std::vector<uint32_t>{1});
  CHECK(scan(*d, "abc ABC aBc").count == 0);
  CHECK(scan(*d, "xAbc").ids == std::vector<uint32_t>{2});
  CHECK(scan(*d, "X1y x1y").count == 2);
  CHECK(scan(*d, "||").count == 2);
}

TEST_CASE("AC: overlapping, repeated and dense matches are all counted") {
  auto p = pats({{"aa", false}, {"a", false}, {std::string("\0", 1).c_str(), false}});
  p[2].bytes = std::string(1, '\0');
  auto d = AcDfa::build(p);
  REQUIRE(d.is_ok());
  CHECK(scan(*d, "aaaa").count == 4 + 3);
  CHECK(scan(*d, std::string(1000, '\0')).count == 1000);
  CHECK(scan(*d, std::string(65535, 'a')).count == 65535 + 65534);
}

TEST_CASE("AC: states with more outputs than the inline count holds (header path)") {
  std::vector<Pattern> p;
  for (int i = 1; i <= 20; ++i) p.push_back({std::string(i, 'a'), true, 0});  // "a"^20 has 20 outputs
  p.push_back({"aB", false, 0});                                              // a verify entry
  auto d = AcDfa::build(p);
  REQUIRE(d.is_ok());
  NaiveMatcher naive_m(p);
  for (std::string s : {std::string(100, 'a'), std::string(50, 'A') + "aBaB" + std::string(30, 'a')}) {
    for (uint32_t k : {1u, 8u}) {
      auto a = scan(*d, s, k), b = naive(naive_m, s, k);
      CHECK(a.count == b.count);
      CHECK(a.ids == b.ids);
    }
  }
  CHECK(scan(*d, std::string(100, 'a'), 1).count == 20 * 100 - 190);  // sum of min(end, 20)
}

TEST_CASE("AC: bad input") {
  CHECK(AcDfa::build({}).status().code() == hpr::Code::kInvalidArgument);
  CHECK(AcDfa::build(pats({{"a", false}, {"", false}})).status().code() == hpr::Code::kInvalidArgument);
  auto big = AcDfa::build(et().patterns, 1 << 20);
  REQUIRE_FALSE(big.is_ok());
  CHECK(big.status().message().find("exceeds") != std::string::npos);
}

TEST_CASE("AC on ET Open: table size, and counts equal the naive matcher and Hyperscan") {
  const AcDfa& d = et_dfa();
  const auto& st = d.stats();
  WARN("ET DFA: patterns " << st.patterns << " states " << st.states << " classes " << st.classes
                           << " output states " << st.output_states << " out entries " << st.out_entries
                           << " verify patterns " << st.verify_patterns << " table MB "
                           << (st.table_bytes / 1048576.0) << " build s " << st.build_s);
  CHECK(st.table_bytes < 512ull << 20);

  NaiveMatcher naive_m(et().patterns);
  auto hs = HsPeer::compile(et().patterns);
  REQUIRE(hs.is_ok());
  auto payloads = planted_payloads(et().patterns, 300, 42);
  payloads.push_back(std::string(1500, '\0'));
  payloads.push_back(std::string(1500, ' '));
  uint64_t total = 0, bytes = 0;
  for (const auto& s : payloads) {
    auto a = scan(d, s), b = naive(naive_m, s);
    REQUIRE(a.count == b.count);
    REQUIRE(a.ids == b.ids);
    REQUIRE(a.count == hs->count(reinterpret_cast<const uint8_t*>(s.data()), static_cast<uint32_t>(s.size())));
    total += a.count;
    bytes += s.size();
  }
  WARN("planted payloads: " << payloads.size() << " bytes " << bytes << " matches " << total);
  CHECK(total > bytes);  // dense: more than one match per byte

  // The >= 4-byte subset: its own automaton, same agreement.
  PatternSet ge4 = filter_min_length(et(), 4);
  auto d4 = AcDfa::build(ge4.patterns);
  REQUIRE(d4.is_ok());
  auto hs4 = HsPeer::compile(ge4.patterns);
  REQUIRE(hs4.is_ok());
  NaiveMatcher naive4(ge4.patterns);
  for (const auto& s : planted_payloads(ge4.patterns, 200, 7)) {
    auto a = scan(*d4, s), b = naive(naive4, s);
    REQUIRE(a.count == b.count);
    REQUIRE(a.ids == b.ids);
    REQUIRE(a.count == hs4->count(reinterpret_cast<const uint8_t*>(s.data()), static_cast<uint32_t>(s.size())));
  }
}

TEST_CASE("AC on ET Open: every capture payload, against Hyperscan (all) and the naive matcher (a sample)") {
  const AcDfa& d = et_dfa();
  auto hs = HsPeer::compile(et().patterns);
  REQUIRE(hs.is_ok());
  NaiveMatcher naive_m(et().patterns);
  uint64_t pkts = 0, bytes = 0, matches = 0, naive_checked = 0;
  for (const auto& pc : hpr::dpi::test::all_captures()) {
    for (size_t i = 0; i < pc.pkts.size(); ++i) {
      const hpr::Packet& p = pc.pkts[i];
      if (p.drop != hpr::DropReason::kNone || p.payload_off == hpr::kNoOffset) continue;
      std::string_view s(reinterpret_cast<const char*>(p.payload()), p.payload_len);
      auto a = scan(d, s);
      INFO(pc.cap.path << " packet " << i);
      REQUIRE(a.count == hs->count(p.payload(), p.payload_len));
      if (i % 50 == 0) {  // the naive matcher is slow: every 50th packet
        auto b = naive(naive_m, s);
        REQUIRE(a.count == b.count);
        REQUIRE(a.ids == b.ids);
        ++naive_checked;
      }
      ++pkts;
      bytes += s.size();
      matches += a.count;
    }
  }
  WARN("captures: packets with payload " << pkts << " bytes " << bytes << " matches " << matches
                                         << " (naive-checked packets " << naive_checked << ")");
  CHECK(matches > bytes);
}
