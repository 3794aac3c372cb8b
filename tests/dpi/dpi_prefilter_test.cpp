// Prefilter path (kernels/dpi/prefilter*.{hpp,cpp}): the fingerprint filter on every SIMD path
// against a scalar reference, and PrefilterMatcher against the plain automaton (count and ids),
// the naive matcher and Hyperscan (count), on hand-made cases, planted ET payloads and every capture.
// Each SIMD path this CPU has is forced (the scalar one always), so the fallback is tested here too.
#include <catch2/catch.hpp>

#include <cstring>
#include <random>

#include "hpr/data_dir.hpp"
#include "kernels/dpi/ac.hpp"
#include "kernels/dpi/dpi_app.hpp"
#include "kernels/dpi/hs_peer.hpp"
#include "kernels/dpi/prefilter_matcher.hpp"
#include "kernels/runner.hpp"
#include "tests/dpi/dpi_captures.hpp"
#include "tests/dpi/dpi_payloads.hpp"

using namespace hpr::dpi;
using hpr::dpi::test::et;
using hpr::dpi::test::planted_payloads;

namespace {

const std::vector<SimdPath>& simd_paths() {
  static const std::vector<SimdPath> v = [] {
    std::vector<SimdPath> r{SimdPath::kScalar};
    for (SimdPath p : {SimdPath::kAvx2, SimdPath::kAvx512}) {
      if (resolve_simd(p) == p) r.push_back(p);
      else WARN("this CPU lacks " << simd_name(p) << ": that path is not tested here");
    }
    return r;
  }();
  return v;
}

struct Scan {
  uint32_t count;
  std::vector<uint32_t> ids;
  bool operator==(const Scan&) const = default;
};

template <typename M>
Scan scan(const M& m, std::string_view s, uint32_t k = 8) {
  std::vector<uint32_t> ids(k, kNoId);
  uint32_t n = m.scan(reinterpret_cast<const uint8_t*>(s.data()), static_cast<uint32_t>(s.size()), ids.data(), k);
  ids.resize(std::min(n, k));
  return {n, ids};
}

std::unique_ptr<PrefilterMatcher> pf_build(const std::vector<Pattern>& p, SimdPath simd) {
  auto r = PrefilterMatcher::build(p, simd);
  INFO(r.status().to_string());
  REQUIRE(r.is_ok());
  REQUIRE((*r)->simd() == simd);
  return std::move(*r);
}

// Payloads in the kernel layout, `k` ids per result.
hpr::kernels::HostBatch batch_of(const std::vector<std::string>& payloads, uint32_t k) {
  hpr::kernels::HostBatch b;
  uint32_t off = 0;
  for (const auto& s : payloads) {
    b.desc.push_back({off, static_cast<uint16_t>(s.size()), 0, 0, 0});
    off += hpr::kernels::align_slice(static_cast<uint32_t>(s.size()));
  }
  b.pkts.assign(std::max<uint32_t>(off, 16), 0);
  for (size_t i = 0; i < payloads.size(); ++i) std::memcpy(b.pkts.data() + b.desc[i].off, payloads[i].data(), payloads[i].size());
  b.out.assign(payloads.size() * (k + 1) * 4, 0);
  return b;
}

// Prefilter == automaton (count, ids) == naive matcher for every payload, on every SIMD path.
void check_equal(const std::vector<Pattern>& p, const std::vector<std::string>& payloads) {
  auto d = AcDfa::build(p);
  REQUIRE(d.is_ok());
  NaiveMatcher naive(p);
  for (SimdPath simd : simd_paths()) {
    auto pf = pf_build(p, simd);
    for (const auto& s : payloads) {
      INFO(simd_name(simd) << " payload of " << s.size() << " bytes");
      for (uint32_t k : {1u, 8u, 64u}) {
        const Scan a = scan(*pf, s, k);
        CHECK(a == scan(*d, s, k));
        CHECK(a == scan(naive, s, k));
      }
    }
    // The batch path gives the automaton's bytes (kNoId after the ids included).
    hpr::kernels::HostBatch b = batch_of(payloads, 8), c = b;
    run_native_batch(*d, 8, b.view(), 1);
    std::fill(c.out.begin(), c.out.end(), 0xEE);
    run_native_batch(*pf, 8, c.view());
    CHECK(c.out == b.out);
  }
}

}  // namespace

TEST_CASE("Prefilter: fold4 folds ASCII letters only, in every byte") {
  for (uint32_t b = 0; b < 256; ++b) {
    for (int at = 0; at < 4; ++at) {
      const uint32_t w = 0x5a41205au ^ (0xffu << (8 * at) & 0x5a41205au) ^ (b << (8 * at));  // other bytes vary too
      uint32_t want = 0;
      for (int j = 0; j < 4; ++j) want |= uint32_t{fold_ascii(static_cast<uint8_t>(w >> (8 * j)))} << (8 * j);
      REQUIRE(fold4(w) == want);
    }
  }
}

TEST_CASE("Prefilter: the filter's next() equals a window-by-window scan on every SIMD path") {
  std::vector<Pattern> p;
  for (const char* s : {"GET /", "abcd", "ABCX", "\x01\x02\x03\x04", "HTTP/1.1", "zzzz"}) p.push_back({s, false, 0});
  p.push_back({"host:", true, 0});
  std::mt19937 rng(3);
  std::vector<std::string> texts;
  for (int i = 0; i < 300; ++i) {
    std::string s(rng() % 120, '\0');
    for (auto& c : s) c = "abcdxzGETHOST/ :\x01\x02\x03\x04"[rng() % 20];
    texts.push_back(std::move(s));
  }
  texts.push_back(std::string(200, 'z'));  // a candidate at every position
  for (SimdPath simd : simd_paths()) {
    FingerprintFilter f(p, simd);
    REQUIRE(f.simd() == simd);
    CHECK(f.fingerprints() == 7);
    for (const auto& s : texts) {
      const auto* b = reinterpret_cast<const uint8_t*>(s.data());
      const auto len = static_cast<uint32_t>(s.size());
      for (uint32_t from = 0; from <= len; ++from) {
        uint32_t want = len;
        for (uint32_t i = from; i + 4 <= len; ++i) {
          uint32_t w;
          std::memcpy(&w, b + i, 4);
          if (f.hit(w)) { want = i; break; }
        }
        INFO(simd_name(simd) << " len " << len << " from " << from);
        REQUIRE(f.next(b, len, from) == want);
      }
    }
  }
  FingerprintFilter empty;  // default: no candidates
  CHECK(empty.next(reinterpret_cast<const uint8_t*>("abcdabcd"), 8, 0) == 8);
}

TEST_CASE("Prefilter matcher: buffer ends, overlaps, nocase, short payloads and short patterns") {
  std::vector<Pattern> p = {{"abcd", false, 0},  {"bcde", false, 0},   {"abcdef", true, 0}, {"cd", false, 0},
                            {"d", false, 0},     {"Host:", false, 0},  {"host: x", true, 0}, {"aaaa", false, 0},
                            {"aaaaaaaa", false, 0}, {"XYz", true, 0},  {"\0\0\0\0", false, 0}, {"efgh", true, 0}};
  p[10].bytes = std::string(4, '\0');
  std::vector<std::string> pl = {"", "a", "ab", "abc", "abcd", "bcde", "abcde", "abcdef", "ABCDEF", "xabcdefx",
                                 "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
                                 "Host: x HOST: X host: xhost: X", "xyz XYZ xYz", std::string(70, '\0'),
                                 "efg", "EFGH", "zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzabcd",
                                 "abcdzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzEfGh"};
  std::mt19937 rng(9);  // random text over the patterns' letters, every length up to 100
  for (uint32_t len = 0; len <= 100; ++len) {
    std::string s(len, ' ');
    for (auto& c : s) c = "abcdefghAEHOST: xyzXYZ\0"[rng() % 23];
    pl.push_back(std::move(s));
  }
  check_equal(p, pl);
  SECTION("only long patterns") { check_equal({p[0], p[1], p[2], p[5], p[6]}, pl); }
  SECTION("only short patterns") { check_equal({p[3], p[4], p[9]}, pl); }
}

TEST_CASE("Prefilter matcher: bad input") {
  CHECK(PrefilterMatcher::build({}).status().code() == hpr::Code::kInvalidArgument);
  CHECK(PrefilterMatcher::build({{"abcd", false, 0}, {"", false, 0}}).status().code() == hpr::Code::kInvalidArgument);
  auto big = PrefilterMatcher::build(et().patterns, SimdPath::kAuto, 1 << 20);
  REQUIRE_FALSE(big.is_ok());
  CHECK(big.status().message().find("exceeds") != std::string::npos);
}

TEST_CASE("Prefilter matcher on ET: planted payloads equal the automaton, naive matcher and Hyperscan") {
  for (size_t min_len : {size_t{1}, size_t{4}}) {
    PatternSet ps = filter_min_length(et(), min_len);
    INFO("ET >= " << min_len);
    auto pl = planted_payloads(ps.patterns, 150, 11 + static_cast<uint32_t>(min_len));
    pl.push_back(std::string(1500, '\0'));
    check_equal(ps.patterns, pl);
    auto hs = HsPeer::compile(ps.patterns);
    REQUIRE(hs.is_ok());
    auto pf = pf_build(ps.patterns, resolve_simd(SimdPath::kAuto));
    for (const auto& s : pl) REQUIRE(scan(*pf, s).count == hs->count(reinterpret_cast<const uint8_t*>(s.data()), static_cast<uint32_t>(s.size())));
  }
}

TEST_CASE("Prefilter matcher on ET: every capture payload, batch bytes equal the automaton's, counts Hyperscan's") {
  for (size_t min_len : {size_t{1}, size_t{4}}) {
    PatternSet ps = filter_min_length(et(), min_len);
    auto app = DpiApp::create(ps, {.native_engine = DpiConfig::Engine::kAutomaton});
    REQUIRE(app.is_ok());
    auto hs = HsPeer::compile(ps.patterns);
    REQUIRE(hs.is_ok());
    std::vector<std::unique_ptr<PrefilterMatcher>> pfs;
    for (SimdPath simd : simd_paths()) pfs.push_back(pf_build(ps.patterns, simd));
    const uint32_t k = (*app)->config().max_ids;
    uint64_t pkts = 0, matches = 0;
    for (const auto& pc : hpr::dpi::test::all_captures()) {
      if (pc.pkts.empty()) continue;
      hpr::kernels::HostBatch b = hpr::kernels::gather(**app, pc.pkts);
      (*app)->run_native(b.view());
      for (size_t j = 0; j < pfs.size(); ++j) {
        hpr::kernels::HostBatch c = b;
        std::fill(c.out.begin(), c.out.end(), 0xEE);
        run_native_batch(*pfs[j], k, c.view());
        INFO("ET >= " << min_len << " " << pc.cap.path << " " << simd_name(pfs[j]->simd()));
        REQUIRE(c.out == b.out);
      }
      for (uint32_t i = 0; i < b.desc.size(); ++i) {
        const uint32_t n = (*app)->result(b.view(), i).count;
        INFO(pc.cap.path << " packet " << i);
        REQUIRE(n == hs->count(b.view().slice(i), b.desc[i].len));
        matches += n;
      }
      pkts += b.desc.size();
    }
    WARN("ET >= " << min_len << ": " << pkts << " packets, " << matches << " matches, prefilter paths " << pfs.size());
  }
}

TEST_CASE("DPI app: the prefilter engine gives the automaton's bytes") {
  PatternSet ps = filter_min_length(et(), 1);
  auto a = DpiApp::create(ps, {.native_engine = DpiConfig::Engine::kAutomaton});
  auto b = DpiApp::create(ps, {.native_engine = DpiConfig::Engine::kPrefilter, .prefilter_simd = SimdPath::kScalar});
  REQUIRE(a.is_ok());
  REQUIRE(b.is_ok());
  CHECK((*a)->prefilter() == nullptr);
  REQUIRE((*b)->prefilter() != nullptr);
  CHECK((*b)->prefilter()->simd() == SimdPath::kScalar);
  const auto& pc = hpr::dpi::test::all_captures().front();
  hpr::kernels::HostBatch x = hpr::kernels::gather(**a, pc.pkts), y = x;
  (*a)->run_native(x.view());
  (*b)->run_native(y.view());
  CHECK(x.out == y.out);
}

TEST_CASE("Short matcher: lengths other than 1..3 are refused; exact case and every nocase variant") {
  CHECK(ShortMatcher::build({{"abcd", false, 0}}, {0}).status().code() == hpr::Code::kInvalidArgument);
  CHECK(ShortMatcher::build({{"", false, 0}}, {0}).status().code() == hpr::Code::kInvalidArgument);
  auto m = ShortMatcher::build({{"aB", false, 0}, {"xyz", true, 0}, {"\xff", false, 0}}, {3, 5, 9});
  REQUIRE(m.is_ok());
  auto run = [&](std::string_view s, uint32_t k) {
    uint32_t ids[8], ends[8];
    const uint32_t n = m->scan(reinterpret_cast<const uint8_t*>(s.data()), static_cast<uint32_t>(s.size()), ids, ends, k);
    std::vector<std::pair<uint32_t, uint32_t>> v;
    for (uint32_t j = 0; j < std::min(n, k); ++j) v.emplace_back(ends[j], ids[j]);
    return std::make_pair(n, v);
  };
  CHECK(run("ab AB aB", 8).first == 1);
  CHECK(run("XyZ xYz xyz", 8).first == 3);
  CHECK(run("\xff" "aB" "XYZ", 8).second == std::vector<std::pair<uint32_t, uint32_t>>{{0, 9}, {2, 3}, {5, 5}});
  CHECK(run("aBaBaBaB", 2).first == 4);  // counts go on after the ids are full
  CHECK(run("", 8).first == 0);
  CHECK(run("x", 8).first == 0);
}

TEST_CASE("DPI app: with the prefilter engine the kernel's automaton is built on first use, its error there") {
  // A native-only run never needs the whole-set automaton (the kernel's table): it is not built at create, so a rule
  // set whose automaton is over the table limit still runs natively, and a device lane gets the build's error.
  PatternSet ps = filter_min_length(et(), 1);
  auto whole = DpiApp::create(ps, {.native_engine = DpiConfig::Engine::kAutomaton});
  REQUIRE(whole.is_ok());
  const uint64_t automaton_bytes = (*whole)->dfa().stats().table_bytes;
  auto pf = DpiApp::create(ps, {.max_table_bytes = automaton_bytes - 1, .native_engine = DpiConfig::Engine::kPrefilter});
  REQUIRE(pf.is_ok());  // before: refused at create, for the automaton it did not need
  auto a = (*pf)->automaton();
  REQUIRE_FALSE(a.is_ok());
  CHECK(a.status().message().find("exceed") != std::string::npos);
  // Built once: the same table on every call.
  auto ok = DpiApp::create(ps, {.native_engine = DpiConfig::Engine::kPrefilter});
  REQUIRE(ok.is_ok());
  auto x = (*ok)->automaton(), y = (*ok)->automaton();
  REQUIRE(x.is_ok());
  CHECK(*x == *y);
  CHECK((*x)->stats().table_bytes == automaton_bytes);
}
